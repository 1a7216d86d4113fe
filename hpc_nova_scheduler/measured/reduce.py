"""A stream of one instance's samples, reduced to a decayed mean and a recent peak.

The collector reads each instance every ``interval`` seconds; placement and
rebalancing want two figures per metric, not the stream:

* the **decayed mean**, an exponentially weighted mean whose weights halve
  every ``half_life`` seconds of sample time:
  ``mean' = w * mean + (1 - w) * x`` with ``w = 0.5 ** (dt / half_life)``,
  ``dt`` the seconds since the last sample of that metric. Samples at
  irregular times (a collector restarted, an interval changed) weigh by
  their age, not by their count;
* the **recent peak**, the largest sample, decayed the same way and never
  below the mean: ``peak' = max(x, mean', w * peak)``. A burst counts at
  once and fades over some half-lives unless it comes back.

A metric a sample does not carry (the hardware cannot count it, the kernel
wrote ``Unavailable``) leaves that metric as it was: unknown is never a
zero. The first sample of a metric is its mean and its peak.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping

from hpc_nova_scheduler.db.measured import Figure

__all__ = ["Figure", "fold", "fold_one", "weight"]


def weight(elapsed: float, half_life: float) -> float:
    """What the past keeps after ``elapsed`` seconds: 1 at once, 1/2 after a half-life."""
    if half_life <= 0 or not math.isfinite(half_life):
        raise ValueError(f"half_life must be a positive number of seconds, not {half_life!r}")
    return 0.5 ** (max(0.0, elapsed) / half_life)


def fold_one(
    previous: Figure | None, value: float, at: datetime.datetime, half_life: float
) -> Figure:
    """``previous`` with one more sample ``value`` taken at ``at``.

    A sample older than the last one folded (two collectors of one
    migrating instance, clocks apart) counts as taken at the same time.
    """
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"a sample must be a finite number >= 0, not {value!r}")
    if previous is None:
        return Figure(value, value, 1, at)
    kept = weight((at - previous.at).total_seconds(), half_life)
    mean = kept * previous.mean + (1.0 - kept) * value
    # Between the two, as a weighted mean is: rounding may step one ulp out.
    mean = min(max(mean, min(previous.mean, value)), max(previous.mean, value))
    return Figure(
        mean=mean,
        peak=max(value, mean, kept * previous.peak),
        samples=previous.samples + 1,
        at=max(at, previous.at),
    )


def fold(
    previous: Mapping[str, Figure],
    sample: Mapping[str, float],
    at: datetime.datetime,
    half_life: float,
) -> dict[str, Figure]:
    """Every metric of ``previous``, with ``sample``'s metrics folded in."""
    folded = dict(previous)
    for metric, value in sample.items():
        folded[metric] = fold_one(previous.get(metric), value, at, half_life)
    return folded
