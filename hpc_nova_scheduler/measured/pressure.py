"""Measured cache occupancy on the cache-score scale, and which score a VM counts with.

Seed 003's cache score is declared in units of 100K last-level cache misses
per second, and its thresholds (alpha, beta) are totals of such scores on
a host. What the collector measures is occupancy: the bytes of the LLC an
instance holds. The two meet through the host's LLC size:

    measured score = full_llc_score * occupancy / llc_bytes

``full_llc_score`` (``[hpc_scheduler] measured_full_llc_score``, 60 by
default) is the score of a VM that holds the whole LLC. Its default is
beta's default, the total that seed 003 found a host's cache to hold
before SyncHPC applications slow down (the knee of the cache-pressure
ground truth): a host whose LLC is full measures at beta, so it takes no
further SyncHPC co-runner, while alpha, three times as high, still admits
applications that tolerate more. Occupancy saturates at the LLC's size,
so measured totals stay within ``full_llc_score``: a measured host is
judged by how full its cache is, not by how hard it is thrashed.

Which score a VM counts with (``cache_pressure_source``):

``declared``
    its declared score (flavor, profile): the plugin as it always was;
``measured``
    its measured score once it has at least ``min_samples`` samples on a
    host whose report is fresh; its declared score until then;
``max``
    the larger of the two, the measured one only where it counts as for
    ``measured``.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Read only in annotations: the simulator counts scores by this
    # module's rule without loading the database layer.
    from hpc_nova_scheduler.db.measured import HostReport, MeasuredInstance

DECLARED = "declared"
MEASURED = "measured"
MAX = "max"
SOURCES = (DECLARED, MEASURED, MAX)


def counted_score(source: str, declared: float, measured: float | None) -> float:
    """The score a VM of ``declared`` score counts with under ``source``, its
    measured score ``measured`` where that counts (None: it does not yet).

    The one rule placement follows, and the simulator's replays with it
    (``simulate --cache-source``).
    """
    if measured is None or source == DECLARED:
        return declared
    if source == MEASURED:
        return measured
    return max(declared, measured)


def measured_score(occupancy: float, llc_bytes: int, full_llc_score: float) -> float:
    """An occupancy in bytes on the cache-score scale of a host of ``llc_bytes``."""
    if llc_bytes <= 0:
        raise ValueError(f"llc_bytes must be > 0, not {llc_bytes!r}")
    return full_llc_score * max(0.0, occupancy) / llc_bytes


@dataclasses.dataclass(frozen=True)
class Settings:
    source: str = DECLARED
    #: Seconds after which a host's report is stale and its figures unused.
    stale_after: float = 60.0
    #: Samples an instance needs before its measured score counts.
    min_samples: int = 6
    full_llc_score: float = 60.0

    @classmethod
    def of(cls, group) -> Settings:
        """The settings of ``[hpc_scheduler]`` (``CONF.hpc_scheduler``, or any
        object with its ``cache_pressure_source`` and ``measured_*`` options)."""
        return cls(
            source=group.cache_pressure_source,
            stale_after=float(group.measured_stale_after),
            min_samples=group.measured_min_samples,
            full_llc_score=group.measured_full_llc_score,
        )

    def fresh(self, at: datetime.datetime, now: datetime.datetime) -> bool:
        """Whether a report or a figure of time ``at`` still counts at ``now``."""
        return (now - at).total_seconds() <= self.stale_after

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"cache_pressure_source: {self.source!r} is not one of {SOURCES}")


class Scores:
    """The score each VM counts with, from one read of the measurements."""

    def __init__(
        self,
        settings: Settings,
        hosts: Mapping[str, HostReport],
        instances: Mapping[str, MeasuredInstance],
        now: datetime.datetime,
    ) -> None:
        self.settings = settings
        self._measured: dict[str, float] = {}
        if settings.source == DECLARED:
            return
        for uuid, instance in instances.items():
            report = hosts.get(instance.host)
            if (
                report is None
                or not report.llc_bytes
                or not settings.fresh(report.reported_at, now)
            ):
                continue
            figure = instance.figures.get("llc_occupancy")
            if figure is None or figure.samples < settings.min_samples:
                continue
            if not settings.fresh(figure.at, now):
                continue  # the instance is no longer measured there
            self._measured[uuid] = measured_score(
                figure.mean, report.llc_bytes, settings.full_llc_score
            )

    @property
    def counted(self) -> int:
        """How many VMs count with a measured score."""
        return len(self._measured)

    def measured(self, uuid: str) -> float | None:
        """The VM's measured score, if it counts now."""
        return self._measured.get(uuid)

    def score(self, uuid: str, declared: float) -> float:
        """The score VM ``uuid`` of declared score ``declared`` counts with."""
        return counted_score(self.settings.source, declared, self._measured.get(uuid))
