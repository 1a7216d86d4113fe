"""A replay's figures, in the order ``simulate`` tabulates them, and their means over seeds.

``simulate`` prints one row per replay, or with several seeds one row per
log and scenario: the mean of its seeds' figures. The figures and the means
are computed here; the command only formats them.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence


def figures(result, times: Sequence[float]) -> list[float]:
    """A replay's figures: jobs, jobs that never fit, jobs completed by each
    of ``times``, makespan (h), mean wait (h), mean bounded slowdown,
    utilisation and mean interference."""
    return [
        len(result.outcomes),
        len(result.never_fit),
        *(result.completed_by(t) for t in times),
        result.makespan / 3600,
        result.mean_wait() / 3600,
        result.mean_bounded_slowdown(),
        result.utilisation(),
        result.mean_interference(),
    ]


def topology_figures(result, levels: tuple[str, ...]) -> list:
    """Jobs refused for their topology, then the share of completed jobs of
    several VMs in one domain, innermost level first (None: no such job);
    nothing without levels."""
    if not levels:
        return []
    return [
        len(result.topology_refused),
        *(result.one_domain_share(level) for level in reversed(levels)),
    ]


@dataclasses.dataclass(frozen=True)
class SeedMeans:
    """One log and scenario over its seeds; no means when a seed failed."""

    log: str | None
    name: str
    seeds: int
    #: The means of :func:`figures`; None when a seed's replay failed.
    figures: list[float] | None
    #: The means of :func:`topology_figures`, each over the seeds that have it.
    topology: list[float | None] | None


def seed_means(
    swept: list, times: Sequence[float], levels: tuple[str, ...] = ()
) -> list[SeedMeans]:
    """Per log and scenario (in the order first met), the mean of its seeds'
    figures; a scenario with a failed seed has none, rather than the mean of
    fewer seeds. ``swept``: :class:`~hpc_nova_scheduler.sweep.CellResult`."""
    groups: dict[tuple, list] = {}
    for cell in swept:
        groups.setdefault((cell.cell.log, cell.cell.name), []).append(cell)
    found = []
    for (log, name), cells in groups.items():
        if not all(cell.ok for cell in cells):
            found.append(SeedMeans(log, name, len(cells), None, None))
            continue
        columns = zip(*(figures(cell.value, times) for cell in cells), strict=True)
        topology = zip(*(topology_figures(cell.value, levels) for cell in cells), strict=True)
        # A share is the mean over the seeds that have jobs of several VMs.
        present = [[value for value in column if value is not None] for column in topology]
        found.append(
            SeedMeans(
                log,
                name,
                len(cells),
                [statistics.fmean(column) for column in columns],
                [statistics.fmean(values) if values else None for values in present],
            )
        )
    return found
