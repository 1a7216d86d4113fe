"""A slow, literal Algorithm 1 that the fast engine must agree with.

This is the engine as first written: one Python object per host and a scan
of every host for every VM. ``tests/unit/core/test_algorithm.py`` checks on
random clusters and request streams that
:func:`hpc_nova_scheduler.core.algorithm.plan` returns exactly the plans
this one does. Only the cosine's tie resolution was changed, to the grid the
engine uses.

Original description:

Seed 003's Algorithm 1: where the k VMs of one application go.

One call plans a whole request, so the application is treated as one unit:
its VMs count as co-runners of each other, fill racks together and stay in
one processor group. The Nova adapter and the simulator both call
:func:`plan`; neither has a placement logic of its own.

Decisions where the paper is ambiguous (see seed-notes):

* Algorithm 1 sorts by host capacity, then stably by rack capacity; racks of
  equal capacity would then interleave their hosts and spread the
  application. The rack name is an extra key so that a rack is filled before
  the next one starts.
* SyncHPC runs MDOBP over that ordered list rack by rack: each VM goes to
  the first rack in the order with an admissible host, and there to the
  admissible host with the smallest residual after placement (then the
  earlier host). With the paper's VMs, whose shape matches the hosts', the
  cosine ties everywhere and this is exactly its tie-break; with other
  shapes the cosine would prefer emptier hosts and spread a tightly coupled
  application, which Algorithm 1's ordering exists to prevent.
* MDOBP (AsyncHPC, NonHPC) takes the cosine over CPU and RAM residuals
  normalised by each host's capacity, as the paper does. Disk only decides
  whether a VM fits: VMs use a sliver of a host's disk, and that nearly
  untouched dimension would tilt every angle towards empty hosts. Ties go to
  the smaller residual after placement (seed 004's tau), then to the earlier
  host in the list.
* The beta rule applies when the request or any VM on the host is SyncHPC.
* Processor groups: every group that can hold the whole request yields a
  plan, and the plan spanning the fewest racks, then hosts, wins.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence

from hpc_nova_scheduler.core.cluster import Host, Resources
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile

PACKING_COSINE = "cosine"
PACKING_LEAST_FREE_PES = "least_free_pes"
PACKING_MOST_FREE_PES = "most_free_pes"
PACKING_MOST_FREE_RAM = "most_free_ram"
PACKING_FIRST_FIT = "first_fit"
PACKINGS = (
    PACKING_COSINE,
    PACKING_LEAST_FREE_PES,
    PACKING_MOST_FREE_PES,
    PACKING_MOST_FREE_RAM,
    PACKING_FIRST_FIT,
)
_ROUND = 9


@dataclasses.dataclass(frozen=True)
class PlacementRequest:
    """k identical VMs of one application."""

    profile: ApplicationProfile
    demand: Resources
    count: int
    application_id: str

    @property
    def app_class(self) -> AppClass:
        return self.profile.app_class


@dataclasses.dataclass(frozen=True)
class Policy:
    """Which parts of the HPC-aware scheduler are switched on.

    The default is the full scheduler; the simulator turns parts off to
    reproduce the paper's baselines (for example ``Policy.nova_like()``).
    """

    classes: bool = True
    topology: bool = True
    homogeneity: bool = True
    cache_criteria: bool = True
    interference_table: bool = True
    packing: str = PACKING_COSINE

    def __post_init__(self) -> None:
        if self.packing not in PACKINGS:
            raise ValueError(f"unknown packing {self.packing!r}; use one of {', '.join(PACKINGS)}")

    @classmethod
    def nova_like(cls, packing: str = PACKING_LEAST_FREE_PES) -> Policy:
        """Placement blind to classes, topology, processors and interference."""
        return cls(
            classes=False,
            topology=False,
            homogeneity=False,
            cache_criteria=False,
            interference_table=False,
            packing=packing,
        )


@dataclasses.dataclass(frozen=True)
class Plan:
    """The host of each VM, in placement order."""

    hosts: tuple[str, ...]
    cpu_group: str | None
    racks: tuple[str, ...]

    def vms_per_host(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name in self.hosts:
            counts[name] = counts.get(name, 0) + 1
        return counts


class NoPlacement(Exception):
    """No placement satisfies the request; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Load:
    """A host's tentative state while one request is planned."""

    __slots__ = (
        "cache_total",
        "foreign",
        "foreign_apps",
        "foreign_extreme",
        "free",
        "has_own",
        "has_sync",
        "host",
        "placed",
        "position",
    )

    def __init__(self, host: Host, application_id: str, position: int) -> None:
        self.host = host
        self.position = position
        self.free = host.free
        self.placed = 0
        self.cache_total = 0.0
        self.has_sync = False
        self.has_own = False
        self.foreign = False
        self.foreign_extreme = False
        self.foreign_apps: set[str | None] = set()
        for vm in host.vms:
            self.cache_total += vm.cache_score
            self.has_sync |= vm.app_class is AppClass.SYNC_HPC
            if vm.application_id is not None and vm.application_id == application_id:
                self.has_own = True
                continue
            self.foreign = True
            self.foreign_extreme |= vm.app_class is AppClass.EXTREME_HPC
            self.foreign_apps.add(vm.app_name)

    def add(self, request: PlacementRequest) -> None:
        self.free = self.free - request.demand
        self.cache_total += request.profile.cache_score
        self.has_sync |= request.app_class is AppClass.SYNC_HPC
        self.placed += 1


class _Planner:
    def __init__(
        self,
        request: PlacementRequest,
        thresholds: Thresholds,
        table: InterferenceTable,
        policy: Policy,
    ) -> None:
        self.request = request
        self.thresholds = thresholds
        self.table = table
        self.policy = policy
        cls = request.app_class if policy.classes else AppClass.NON_HPC
        self.extreme = cls is AppClass.EXTREME_HPC
        self.topology_aware = policy.topology and cls.topology_aware

    # -- Algorithm 1, line 6 ------------------------------------------------

    def dedicated_ok(self, load: _Load) -> bool:
        if not self.policy.classes:
            return True
        if load.foreign_extreme:
            return False
        return not (self.extreme and load.foreign)

    def host_capacity(self, load: _Load) -> int:
        if not self.dedicated_ok(load):
            return 0
        return self.request.demand.copies_that_fit(load.free)

    def admits(self, load: _Load) -> bool:
        """Whether one more VM of the request may go on this host now."""
        request = self.request
        if not request.demand.fits_in(load.free) or not self.dedicated_ok(load):
            return False
        if self.policy.cache_criteria and not self.extreme:
            total = load.cache_total + request.profile.cache_score
            sync = load.has_sync or request.app_class is AppClass.SYNC_HPC
            if not self.thresholds.admits(total, sync):
                return False
        return not (
            self.policy.interference_table
            and self.table.conflicts_with_any(request.profile.app_name, load.foreign_apps)
        )

    # -- Algorithm 1, lines 7-12: the preliminary build plan -----------------

    def ordered(self, loads: list[_Load]) -> list[_Load]:
        if not self.topology_aware:
            return loads
        capacity = {id(load): self.host_capacity(load) for load in loads}
        rack_capacity: dict[str, int] = {}
        rack_own: dict[str, bool] = {}
        for load in loads:
            rack = load.host.rack_id
            rack_capacity[rack] = rack_capacity.get(rack, 0) + capacity[id(load)]
            rack_own[rack] = rack_own.get(rack, False) or load.has_own
        # An application growing through a server group continues in the
        # racks it already occupies.
        ordered = sorted(
            loads,
            key=lambda load: (
                not rack_own[load.host.rack_id],
                -rack_capacity[load.host.rack_id],
                load.host.rack_id,
                -capacity[id(load)],
                load.position,
            ),
        )
        for position, load in enumerate(ordered):
            load.position = position
        return ordered

    # -- Algorithm 1, lines 13-19: ExtremeHPC ---------------------------------

    def fill(self, loads: list[_Load]) -> list[_Load]:
        chosen: list[_Load] = []
        for load in loads:
            room = self.host_capacity(load)
            chosen.extend([load] * min(room, self.request.count - len(chosen)))
            if len(chosen) == self.request.count:
                return chosen
        raise NoPlacement(f"dedicated hosts hold only {len(chosen)} of {self.request.count} VMs")

    # -- Algorithm 1, lines 24-33: MDOBP --------------------------------------

    def packing_key(self) -> Callable[[_Load], tuple]:
        demand = self.request.demand
        packing = self.policy.packing
        if packing == PACKING_COSINE and self.topology_aware:
            return lambda load: _cosine_key(load.free, load.host.capacity, demand)[1:]
        if packing == PACKING_COSINE:
            return lambda load: _cosine_key(load.free, load.host.capacity, demand)
        if packing == PACKING_LEAST_FREE_PES:
            return lambda load: (load.free.vcpus,)
        if packing == PACKING_MOST_FREE_PES:
            return lambda load: (-load.free.vcpus,)
        if packing == PACKING_MOST_FREE_RAM:
            return lambda load: (-load.free.ram_mb,)
        return lambda load: ()

    def mdobp(self, loads: list[_Load]) -> list[_Load]:
        packing_key = self.packing_key()
        rack_rank: dict[str, int] = {}
        if self.topology_aware:
            for load in loads:
                rack_rank.setdefault(load.host.rack_id, len(rack_rank))
        chosen: list[_Load] = []
        for _ in range(self.request.count):
            best_key = None
            best = None
            for load in loads:
                if not self.admits(load):
                    continue
                key = (rack_rank.get(load.host.rack_id, 0), *packing_key(load), load.position)
                if best_key is None or key < best_key:
                    best_key, best = key, load
            if best is None:
                raise NoPlacement(
                    f"only {len(chosen)} of {self.request.count} VMs fit within capacity, "
                    "dedicated hosts, cache thresholds and the interference table"
                )
            best.add(self.request)
            chosen.append(best)
        return chosen

    def plan_group(self, hosts: Sequence[Host]) -> list[_Load]:
        loads = [_Load(host, self.request.application_id, i) for i, host in enumerate(hosts)]
        loads = self.ordered(loads)
        if self.extreme:
            chosen = self.fill(loads)
            for load in chosen:
                load.add(self.request)
            return chosen
        return self.mdobp(loads)


def _cosine_key(free: Resources, capacity: Resources, demand: Resources) -> tuple[float, float]:
    dot = norm_r = norm_q = after = 0.0
    for f, c, d in (
        (free.vcpus, capacity.vcpus, demand.vcpus),
        (free.ram_mb, capacity.ram_mb, demand.ram_mb),
    ):
        if c <= 0:
            continue
        r, q = f / c, d / c
        dot += r * q
        norm_r += r * r
        norm_q += q * q
        after += (r - q) * (r - q)
    cosine = 1.0 if norm_q == 0 or norm_r == 0 else dot / math.sqrt(norm_r * norm_q)
    return (-float(round(cosine * 2.0**30)), float(round(math.sqrt(after) * 2.0**30)))


def plan(
    request: PlacementRequest,
    hosts: Iterable[Host],
    thresholds: Thresholds,
    table: InterferenceTable | None = None,
    policy: Policy | None = None,
) -> Plan:
    """Place ``request.count`` VMs on ``hosts``; raise :class:`NoPlacement`.

    ``hosts`` are the candidates (Nova's filters have already removed hosts
    that cannot take the flavor at all); their order is the tie-breaker of
    last resort, so pass them in a stable order (by name) for reproducible
    plans.
    """
    if request.count < 1:
        raise NoPlacement("a request needs at least one VM")
    policy = policy or Policy()
    planner = _Planner(request, thresholds, table or InterferenceTable(), policy)
    hosts = list(hosts)
    if not hosts:
        raise NoPlacement("no candidate hosts")
    homogeneous = policy.homogeneity and request.app_class.needs_homogeneity
    if not homogeneous:
        return _as_plan(planner.plan_group(hosts), None)

    groups: dict[str, list[Host]] = {}
    for host in hosts:
        groups.setdefault(host.cpu_group, []).append(host)
    own_groups = {
        h.cpu_group for h in hosts for vm in h.vms if vm.application_id == request.application_id
    }
    if own_groups:
        # An application already running stays on its processor type.
        groups = {g: members for g, members in groups.items() if g in own_groups}
    best: tuple[tuple, Plan] | None = None
    reasons = []
    for group in sorted(groups):
        try:
            candidate = _as_plan(planner.plan_group(groups[group]), group)
        except NoPlacement as refusal:
            reasons.append(f"processor group {group or '(unnamed)'}: {refusal.reason}")
            continue
        rank = (len(candidate.racks), len(set(candidate.hosts)), group)
        if best is None or rank < best[0]:
            best = (rank, candidate)
    if best is None:
        raise NoPlacement(
            f"no single processor group can hold all {request.count} VMs; " + "; ".join(reasons)
        )
    return best[1]


def _as_plan(chosen: list[_Load], group: str | None) -> Plan:
    racks = tuple(dict.fromkeys(load.host.rack_id for load in chosen))
    return Plan(hosts=tuple(load.host.name for load in chosen), cpu_group=group, racks=racks)
