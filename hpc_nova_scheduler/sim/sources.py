"""Declared, measured and max cache scores compared on the same replay.

``simulate --cache-source declared,measured,max`` replays each cache-aware
scenario once per source, on the same jobs, drifts and seed (see
:mod:`.phases`). This module gives each replay its throughput, wait and
slowdowns, and its throughput's change over the declared replay of the
same scenario, log and seed; ``simulate`` only formats them.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

import numpy as np

from hpc_nova_scheduler.measured.pressure import DECLARED, SOURCES
from hpc_nova_scheduler.sim.phases import unlabelled

#: What :func:`figures` gives, in order.
HEADINGS = (
    "jobs/h",
    "makespan h",
    "mean wait h",
    "bounded slowdown",
    "p95 bounded slowdown",
    "run stretch",
    "p95 run stretch",
)


def figures(result) -> list[float]:
    """Completed jobs per hour of makespan, the makespan (h), the mean wait
    (h), the mean and 95th percentile of the bounded slowdown, and those of
    the run stretch (run time over run time alone: what co-runners cost)."""
    bounded = result.bounded_slowdowns() or [1.0]
    stretches = result.stretches() or [1.0]
    hours = result.makespan / 3600
    return [
        len(result.outcomes) / hours if hours > 0 else 0.0,
        hours,
        result.mean_wait() / 3600,
        statistics.fmean(bounded),
        float(np.percentile(bounded, 95)),
        statistics.fmean(stretches),
        float(np.percentile(stretches, 95)),
    ]


@dataclasses.dataclass(frozen=True)
class Row:
    """One replay (or the mean over seeds of one scenario and source)."""

    log: str | None
    scenario: str
    source: str
    seed: int | str | None
    #: :func:`figures`; None when the replay failed.
    figures: list[float] | None
    #: Jobs per hour over the declared replay's, in percent; None without one.
    gain: float | None


def compare(swept: Sequence) -> list[Row]:
    """A row per replay of ``swept`` (:class:`~hpc_nova_scheduler.sweep.CellResult`),
    each scenario's sources side by side, declared first."""
    found: dict[tuple, dict[str, list[float] | None]] = {}
    for cell in swept:
        source = cell.value.cache_source if cell.ok else _source_of(cell.cell.name)
        key = (cell.cell.log, unlabelled(cell.cell.name, source), cell.cell.seed)
        found.setdefault(key, {})[source] = figures(cell.value) if cell.ok else None
    return [
        Row(log, scenario, source, seed, by_source[source], _gain(by_source, source))
        for (log, scenario, seed), by_source in found.items()
        for source in SOURCES
        if source in by_source
    ]


def seed_means(rows: Sequence[Row]) -> list[Row]:
    """Per log, scenario and source, the mean of its seeds' figures (none
    if a seed failed) and the mean throughput's gain over declared's."""
    groups: dict[tuple, list[Row]] = {}
    for row in rows:
        groups.setdefault((row.log, row.scenario, row.source), []).append(row)
    means: dict[tuple, dict[str, list[float] | None]] = {}
    counts: dict[tuple, int] = {}
    for (log, scenario, source), members in groups.items():
        columns = [row.figures for row in members]
        mean = None
        if all(column is not None for column in columns):
            mean = [statistics.fmean(values) for values in zip(*columns, strict=True)]
        means.setdefault((log, scenario), {})[source] = mean
        counts[log, scenario] = len(members)
    return [
        Row(log, scenario, source, f"{counts[log, scenario]} seeds", mean, _gain(by_source, source))
        for (log, scenario), by_source in means.items()
        for source, mean in by_source.items()
    ]


def _gain(by_source: dict[str, list[float] | None], source: str) -> float | None:
    declared, own = by_source.get(DECLARED), by_source.get(source)
    if source == DECLARED or declared is None or own is None or declared[0] <= 0:
        return None
    return 100.0 * (own[0] / declared[0] - 1.0)


def _source_of(name: str) -> str:
    """The source a failed replay's name carries (it has no result to say)."""
    return next((source for source in SOURCES if f"({source} scores)" in name), DECLARED)
