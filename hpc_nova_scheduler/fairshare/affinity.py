"""Seed 002's platform and co-runner affinities (section 4), from measured runs.

With r(K, P) the mean solo ("OneCore") task run time of application K on
platform P:

* throughput(K, P) = 3600 / r(K, P), tasks per core-hour;
* EPA(K, P) = mean over P' != P of r(K, P') / r(K, P): how much K would
  lose without P (egocentric platform affinity);
* RPA(K, P) = mean over P' != P of n(K, P') / n(K, P), with
  n(K, P) = r(K, P) / mean over K' of r(K', P): the same, on run times
  normalised by each platform's mean, so that P's value to K is weighed
  against P's value to the others (reciprocal platform affinity);
* co-runner affinity of K on P: the mean over K's runs with co-runners on
  P of C - S (raw, seconds) and of (C - S) / S x 100 (normalised, %),
  where C is the run's time and S = r(K, P).

Where an application has no solo run on a platform, nothing can be said of
that platform for it: its EPA and RPA there are neutral (1.0), and the
pair is listed in :attr:`Affinities.missing` so that the caller can warn.
Means over P' and K' take the pairs that were measured.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Sequence

from hpc_nova_scheduler.fairshare.runs import TaskRun

SECONDS_PER_HOUR = 3600.0
#: The affinity of a pair that nothing is known of: neither for nor against.
NEUTRAL = 1.0

#: application -> platform -> value
Table = dict[str, dict[str, float]]


class MissingSoloRun(ValueError):
    """Runs with co-runners of a pair that has no solo run to compare them with."""


@dataclasses.dataclass(frozen=True)
class Affinities:
    """Every affinity metric of a set of runs; applications and platforms in file order."""

    applications: tuple[str, ...]
    platforms: tuple[str, ...]
    #: Tasks per core-hour; measured pairs only.
    throughput: Table
    epa: Table
    rpa: Table
    #: Seconds, and percent of the solo run time; measured pairs only, and
    #: empty when no run had co-runners.
    corunner_raw: Table
    corunner_normalised: Table
    #: (application, platform) pairs without a solo run: neutral affinity.
    missing: tuple[tuple[str, str], ...]


def solo_runtimes(runs: Iterable[TaskRun]) -> dict[tuple[str, str], float]:
    """r(K, P): the mean solo run time of each measured (application, platform)."""
    times: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        if run.solo:
            times.setdefault((run.application, run.platform), []).append(run.runtime_s)
    return {pair: statistics.fmean(values) for pair, values in times.items()}


def egocentric(
    solo: dict[tuple[str, str], float], applications: Sequence[str], platforms: Sequence[str]
) -> Table:
    """EPA(K, P) for every application and platform (neutral where unmeasured)."""
    return {
        app: {
            platform: _relative(
                solo.get((app, platform)),
                [
                    solo[(app, other)]
                    for other in platforms
                    if other != platform and (app, other) in solo
                ],
            )
            for platform in platforms
        }
        for app in applications
    }


def reciprocal(
    solo: dict[tuple[str, str], float], applications: Sequence[str], platforms: Sequence[str]
) -> Table:
    """RPA(K, P): EPA over run times normalised by each platform's mean run time."""
    means = {
        platform: statistics.fmean(times)
        for platform in platforms
        if (times := [solo[(app, platform)] for app in applications if (app, platform) in solo])
    }
    normalised = {pair: runtime / means[pair[1]] for pair, runtime in solo.items()}
    return egocentric(normalised, applications, platforms)


def _relative(own: float | None, others: list[float]) -> float:
    if own is None or not others:
        return NEUTRAL
    return statistics.fmean(others) / own


def corunner_affinity(
    runs: Iterable[TaskRun], solo: dict[tuple[str, str], float]
) -> tuple[Table, Table]:
    """Raw (seconds) and normalised (%) co-runner affinity of every pair with co-runner runs.

    Raises MissingSoloRun, naming the run's line, for a pair measured only
    with co-runners: its slowdown has nothing to be measured against.
    """
    raw: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        if run.solo:
            continue
        pair = (run.application, run.platform)
        if pair not in solo:
            where = f"line {run.line}: " if run.line else ""
            raise MissingSoloRun(
                f"{where}{run.application} ran on {run.platform} with co-runners but never "
                "alone: its co-runner affinity there has no solo run time to compare with"
            )
        raw.setdefault(pair, []).append(run.runtime_s - solo[pair])
    raw_table: Table = {}
    normalised_table: Table = {}
    for (app, platform), differences in raw.items():
        raw_table.setdefault(app, {})[platform] = statistics.fmean(differences)
        normalised_table.setdefault(app, {})[platform] = statistics.fmean(
            difference / solo[(app, platform)] * 100.0 for difference in differences
        )
    return raw_table, normalised_table


def affinities(runs: Sequence[TaskRun]) -> Affinities:
    """Every metric of ``runs`` (see the module's formulas)."""
    applications = tuple(dict.fromkeys(run.application for run in runs))
    platforms = tuple(dict.fromkeys(run.platform for run in runs))
    solo = solo_runtimes(runs)
    throughput: Table = {}
    for (app, platform), runtime in solo.items():
        throughput.setdefault(app, {})[platform] = SECONDS_PER_HOUR / runtime
    raw, normalised = corunner_affinity(runs, solo)
    return Affinities(
        applications=applications,
        platforms=platforms,
        throughput=_ordered(throughput, applications, platforms),
        epa=egocentric(solo, applications, platforms),
        rpa=reciprocal(solo, applications, platforms),
        corunner_raw=_ordered(raw, applications, platforms),
        corunner_normalised=_ordered(normalised, applications, platforms),
        missing=tuple(
            (app, platform)
            for app in applications
            for platform in platforms
            if (app, platform) not in solo
        ),
    )


def _ordered(table: Table, applications: Sequence[str], platforms: Sequence[str]) -> Table:
    """``table`` with its keys in file order (what JSON and tables print)."""
    return {
        app: {platform: table[app][platform] for platform in platforms if platform in table[app]}
        for app in applications
        if app in table
    }
