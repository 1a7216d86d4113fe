"""A mutable cluster that applies plans: the simulator's and the tests' cloud."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from hpc_nova_scheduler.core.algorithm import PlacementRequest, Plan
from hpc_nova_scheduler.core.cluster import Host, Resources, RunningVM
from hpc_nova_scheduler.core.columns import HostColumns, ordered_sum
from hpc_nova_scheduler.core.domains import DEFAULT_LEVELS


class ClusterState:
    """Hosts and the VMs placed on them.

    The hosts' :class:`HostColumns` are kept up to date as plans are applied
    and applications released, so that a placement attempt reads them
    directly instead of rebuilding a snapshot of every host.
    """

    def __init__(self, levels: Sequence[str] = DEFAULT_LEVELS) -> None:
        #: The topology's levels, outermost first; the last is the rack.
        self.levels = tuple(levels)
        self._outer: list[tuple[str, ...]] = []
        self._names: list[str] = []
        self._capacity: list[Resources] = []
        self._racks: list[str] = []
        self._groups: list[str] = []
        #: Per host row, its VMs and their demands, in placement order.
        self._vms: list[list[tuple[RunningVM, Resources]]] = []
        self._columns: HostColumns | None = None
        self._serial = 0

    def add_host(
        self,
        name: str,
        capacity: Resources,
        rack: str = "",
        cpu_group: str = "",
        outer: Sequence[str] = (),
    ) -> None:
        """Add a host; ``outer`` are its domains at the levels outside the rack."""
        self._outer.append(tuple(outer))
        self._names.append(name)
        self._capacity.append(capacity)
        self._racks.append(rack)
        self._groups.append(cpu_group)
        self._vms.append([])
        self._columns = None

    def columns(self) -> HostColumns:
        """The live columns for :func:`~hpc_nova_scheduler.core.algorithm.plan`."""
        if self._columns is None:
            columns = HostColumns(
                self._names,
                self._capacity,
                self._capacity,
                self._racks,
                self._groups,
                self._outer,
                self.levels,
            )
            for row, placed in enumerate(self._vms):
                for vm, demand in placed:
                    columns.place(row, vm, demand)
            self._columns = columns
        return self._columns

    def hosts(self) -> list[Host]:
        """A snapshot of every host, with its VMs."""
        columns = self.columns()
        return [
            Host(
                name=name,
                capacity=self._capacity[row],
                free=Resources(*columns.free[row].tolist()),
                rack=self._racks[row],
                cpu_group=self._groups[row],
                vms=tuple(vm for vm, _ in self._vms[row]),
                outer=self._outer[row],
            )
            for row, name in enumerate(self._names)
        ]

    def apply(self, plan: Plan, request: PlacementRequest) -> list[str]:
        """Place the request's VMs as planned; return their uuids."""
        columns = self.columns()
        uuids = []
        profile = request.profile
        demand = request.demand.as_tuple()
        for name in plan.hosts:
            self._serial += 1
            uuid = f"{request.application_id}#{self._serial}"
            vm = RunningVM(
                uuid=uuid,
                app_class=profile.app_class,
                cache_score=profile.cache_score,
                app_name=profile.app_name,
                application_id=request.application_id,
            )
            row = columns.index[name]
            self._vms[row].append((vm, request.demand))
            columns.free[row] -= demand
            columns.cache_total[row] += profile.cache_score
            columns.count_vm(row, vm, +1)
            uuids.append(uuid)
        return uuids

    def release(self, application_ids: Iterable[str]) -> None:
        """Remove every VM of these applications (they finished)."""
        columns = self.columns()
        gone = set(application_ids)
        rows = {row for app in gone for row in columns.by_application.get(app, {})}
        for row in rows:
            kept = []
            for vm, demand in self._vms[row]:
                if vm.application_id in gone:
                    columns.free[row] += demand.as_tuple()
                    columns.count_vm(row, vm, -1)
                else:
                    kept.append((vm, demand))
            self._vms[row] = kept
            # Summed afresh in placement order, as a new look at the host would.
            columns.cache_total[row] = ordered_sum(vm.cache_score for vm, _ in kept)

    def rescore(self, application_id: str, cache_score: float) -> None:
        """Count every VM of the application with ``cache_score`` from now on
        (what the scheduler believes of it changed: a measured score)."""
        columns = self.columns()
        for row in columns.by_application.get(application_id, {}):
            self._vms[row] = [
                (
                    dataclasses.replace(vm, cache_score=cache_score)
                    if vm.application_id == application_id
                    else vm,
                    demand,
                )
                for vm, demand in self._vms[row]
            ]
            # Summed afresh in placement order, as release() sums them.
            columns.cache_total[row] = ordered_sum(vm.cache_score for vm, _ in self._vms[row])

    def rows_of(self, application_id: str) -> list[int]:
        """The host rows running VMs of this application."""
        return sorted(self.columns().by_application.get(application_id, {}))

    def vms_on(self, row: int) -> list[RunningVM]:
        return [vm for vm, _ in self._vms[row]]

    def vms_per_host(self, application_id: str) -> dict[str, int]:
        columns = self.columns()
        return {
            self._names[row]: counts[0]
            for row, counts in sorted(columns.by_application.get(application_id, {}).items())
        }
