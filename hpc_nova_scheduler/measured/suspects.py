"""Antagonist suspects, the CPI2 way: a VM far slower than its siblings, and who shares its host.

Google's CPI2 (Zhang et al., EuroSys 2013) compares a task's cycles per
instruction (CPI) with the CPI of the other tasks of its job: the tasks of
one job run the same code, so one whose CPI stands far above theirs is
being slowed by something on its machine, and the other workloads there
are the suspects. Here a job is an application (one request or server
group): each VM whose decayed-mean CPI exceeds the median of its
siblings' by more than ``ratio`` is a *victim*, and the VMs of other
applications on its host are *suspects*. The rebalancer moves suspects
first where that moves no more VMs (:mod:`.trigger`).

Deviations from CPI2: no per-platform CPI distribution learnt over days
(an application's siblings here run at the same moment, usually on one
processor group, as the plugin places them); a median of the siblings,
robust to one slow sibling, instead of CPI2's mean and standard deviation;
and no correlation of a suspect's CPU use with the victim's CPI over time
(the collector keeps no per-thread CPU use): every co-runner of another
application is listed, loudest last-level cache occupancy first.
"""

from __future__ import annotations

import dataclasses
import datetime
import statistics
from collections.abc import Iterable, Mapping

from hpc_nova_scheduler.db.measured import Figure, MeasuredInstance
from hpc_nova_scheduler.measured.pressure import Settings

#: A victim's CPI over its siblings' median, by default (CPI2 flags about 2 sigma).
RATIO = 1.5
#: Siblings with a CPI an application needs before any of its VMs is judged.
MIN_SIBLINGS = 2


@dataclasses.dataclass(frozen=True)
class MeasuredVM:
    """A recorded VM, with its application and what was measured of it."""

    instance_uuid: str
    application: str
    host: str
    cpi: float | None = None
    #: Its LLC occupancy, bytes (to list suspects loudest first).
    occupancy: float | None = None


@dataclasses.dataclass(frozen=True)
class Suspicion:
    victim: MeasuredVM
    #: The median CPI of the victim's siblings.
    siblings_cpi: float
    siblings: int
    #: The VMs of other applications on the victim's host, loudest first.
    suspects: tuple[MeasuredVM, ...]

    @property
    def excess(self) -> float:
        """The victim's CPI over its siblings' median."""
        return self.victim.cpi / self.siblings_cpi


def find(
    vms: Iterable[MeasuredVM], *, ratio: float = RATIO, min_siblings: int = MIN_SIBLINGS
) -> list[Suspicion]:
    """Every victim among ``vms``, with its suspects, the most slowed first."""
    if ratio <= 1.0:
        raise ValueError(f"ratio must be > 1, not {ratio!r}")
    vms = list(vms)
    by_application: dict[str, list[MeasuredVM]] = {}
    by_host: dict[str, list[MeasuredVM]] = {}
    for vm in vms:
        by_host.setdefault(vm.host, []).append(vm)
        if vm.cpi is not None and vm.cpi > 0:
            by_application.setdefault(vm.application, []).append(vm)
    found = []
    for members in by_application.values():
        for vm in members:
            siblings = [other.cpi for other in members if other is not vm]
            if len(siblings) < min_siblings:
                continue
            median = statistics.median(siblings)
            if vm.cpi <= ratio * median:
                continue
            others = [o for o in by_host[vm.host] if o.application != vm.application]
            others.sort(key=lambda o: (-(o.occupancy or 0.0), o.instance_uuid))
            found.append(Suspicion(vm, median, len(siblings), tuple(others)))
    found.sort(key=lambda s: (-s.excess, s.victim.instance_uuid))
    return found


def suspect_uuids(found: Iterable[Suspicion]) -> set[str]:
    """Every VM suspected of slowing another."""
    return {vm.instance_uuid for s in found for vm in s.suspects}


def measured_vms(
    running: Iterable, figures: Mapping[str, Mapping], *, min_samples: int
) -> list[MeasuredVM]:
    """``running`` records (``instance_uuid``, ``request_id``, ``host``) with the
    CPI and occupancy of ``figures`` (by instance) that have ``min_samples``."""

    def mean(own: Mapping, metric: str) -> float | None:
        figure = own.get(metric)
        return figure.mean if figure is not None and figure.samples >= min_samples else None

    found = []
    for row in running:
        own = figures.get(row.instance_uuid, {})
        found.append(
            MeasuredVM(
                row.instance_uuid,
                row.request_id or row.instance_uuid,
                row.host,
                cpi=mean(own, "cpi"),
                occupancy=mean(own, "llc_occupancy"),
            )
        )
    return found


def fresh_figures(
    instances: Mapping[str, MeasuredInstance], now: datetime.datetime, settings: Settings
) -> dict[str, Mapping[str, Figure]]:
    """The figures of the instances measured within ``measured_stale_after`` of ``now``."""
    return {
        uuid: row.figures for uuid, row in instances.items() if settings.fresh(row.updated_at, now)
    }
