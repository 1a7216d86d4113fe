"""A mutable cluster that applies plans: the simulator's and the tests' cloud."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from hpc_nova_scheduler.core.algorithm import PlacementRequest, Plan
from hpc_nova_scheduler.core.cluster import Host, Resources, RunningVM


@dataclasses.dataclass
class _HostRecord:
    capacity: Resources
    rack: str
    cpu_group: str
    vms: list[tuple[RunningVM, Resources]] = dataclasses.field(default_factory=list)
    #: Kept as VMs come and go: the simulator asks for every host's free
    #: resources at each placement attempt.
    free: Resources = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.free = self.capacity


class ClusterState:
    """Hosts and the VMs placed on them."""

    def __init__(self) -> None:
        self._hosts: dict[str, _HostRecord] = {}
        self._serial = 0
        #: The hosts each application has VMs on, so a release touches only those.
        self._placed_on: dict[str, set[str]] = {}

    def add_host(self, name: str, capacity: Resources, rack: str = "", cpu_group: str = "") -> None:
        self._hosts[name] = _HostRecord(capacity, rack, cpu_group)

    def hosts(self) -> list[Host]:
        """A snapshot for :func:`~hpc_nova_scheduler.core.algorithm.plan`."""
        return [
            Host(
                name=name,
                capacity=record.capacity,
                free=record.free,
                rack=record.rack,
                cpu_group=record.cpu_group,
                vms=tuple(vm for vm, _ in record.vms),
            )
            for name, record in self._hosts.items()
        ]

    def apply(self, plan: Plan, request: PlacementRequest) -> list[str]:
        """Place the request's VMs as planned; return their uuids."""
        uuids = []
        profile = request.profile
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
            record = self._hosts[name]
            record.vms.append((vm, request.demand))
            record.free = record.free - request.demand
            self._placed_on.setdefault(request.application_id, set()).add(name)
            uuids.append(uuid)
        return uuids

    def release(self, application_ids: Iterable[str]) -> None:
        """Remove every VM of these applications (they finished)."""
        gone = set(application_ids)
        names = set().union(*(self._placed_on.pop(app, set()) for app in gone))
        for name in names:
            record = self._hosts[name]
            kept = []
            for vm, demand in record.vms:
                if vm.application_id in gone:
                    record.free = record.free + demand
                else:
                    kept.append((vm, demand))
            record.vms = kept

    def vms_per_host(self, application_id: str) -> dict[str, int]:
        counts = {}
        for name, record in self._hosts.items():
            n = sum(1 for vm, _ in record.vms if vm.application_id == application_id)
            if n:
                counts[name] = n
        return counts
