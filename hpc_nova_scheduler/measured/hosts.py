"""Each host's cache pressure, declared and measured, side by side.

A host's cache pressure is the total of the cache scores of the VMs that
run there (seed 003's ``total``, held to alpha and beta). Operators switching
``cache_pressure_source`` want to see it both ways before and after: the
declared total, the total with each VM that has a usable measurement at its
measured score (what ``measured`` would count), and the total in force
under the configured source.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping

from hpc_nova_scheduler.db.measured import HostReport, MeasuredInstance
from hpc_nova_scheduler.measured.pressure import MEASURED, Scores, Settings


@dataclasses.dataclass(frozen=True)
class RunningScore:
    """A VM the plugin records on a host, with its declared cache score."""

    instance_uuid: str
    host: str
    declared: float


@dataclasses.dataclass(frozen=True)
class HostPressure:
    host: str
    vms: int
    declared: float
    #: The total under ``measured``: measured scores where they count.
    measured: float
    #: VMs whose measured score counts.
    measured_vms: int
    #: The total under the configured ``cache_pressure_source``.
    in_force: float
    #: The host's last report (None: it never reported).
    report: HostReport | None
    #: Seconds since that report (None: never).
    age: float | None
    stale: bool

    @property
    def occupancy_share(self) -> float | None:
        """The share of the LLC the host's groups hold, from its totals."""
        report = self.report
        if report is None or not report.llc_bytes or "llc_occupancy" not in report.totals:
            return None
        return report.totals["llc_occupancy"] / report.llc_bytes


def host_pressures(
    running: Iterable[RunningScore],
    settings: Settings,
    reports: Mapping[str, HostReport],
    instances: Mapping[str, MeasuredInstance],
    now: datetime.datetime,
) -> list[HostPressure]:
    """Every host that runs a recorded VM or reports, by name."""
    as_measured = Scores(dataclasses.replace(settings, source=MEASURED), reports, instances, now)
    in_force = Scores(settings, reports, instances, now)
    by_host: dict[str, list[RunningScore]] = {name: [] for name in reports}
    for vm in running:
        by_host.setdefault(vm.host, []).append(vm)
    found = []
    for name in sorted(by_host):
        vms = by_host[name]
        report = reports.get(name)
        age = None if report is None else (now - report.reported_at).total_seconds()
        found.append(
            HostPressure(
                host=name,
                vms=len(vms),
                declared=sum(vm.declared for vm in vms),
                measured=sum(as_measured.score(vm.instance_uuid, vm.declared) for vm in vms),
                measured_vms=sum(
                    1 for vm in vms if as_measured.measured(vm.instance_uuid) is not None
                ),
                in_force=sum(in_force.score(vm.instance_uuid, vm.declared) for vm in vms),
                report=report,
                age=age,
                stale=report is None or not settings.fresh(report.reported_at, now),
            )
        )
    return found
