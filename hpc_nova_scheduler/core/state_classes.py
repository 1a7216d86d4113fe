"""Seed 003's placement planned per class of hosts in the same state.

:mod:`.host_classes` plans blind packings per class of hosts with equal
free and total resources. The policies this project exists for read more of
a host: its cache total and whether it runs SyncHPC VMs (the alpha and beta
thresholds), its rack (Algorithm 1 fills racks in capacity order) and its
processor group (homogeneity). :class:`StateClasses` keeps the hosts in
classes by exactly that state, so that an idle cloud of thousands of hosts
is a class per rack and a request scores classes, not hosts; a class is
split only when a placement makes its hosts differ.

It is the same greedy as :func:`~hpc_nova_scheduler.core.algorithm.plan`
over a :class:`~hpc_nova_scheduler.core.state.ClusterState`, not an
approximation: every host of a class has the same sort key but for its row,
so the untouched hosts come out of the classes in (key, row) order, and the
hosts a request has touched are rescored one by one with the planner's own
Python-float functions, as its MDOBP does. Free vectors and cache totals
change by the same float operations in the same order as ClusterState's.
Tests replay logs through both and require the same placements job by job.

An interference model that admits hosts (a
:class:`~hpc_nova_scheduler.core.judge.HostJudge`) reads each host's
co-runners: built with ``judged``, the classes are split by them too, and
the model is asked once per class, in the order plan() asks it per host.

Topology levels beyond the rack and the tenant's ``required`` and
``preferred`` levels order the racks by BestFit
(:mod:`~hpc_nova_scheduler.core.arrangement`), which reads nothing of a
host but its room: it runs on the classes, each weighing its room times
its hosts.

What it does not serve (:meth:`StateClasses.serves`) stays with plan() over every host: ExtremeHPC
(dedication reads every co-runner), segments and constraints at the host
level (packed host by host), and applications that already run somewhere.
"""

from __future__ import annotations

import bisect
import collections
import heapq
from collections.abc import Iterator, Sequence

import numpy as np

from hpc_nova_scheduler.core import arrangement
from hpc_nova_scheduler.core import topology as topo
from hpc_nova_scheduler.core.algorithm import (
    NO_TOPOLOGY,
    PACKING_COSINE,
    PACKING_NOVA_WEIGHERS,
    NoPlacement,
    PlacementRequest,
    Policy,
    _cosine_key_one,
    _cosine_keys,
    _depth,
    _normalised,
    blind_key_one,
    blind_keys,
)
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.columns import HostColumns, ordered_sum
from hpc_nova_scheduler.core.criteria import EPSILON, Thresholds
from hpc_nova_scheduler.core.judge import HostJudge, Resident
from hpc_nova_scheduler.core.profile import AppClass

Vector = tuple[float, float, float]
#: VMs of one application on one host: (the VM, how many, each one's demand).
Run = tuple[RunningVM, int, Vector]
#: Floating-point slack when checking that a demand fits (as the planner does).
_SLACK = 1e-9
#: (processor group, rack, capacity, free, cache total, runs SyncHPC,
#: co-runners); a part the policy never reads is left constant so that
#: classes stay few.
Name = tuple[int, int, Vector, Vector, float, bool, tuple[Resident, ...]]


class StateClasses:
    """The hosts of one cloud in classes by the state a policy reads.

    Rows are the positions of ``columns`` (an idle cloud's, for example
    :meth:`~hpc_nova_scheduler.core.state.ClusterState.columns`); plans are
    lists of rows, one per VM in placement order. Nothing but
    :meth:`apply` and :meth:`release` changes the hosts.
    """

    def __init__(
        self,
        columns: HostColumns,
        policy: Policy,
        thresholds: Thresholds,
        judged: bool = False,
    ) -> None:
        """``judged``: plans will be asked with a judge of co-runners."""
        reason = self.serves(policy)
        if reason:
            raise ValueError(reason)
        if columns.vms.any():
            raise ValueError("state classes start from an idle cloud")
        self.policy = policy
        self.thresholds = thresholds
        self.names = list(columns.names)
        size = len(self.names)
        self._capacity: list[Vector] = [tuple(c) for c in columns.capacity.tolist()]
        self._free: list[Vector] = [tuple(f) for f in columns.free.tolist()]
        self._cache = [0.0] * size
        self._sync = [0] * size
        #: Per host, its VMs as runs (VM, how many, demand) in placement
        #: order: an application's VMs on a host arrive together, as one run.
        #: Hosts that ran the same VMs share one tuple: identity groups them.
        self._runs: list[tuple[Run, ...]] = [()] * size
        #: application id -> its host rows (ascending when asked).
        self._rows_of: dict[str, set[int]] = {}
        #: Free cores over every host, kept as VMs come and go: most
        #: attempts on a busy cloud fail for want of cores, told at once.
        self._free_cores = float(columns.free[:, 0].sum())
        self.levels = tuple(columns.levels)
        self._racks = len(columns.rack_names)
        self._rack = columns.rack.tolist()
        #: Each rack's domain at every level, outermost first (a rack sits in
        #: one domain per level: domains are named by their path).
        depth = len(self.levels)
        self._rack_domains = np.zeros((depth, self._racks), dtype=np.int64)
        self._rack_domains[:, columns.rack] = columns.domain[:depth]
        self.group_names = sorted(set(columns.cpu_groups))
        code = {name: i for i, name in enumerate(self.group_names)}
        self._group = [code[g] for g in columns.cpu_groups]
        # Only what the policy reads splits classes.
        self._by_rack = policy.topology
        self.judged = judged
        self._by_group = policy.homogeneity or judged
        self._by_cache = policy.cache_criteria
        self._slot_of: dict[Name, int] = {}
        self._name_of: list[Name | None] = []
        self._members: list[list[int]] = []
        self._spare: list[int] = []
        slots = 8
        self._s_free = np.zeros((slots, 3))
        self._s_capacity = np.zeros((slots, 3))
        self._s_cache = np.zeros(slots)
        self._s_sync = np.zeros(slots, dtype=bool)
        self._s_rack = np.zeros(slots, dtype=np.int64)
        self._s_group = np.zeros(slots, dtype=np.int64)
        self._s_hosts = np.zeros(slots, dtype=np.int64)
        self._s_first = np.zeros(slots, dtype=np.int64)
        self._row_slot = [0] * size
        for row in range(size):
            self._join(row)

    @staticmethod
    def serves(
        policy: Policy, app_class: AppClass | None = None, spec: topo.TopologySpec = NO_TOPOLOGY
    ) -> str:
        """Why these state classes cannot plan for ``policy`` (requests of
        ``app_class`` with constraints ``spec``); empty if they can."""
        if policy.classes and app_class is AppClass.EXTREME_HPC:
            return "ExtremeHPC dedication reads every co-runner of a host"
        if not policy.topology:
            spec = NO_TOPOLOGY
        ranked = policy.classes or not spec.empty
        if policy.packing == PACKING_NOVA_WEIGHERS and policy.topology and ranked:
            return "Nova's weighers in topology order are planned over every host"
        if spec.segment is not None:
            return "segments are packed host by host"
        if topo.HOST_LEVEL in (spec.required, spec.preferred):
            return "constraints at the host level are packed host by host"
        return ""

    #: Up to this many admissible classes, a request scores them in Python:
    #: numpy's cost per call would outweigh arrays this short. Both ways
    #: agree to the bit (the tests run both).
    few_slots = 24

    def __len__(self) -> int:
        return len(self.names)

    def class_count(self) -> int:
        return len(self._slot_of)

    # -- classes -------------------------------------------------------------

    def _name(self, row: int) -> Name:
        return (
            self._group[row] if self._by_group else -1,
            self._rack[row] if self._by_rack else -1,
            self._capacity[row],
            self._free[row],
            self._cache[row] if self._by_cache else 0.0,
            self._sync[row] > 0 if self._by_cache else False,
            self._residents(row) if self.judged else (),
        )

    def _residents(self, row: int) -> tuple[Resident, ...]:
        """The applications on a host and their VMs, in the order plan()
        describes them to a judge (applications in the order they came)."""
        return tuple((vm.app_name, vms) for vm, vms, _ in self._runs[row])

    def _slot(self, name: Name, row: int) -> int:
        slot = self._slot_of.get(name)
        if slot is not None:
            return slot
        if self._spare:
            slot = self._spare.pop()
            self._name_of[slot] = name
            self._members[slot] = []
        else:
            slot = len(self._name_of)
            self._name_of.append(name)
            self._members.append([])
            if slot == len(self._s_hosts):
                self._grow()
        self._slot_of[name] = slot
        self._s_capacity[slot] = name[2]
        self._s_free[slot] = name[3]
        self._s_cache[slot] = self._cache[row]
        self._s_sync[slot] = self._sync[row] > 0
        self._s_rack[slot] = self._rack[row]
        self._s_group[slot] = self._group[row]
        self._s_hosts[slot] = 0
        return slot

    def _grow(self) -> None:
        size = 2 * len(self._s_hosts)
        for attribute in (
            "_s_free",
            "_s_capacity",
            "_s_cache",
            "_s_sync",
            "_s_rack",
            "_s_group",
            "_s_hosts",
            "_s_first",
        ):
            old = getattr(self, attribute)
            new = np.zeros((size, *old.shape[1:]), dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, attribute, new)

    def _join(self, row: int) -> None:
        slot = self._slot(self._name(row), row)
        members = self._members[slot]
        bisect.insort(members, row)
        self._s_hosts[slot] += 1
        self._s_first[slot] = members[0]
        self._row_slot[row] = slot

    def _leave_block(self, slot: int, rows: list[int]) -> None:
        """Take ``rows`` (ascending, all of class ``slot``) out of their class."""
        members = self._members[slot]
        count = len(rows)
        if members[count - 1] == rows[-1]:
            del members[:count]  # the usual case: a plan takes a class's first hosts
        elif 8 * count < len(members):
            for row in rows:
                del members[bisect.bisect_left(members, row)]
        else:
            gone = set(rows)
            members[:] = [row for row in members if row not in gone]
        self._s_hosts[slot] -= count
        if members:
            self._s_first[slot] = members[0]
            return
        del self._slot_of[self._name_of[slot]]
        self._name_of[slot] = None
        self._spare.append(slot)

    def _join_block(self, rows: list[int]) -> None:
        """Put ``rows`` (ascending, all in the same state now) in their class."""
        slot = self._slot(self._name(rows[0]), rows[0])
        members = self._members[slot]
        if not members or members[-1] < rows[0]:
            members.extend(rows)
        elif 8 * len(rows) < len(members):
            for row in rows:
                bisect.insort(members, row)
        else:
            members.extend(rows)
            members.sort()  # two sorted runs: merged in linear time
        self._s_hosts[slot] += len(rows)
        self._s_first[slot] = members[0]
        row_slot = self._row_slot
        for row in rows:
            row_slot[row] = slot

    # -- planning ------------------------------------------------------------

    def room_for(self, memory_mb: float, count: int) -> bool:
        """Whether ``count`` one-core VMs of ``memory_mb`` fit at all: the
        necessary condition the simulator checks before planning."""
        if self._free_cores < count - 1e-3:
            return False  # each VM needs a core (the slack covers float drift)
        used = len(self._name_of)
        free = self._s_free[:used]
        fit = np.floor(free[:, 0] + 1e-9)
        if memory_mb > 0:
            fit = np.minimum(fit, np.floor((free[:, 1] + 1e-9) / memory_mb))
        hosts = self._s_hosts[:used]
        return float((fit * hosts)[(fit > 0) & (hosts > 0)].sum()) >= count

    def plan(self, request: PlacementRequest, rule: HostJudge | None = None) -> list[int]:
        """The rows of ``request``'s VMs, in placement order, as
        :func:`~hpc_nova_scheduler.core.algorithm.plan` would choose them
        over every host (``rule``: its judge of co-runners, which replaces
        the cache thresholds); raise :class:`NoPlacement`. Changes nothing."""
        if request.count < 1:
            raise NoPlacement("a request needs at least one VM")
        reason = self.serves(self.policy, request.app_class, request.topology)
        if request.application_id in self._rows_of or any(request.held_domains):
            reason = "an application that already runs is planned over every host"
        if rule is not None and not self.judged:
            reason = "classes built without co-runners cannot be judged by a model"
        if reason:
            raise ValueError(reason)
        if self.policy.topology:
            # A level this cloud lacks refuses the request before any judge is asked.
            _depth(topo.SPEC_REQUIRED, request.topology.required, self.levels)
            _depth(topo.SPEC_PREFERRED, request.topology.preferred, self.levels)
        used = len(self._name_of)
        live = self._s_hosts[:used] > 0
        admitted = None if rule is None else self._admitted(request, rule, np.flatnonzero(live))
        # Classes whose hosts take no VM of the request add nothing to a
        # rack's or domain's room and are never admissible: left out.
        demand = np.array(request.demand.as_tuple())
        dims = demand > 0
        if dims.any():
            live &= (demand[dims] <= self._s_free[:used][:, dims] + _SLACK).all(axis=1)
        homogeneous = self.policy.homogeneity and request.app_class.needs_homogeneity
        if not homogeneous or len(self.group_names) == 1:
            return self._plan_slots(request, np.flatnonzero(live), rule, admitted)
        best: tuple[tuple, list[int]] | None = None
        reasons = []
        groups = self._s_group[:used]
        for code, group in enumerate(self.group_names):
            try:
                slots = np.flatnonzero(live & (groups == code))
                rows = self._plan_slots(request, slots, rule, admitted)
            except NoPlacement as refusal:
                reasons.append(f"processor group {group or '(unnamed)'}: {refusal.reason}")
                continue
            racks = {self._rack[r] for r in rows}
            spans = tuple(
                len(set(self._rack_domains[level, list(racks)].tolist()))
                for level in range(len(self.levels))
            )
            rank = (*spans, len(set(rows)), group)
            if best is None or rank < best[0]:
                best = (rank, rows)
        if best is None:
            raise NoPlacement(
                f"no single processor group can hold all {request.count} VMs; " + "; ".join(reasons)
            )
        return best[1]

    def _plan_slots(
        self,
        request: PlacementRequest,
        slots: np.ndarray,
        rule: HostJudge | None,
        admitted: np.ndarray | None,
    ) -> list[int]:
        if not slots.size:
            raise NoPlacement("no candidate hosts")
        spec = request.topology if self.policy.topology else NO_TOPOLOGY
        required = _depth(topo.SPEC_REQUIRED, spec.required, self.levels)
        if required is None:
            return _Greedy(self, request, slots, rule, admitted).run()
        # The required level's domains, tightest first, each tried whole.
        room = _Greedy(self, request, slots, rule, admitted).room * self._s_hosts[slots]
        codes = self._rack_domains[:, self._s_rack[slots]]
        own = np.zeros(len(slots), dtype=bool)
        everyone = np.arange(len(slots))
        tried = 0
        for domain in arrangement.tightest_first(
            codes, room, own, everyone, required, request.count
        ):
            inside = slots[codes[required] == domain]
            try:
                return _Greedy(self, request, inside, rule, admitted, required + 1).run()
            except NoPlacement:
                tried += 1
        most = 0.0
        if slots.size:
            _, rooms, _ = arrangement.domain_rooms(codes[required], room, own, everyone)
            most = float(rooms.max())
        raise NoPlacement(
            f"no {spec.required} can hold all {request.count} VMs "
            f"({topo.SPEC_REQUIRED}={spec.required}): one {spec.required} has room for "
            f"{most:g} at most"
            + (f"; {tried} that seemed to have room did not fit" if tried else ""),
            0,
        )

    def _admitted(self, request: PlacementRequest, rule: HostJudge, live: np.ndarray) -> np.ndarray:
        """Per class, whether ``rule`` admits the request's application there
        with as many of its VMs as a host of the class could take.

        One question per class that can take a VM, in the order of their
        first hosts: the judge then sees the hosts plan() shows it, alike
        ones once, in the same order.
        """
        demand = np.array(request.demand.as_tuple(), dtype=float)
        dims = demand > 0
        admitted = np.zeros(len(self._name_of), dtype=bool)
        if not dims.any():
            return admitted
        free = self._s_free[live]
        copies = np.maximum(np.floor((free[:, dims] + _SLACK) / demand[dims]).min(axis=1), 0)
        asked = live[copies > 0]
        copies = copies[copies > 0]
        order = np.argsort(self._s_first[asked], kind="stable")
        asked, copies = asked[order].tolist(), copies[order].tolist()
        own = request.profile.app_name
        hosts = [
            [*self._name_of[slot][6], (own, int(vms))]
            for slot, vms in zip(asked, copies, strict=True)
        ]
        types = [self.group_names[int(self._s_group[slot])] for slot in asked]
        for slot, reason in zip(asked, rule.refusals(hosts, types), strict=True):
            admitted[slot] = reason is None
        return admitted

    # -- placing and releasing -----------------------------------------------

    def apply(self, rows: Sequence[int], request: PlacementRequest) -> None:
        """Place the request's VMs on ``rows`` (one per VM, as planned).

        Hosts of one class that take as many VMs end in one state: they
        move to their new class together, computed once.
        """
        profile = request.profile
        demand = request.demand.as_tuple()
        vm = RunningVM(
            uuid=f"{request.application_id}#",
            app_class=profile.app_class,
            cache_score=profile.cache_score,
            app_name=profile.app_name,
            application_id=request.application_id,
        )
        sync = int(profile.app_class is AppClass.SYNC_HPC)
        score = profile.cache_score
        groups: dict[tuple[int, int, int], list[int]] = {}
        row_slot, runs = self._row_slot, self._runs
        for row, vms in collections.Counter(rows).items():
            groups.setdefault((row_slot[row], vms, id(runs[row])), []).append(row)
        for (slot, vms, _), hosts in groups.items():
            hosts.sort()
            # One VM at a time, as ClusterState does: the floats must agree.
            a, b, c = self._name_of[slot][3]
            for _ in range(vms):
                a, b, c = a - demand[0], b - demand[1], c - demand[2]
            free = (a, b, c)
            after = (*runs[hosts[0]], (vm, vms, demand))
            self._free_cores -= demand[0] * vms * len(hosts)
            self._leave_block(slot, hosts)
            shared = self._by_cache  # the class's hosts share their cache total
            total = self._cache[hosts[0]]
            for _ in range(vms):
                total += score
            for row in hosts:
                self._free[row] = free
                if not shared:
                    total = self._cache[row]
                    for _ in range(vms):
                        total += score
                self._cache[row] = total
                self._sync[row] += sync * vms
                runs[row] = after
            self._join_block(hosts)
        self._rows_of[request.application_id] = {row for hosts in groups.values() for row in hosts}

    def release(self, application_id: str) -> None:
        """Remove every VM of the application (it finished).

        Hosts of one class that ran the same VMs end in one state: each
        such group is worked out once and moves together.
        """
        groups: dict[tuple[int, int], list[int]] = {}
        row_slot, runs = self._row_slot, self._runs
        for row in self._rows_of.pop(application_id, ()):
            groups.setdefault((row_slot[row], id(runs[row])), []).append(row)
        for (slot, _), hosts in groups.items():
            hosts.sort()
            a, b, c = self._name_of[slot][3]
            kept = []
            for run in runs[hosts[0]]:
                vm, vms, demand = run
                if vm.application_id == application_id:
                    self._free_cores += demand[0] * vms * len(hosts)
                    for _ in range(vms):
                        a, b, c = a + demand[0], b + demand[1], c + demand[2]
                else:
                    kept.append(run)
            # Summed afresh in placement order, as ClusterState does.
            cache = ordered_sum(vm.cache_score for vm, vms, _ in kept for _ in range(vms))
            sync = sum(vms for vm, vms, _ in kept if vm.app_class is AppClass.SYNC_HPC)
            free, after = (a, b, c), tuple(kept)
            self._leave_block(slot, hosts)
            for row in hosts:
                self._free[row] = free
                self._cache[row] = cache
                self._sync[row] = sync
                runs[row] = after
            self._join_block(hosts)

    def rows_of(self, application_id: str) -> list[int]:
        return sorted(self._rows_of.get(application_id, ()))

    def vms_on(self, row: int) -> list[RunningVM]:
        return [vm for vm, vms, _ in self._runs[row] for _ in range(vms)]

    def free_of(self, row: int) -> Vector:
        return self._free[row]

    def capacity_of(self, row: int) -> Vector:
        return self._capacity[row]

    def empty_rows(self) -> set[int]:
        """The hosts no VM runs on."""
        return {row for row, runs in enumerate(self._runs) if not runs}

    def cache_of(self, row: int) -> float:
        """The host's cache total: its VMs' scores summed in placement order."""
        return self._cache[row]

    def free_cores(self) -> float:
        used = len(self._name_of)
        return float((self._s_free[:used, 0] * self._s_hosts[:used]).sum())


class _Greedy:
    """One request's MDOBP (or Nova weighing) over the classes of one processor group."""

    def __init__(
        self,
        classes: StateClasses,
        request: PlacementRequest,
        slots: np.ndarray,
        rule: HostJudge | None = None,
        admitted: np.ndarray | None = None,
        top: int = 0,
    ) -> None:
        """``slots`` share one domain of every level above ``top``."""
        self.classes = classes
        self.request = request
        policy = classes.policy
        self.policy = policy
        app_class = request.app_class if policy.classes else AppClass.NON_HPC
        self.topology_aware = policy.topology and app_class.topology_aware
        spec = request.topology if policy.topology else NO_TOPOLOGY
        #: Whether the plan follows the topology: the class asks for it, or the tenant.
        self.ranked = self.topology_aware or not spec.empty
        #: BestFit with more than one level or any constraint (as plan()).
        self.best_fit = len(classes.levels) > 1 or not spec.empty
        self.sync_request = request.app_class is AppClass.SYNC_HPC
        # A judge of co-runners replaces the cache thresholds.
        self.rule = rule
        self.thresholds = policy.cache_criteria and rule is None
        #: Per class, what placing VMs never changes: the judge's admission.
        self.fixed_ok = np.ones(len(slots), dtype=bool) if admitted is None else admitted[slots]
        self.score = request.profile.cache_score
        self.demand_tuple = request.demand.as_tuple()
        self.demand = np.array(self.demand_tuple, dtype=float)
        self.dims = self.demand > 0
        self.slots = slots
        self.free = classes._s_free[slots]
        self.capacity = classes._s_capacity[slots]
        self.cache = classes._s_cache[slots]
        self.sync = classes._s_sync[slots]
        self.hosts = classes._s_hosts[slots]
        if self.dims.any():
            copies = np.floor((self.free[:, self.dims] + _SLACK) / self.demand[self.dims]).min(
                axis=1
            )
            self.copies = np.maximum(copies, 0)
        else:
            self.copies = np.zeros(len(slots))
        self._rooms: np.ndarray | None = None
        #: Each rack's rank in the order to fill them (ranked requests only),
        #: and per class the tie-break inside a rack: more room first.
        self.rack_rank: np.ndarray | None = None
        self.within_rack = -self.copies
        if self.ranked and self.best_fit:
            self.rack_rank = self._best_fit_ranks(top)
            self.within_rack = -self.room
        elif self.ranked:
            # Seed 003: racks by how many VMs they take, largest first.
            racks = classes._racks
            rack = classes._s_rack[slots]
            room = np.bincount(rack, weights=self.copies * self.hosts, minlength=racks)
            order = np.lexsort((np.arange(racks), -room))
            rank = np.empty(racks)
            rank[order] = np.arange(racks, dtype=float)
            self.rack_rank = rank

    @property
    def room(self) -> np.ndarray:
        """How many VMs of the request a host of each class can take: the
        planner's room(), capacity where admitted less what the cache
        thresholds leave."""
        if self._rooms is None:
            self._rooms = self._room()
        return self._rooms

    def _room(self) -> np.ndarray:
        room = np.where(self.fixed_ok, self.copies, 0).astype(float)
        score = self.score
        if self.thresholds and score > 0:
            limits = self.classes.thresholds
            alpha = np.floor((limits.alpha + EPSILON - self.cache) / score)
            room = np.minimum(room, np.maximum(alpha, 0))
            beta = np.floor((limits.beta + EPSILON - self.cache) / score)
            sync = self.sync | self.sync_request
            room = np.where(sync, np.minimum(room, np.maximum(beta, 0)), room)
        return room

    def _best_fit_ranks(self, top: int) -> np.ndarray:
        """Each rack's rank in BestFit's order of the classes (each weighing
        its room times its hosts) over the levels from ``top``."""
        classes = self.classes
        rack = classes._s_rack[self.slots]
        codes = classes._rack_domains[top:, rack]
        order = arrangement.arrange(
            codes,
            self.room * self.hosts,
            np.zeros(len(self.slots), dtype=bool),
            np.arange(len(self.slots)),
            self.request.count,
        )
        racks, first = np.unique(rack[order], return_index=True)
        rank = np.full(classes._racks, np.inf)
        rank[racks] = np.argsort(np.argsort(first)).astype(float)
        return rank

    def admissible(self, free: np.ndarray, cache: np.ndarray, sync: np.ndarray) -> np.ndarray:
        """The planner's admissible(), per class or per host."""
        ok = (self.demand[self.dims] <= free[:, self.dims] + _SLACK).all(axis=1)
        if self.thresholds:
            limits = self.classes.thresholds
            total = cache + self.score
            ok &= ~(total > limits.alpha + EPSILON)
            ok &= ~((sync | self.sync_request) & (total > limits.beta + EPSILON))
        return ok

    def admits_one(self, free: Sequence[float], cache: float, sync: bool) -> bool:
        """The planner's admits_one(), to the bit."""
        if not all(d <= f + _SLACK for d, f in zip(self.demand_tuple, free, strict=True) if d > 0):
            return False
        if self.thresholds:
            limits = self.classes.thresholds
            total = cache + self.score
            if total > limits.alpha + EPSILON:
                return False
            if (sync or self.sync_request) and total > limits.beta + EPSILON:
                return False
        return True

    def keys(self, at: np.ndarray) -> tuple[np.ndarray, ...]:
        """The sort key but the row of the classes at positions ``at``, most
        significant first.

        Ranked, the planner's position tie-break is the order of hosts
        within a rack: more VMs of the request first, then the row.
        """
        packing = self.policy.packing
        free, capacity = self.free[at], self.capacity[at]
        if not self.ranked:
            return blind_keys(packing, free, capacity, self.demand)
        rank = self.rack_rank[self.classes._s_rack[self.slots[at]]]
        position = self.within_rack[at]
        if packing == PACKING_COSINE and self.topology_aware:
            return (rank, _cosine_keys(free, capacity, self.demand)[1], position)
        return (rank, *blind_keys(packing, free, capacity, self.demand), position)

    def key_one(self, row: int, free: Sequence[float], position: float) -> tuple:
        """:meth:`keys` for one host, to the bit; ``position``: its class's
        tie-break inside the rack when the request began."""
        packing = self.policy.packing
        capacity = self.classes._capacity[row]
        if not self.ranked:
            return blind_key_one(packing, free, capacity, self.demand_tuple)
        rank = float(self.rack_rank[self.classes._rack[row]])
        if packing == PACKING_COSINE and self.topology_aware:
            return (rank, _cosine_key_one(free, capacity, self.demand_tuple)[1], position)
        return (rank, *blind_key_one(packing, free, capacity, self.demand_tuple), position)

    def run(self) -> list[int]:
        if self.policy.packing == PACKING_NOVA_WEIGHERS:
            return self.weighed()
        return self.mdobp()

    def ranked_classes(self, candidates: np.ndarray) -> tuple[list[int], list[tuple]]:
        """The admissible classes sorted by (key, first row), with their keys.

        Few classes are scored in Python with the planner's one-host
        functions (numpy's cost per call would outweigh arrays this short);
        both ways agree to the bit.
        """
        classes = self.classes
        slots = self.slots[candidates].tolist()
        if len(slots) <= classes.few_slots:
            position = self.within_rack[candidates].tolist()
            entries = sorted(
                (
                    self.key_one(classes._members[slot][0], classes._name_of[slot][3], position[i]),
                    classes._members[slot][0],
                    slot,
                )
                for i, slot in enumerate(slots)
            )
            return [e[2] for e in entries], [e[0] for e in entries]
        keys = self.keys(candidates)
        first = classes._s_first[self.slots[candidates]]
        order = np.lexsort((first, *reversed(keys)))
        ranked = self.slots[candidates[order]].tolist()
        if not keys:
            return ranked, [()] * len(ranked)
        return ranked, list(zip(*(k[order].tolist() for k in keys), strict=True))

    def mdobp(self) -> list[int]:
        """The planner's MDOBP: each VM to the admissible host with the
        smallest (key, row).

        Untouched hosts come out of their classes in that order. When the
        first host of a class falls behind its class with one VM, the next
        hosts of the class take one VM each until a rival comes first, all
        at once (they stay together, as one block, until one is chosen
        again); hosts that took VMs are rescored with the planner's
        one-host functions.
        """
        count = self.request.count
        ok = self.fixed_ok & self.admissible(self.free, self.cache, self.sync)
        untouched = _Untouched(self.classes._members, *self.ranked_classes(np.flatnonzero(ok)))
        classes = self.classes
        position_of = np.zeros(len(classes._name_of))
        position_of[self.slots] = self.within_rack
        fixed_of = np.zeros(len(classes._name_of), dtype=bool)
        fixed_of[self.slots] = self.fixed_ok
        demand, score, sync_request = self.demand_tuple, self.score, self.sync_request
        # Hosts that took VMs: one by one (tag -1, state in ``touched``) or
        # in blocks of hosts alike (tag: the block's number in ``blocks``).
        touched: dict[int, list] = {}
        blocks: list[list] = []
        changed: list[tuple[tuple, int, int]] = []
        chosen: list[int] = []

        def one_more(load: list) -> bool:
            """Place a VM on a host's load; whether it admits another."""
            load[0] = [f - d for f, d in zip(load[0], demand, strict=True)]
            load[1] += score
            load[2] = load[2] or sync_request
            return load[4] and self.admits_one(load[0], load[1], load[2])

        while len(chosen) < count:
            head = untouched.head
            if changed and (head is None or changed[0][:2] < head):
                _, row, tag = heapq.heappop(changed)
                if tag >= 0:
                    rows, at, state = blocks[tag]
                    if at + 1 < len(rows):
                        blocks[tag][1] = at + 1
                        heapq.heappush(changed, (state[5], rows[at + 1], tag))
                    touched[row] = [list(state[0]), *state[1:5]]
                load = touched[row]
                if one_more(load):
                    heapq.heappush(changed, (self.key_one(row, load[0], load[3]), row, -1))
                chosen.append(row)
                continue
            if head is None:
                raise self.short_of(len(chosen))
            key, row = head
            slot = classes._row_slot[row]
            load = [
                list(classes._free[row]),
                classes._cache[row],
                classes._sync[row] > 0,
                float(position_of[slot]),
                bool(fixed_of[slot]),
            ]
            after = self.key_one(row, load[0], load[3]) if one_more(load) else None
            if after is not None and after <= key:
                # Still ahead of its class: the next VM may go there too.
                untouched.advance()
                touched[row] = load
                heapq.heappush(changed, (after, row, -1))
                chosen.append(row)
                continue
            rival = changed[0][:2] if changed else None
            rows = untouched.take_block(rival, count - len(chosen))
            chosen.extend(rows)
            if after is None:
                continue
            if len(rows) == 1:
                touched[row] = load
                heapq.heappush(changed, (after, row, -1))
            else:
                load.append(after)
                blocks.append([rows, 0, load])
                heapq.heappush(changed, (after, rows[0], len(blocks) - 1))
        return chosen

    def weighed(self) -> list[int]:
        """Nova's weighers: every VM normalises over all candidates again,
        here the untouched classes and the touched hosts one by one."""
        classes = self.classes
        members = classes._members
        count = self.request.count
        slots = self.slots
        taken = np.zeros(len(slots), dtype=np.int64)
        #: Each class's first host this request has not touched (-1: none left).
        next_row = classes._s_first[slots].copy()
        ok_slots = self.fixed_ok & self.admissible(self.free, self.cache, self.sync)
        # The touched hosts, in the order they were first chosen.
        t_fixed = np.zeros(count, dtype=bool)
        t_rows = np.zeros(count, dtype=np.int64)
        t_free = np.zeros((count, 3))
        t_cache = np.zeros(count)
        t_sync = np.zeros(count, dtype=bool)
        touched = 0
        chosen: list[int] = []
        while len(chosen) < count:
            picks = np.flatnonzero(ok_slots & (taken < self.hosts))
            mine = np.flatnonzero(
                t_fixed[:touched]
                & self.admissible(t_free[:touched], t_cache[:touched], t_sync[:touched])
            )
            if not picks.size and not mine.size:
                raise self.short_of(len(chosen))
            rows = np.concatenate((next_row[picks], t_rows[mine]))
            values = np.concatenate((self.free[picks], t_free[mine]))
            weight = _normalised(values[:, 1]) + _normalised(values[:, 0])
            best = int(np.lexsort((rows, -weight))[0])
            row = int(rows[best])
            if best >= len(picks):
                at = int(mine[best - len(picks)])
                t_free[at] -= self.demand
                t_cache[at] += self.score
                t_sync[at] |= self.sync_request
                chosen.append(row)
                continue
            i = int(picks[best])
            hosts = members[int(slots[i])]
            block = self._weighed_block(i, hosts, int(taken[i]), values, weight, rows, best)
            block = block[: count - len(chosen)]
            taken[i] += len(block)
            next_row[i] = hosts[taken[i]] if taken[i] < len(hosts) else -1
            at, touched = touched, touched + len(block)
            t_rows[at:touched] = block
            t_fixed[at:touched] = self.fixed_ok[i]
            t_free[at:touched] = self.free[i] - self.demand
            t_cache[at:touched] = self.cache[i] + self.score
            t_sync[at:touched] = self.sync[i] | self.sync_request
            chosen.extend(block)
        return chosen

    def _weighed_block(self, i, hosts, start, values, weight, rows, best) -> list[int]:
        """The untouched hosts of class ``i`` from ``start`` that Nova's
        weighing takes one after another, one VM each: while the class has
        hosts left and a host that took a VM stays within the candidates'
        minima, no weight changes, so the next host of the class wins until
        a rival of equal weight comes first by row."""
        first = hosts[start]
        if start + 1 >= len(hosts):
            return [first]
        after = self.free[i] - self.demand
        cache = self.cache[i] + self.score
        sync = self.sync[i] | self.sync_request
        if self.fixed_ok[i] and self.admissible(after[None], cache[None], sync[None])[0]:
            low, high = values[:, :2].min(axis=0), values[:, :2].max(axis=0)
            if after[0] < low[0] or after[1] < low[1]:
                return [first]  # a new minimum would weigh every host again
            # The host weighed as the next step would weigh it (nova.weights.normalize).
            span = high - low
            parts = np.where(span > 0, (after[:2] - low) / np.where(span > 0, span, 1.0), 0.0)
            if not parts[1] + parts[0] < weight[best]:
                return [first]
        equal = np.flatnonzero(weight == weight[best])
        rivals = rows[equal[equal != best]]
        end = len(hosts)
        if rivals.size:
            end = bisect.bisect_left(hosts, int(rivals.min()), start + 1)
        return hosts[start:end]

    def short_of(self, placed: int) -> NoPlacement:
        return NoPlacement(
            f"only {placed} of {self.request.count} VMs fit within capacity, "
            "dedicated hosts, cache thresholds and the interference table",
            placed,
        )


class _Untouched:
    """The hosts a request has not touched, in (key, row) order.

    Classes come sorted by (key, first row); a run of classes with equal
    keys is merged by row, each class joining the merge only when its first
    row comes up. ``head`` is the next host as (key, row), None at the end.
    """

    def __init__(self, members: list[list[int]], slots: list[int], keys: list[tuple]) -> None:
        self.members = members
        self.runs: list[tuple[tuple, list[int]]] = []
        i = 0
        while i < len(slots):
            j = i + 1
            while j < len(slots) and keys[j] == keys[i]:
                j += 1
            self.runs.append((keys[i], slots[i:j]))
            i = j
        self.run = -1
        self.head: tuple[tuple, int] | None = None
        self._next_run()

    def _next_run(self) -> None:
        self.run += 1
        if self.run >= len(self.runs):
            self.head, self.single, self.merging = None, None, None
            return
        key, slots = self.runs[self.run]
        self.key = key
        if len(slots) == 1:
            self.single, self.at, self.merging = self.members[slots[0]], 0, None
            self.head = (key, self.single[0])
            return
        self.single = None
        self.merging = self._merge(slots)
        self.head = (key, next(self.merging))

    def _merge(self, run: list[int]) -> Iterator[int]:
        members = self.members
        merging: list[tuple[int, int, int]] = []
        joined = 0
        while merging or joined < len(run):
            while joined < len(run) and (not merging or members[run[joined]][0] < merging[0][0]):
                slot = run[joined]
                heapq.heappush(merging, (members[slot][0], 0, slot))
                joined += 1
            row, at, slot = merging[0]
            yield row
            rows = members[slot]
            if at + 1 < len(rows):
                heapq.heapreplace(merging, (rows[at + 1], at + 1, slot))
            else:
                heapq.heappop(merging)

    def advance(self) -> None:
        """Past the head."""
        if self.single is not None:
            self.at += 1
            if self.at < len(self.single):
                self.head = (self.key, self.single[self.at])
                return
            self._next_run()
            return
        row = next(self.merging, None)
        if row is None:
            self._next_run()
        else:
            self.head = (self.key, row)

    def take_block(self, rival: tuple | None, limit: int) -> list[int]:
        """The head and the hosts after it in its class that come before
        ``rival`` and the next run, at most ``limit``, all taken."""
        if self.single is None:
            row = self.head[1]
            self.advance()
            return [row]
        if self.run + 1 < len(self.runs):
            key, slots = self.runs[self.run + 1]
            later = (key, min(self.members[s][0] for s in slots))
            rival = later if rival is None or later < rival else rival
        members, start = self.single, self.at
        end = len(members)
        if rival is not None and rival[0] == self.key:
            end = bisect.bisect_left(members, rival[1], start + 1)
        end = min(end, start + limit)
        taken = members[start:end]
        self.at = end - 1
        self.advance()
        return taken


def cache_slots(policy: Policy, thresholds: Thresholds, request: PlacementRequest) -> int | None:
    """How many VMs of the request an idle host's cache thresholds admit
    (None: no limit), added up as the planner adds them."""
    score = request.profile.cache_score
    extreme = policy.classes and request.app_class is AppClass.EXTREME_HPC
    if not policy.cache_criteria or extreme or score <= 0:
        return None
    limit = thresholds.alpha
    if request.app_class is AppClass.SYNC_HPC:
        limit = min(limit, thresholds.beta)
    slots, cache = 0, 0.0
    while slots < request.count and cache + score <= limit + EPSILON:
        cache += score
        slots += 1
    return slots


__all__ = ["StateClasses", "cache_slots"]
