"""A snapshot of the cloud as the placement algorithm sees it.

The Nova adapter builds it from Nova's host states, aggregates and the
plugin database; the simulator builds it from its own model. Nothing here
knows where the numbers came from.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from hpc_nova_scheduler.core.profile import AppClass

#: Dimensions of a resource vector, in this order everywhere.
DIMENSIONS = ("vcpus", "ram_mb", "disk_gb")


@dataclasses.dataclass(frozen=True, slots=True)
class Resources:
    """An amount of each resource dimension (vCPU, RAM in MB, disk in GB)."""

    vcpus: float = 0.0
    ram_mb: float = 0.0
    disk_gb: float = 0.0

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.vcpus, self.ram_mb, self.disk_gb)

    def __add__(self, other: Resources) -> Resources:
        return Resources(
            self.vcpus + other.vcpus, self.ram_mb + other.ram_mb, self.disk_gb + other.disk_gb
        )

    def __sub__(self, other: Resources) -> Resources:
        return Resources(
            self.vcpus - other.vcpus, self.ram_mb - other.ram_mb, self.disk_gb - other.disk_gb
        )

    def scaled(self, factor: float) -> Resources:
        return Resources(self.vcpus * factor, self.ram_mb * factor, self.disk_gb * factor)

    def fits_in(self, free: Resources) -> bool:
        """Whether this demand fits in ``free`` in every dimension."""
        return all(
            d <= f + 1e-9 for d, f in zip(self.as_tuple(), free.as_tuple(), strict=True) if d > 0
        )

    def copies_that_fit(self, free: Resources) -> int:
        """How many copies of this demand fit in ``free`` (all dimensions)."""
        counts = [
            math.floor((f + 1e-9) / d)
            for d, f in zip(self.as_tuple(), free.as_tuple(), strict=True)
            if d > 0
        ]
        if not counts:
            return 0
        return max(0, min(counts))


@dataclasses.dataclass(frozen=True, slots=True)
class RunningVM:
    """A VM already on a host, with what the scheduler knows of its application.

    ``application_id`` identifies one application instance (one request or
    one server group); VMs sharing it are the same application.
    """

    uuid: str
    app_class: AppClass = AppClass.NON_HPC
    cache_score: float = 0.0
    app_name: str | None = None
    application_id: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Host:
    """One compute host: where it is, what it has, what runs on it."""

    name: str
    capacity: Resources
    free: Resources
    rack: str = ""
    cpu_group: str = ""
    vms: tuple[RunningVM, ...] = ()
    #: Its domains at the topology levels outside the rack, outermost first
    #: (``("block-1",)`` under ``topology_levels = block,rack``); "" where
    #: the host has no value at a level.
    outer: tuple[str, ...] = ()

    @property
    def rack_id(self) -> str:
        # A host with no rack is a rack of its own (product contract).
        return self.rack or f"host:{self.name}"

    @property
    def cache_total(self) -> float:
        return sum(vm.cache_score for vm in self.vms)


def group_by(hosts: Iterable[Host], key) -> dict[str, list[Host]]:
    groups: dict[str, list[Host]] = {}
    for host in hosts:
        groups.setdefault(key(host), []).append(host)
    return groups
