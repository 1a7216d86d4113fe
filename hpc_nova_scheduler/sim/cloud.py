"""The simulated cloud's hosts: where a job's VMs go and what they leave free.

Two implementations of one placement, chosen by the scenario:

* :class:`PlannedCloud` runs :func:`~hpc_nova_scheduler.core.algorithm.plan`,
  nova-scheduler's own code, over the live columns of a
  :class:`~hpc_nova_scheduler.core.state.ClusterState`. It serves every
  policy and keeps each VM, which the interference models need.
* :class:`ClassedCloud` serves blind policies (MDOBP and the Nova-like
  packings) with :class:`~hpc_nova_scheduler.sim.host_classes.HostClasses`,
  whose cost per job does not grow with the number of hosts.
* :class:`StateClassedCloud` serves the rest of what one rack level allows
  (hpc-aware, mdobp-cache, nova-default, interference models as ground
  truth or admission, batch arrivals) with
  :class:`~hpc_nova_scheduler.sim.state_classes.StateClasses`: hosts in
  classes by cache total, SyncHPC, rack, processor group and, under an
  admission model, co-runners as well.
* :class:`CompiledCloud` serves what of that the compiled kernel serves
  (cosine packing with the rack as the only level, no tenant constraints,
  no admission model) with :class:`~hpc_nova_scheduler.sim.host_arrays.HostArrays`:
  every host scored in compiled code, which costs less than the classes'
  bookkeeping where part-full hosts make classes many.

The plans are the same to the bit (tests replay logs through the engines
and hold them together job by job).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import NoPlacement, PlacementRequest, Plan
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.criteria import EPSILON
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.sim.host_arrays import HostArrays
from hpc_nova_scheduler.sim.host_classes import Block, HostClasses
from hpc_nova_scheduler.sim.state_classes import StateClasses, one_core_vms

if TYPE_CHECKING:
    from hpc_nova_scheduler.interference.rule import ModelRule
    from hpc_nova_scheduler.sim.settings import ClusterShape, Scenario


@dataclasses.dataclass(frozen=True, slots=True)
class Shortfall:
    """Why a refused request cannot fit before hosts are freed: the room
    that refused it (of the place it may go: its processor group, a domain
    of its required level; or, for the cheap precheck, of the whole cloud)
    lacks ``vms`` of its VMs, and a freed host can come to add at most
    ``per_host`` to that room (placements only take room away, and a host
    holds no more than when idle)."""

    vms: float
    per_host: float

    def may_fit_after(self, hosts_freed: int) -> bool:
        """Whether the request may fit once jobs on ``hosts_freed`` hosts
        (a host once per job) have finished; if not, it is refused again."""
        return hosts_freed * self.per_host >= self.vms


def _cache_slots(
    scenario: Scenario, request: PlacementRequest, up_to: int | None = None
) -> int | None:
    """How many VMs of the request an idle host's cache thresholds admit
    (None: no limit), added up as the planner adds them, counted up to
    ``up_to`` (by default the request's count)."""
    policy, thresholds = scenario.policy, scenario.thresholds
    score = request.profile.cache_score
    extreme = policy.classes and request.app_class is AppClass.EXTREME_HPC
    if not policy.cache_criteria or extreme or score <= 0:
        return None
    limit = thresholds.alpha
    if request.app_class is AppClass.SYNC_HPC:
        limit = min(limit, thresholds.beta)
    slots, cache = 0, 0.0
    up_to = request.count if up_to is None else up_to
    while slots < up_to and cache + score <= limit + EPSILON:
        cache += score
        slots += 1
    return slots


class _IdleAnswers:
    """Whether a request plans on the idle cloud, kept per kind of request.

    On the idle cloud a plan depends on what the job asks, not on which
    job asks it: the answer is kept per kind of request, since a replay
    asks it for every arrival and a whole plan can cost as much as placing
    the job.
    """

    scenario: Scenario

    def __init__(self) -> None:
        self._empty_answers: dict[tuple, bool] = {}

    def plans_on_empty(self, request: PlacementRequest, rule: ModelRule | None = None) -> bool:
        """Whether the request could be placed on the idle cloud."""
        key = (self._kind(request), request.count)
        known = self._empty_answers.get(key)
        if known is None:
            try:
                self._plan_on_empty(request)
                known = True
            except NoPlacement:
                known = False
            self._empty_answers[key] = known
        return known

    def _kind(self, request: PlacementRequest, slots_up_to: int | None = None) -> tuple:
        """What the idle cloud's answer reads of a request but its count;
        its cache slots counted up to ``slots_up_to`` (as _cache_slots)."""
        # Nothing runs there: the application's name meets no co-runner, and
        # its cache score matters only by how many of its VMs a host's
        # thresholds let in.
        return (
            request.app_class,
            _cache_slots(self.scenario, request, slots_up_to),
            request.demand,
            request.topology,
            request.held_domains,
        )

    def _plan_on_empty(self, request: PlacementRequest) -> None:
        raise NotImplementedError


class PlannedCloud(_IdleAnswers):
    """Every policy, through plan() over a ClusterState."""

    #: What the last refused request lacked (this cloud does not tell), and
    #: hosts freed so far, counted once per finished job.
    shortfall: Shortfall | None = None
    hosts_freed = 0

    def __init__(self, shape: ClusterShape, scenario: Scenario) -> None:
        super().__init__()
        self.scenario = scenario
        # A flat scenario places as seed 003 did: on the racks alone.
        self.cluster = shape.build(flat=scenario.flat)
        self._empty = None
        self._shape = shape

    def start(self, request: PlacementRequest, rule: ModelRule | None = None) -> bool:
        """Place the request's VMs if they fit now; whether they did."""
        cluster = self.cluster
        columns = cluster.columns()
        memory = request.demand.ram_mb
        # Most attempts on a busy cloud fail for plain lack of room: a cheap
        # count of the VMs that fit at all (a necessary condition under every
        # policy) spares the planner.
        if one_core_vms(columns.free, memory) < request.count:
            return False
        try:
            plan = algorithm.plan(
                request, columns, self.scenario.thresholds, policy=self.scenario.policy, rule=rule
            )
        except NoPlacement:
            return False
        cluster.apply(plan, request)
        return True

    def _plan_on_empty(self, request: PlacementRequest) -> None:
        if self._empty is None:
            self._empty = self._shape.build(flat=self.scenario.flat)
        algorithm.plan(
            request, self._empty.columns(), self.scenario.thresholds, policy=self.scenario.policy
        )

    def finish(self, application_id: str) -> None:
        self.cluster.release([application_id])

    def rescore(self, application_id: str, cache_score: float) -> None:
        """Count the running application's VMs with ``cache_score`` from now on."""
        self.cluster.rescore(application_id, cache_score)

    def empty_rows(self) -> set[int]:
        """The hosts no VM runs on."""
        return set(np.flatnonzero(self.cluster.columns().vms == 0).tolist())

    def room_of(self, row: int) -> tuple[Sequence[float], Sequence[float]]:
        """A host's free and total resources."""
        columns = self.cluster.columns()
        return columns.free[row].tolist(), columns.capacity[row].tolist()

    def host_name(self, row: int) -> str:
        return self.cluster.columns().names[row]

    def place_on(self, request: PlacementRequest, row: int) -> None:
        """Every VM of the request on host ``row`` (a batch planner's choice)."""
        columns = self.cluster.columns()
        name = columns.names[row]
        plan = Plan((name,) * request.count, columns.cpu_groups[row], (columns.racks[row],))
        self.cluster.apply(plan, request)

    def rows_of(self, application_id: str) -> list[int]:
        return self.cluster.rows_of(application_id)

    def vms_on(self, row: int) -> list[RunningVM]:
        return self.cluster.vms_on(row)

    def free_cores(self) -> int:
        return round(float(self.cluster.columns().free[:, 0].sum()))


class ClassedCloud:
    """Blind policies, through HostClasses: per-job cost independent of the host count."""

    shortfall: Shortfall | None = None
    hosts_freed = 0

    def __init__(self, shape: ClusterShape, scenario: Scenario) -> None:
        if not scenario.policy.blind:
            raise ValueError(f"scenario {scenario.name} is not blind to all but room")
        self.classes = HostClasses(shape.capacities(), scenario.policy.packing)
        self._placed: dict[str, tuple[list[Block], tuple[float, float, float]]] = {}

    def start(self, request: PlacementRequest, rule: ModelRule | None = None) -> bool:
        demand = request.demand.as_tuple()
        try:
            blocks = self.classes.place(demand, request.count)
        except NoPlacement:
            return False
        self._placed[request.application_id] = (blocks, demand)
        return True

    def plans_on_empty(self, request: PlacementRequest, rule: ModelRule | None = None) -> bool:
        return True  # room is all a blind policy asks, and the caller checked it

    def finish(self, application_id: str) -> None:
        blocks, demand = self._placed.pop(application_id)
        self.classes.release(blocks, demand)

    def rows_of(self, application_id: str) -> list[int]:
        return sorted({row for rows, _ in self._placed[application_id][0] for row in rows.tolist()})

    def vms_on(self, row: int) -> list[RunningVM]:
        raise NotImplementedError("host classes keep no VMs; interference needs PlannedCloud")

    def free_cores(self) -> int:
        return round(float(self.classes.total_free()[0]))


class StateClassedCloud(_IdleAnswers):
    """Seed 003's policies through StateClasses: per-job cost independent of the host count."""

    def __init__(self, shape: ClusterShape, scenario: Scenario) -> None:
        super().__init__()
        reason = self.refusal(shape, scenario)
        if reason:
            raise ValueError(f"scenario {scenario.name}: {reason}")
        self.scenario = scenario
        columns = shape.build(flat=scenario.flat).columns()
        self.classes, self._idle = self._engines(columns, scenario)
        #: What the last refused request lacked, where known.
        self.shortfall: Shortfall | None = None
        #: Hosts freed so far, counted once per finished job.
        self.hosts_freed = 0
        #: Per kind of request, the most of its VMs the idle cloud holds.
        self._most_on_empty: dict[tuple, int | None] = {}

    @staticmethod
    def _engines(columns, scenario: Scenario) -> tuple[StateClasses, StateClasses]:
        """The cloud's hosts, and the idle cloud's (what plans on it)."""
        judged = scenario.admission is not None
        policy, thresholds = scenario.policy, scenario.thresholds
        return StateClasses(columns, policy, thresholds, judged), StateClasses(
            columns, policy, thresholds
        )

    @staticmethod
    def refusal(shape: ClusterShape, scenario: Scenario) -> str:
        """Why the scenario cannot replay on state classes; empty if it can."""
        return StateClasses.serves(scenario.policy, scenario.app_class, scenario.topology)

    def start(self, request: PlacementRequest, rule: ModelRule | None = None) -> bool:
        classes = self.classes
        self.shortfall = None
        # The same cheap necessary condition as PlannedCloud's.
        memory = request.demand.ram_mb
        room = classes.one_core_room(memory)
        if room < request.count:
            # It reads free room alone, which only releases bring back.
            per_host = classes.most_one_core(memory)
            if per_host:
                self.shortfall = Shortfall(request.count - room, per_host)
            return False
        try:
            segments = classes.plan_segments(request, rule)
        except NoPlacement as refusal:
            # An interference model need not be monotone: a host may come to
            # admit a job after another joins it. The thresholds are.
            per_host = classes.most_per_host(request.demand.as_tuple())
            slots = _cache_slots(self.scenario, request)
            if slots is not None:
                # No host admits more than an idle one's cache thresholds do.
                per_host = min(per_host, slots)
            if rule is None and refusal.room is not None and per_host:
                self.shortfall = Shortfall(request.count - refusal.room, per_host)
            return False
        classes.apply_segments(segments, request)
        return True

    def plans_on_empty(self, request: PlacementRequest, rule: ModelRule | None = None) -> bool:
        """Whether the request could be placed on the idle cloud: whether
        its count is within the most VMs of its kind the idle cloud holds
        (one refused plan per kind, not a whole plan per count)."""
        # Beyond what a host holds, more cache slots change nothing.
        kind = self._kind(request, self._idle.most_per_host(request.demand.as_tuple()))
        if kind not in self._most_on_empty:
            self._most_on_empty[kind] = self._idle.most_vms(request)
        most = self._most_on_empty[kind]
        if most is None:
            return super().plans_on_empty(request, rule)
        return request.count <= most

    def _plan_on_empty(self, request: PlacementRequest) -> None:
        self._idle.plan_segments(request)

    def finish(self, application_id: str) -> None:
        self.hosts_freed += self.classes.release(application_id)

    def empty_rows(self) -> set[int]:
        return self.classes.empty_rows()

    def room_of(self, row: int) -> tuple[Sequence[float], Sequence[float]]:
        return self.classes.free_of(row), self.classes.capacity_of(row)

    def host_name(self, row: int) -> str:
        return self.classes.names[row]

    def place_on(self, request: PlacementRequest, row: int) -> None:
        self.classes.apply_segments([([row], request.count)], request)

    def rows_of(self, application_id: str) -> list[int]:
        return self.classes.rows_of(application_id)

    def vms_on(self, row: int) -> list[RunningVM]:
        return self.classes.vms_on(row)

    def free_cores(self) -> int:
        return round(self.classes.free_cores())


class CompiledCloud(StateClassedCloud):
    """Seed 003's policies through HostArrays: every host scored by the
    compiled kernel, where it serves the scenario."""

    @staticmethod
    def _engines(columns, scenario: Scenario) -> tuple[HostArrays, StateClasses]:
        # The idle cloud stays in classes (one per rack): what it holds of
        # each kind of request is a plan over a few classes there, not a
        # pass over every host.
        policy, thresholds = scenario.policy, scenario.thresholds
        return HostArrays(columns, policy, thresholds), StateClasses(columns, policy, thresholds)

    @staticmethod
    def refusal(shape: ClusterShape, scenario: Scenario) -> str:
        """Why the scenario cannot replay on the compiled kernel; empty if it can."""
        levels = shape.levels[-1:] if scenario.flat else shape.levels
        return StateClassedCloud.refusal(shape, scenario) or HostArrays.serves(
            scenario.policy,
            levels,
            scenario.app_class,
            scenario.topology,
            scenario.admission is not None,
        )
