"""Seed 003's Algorithm 1: where the k VMs of one application go.

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
import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np

from hpc_nova_scheduler.core import domains as topo
from hpc_nova_scheduler.core.cluster import DIMENSIONS, Host, Resources, RunningVM
from hpc_nova_scheduler.core.columns import HostColumns
from hpc_nova_scheduler.core.criteria import EPSILON, InterferenceTable, Thresholds
from hpc_nova_scheduler.core.judge import HostJudge, Refusal
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile

PACKING_COSINE = "cosine"
PACKING_LEAST_FREE_PES = "least_free_pes"
PACKING_MOST_FREE_PES = "most_free_pes"
PACKING_MOST_FREE_RAM = "most_free_ram"
PACKING_FIRST_FIT = "first_fit"
#: Nova's default RAM and CPU weighers: free RAM plus free vCPUs, each
#: min-max normalised over the hosts that can take the VM, highest first.
PACKING_NOVA_WEIGHERS = "nova_weighers"
PACKINGS = (
    PACKING_COSINE,
    PACKING_LEAST_FREE_PES,
    PACKING_MOST_FREE_PES,
    PACKING_MOST_FREE_RAM,
    PACKING_FIRST_FIT,
    PACKING_NOVA_WEIGHERS,
)
#: Packings that judge a host by its own free and total resources alone
#: (Nova's weighers normalise over all candidates, so they do not).
BLIND_PACKINGS = tuple(p for p in PACKINGS if p != PACKING_NOVA_WEIGHERS)
#: Resolution of cosine scores: closer values tie (about 1e-9).
_GRID = 2.0**30
#: Floating-point slack when checking that a demand fits (as Resources does).
_SLACK = 1e-9


#: A plan of some engine (best_group compares them).
T = TypeVar("T")

#: A request without topology constraints.
NO_TOPOLOGY = topo.TopologySpec()


@dataclasses.dataclass(frozen=True)
class PlacementRequest:
    """k identical VMs of one application."""

    profile: ApplicationProfile
    demand: Resources
    count: int
    application_id: str
    #: The tenant's topology constraints (``hpc:topology_*``).
    topology: topo.TopologySpec = NO_TOPOLOGY
    #: Per level, outermost first, then the host level: the domains (named
    #: as :func:`~.columns.domain_ids` names them, hosts by name) where the
    #: application already runs, also on hosts that are not candidates any
    #: more. A server group's later members and a moved VM stay there.
    held_domains: tuple[frozenset[str], ...] = ()

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

    @property
    def blind(self) -> bool:
        """Whether hosts differ only in their free and total resources: no
        classes, racks, processor groups, thresholds or harmful pairs, and a
        packing that weighs each host on its own. Such a placement can be
        planned per class of identical hosts (:mod:`hpc_nova_scheduler.sim.host_classes`)."""
        return self.packing in BLIND_PACKINGS and not (
            self.classes
            or self.topology
            or self.homogeneity
            or self.cache_criteria
            or self.interference_table
        )

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
    #: The domains the plan uses at each topology level, outermost first
    #: (the last is ``racks``).
    domains: tuple[tuple[str, ...], ...] = ()

    def vms_per_host(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name in self.hosts:
            counts[name] = counts.get(name, 0) + 1
        return counts


class NoPlacement(Exception):
    """No placement satisfies the request; ``reason`` says why.

    ``placed``: how many of the request's VMs fit before the packing ran out
    of admissible hosts, where that is what failed. ``room``: the most VMs
    of the request any one place it may go (its processor group, a domain
    of its required level) holds now, where the planner knows it (None
    where not): what hosts must gain before the request can fit.
    """

    def __init__(self, reason: str, placed: int | None = None, room: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.placed = placed
        self.room = room


def _quantize(value):
    """Snap to a 2**-30 grid so that scores equal in exact arithmetic tie.

    Scaling by a power of two is exact and rint rounds half to even, so the
    vector and one-host computations agree to the bit.
    """
    return np.rint(value * _GRID)


def _cosine_keys(free: np.ndarray, capacity: np.ndarray, demand: np.ndarray) -> tuple:
    """(-cosine, residual after placement) of each row, over CPU and RAM."""
    return CosineKeys(capacity, demand)(free)


class CosineKeys:
    """:func:`_cosine_keys` of rows whose totals stay while their free
    resources change (hosts taking VM after VM): what reads only the totals
    and the demand is worked out once, the rest with the same operations in
    the same order."""

    def __init__(self, capacity: np.ndarray, demand: np.ndarray) -> None:
        #: Per dimension (CPU, RAM): hosts that have any, their totals (1
        #: where none, never read), and the demand's share of them.
        self._dims = []
        norm_q = 0.0
        for dim in (0, 1):
            c = capacity[:, dim]
            live = c > 0
            safe = np.where(live, c, 1.0)
            q = np.where(live, demand[dim] / safe, 0.0)
            norm_q = norm_q + q * q
            self._dims.append((live, safe, q))
        self._norm_q = norm_q
        self._no_demand = norm_q == 0

    def __call__(self, free: np.ndarray) -> tuple:
        dot = norm_r = after = 0.0
        for dim, (live, safe, q) in enumerate(self._dims):
            r = np.where(live, free[:, dim] / safe, 0.0)
            dot = dot + r * q
            norm_r = norm_r + r * r
            gap = r - q
            after = after + gap * gap
        with np.errstate(divide="ignore", invalid="ignore"):
            cosine = np.where(
                self._no_demand | (norm_r == 0), 1.0, dot / np.sqrt(norm_r * self._norm_q)
            )
        return -_quantize(cosine), _quantize(np.sqrt(after))


def _cosine_key_one(free, capacity, demand) -> tuple[float, float]:
    """:func:`_cosine_keys` for one host in Python floats, same operations, same order."""
    dot = norm_r = norm_q = after = 0.0
    for dim in (0, 1):
        c = capacity[dim]
        r = free[dim] / c if c > 0 else 0.0
        q = demand[dim] / c if c > 0 else 0.0
        dot = dot + r * q
        norm_r = norm_r + r * r
        norm_q = norm_q + q * q
        gap = r - q
        after = after + gap * gap
    cosine = 1.0 if norm_q == 0 or norm_r == 0 else dot / math.sqrt(norm_r * norm_q)
    return -float(round(cosine * _GRID)), float(round(math.sqrt(after) * _GRID))


def blind_keys(packing: str, free: np.ndarray, capacity: np.ndarray, demand: np.ndarray) -> tuple:
    """Sort keys of hosts under a packing that reads nothing but each host's
    own free and total resources, most significant first; the caller adds
    the tie-breaks (rack rank before, position after)."""
    if packing == PACKING_COSINE:
        return _cosine_keys(free, capacity, demand)
    if packing == PACKING_LEAST_FREE_PES:
        return (free[:, 0],)
    if packing == PACKING_MOST_FREE_PES:
        return (-free[:, 0],)
    if packing == PACKING_MOST_FREE_RAM:
        return (-free[:, 1],)
    return ()


def blind_key_one(packing: str, free, capacity, demand) -> tuple[float, ...]:
    """:func:`blind_keys` for one host in Python floats, to the bit."""
    if packing == PACKING_COSINE:
        return _cosine_key_one(free, capacity, demand)
    if packing == PACKING_LEAST_FREE_PES:
        return (free[0],)
    if packing == PACKING_MOST_FREE_PES:
        return (-free[0],)
    if packing == PACKING_MOST_FREE_RAM:
        return (-free[1],)
    return ()


def vm_copies(free: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """How many VMs of ``demand`` each row's free resources hold (0 for a
    demand of nothing)."""
    # Column by column: a 2-D fancy copy and a reduction along rows cost
    # more than the arithmetic on a few hundred rows.
    copies = None
    for dim, need in enumerate(demand.tolist()):
        if need > 0:
            each = np.floor((free[:, dim] + _SLACK) / need)
            copies = each if copies is None else np.minimum(copies, each)
    if copies is None:
        return np.zeros(len(free))
    return np.maximum(copies, 0)


def fits_many(free: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Whether one more VM of ``demand`` fits in each row's free resources."""
    fits = None
    for dim, need in enumerate(demand.tolist()):
        if need > 0:
            each = need <= free[:, dim] + _SLACK
            fits = each if fits is None else fits & each
    return np.ones(len(free), dtype=bool) if fits is None else fits


def fits_one(free: Sequence[float], demand: Sequence[float]) -> bool:
    """:func:`fits_many` for one host in Python floats, to the bit."""
    # (A loop, not all() over a generator: the greedy asks this for every
    # VM it places.)
    for d, f in zip(demand, free, strict=True):  # noqa: SIM110
        if d > 0 and not d <= f + _SLACK:
            return False
    return True


@dataclasses.dataclass(frozen=True)
class CacheRule:
    """Seed 003's cache thresholds for one request: alpha on every host,
    beta where SyncHPC runs or arrives. The planner and the simulator's
    state classes judge hosts, one or many, with these same operations."""

    thresholds: Thresholds
    #: The request's cache score, and whether it is SyncHPC.
    score: float
    sync_request: bool

    def admits_many(self, cache: np.ndarray, sync: np.ndarray) -> np.ndarray:
        """Whether one more VM stays within the thresholds on each host."""
        total = cache + self.score
        ok = ~(total > self.thresholds.alpha + EPSILON)
        return ok & ~((sync | self.sync_request) & (total > self.thresholds.beta + EPSILON))

    def admits_one(self, cache: float, sync: bool) -> bool:
        """:meth:`admits_many` for one host in Python floats, to the bit."""
        total = cache + self.score
        if total > self.thresholds.alpha + EPSILON:
            return False
        return not ((sync or self.sync_request) and total > self.thresholds.beta + EPSILON)

    def room(self, room: np.ndarray, cache: np.ndarray, sync: np.ndarray) -> np.ndarray:
        """``room`` (VMs per host) less what the thresholds leave."""
        score = self.score
        if score <= 0:
            # Its VMs add nothing to a host's total: a host holds all its
            # room, or none where the total already breaks a threshold.
            return np.where(self.admits_many(cache, sync), room, 0.0)
        if self.sync_request and self.thresholds.beta <= self.thresholds.alpha:
            # Beta holds on every host, and no looser than alpha: alone it binds.
            beta = np.floor((self.thresholds.beta + EPSILON - cache) / score)
            return np.minimum(room, np.maximum(beta, 0))
        alpha = np.floor((self.thresholds.alpha + EPSILON - cache) / score)
        room = np.minimum(room, np.maximum(alpha, 0))
        beta = np.floor((self.thresholds.beta + EPSILON - cache) / score)
        return np.where(sync | self.sync_request, np.minimum(room, np.maximum(beta, 0)), room)


def _normalised(values: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1] as nova.weights.normalize does; all equal: all 0."""
    low, high = values.min(), values.max()
    if high == low:
        return np.zeros_like(values)
    return (values - low) / (high - low)


class _HostLoad:
    """A host that received VMs of the request being planned."""

    __slots__ = ("cache", "capacity", "free", "sync")

    def __init__(self, free: list[float], capacity: list[float], cache: float, sync: bool) -> None:
        self.free = free
        self.capacity = capacity
        self.cache = cache
        self.sync = sync


class _Planner:
    """One request against the columns: the arrays Algorithm 1 reads."""

    def __init__(
        self,
        request: PlacementRequest,
        columns: HostColumns,
        thresholds: Thresholds,
        table: InterferenceTable,
        policy: Policy,
        rule: HostJudge | None = None,
    ) -> None:
        self.request = request
        self.columns = columns
        self.thresholds = thresholds
        self.policy = policy
        cls = request.app_class if policy.classes else AppClass.NON_HPC
        self.extreme = cls is AppClass.EXTREME_HPC
        self.topology_aware = policy.topology and cls.topology_aware
        self.sync_request = request.app_class is AppClass.SYNC_HPC
        levels = columns.levels
        #: The tenant's constraints, as depths into ``columns.domain``
        #: (blind policies ignore them, as they ignore racks).
        spec = request.topology if policy.topology else NO_TOPOLOGY
        self.spec = spec
        self.required = _depth(topo.SPEC_REQUIRED, spec.required, levels)
        self.preferred = _depth(topo.SPEC_PREFERRED, spec.preferred, levels)
        self.segment_level = _depth(topo.SPEC_SEGMENT_LEVEL, spec.segment_level, levels)
        #: Whether the plan follows the topology: the class asks for it, or the tenant.
        self.ranked = self.topology_aware or not spec.empty
        #: BestFit at every level; a cloud with seed 003's single level and a
        #: request without constraints keeps seed 003's largest rack first.
        self.best_fit = len(levels) > 1 or not spec.empty
        #: The level whose domains the packing fills one after another: the
        #: rack, or the host when the tenant constrains hosts.
        deepest = max(
            (d for d in (self.required, self.preferred, self.segment_level) if d is not None),
            default=0,
        )
        self.rank_level = len(levels) if deepest == len(levels) else len(levels) - 1
        #: The demand as a tuple for one-host rescoring, as an array for the columns.
        self.demand_tuple = request.demand.as_tuple()
        self.demand = np.array(self.demand_tuple, dtype=float)
        self.dims = self.demand > 0
        size = len(columns)

        self.own_vms = own_vms = np.zeros(size, dtype=np.int64)
        self.own_extreme = own_extreme = np.zeros(size, dtype=np.int64)
        self.own_rows = columns.by_application.get(request.application_id, {})
        for row, (vms, extreme) in self.own_rows.items():
            own_vms[row] = vms
            own_extreme[row] = extreme
        self.has_own = own_vms > 0
        # Algorithm 1, line 6: dedicated hosts.
        if policy.classes:
            foreign = columns.vms > own_vms
            dedicated = ~(columns.extreme_vms > own_extreme)
            if self.extreme:
                dedicated &= ~foreign
        else:
            dedicated = np.ones(size, dtype=bool)
        #: How many VMs of the request fit in each host's free resources.
        self.copies = copies = vm_copies(columns.free, self.demand)
        #: How many VMs of the request each host could take, dedication allowing.
        self.capacity = np.where(dedicated, copies, 0).astype(np.int64)
        self.table = table
        self.conflict = self._conflicts(table, size)
        #: What placing VMs of this request never changes: dedication, harmful pairs.
        self.fixed_ok = dedicated & ~self.conflict
        #: An interference model's admission replaces the cache thresholds.
        self.rule = None if self.extreme else rule
        #: Why the model refused each host it refused (row -> reason).
        self.judged: dict[int, str] = {}
        #: Hosts other applications hold as ExtremeHPC (row -> owner), built
        #: when a refusal first names one.
        self._owners: dict[int, str] | None = None
        if self.rule is not None:
            self.fixed_ok &= self._model_admits(self.rule)
        #: The cache thresholds, where they judge this request: not for
        #: ExtremeHPC (its hosts are its own), nor under a model.
        self.cache_rule = None
        if policy.cache_criteria and not self.extreme and self.rule is None:
            self.cache_rule = CacheRule(thresholds, request.profile.cache_score, self.sync_request)
        #: Per level, the codes of the domains the application holds.
        self.held = self._held_codes()
        self._join_segment()

    def _held_codes(self) -> list[np.ndarray | None] | None:
        """Per level (the host level last), codes of the held domains among the candidates."""
        if not any(self.request.held_domains):
            return None
        columns = self.columns
        depth = len(columns.levels)
        held: list[np.ndarray | None] = []
        for level in range(depth + 1):
            names = (
                self.request.held_domains[level]
                if level < len(self.request.held_domains)
                else frozenset()
            )
            if level == depth:
                found = [columns.index[name] for name in names if name in columns.index]
            else:
                known = columns.domain_names[level]
                wanted = sorted(names)
                found = [
                    int(i)
                    for i, name in zip(np.searchsorted(known, wanted), wanted, strict=True)
                    if i < len(known) and known[i] == name
                ]
            held.append(np.array(sorted(found), dtype=np.int64) if found else None)
        return held

    def holds(self, level: int) -> bool:
        """Whether the application runs in some domain of ``level`` already,
        among the candidates or not."""
        held = self.request.held_domains
        return bool(self.has_own.any()) or (level < len(held) and bool(held[level]))

    def _held_from(self, top: int, bottom: int | None = None):
        """The held codes aligned with ``columns.domain[top:bottom]`` (the levels by default)."""
        if self.held is None:
            return None
        return self.held[top : len(self.columns.levels) if bottom is None else bottom]

    def _join_segment(self) -> None:
        """A request the segment size does not divide is refused, but for one
        VM of a running application (a move, a late member): it joins a
        segment-level domain that holds the application."""
        size = self.spec.segment
        if size is None or self.request.count % size == 0:
            return
        if self.request.count == 1 and self.holds(self.segment_level):
            self.required = self.segment_level
            self.spec = dataclasses.replace(
                self.spec, required=self.spec.segment_level, segment=None, segment_level=None
            )
            return
        raise NoPlacement(
            f"{topo.SPEC_SEGMENT}: segments of {size} VMs do not divide a request of "
            f"{self.request.count} VMs"
        )

    def _model_admits(self, rule: HostJudge) -> np.ndarray:
        """Whether the model admits the request's application on each host.

        Judged with as many VMs of the request as the host could take, so
        that the answer holds however many the packing puts there.
        """
        columns = self.columns
        per_row: dict[int, dict[str, list]] = {}
        for app, rows in columns.by_application.items():
            for row, (vms, _) in rows.items():
                per_row.setdefault(row, {})[app] = [vms, None]
        for (app, name), rows in columns.by_application_name.items():
            for row in rows:
                per_row[row][app][1] = name
        ok = np.zeros(len(columns), dtype=bool)
        own_id = self.request.application_id
        own_name = self.request.profile.app_name
        rows = np.flatnonzero(self.fixed_ok & (self.capacity > 0)).tolist()
        hosts = []
        for row in rows:
            apps = per_row.get(row, {})
            known = sum(vms for vms, _ in apps.values())
            found: list[tuple[str | None, int]] = [(None, 1)] * int(columns.vms[row] - known)
            found += [(name, vms) for app, (vms, name) in apps.items() if app != own_id]
            own = apps.get(own_id, [0, None])[0] + int(self.capacity[row])
            found.append((own_name, own))
            hosts.append(found)
        # One question for every candidate host: a learned model answers a
        # batch in about the time it takes to answer one.
        types = [columns.cpu_groups[row] for row in rows]
        for row, reason in zip(rows, rule.refusals(hosts, types), strict=True):
            ok[row] = reason is None
            if reason is not None:
                self.judged[row] = reason
        return ok

    def _conflicts(self, table: InterferenceTable, size: int) -> np.ndarray:
        conflict = np.zeros(size, dtype=bool)
        name = self.request.profile.app_name
        if not self.policy.interference_table or name is None:
            return conflict
        columns = self.columns
        app = self.request.application_id
        for pair in table.harmful:
            if name not in pair:
                continue
            other = pair[1] if pair[0] == name else pair[0]
            own = columns.by_application_name.get((app, other), {})
            for row, vms in columns.by_name.get(other, {}).items():
                if vms > own.get(row, 0):
                    conflict[row] = True
        return conflict

    # -- Algorithm 1, line 6 and meetsInterferenceCriteria ------------------

    def admissible(
        self, fixed_ok: np.ndarray, free: np.ndarray, cache: np.ndarray, sync: np.ndarray
    ) -> np.ndarray:
        """Whether one more VM of the request may go on each host now."""
        ok = fixed_ok & fits_many(free, self.demand)
        if self.cache_rule is not None:
            ok &= self.cache_rule.admits_many(cache, sync)
        return ok

    # -- Algorithm 1, lines 7-12: the preliminary build plan -----------------

    def room(self) -> np.ndarray:
        """How many VMs of the request each host can take: its capacity where
        the fixed rules admit it, less what the cache thresholds leave."""
        room = np.where(self.fixed_ok, self.capacity, 0).astype(float)
        if self.cache_rule is None:
            return room
        return self.cache_rule.room(room, self.columns.cache_total, self.columns.sync_vms > 0)

    def ordered(self, rows: np.ndarray, need: int | None = None) -> np.ndarray:
        if not self.ranked:
            return rows
        if self.best_fit:
            return topo.domain_order().arrange(
                self.columns.domain[: len(self.columns.levels)],
                self.room(),
                self.has_own,
                rows,
                self.request.count if need is None else need,
                fit_items=self.rank_level == len(self.columns.levels),
                held=self._held_from(0),
            )
        capacity = self.capacity[rows]
        rack = self.columns.rack[rows]
        racks = len(self.columns.rack_names)
        rack_capacity = np.bincount(rack, weights=capacity, minlength=racks)
        # An application growing through a server group continues in the
        # racks it already occupies.
        rack_own = np.bincount(rack, weights=self.has_own[rows], minlength=racks) > 0
        order = np.lexsort(
            (np.arange(len(rows)), -capacity, rack, -rack_capacity[rack], ~rack_own[rack])
        )
        return rows[order]

    # -- Algorithm 1, lines 13-19: ExtremeHPC ---------------------------------

    def fill(self, rows: np.ndarray) -> list[int]:
        chosen: list[int] = []
        capacity = self.capacity[rows]
        for j in np.flatnonzero(capacity > 0).tolist():
            take = min(int(capacity[j]), self.request.count - len(chosen))
            chosen.extend([int(rows[j])] * take)
            if len(chosen) == self.request.count:
                return chosen
        raise NoPlacement(
            f"dedicated hosts hold only {len(chosen)} of {self.request.count} VMs", len(chosen)
        )

    # -- Algorithm 1, lines 24-33: MDOBP --------------------------------------

    def keys(self, rack_rank: np.ndarray, free: np.ndarray, capacity: np.ndarray, positions):
        """Sort keys, most significant first; the smallest tuple wins."""
        if self.policy.packing == PACKING_COSINE and self.topology_aware:
            return (rack_rank, _cosine_keys(free, capacity, self.demand)[1], positions)
        return (rack_rank, *blind_keys(self.policy.packing, free, capacity, self.demand), positions)

    def mdobp(self, rows: np.ndarray) -> list[int]:
        columns = self.columns
        size = len(rows)
        positions = np.arange(size, dtype=float)
        if self.ranked:
            _, first, inverse = np.unique(
                columns.domain[self.rank_level][rows], return_index=True, return_inverse=True
            )
            rack_rank = np.argsort(np.argsort(first))[inverse].astype(float)
        else:
            rack_rank = np.zeros(size)
        # Working copies: only the hosts that receive VMs change.
        free = columns.free[rows]
        capacity = columns.capacity[rows]
        cache = columns.cache_total[rows]
        sync = columns.sync_vms[rows] > 0
        fixed_ok = self.fixed_ok[rows]
        if self.policy.packing == PACKING_NOVA_WEIGHERS:
            return self.weighed(rows, rack_rank, positions, free, cache, sync, fixed_ok)
        ok = self.admissible(fixed_ok, free, cache, sync)
        keys = self.keys(rack_rank, free, capacity, positions)
        candidates = np.flatnonzero(ok)
        ranked = candidates[np.lexsort(tuple(k[candidates] for k in reversed(keys)))].tolist()
        # A host's key changes only when it receives a VM: the rest keep their
        # rank, and the changed ones wait in a heap. Changed hosts are kept
        # as Python floats (the same IEEE operations as the arrays), because
        # a request of hundreds of VMs would pay numpy's per-call cost per VM.
        changed: list[tuple[tuple, int]] = []
        touched: dict[int, _HostLoad] = {}
        demand = self.demand_tuple
        score = self.request.profile.cache_score
        cursor = 0
        chosen: list[int] = []
        for _ in range(self.request.count):
            while cursor < len(ranked) and ranked[cursor] in touched:
                cursor += 1
            best = None
            if cursor < len(ranked):
                j = ranked[cursor]
                best = (tuple(float(k[j]) for k in keys), j)
            if changed and (best is None or changed[0] < best):
                best = heapq.heappop(changed)
            if best is None:
                raise self.short_of(len(chosen))
            j = best[1]
            load = touched.get(j)
            if load is None:
                load = touched[j] = _HostLoad(
                    free[j].tolist(), capacity[j].tolist(), float(cache[j]), bool(sync[j])
                )
            load.free = [f - d for f, d in zip(load.free, demand, strict=True)]
            load.cache += score
            load.sync = load.sync or self.sync_request
            if fixed_ok[j] and self.admits_one(load):
                key = self.key_one(float(rack_rank[j]), load, float(j))
                heapq.heappush(changed, (key, j))
            chosen.append(int(rows[j]))
        return chosen

    def weighed(self, rows, rack_rank, positions, free, cache, sync, fixed_ok) -> list[int]:
        """Nova's weighing, one VM at a time: normalising over the hosts that
        can take the VM makes every host's weight depend on all the others,
        so each VM weighs them all again (as Nova does each round)."""
        chosen: list[int] = []
        for _ in range(self.request.count):
            candidates = np.flatnonzero(self.admissible(fixed_ok, free, cache, sync))
            if not candidates.size:
                raise self.short_of(len(chosen))
            weight = _normalised(free[candidates, 1]) + _normalised(free[candidates, 0])
            j = candidates[np.lexsort((positions[candidates], -weight, rack_rank[candidates]))[0]]
            free[j] -= self.demand
            cache[j] += self.request.profile.cache_score
            sync[j] |= self.sync_request
            chosen.append(int(rows[j]))
        return chosen

    def short_of(self, placed: int) -> NoPlacement:
        judge = f"interference model {self.rule.name}" if self.rule else "cache thresholds"
        return NoPlacement(
            f"only {placed} of {self.request.count} VMs fit within capacity, "
            f"dedicated hosts, {judge} and the interference table",
            placed,
        )

    def admits_one(self, load: _HostLoad) -> bool:
        """:meth:`admissible` for one changed host (fixed conditions aside)."""
        if not fits_one(load.free, self.demand_tuple):
            return False
        return self.cache_rule is None or self.cache_rule.admits_one(load.cache, load.sync)

    # -- why a host takes no VM: the operator's log ---------------------------

    def refusal(self, row: int) -> Refusal | None:
        """Why one VM of the request may not go on host ``row`` now; None if it may.

        The same rules as :meth:`admissible` and the fixed conditions, in
        the order Algorithm 1 applies them, each with its value and limit.
        """
        columns = self.columns
        host = columns.names[row]
        if self.policy.classes:
            if columns.extreme_vms[row] > self.own_extreme[row]:
                return Refusal(host, "ExtremeHPC", f"ExtremeHPC host of {self._owner(row)}")
            others = int(columns.vms[row] - self.own_vms[row])
            if self.extreme and others:
                return Refusal(
                    host,
                    "ExtremeHPC",
                    f"{others} VM(s) of other applications; ExtremeHPC needs the host to itself",
                )
        if not self.dims.any():
            return Refusal(host, "resources", "the flavor asks for no VCPU, memory or disk")
        if self.copies[row] < 1:
            free, demand = columns.free[row], self.demand
            short = next((d for d in range(len(demand)) if demand[d] > free[d] + _SLACK), 0)
            return Refusal(
                host, "resources", f"free {DIMENSIONS[short]} {free[short]:g} < {demand[short]:g}"
            )
        if self.conflict[row]:
            name = self.request.profile.app_name
            partners = sorted(
                other
                for pair in self.table.harmful
                if name in pair
                for other in pair
                if other != name and row in columns.by_name.get(other, {})
            ) or [name]
            return Refusal(
                host,
                "interference table",
                f"harmful pair {name} + {partners[0]} (interference table)",
            )
        if row in self.judged:
            return Refusal(host, f"model {self.rule.name}", self.judged[row])
        if self.cache_rule is not None:
            total = columns.cache_total[row] + self.request.profile.cache_score
            if total > self.thresholds.alpha + EPSILON:
                return Refusal(host, "alpha", f"cache {total:g} > alpha {self.thresholds.alpha:g}")
            sync = columns.sync_vms[row] > 0 or self.sync_request
            if sync and total > self.thresholds.beta + EPSILON:
                return Refusal(
                    host, "beta", f"cache {total:g} > beta {self.thresholds.beta:g} (SyncHPC)"
                )
        return None

    def _owner(self, row: int) -> str:
        """The other application whose ExtremeHPC VMs hold host ``row``: its name, or id."""
        if self._owners is None:
            self._owners = self._extreme_owners()
        return self._owners.get(row, "another application")

    def _extreme_owners(self) -> dict[int, str]:
        """Each host another application holds as ExtremeHPC, with that application.

        Built once for all hosts: asked host by host, the search would scan
        every application for every host a refused request explains.
        """
        names: dict[tuple[str, int], str] = {}
        for (app_id, name), rows in self.columns.by_application_name.items():
            for row in rows:
                names.setdefault((app_id, row), name)
        own = self.request.application_id
        owners: dict[int, str] = {}
        for app, rows in self.columns.by_application.items():
            if app == own:
                continue
            for row, (_, extreme) in rows.items():
                if extreme > 0 and row not in owners:
                    owners[row] = names.get((app, row), app)
        return owners

    def key_one(self, rack_rank: float, load: _HostLoad, position: float) -> tuple:
        """:meth:`keys` for one changed host, to the bit."""
        if self.policy.packing == PACKING_COSINE and self.topology_aware:
            after = _cosine_key_one(load.free, load.capacity, self.demand_tuple)[1]
            return (rack_rank, after, position)
        keys = blind_key_one(self.policy.packing, load.free, load.capacity, self.demand_tuple)
        return (rack_rank, *keys, position)

    def pack(self, rows: np.ndarray) -> list[int]:
        """Algorithm 1's packing over hosts already in the order to fill them."""
        return self.fill(rows) if self.extreme else self.mdobp(rows)

    def plan_group(self, rows: np.ndarray, group: str | None) -> Plan:
        chosen = self.pack(self.ordered(rows)) if self.spec.empty else self.constrained(rows)
        columns = self.columns
        names = columns.names
        domains = tuple(
            tuple(
                dict.fromkeys(
                    columns.domain_names[level][columns.domain[level][row]] for row in chosen
                )
            )
            for level in range(len(columns.levels))
        )
        return Plan(
            hosts=tuple(names[row] for row in chosen),
            cpu_group=group,
            racks=tuple(dict.fromkeys(columns.rack_ids[row] for row in chosen)),
            domains=domains,
        )

    # -- the tenant's topology constraints ------------------------------------

    def constrained(self, rows: np.ndarray) -> list[int]:
        """Plan under ``hpc:topology_required`` / ``_preferred`` / ``_segment``."""
        count = self.request.count
        if self.required is None:
            return self.within(rows, self.room())
        level = self.required
        codes = self.columns.domain
        room = self.room()
        scope = rows
        depth = len(self.columns.levels)
        held = self.held[level] if self.held is not None else None
        if self.holds(level):
            # Later members join the domain their application already holds,
            # even where none of its hosts is a candidate any more (then
            # nothing is, and the request is refused).
            # The held domains, where the caller names them, are the whole
            # truth (a moved VM's own segment); else the application's rows.
            given = level < len(self.request.held_domains) and self.request.held_domains[level]
            if given:
                taken = held if held is not None else np.zeros(0, dtype=np.int64)
            else:
                taken = np.unique(codes[level][rows[self.has_own[rows]]])
            scope = rows[np.isin(codes[level][rows], taken)]
        if level < depth:
            candidates = topo.domain_order().tightest_first(
                codes[:depth], room, self.has_own, scope, level, count, self._held_from(0)
            )
        else:
            candidates = self._hosts_by_fit(scope, room, count)
        name = self.spec.required

        def largest_room() -> float:
            if not scope.size:
                return 0.0
            _, rooms, _ = topo.domain_rooms(codes[level], room, self.has_own, scope)
            return float(rooms.max())

        return first_domain_holding(
            candidates,
            lambda domain: self.within(scope[codes[level][scope] == domain], room, top=level + 1),
            name,
            count,
            largest_room,
            f"the {name} that holds the application" if scope is not rows else f"one {name}",
        )

    @staticmethod
    def _hosts_by_fit(scope: np.ndarray, room: np.ndarray, need: float) -> list[int]:
        """Hosts that hold ``need`` VMs, tightest first (``required = host``)."""
        fits = scope[room[scope] >= need]
        return fits[np.lexsort((fits, room[fits]))].tolist()

    def within(self, rows: np.ndarray, room: np.ndarray, top: int = 0) -> list[int]:
        """Pack the whole request into ``rows``, which share one domain above ``top``."""
        if self.spec.segment is None:
            return self.pack(self.arranged(rows, room, top, self.request.count))
        return self.segments(rows, room, top)

    def arranged(self, rows: np.ndarray, room: np.ndarray, top: int, count: int) -> np.ndarray:
        """``rows`` (in one domain above ``top``) in BestFit order for ``count`` VMs."""
        return topo.domain_order().arrange(
            self.columns.domain[top : len(self.columns.levels)],
            room,
            self.has_own,
            rows,
            count,
            fit_items=self.rank_level == len(self.columns.levels),
            held=self._held_from(top),
        )

    def segments(self, rows: np.ndarray, room: np.ndarray, top: int) -> list[int]:
        """Segments of N VMs, each inside one domain of the segment level."""
        size, level = self.spec.segment, self.segment_level
        codes = self.columns.domain
        wanted = self.request.count // size
        held = self.held[level] if self.held is not None else None
        domains, rooms, owned = topo.domain_rooms(codes[level], room, self.has_own, rows, held)
        # Each segment-level domain as one item of a smaller tree.
        first = np.searchsorted(np.sort(codes[level][rows]), domains)
        members_sorted = rows[np.argsort(codes[level][rows], kind="stable")]
        leaders = members_sorted[first]
        item_room = np.zeros(len(self.columns))
        item_room[leaders] = np.floor(rooms / size + topo.SLACK)
        item_own = np.zeros(len(self.columns), dtype=bool)
        item_own[leaders] = owned
        order = topo.domain_order().arrange(
            codes[top:level],
            item_room,
            item_own,
            leaders,
            wanted,
            fit_items=True,
            held=self._held_from(top, level),
        )
        chosen: list[int] = []
        placed = 0
        for leader in order.tolist():
            if placed == wanted:
                break
            take = min(wanted - placed, int(item_room[leader]))
            if take <= 0:
                continue
            members = rows[codes[level][rows] == codes[level][leader]]
            got = self.pack_up_to(members, room, level + 1, take * size)
            whole = len(got) // size
            chosen.extend(got[: whole * size])
            placed += whole
        if placed < wanted:
            raise NoPlacement(
                f"only {placed} of {wanted} segments of {size} VMs fit, each inside one "
                f"{self.spec.segment_level} ({topo.SPEC_SEGMENT}={size})",
                placed * size,
            )
        return chosen

    def pack_up_to(self, rows: np.ndarray, room: np.ndarray, top: int, count: int) -> list[int]:
        """As many of ``count`` VMs as fit in ``rows`` (Algorithm 1's packing
        is greedy, so a shorter run is a prefix of a longer one)."""
        planner = self if count == self.request.count else self.for_count(count)
        order = self.arranged(rows, room, top, count)
        try:
            return planner.pack(order)
        except NoPlacement as short:
            if not short.placed:
                return []
            return self.for_count(short.placed).pack(order)

    def for_count(self, count: int) -> _Planner:
        """This planner for ``count`` VMs of the same request (the packing
        reads the count only to know when to stop)."""
        other = _Planner.__new__(_Planner)
        other.__dict__.update(self.__dict__)
        other.request = dataclasses.replace(self.request, count=count)
        return other


def _depth(key: str, level: str | None, levels: tuple[str, ...]) -> int | None:
    """The depth of a level the tenant named; the host is the deepest."""
    if level is None:
        return None
    if level == topo.HOST_LEVEL:
        return len(levels)
    if level not in levels:
        raise NoPlacement(
            f"{key}: unknown topology level {level!r}; this cloud's levels are "
            f"{', '.join((*levels, topo.HOST_LEVEL))}"
        )
    return levels.index(level)


def _inside_constraints(
    spec: topo.TopologySpec, columns: HostColumns, chosen: Plan, rows: np.ndarray
) -> np.ndarray:
    """``rows`` that keep the plan's required domain and, when the plan's
    segments share one domain, that domain: where a VM of the plan may be
    rebuilt without breaking the tenant's constraints."""
    names = [(topo.SPEC_REQUIRED, spec.required)]
    if spec.segment is not None:
        names.append((topo.SPEC_SEGMENT_LEVEL, spec.segment_level))
    for key, name in names:
        level = _depth(key, name, columns.levels)
        if level is None:
            continue
        held = {int(columns.domain[level][columns.index[host]]) for host in chosen.hosts}
        if len(held) != 1:
            return rows[:0]
        rows = rows[columns.domain[level][rows] == held.pop()]
    return rows


def plan(
    request: PlacementRequest,
    hosts: Iterable[Host] | HostColumns,
    thresholds: Thresholds,
    table: InterferenceTable | None = None,
    policy: Policy | None = None,
    rule: HostJudge | None = None,
    levels: Sequence[str] = topo.DEFAULT_LEVELS,
) -> Plan:
    """Place ``request.count`` VMs on ``hosts``; raise :class:`NoPlacement`.

    ``hosts`` are the candidates (Nova's filters have already removed hosts
    that cannot take the flavor at all), as :class:`Host` snapshots or as
    :class:`HostColumns` kept by the caller; their order is the tie-breaker
    of last resort, so pass them in a stable order (by name) for
    reproducible plans. ``hosts`` is never modified. ``levels``: the
    topology's levels, outermost first, when ``hosts`` are snapshots (each
    host's ``outer`` values and ``rack`` are its domains at them).
    """
    if request.count < 1:
        raise NoPlacement("a request needs at least one VM")
    policy = policy or Policy()
    columns = hosts if isinstance(hosts, HostColumns) else HostColumns.from_hosts(hosts, levels)
    if not len(columns):
        raise NoPlacement("no candidate hosts")
    planner = _Planner(request, columns, thresholds, table or InterferenceTable(), policy, rule)
    homogeneous = policy.homogeneity and request.app_class.needs_homogeneity
    if not homogeneous:
        return planner.plan_group(np.arange(len(columns)), None)

    groups = columns.rows_by_group()
    own_groups = {columns.cpu_groups[row] for row in planner.own_rows}
    if own_groups:
        # An application already running stays on its processor type.
        groups = {g: members for g, members in groups.items() if g in own_groups}

    def in_group(group: str) -> tuple[Plan, tuple]:
        candidate = planner.plan_group(groups[group], group)
        spans = tuple(len(d) for d in candidate.domains) or (len(candidate.racks),)
        return candidate, (*spans, len(set(candidate.hosts)))

    return best_group(request.count, sorted(groups), in_group)


def first_domain_holding(
    domains: Iterable[int],
    plan_in: Callable[[int], T],
    level: str,
    count: int,
    largest_room: Callable[[], float],
    where: str | None = None,
) -> T:
    """The plan in the first of ``domains`` (of the required ``level``,
    tried in order) that holds all ``count`` VMs; else :class:`NoPlacement`
    saying the largest room any domain of the level had (``where``: which
    domain that is, one of the level's by default)."""
    tried = 0
    for domain in domains:
        try:
            return plan_in(domain)
        except NoPlacement:
            tried += 1
    raise NoPlacement(
        f"no {level} can hold all {count} VMs ({topo.SPEC_REQUIRED}={level}): "
        f"{where or f'one {level}'} has room for {largest_room():g} at most"
        + (f"; {tried} that seemed to have room did not fit" if tried else ""),
        0,
    )


def best_group(count: int, groups: Iterable[str], plan_in: Callable[[str], tuple[T, tuple]]) -> T:
    """The plan of the processor group whose plan spans the fewest domains
    at every level, outermost first, then the fewest hosts, then the group
    with the first name. ``plan_in(group)`` returns a plan and that rank, or
    raises :class:`NoPlacement`; so does this when no group holds the request."""
    best: tuple[tuple, T] | None = None
    reasons = []
    rooms: list[int | None] = []
    for group in groups:
        try:
            candidate, rank = plan_in(group)
        except NoPlacement as refusal:
            reasons.append(f"processor group {group or '(unnamed)'}: {refusal.reason}")
            rooms.append(refusal.room)
            continue
        if best is None or (*rank, group) < best[0]:
            best = ((*rank, group), candidate)
    if best is None:
        known = None not in rooms and bool(rooms)
        raise NoPlacement(
            f"no single processor group can hold all {count} VMs; " + "; ".join(reasons),
            room=max(rooms) if known else None,
        )
    return best[1]


def alternates(
    request: PlacementRequest,
    hosts: Iterable[Host] | HostColumns,
    chosen: Plan,
    thresholds: Thresholds,
    table: InterferenceTable | None = None,
    policy: Policy | None = None,
    limit: int = 2,
    rule: HostJudge | None = None,
    levels: Sequence[str] = topo.DEFAULT_LEVELS,
) -> tuple[str, ...]:
    """Hosts outside ``chosen`` where any one VM of the request may be rebuilt.

    Nova's conductor retries a VM whose build failed on the alternates it
    was given, without asking the scheduler again. An alternate therefore
    has to keep every rule with the whole plan in place: it is in the plan's
    processor group, dedicated or free of dedicated VMs as the class needs,
    free of harmful partners, within the cache thresholds, and has room for
    one VM. They come in Algorithm 1's order (the plan's racks first, then
    the roomiest racks), at most ``limit`` of them.
    """
    if limit <= 0:
        return ()
    policy = policy or Policy()
    columns = hosts if isinstance(hosts, HostColumns) else HostColumns.from_hosts(hosts, levels)
    after = columns.copy()
    profile = request.profile
    for name in chosen.hosts:
        vm = RunningVM(
            uuid=f"{request.application_id}#planned",
            app_class=profile.app_class,
            cache_score=profile.cache_score,
            app_name=profile.app_name,
            application_id=request.application_id,
        )
        after.place(after.index[name], vm, request.demand)
    one = dataclasses.replace(request, count=1)
    planner = _Planner(one, after, thresholds, table or InterferenceTable(), policy, rule)
    homogeneous = policy.homogeneity and request.app_class.needs_homogeneity
    rows = np.array(
        [
            row
            for row, group in enumerate(after.cpu_groups)
            if not homogeneous or group == chosen.cpu_group
        ],
        dtype=np.int64,
    )
    if policy.topology:
        rows = _inside_constraints(request.topology, after, chosen, rows)
    if not rows.size:
        return ()
    ordered = planner.ordered(rows)
    ok = planner.capacity[ordered] > 0
    ok &= planner.admissible(
        planner.fixed_ok[ordered],
        after.free[ordered],
        after.cache_total[ordered],
        after.sync_vms[ordered] > 0,
    )
    planned = set(chosen.hosts)
    found: list[str] = []
    for row in ordered[ok].tolist():
        name = after.names[row]
        if name not in planned:
            found.append(name)
            if len(found) == limit:
                break
    return tuple(found)


def left_out(
    request: PlacementRequest,
    hosts: Iterable[Host] | HostColumns,
    chosen: Plan | None,
    thresholds: Thresholds,
    table: InterferenceTable | None = None,
    policy: Policy | None = None,
    rule: HostJudge | None = None,
    levels: Sequence[str] = topo.DEFAULT_LEVELS,
) -> list[Refusal]:
    """Why each host outside ``chosen`` takes none of the request's VMs.

    ``chosen`` is what :func:`plan` returned for the same arguments, or None
    where it raised :class:`NoPlacement` (then every host is left out). A
    host that every rule admits was left out by the processor group, by the
    size of the request, or because the plan was complete without it. This
    plans again, so the callers ask it only for their log: at debug level,
    or when the request is refused.
    """
    policy = policy or Policy()
    columns = hosts if isinstance(hosts, HostColumns) else HostColumns.from_hosts(hosts, levels)
    try:
        planner = _Planner(request, columns, thresholds, table or InterferenceTable(), policy, rule)
    except NoPlacement as refusal:
        # The request itself is wrong (a level this cloud lacks): no host is to blame.
        return [Refusal(host, "topology", refusal.reason) for host in columns.names]
    homogeneous = policy.homogeneity and request.app_class.needs_homogeneity
    own_groups = {columns.cpu_groups[row] for row in planner.own_rows} if homogeneous else set()
    planned = set(chosen.hosts) if chosen is not None else set()
    everyone = np.arange(len(columns))
    inside = set(everyone.tolist())
    if chosen is not None and policy.topology:
        inside = set(_inside_constraints(request.topology, columns, chosen, everyone).tolist())
    found: list[Refusal] = []
    admitted: dict[str | None, list[int]] = {}
    for row, host in enumerate(columns.names):
        if host in planned:
            continue
        refusal = planner.refusal(row)
        group = columns.cpu_groups[row] if homogeneous else None
        if refusal is None and own_groups and group not in own_groups:
            refusal = Refusal(
                host,
                "homogeneity",
                f"processor group {group or '(unnamed)'}; the application runs on "
                f"{', '.join(sorted(g or '(unnamed)' for g in own_groups))}",
            )
        if refusal is None and chosen is not None and row not in inside:
            refusal = Refusal(
                host,
                "topology",
                f"outside the plan's domain ({request.topology.describe()})",
            )
        if refusal is None and chosen is not None:
            if homogeneous and group != chosen.cpu_group:
                refusal = Refusal(
                    host,
                    "homogeneity",
                    f"processor group {group or '(unnamed)'}; the plan's is "
                    f"{chosen.cpu_group or '(unnamed)'}",
                )
            else:
                refusal = Refusal(
                    host, "packing", f"not needed: the plan is complete on {len(planned)} host(s)"
                )
        if refusal is None:
            admitted.setdefault(group, []).append(row)
            continue
        found.append(refusal)
    # The request failed although these hosts admit a VM: their group (or
    # all of them) holds too few of its VMs.
    for group, rows in admitted.items():
        members = [row for row, g in enumerate(columns.cpu_groups) if not homogeneous or g == group]
        try:
            planner.plan_group(np.array(members, dtype=np.int64), group)
            placed = request.count
        except NoPlacement as refusal:
            placed = refusal.placed if refusal.placed is not None else 0
        where = f"processor group {group or '(unnamed)'}" if homogeneous else "the candidates"
        detail = f"{where} hold(s) {placed} of {request.count} VMs"
        found.extend(Refusal(columns.names[row], "capacity", detail) for row in rows)
    found.sort(key=lambda refusal: columns.index[refusal.host])
    return found
