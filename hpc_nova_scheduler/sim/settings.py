"""What a simulated cloud and a scheduler configuration are made of.

The settings types that the simulator, its class-based cloud and its batch
arrivals all read: host kinds, the cluster's shape and one scenario (the
policy, thresholds and admission model to replay a log under). They live
apart from the simulator so that its parts import them, not each other.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from hpc_nova_scheduler.core.algorithm import NO_TOPOLOGY, Policy
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.state import ClusterState
from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.topology import levels as topo

UNLIMITED = Thresholds(math.inf, math.inf)


@dataclasses.dataclass(frozen=True)
class HostKind:
    """``count`` identical hosts; ``speed`` scales how fast jobs run on them
    (1.0: as logged); ``name`` names their processor group, the host type
    that models such as seed 000's tell apart (default ``kind-N``)."""

    count: int
    cores: int
    ram_mb: float
    speed: float = 1.0
    name: str | None = None

    def __post_init__(self) -> None:
        if self.count < 1 or self.cores < 1 or self.ram_mb <= 0 or self.speed <= 0:
            raise ValueError(f"host kind {self.describe()}: every number must be positive")

    @classmethod
    def parse(cls, text: str) -> HostKind:
        """``[NAME=]COUNT:CORES:RAM_MB[:SPEED]``, e.g. ``64:8:16384:0.8`` or ``T2=6:8:16384``."""
        name, sep, shape = text.strip().rpartition("=")
        parts = shape.split(":")
        try:
            if len(parts) not in (3, 4) or (sep and not name.strip()):
                raise ValueError
            numbers = (int(parts[0]), int(parts[1]), float(parts[2]), *map(float, parts[3:]))
            kind = cls(*numbers)
        except (TypeError, ValueError):
            raise ValueError(
                f"host kind {text.strip()!r}: expected [NAME=]COUNT:CORES:RAM_MB[:SPEED], "
                "e.g. 64:8:16384:0.8 or T2=6:8:16384, every number positive"
            ) from None
        return dataclasses.replace(kind, name=name.strip() or None)

    def describe(self) -> str:
        named = f"{self.name}: " if self.name else ""
        return f"{named}{self.count} x {self.cores} cores {self.ram_mb:g} MB speed {self.speed:g}"

    def holds(self, memory_mb: float) -> int:
        """How many one-core VMs of ``memory_mb`` one idle host takes."""
        if memory_mb <= 0:
            return self.cores
        return min(self.cores, math.floor((self.ram_mb + 1e-9) / memory_mb))


@dataclasses.dataclass(frozen=True)
class ClusterShape:
    """Hosts in racks: identical ones, optionally split into processor groups,
    or several kinds (``kinds``), each its own processor group, that may
    differ in size and speed.

    ``topology`` nests the racks in more levels (see :mod:`.topology`):
    ``(("block", 4), ("rack", 16))`` is racks of 16 hosts, 4 racks to a
    block. Its levels, outermost first, each give how many domains of the
    next level one of its domains holds, the last how many hosts; it
    replaces ``hosts_per_rack``. Empty: seed 003's racks of
    ``hosts_per_rack`` and no other level.
    """

    hosts: int
    cores: int
    ram_mb: float
    disk_gb: float = 0.0
    hosts_per_rack: int = 32
    cpu_groups: int = 1
    kinds: tuple[HostKind, ...] = ()
    topology: tuple[tuple[str, int], ...] = ()

    @property
    def levels(self) -> tuple[str, ...]:
        """The topology's levels, outermost first; the last is the rack."""
        return tuple(name for name, _ in self.topology) or topo.DEFAULT_LEVELS

    @property
    def rack_size(self) -> int:
        """Hosts per domain of the innermost level."""
        return self.topology[-1][1] if self.topology else self.hosts_per_rack

    def domain_codes(self) -> np.ndarray:
        """Each host's domain at each level, outermost first: row ``level``,
        column host (in :meth:`build`'s order), a number per domain."""
        rows = np.arange(sum(kind.count for kind in self.host_kinds()), dtype=np.int64)
        codes = [rows // self.rack_size]
        for _, per in reversed(self.topology[:-1]):
            codes.append(codes[-1] // per)
        return np.array(codes[::-1], dtype=np.int64)

    @classmethod
    def from_total_cores(
        cls, total_cores: int, cores_per_host: int, ram_mb_per_host: float, **kwargs
    ) -> ClusterShape:
        return cls(
            hosts=max(1, total_cores // cores_per_host),
            cores=cores_per_host,
            ram_mb=ram_mb_per_host,
            **kwargs,
        )

    @classmethod
    def of_kinds(cls, kinds: Sequence[HostKind], hosts_per_rack: int = 32) -> ClusterShape:
        """A heterogeneous cloud, racks filled in the order the kinds are given."""
        if not kinds:
            raise ValueError("a cloud needs at least one host kind")
        first = kinds[0]
        return cls(
            hosts=sum(k.count for k in kinds),
            cores=first.cores,
            ram_mb=first.ram_mb,
            hosts_per_rack=hosts_per_rack,
            kinds=tuple(kinds),
        )

    def host_kinds(self) -> tuple[HostKind, ...]:
        return self.kinds or (HostKind(self.hosts, self.cores, self.ram_mb),)

    @property
    def total_cores(self) -> int:
        return sum(k.count * k.cores for k in self.host_kinds())

    def describe(self) -> str:
        if not self.kinds:
            text = f"{self.hosts} hosts of {self.cores} cores and {self.ram_mb:g} MB"
        else:
            text = "; ".join(f"kind-{i}: {kind.describe()}" for i, kind in enumerate(self.kinds))
        if self.topology:
            codes = self.domain_codes()
            counts = ", ".join(
                f"{int(codes[depth].max()) + 1} {level}s" for depth, level in enumerate(self.levels)
            )
            text += f"; topology {format_topology(self.topology)} ({counts})"
        return text

    def capacities(self) -> list[tuple[float, float, float]]:
        """Each host's (cores, RAM MB, disk GB), in the order :meth:`build` adds them."""
        return [
            (float(kind.cores), float(kind.ram_mb), float(self.disk_gb))
            for kind in self.host_kinds()
            for _ in range(kind.count)
        ]

    def host_types(self) -> list[str]:
        """Each host's processor group, in the order :meth:`build` adds them."""
        return [host.cpu_group for host in self.build().hosts()]

    def speeds(self) -> list[float]:
        """Each host's speed, in the order :meth:`build` adds them."""
        return [kind.speed for kind in self.host_kinds() for _ in range(kind.count)]

    def idle_capacity(self, memory_mb: float) -> int:
        """How many one-core VMs of ``memory_mb`` the idle cloud takes."""
        return sum(kind.count * kind.holds(memory_mb) for kind in self.host_kinds())

    def build(self, flat: bool = False) -> ClusterState:
        """The idle cloud; ``flat``: its racks alone, the levels outside
        them hidden from the placement (seed 003's view of the same hosts)."""
        levels = self.levels
        state = ClusterState(levels[-1:] if flat else levels)
        codes = self.domain_codes()
        # Each host's domains outside the rack, named by level and number.
        outer = [
            tuple(f"{level}-{codes[depth][row]}" for depth, level in enumerate(levels[:-1]))
            for row in range(codes.shape[1])
        ]
        racks = max(1, math.ceil(self.hosts / self.rack_size))
        i = 0
        for index, kind in enumerate(self.host_kinds()):
            for _ in range(kind.count):
                rack = i // self.rack_size
                if self.kinds:
                    group = kind.name or f"kind-{index}"
                else:
                    group = f"group-{rack * self.cpu_groups // racks}"
                state.add_host(
                    f"h{i:05d}",
                    Resources(kind.cores, kind.ram_mb, self.disk_gb),
                    rack=f"rack-{rack}",
                    cpu_group=group,
                    outer=() if flat else outer[i],
                )
                i += 1
        return state


def format_topology(topology: Sequence[tuple[str, int]]) -> str:
    """``block=4,rack=16``: the form ``simulate --topology`` reads."""
    return ",".join(f"{name}={count}" for name, count in topology)


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One scheduler configuration to replay a log under.

    ``runtime_factor`` scales every run time: seed 003's way of crediting
    cache-aware placement (0.9 for its -10 % adjustment).
    """

    name: str
    policy: Policy = dataclasses.field(default_factory=Policy)
    thresholds: Thresholds = UNLIMITED
    #: The class of every job; None: SyncHPC for parallel jobs, AsyncHPC for serial ones.
    app_class: AppClass | None = AppClass.NON_HPC
    runtime_factor: float = 1.0
    #: An interference model that admits hosts instead of the cache thresholds.
    admission: InterferenceModel | None = None
    #: The slowdown, in percent, ``admission`` may predict for any job.
    tolerance: float = 10.0
    #: The tenant's topology constraints on every job of several VMs
    #: (policies blind to topology ignore them).
    topology: topo.TopologySpec = NO_TOPOLOGY
    #: The placement sees the racks alone, not the levels outside them:
    #: seed 003's ordering on the same hosts.
    flat: bool = False
    #: Where the running VMs' cache scores come from (``[hpc_scheduler]
    #: cache_pressure_source``): declared, measured or max (see :mod:`.phases`).
    cache_source: str = "declared"
