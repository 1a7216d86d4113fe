"""The simulated cloud's hosts: where a job's VMs go and what they leave free.

Two implementations of one placement, chosen by the scenario:

* :class:`PlannedCloud` runs :func:`~hpc_nova_scheduler.core.algorithm.plan`,
  nova-scheduler's own code, over the live columns of a
  :class:`~hpc_nova_scheduler.core.state.ClusterState`. It serves every
  policy and keeps each VM, which the interference models need.
* :class:`ClassedCloud` serves blind policies (MDOBP and the Nova-like
  packings) with :class:`~hpc_nova_scheduler.core.host_classes.HostClasses`,
  whose cost per job does not grow with the number of hosts. Its plans are
  the same to the bit (tests hold the two together).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import NoPlacement, PlacementRequest
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.criteria import EPSILON
from hpc_nova_scheduler.core.host_classes import Block, HostClasses
from hpc_nova_scheduler.core.profile import AppClass

if TYPE_CHECKING:
    from hpc_nova_scheduler.interference.rule import ModelRule
    from hpc_nova_scheduler.sim.settings import ClusterShape, Scenario


class PlannedCloud:
    """Every policy, through plan() over a ClusterState."""

    def __init__(self, shape: ClusterShape, scenario: Scenario) -> None:
        self.scenario = scenario
        # A flat scenario places as seed 003 did: on the racks alone.
        self.cluster = shape.build(flat=scenario.flat)
        self._empty = None
        #: Whether each kind of request plans on the idle cloud (see plans_on_empty).
        self._empty_answers: dict[tuple, bool] = {}
        self._shape = shape

    def start(self, request: PlacementRequest, rule: ModelRule | None = None) -> bool:
        """Place the request's VMs if they fit now; whether they did."""
        cluster = self.cluster
        columns = cluster.columns()
        memory = request.demand.ram_mb
        # Most attempts on a busy cloud fail for plain lack of room: a cheap
        # count of the VMs that fit at all (a necessary condition under every
        # policy) spares the planner.
        fit = np.floor(columns.free[:, 0] + 1e-9)
        if memory > 0:
            fit = np.minimum(fit, np.floor((columns.free[:, 1] + 1e-9) / memory))
        if fit[fit > 0].sum() < request.count:
            return False
        try:
            plan = algorithm.plan(
                request, columns, self.scenario.thresholds, policy=self.scenario.policy, rule=rule
            )
        except NoPlacement:
            return False
        cluster.apply(plan, request)
        return True

    def plans_on_empty(self, request: PlacementRequest, rule: ModelRule | None = None) -> bool:
        """Whether the request could be placed on the idle cloud.

        On the idle cloud a plan depends on what the job asks, not on which
        job asks it: the answer is kept per kind of request, since a replay
        asks it for every arrival and a whole plan over every host costs
        as much as placing the job.
        """
        # Nothing runs there: the application's name meets no co-runner, and
        # its cache score matters only by how many of its VMs a host's
        # thresholds let in.
        key = (
            request.app_class,
            self._cache_slots(request),
            request.demand,
            request.count,
            request.topology,
            request.held_domains,
        )
        known = self._empty_answers.get(key)
        if known is not None:
            return known
        if self._empty is None:
            self._empty = self._shape.build(flat=self.scenario.flat)
        try:
            algorithm.plan(
                request,
                self._empty.columns(),
                self.scenario.thresholds,
                policy=self.scenario.policy,
            )
            answer = True
        except NoPlacement:
            answer = False
        self._empty_answers[key] = answer
        return answer

    def _cache_slots(self, request: PlacementRequest) -> int | None:
        """How many VMs of the request an idle host's cache thresholds admit
        (None: no limit), added up as the planner adds them."""
        policy, score = self.scenario.policy, request.profile.cache_score
        extreme = policy.classes and request.app_class is AppClass.EXTREME_HPC
        if not policy.cache_criteria or extreme or score <= 0:
            return None
        limit = self.scenario.thresholds.alpha
        if request.app_class is AppClass.SYNC_HPC:
            limit = min(limit, self.scenario.thresholds.beta)
        slots, cache = 0, 0.0
        while slots < request.count and cache + score <= limit + EPSILON:
            cache += score
            slots += 1
        return slots

    def finish(self, application_id: str) -> None:
        self.cluster.release([application_id])

    def rows_of(self, application_id: str) -> list[int]:
        return self.cluster.rows_of(application_id)

    def vms_on(self, row: int) -> list[RunningVM]:
        return self.cluster.vms_on(row)

    def free_cores(self) -> int:
        return round(float(self.cluster.columns().free[:, 0].sum()))


class ClassedCloud:
    """Blind policies, through HostClasses: per-job cost independent of the host count."""

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
