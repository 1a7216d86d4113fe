"""Discrete-event replay of a job log on a simulated cloud.

Each job (n processors, m MB, t seconds) becomes n VMs of one core and m/n
MB, as in seed 003 section VII, placed as one request by the same
:func:`hpc_nova_scheduler.core.algorithm.plan` that nova-scheduler runs. A
job starts when all its VMs are placed (gang start), runs, and frees them.
The queue is first come, first served; with backfilling, later jobs that fit
may start while the head waits. Deterministic for a given seed.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import heapq
import itertools
import math
import random
from collections.abc import Iterable

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import NoPlacement, PlacementRequest, Policy
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.state import ClusterState
from hpc_nova_scheduler.sim.swf import Job

UNLIMITED = Thresholds(math.inf, math.inf)


@dataclasses.dataclass(frozen=True)
class ClusterShape:
    """Identical hosts in racks, optionally split into processor groups."""

    hosts: int
    cores: int
    ram_mb: float
    disk_gb: float = 0.0
    hosts_per_rack: int = 32
    cpu_groups: int = 1

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

    @property
    def total_cores(self) -> int:
        return self.hosts * self.cores

    def build(self) -> ClusterState:
        state = ClusterState()
        racks = max(1, math.ceil(self.hosts / self.hosts_per_rack))
        for i in range(self.hosts):
            rack = i // self.hosts_per_rack
            group = rack * self.cpu_groups // racks
            state.add_host(
                f"h{i:05d}",
                Resources(self.cores, self.ram_mb, self.disk_gb),
                rack=f"rack-{rack}",
                cpu_group=f"group-{group}",
            )
        return state


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One scheduler configuration to replay a log under.

    ``cache_scores`` draws each job's cache score uniformly from the range,
    and ``runtime_factor`` scales every run time: seed 003's way of crediting
    cache-aware placement (0.9 for its -10 % adjustment).
    """

    name: str
    policy: Policy = dataclasses.field(default_factory=Policy)
    thresholds: Thresholds = UNLIMITED
    #: The class of every job; None: SyncHPC for parallel jobs, AsyncHPC for serial ones.
    app_class: AppClass | None = AppClass.NON_HPC
    cache_scores: tuple[float, float] | None = None
    runtime_factor: float = 1.0


@dataclasses.dataclass(frozen=True)
class Outcome:
    job_id: int
    submit: float
    start: float
    end: float
    processors: int


@dataclasses.dataclass
class Result:
    scenario: str
    outcomes: list[Outcome]
    never_fit: list[int]
    unfinished: int
    total_cores: int

    @property
    def makespan(self) -> float:
        return max((o.end for o in self.outcomes), default=0.0)

    def completed_by(self, time: float) -> int:
        ends = sorted(o.end for o in self.outcomes)
        return bisect.bisect_right(ends, time)

    def mean_wait(self) -> float:
        if not self.outcomes:
            return 0.0
        return sum(o.start - o.submit for o in self.outcomes) / len(self.outcomes)

    def mean_bounded_slowdown(self, bound: float = 10.0) -> float:
        """Mean of (wait + run) / max(run, bound), the usual bounded slowdown."""
        if not self.outcomes:
            return 0.0
        return sum((o.end - o.submit) / max(o.end - o.start, bound) for o in self.outcomes) / len(
            self.outcomes
        )

    def utilisation(self) -> float:
        """Busy core-seconds over cores x makespan."""
        span = self.makespan - min((o.submit for o in self.outcomes), default=0.0)
        if span <= 0:
            return 0.0
        busy = sum((o.end - o.start) * o.processors for o in self.outcomes)
        return busy / (self.total_cores * span)


_ARRIVAL, _FINISH = 1, 0  # finishes first at equal times: they free room


class Simulator:
    def __init__(
        self,
        shape: ClusterShape,
        scenario: Scenario,
        *,
        seed: int = 0,
        all_at_once: bool = False,
        backfill: bool = False,
        backfill_depth: int = 64,
    ) -> None:
        self.shape = shape
        self.scenario = scenario
        self.seed = seed
        self.all_at_once = all_at_once
        self.backfill = backfill
        self.backfill_depth = backfill_depth

    def run(self, jobs: Iterable[Job], until: float | None = None) -> Result:
        """Replay ``jobs``; stop at simulated time ``until`` if given."""
        rng = random.Random(self.seed)
        cluster = self.shape.build()
        events: list[tuple[float, int, int, object]] = []
        order = itertools.count()
        first_submit: float | None = None
        for job in jobs:
            if first_submit is None:
                first_submit = job.submit
            arrival = 0.0 if self.all_at_once else job.submit - first_submit
            score = rng.uniform(*self.scenario.cache_scores) if self.scenario.cache_scores else 0.0
            heapq.heappush(events, (arrival, _ARRIVAL, next(order), (job, score)))
        queue: collections.deque[tuple[Job, float, float]] = collections.deque()
        outcomes: list[Outcome] = []
        never_fit: list[int] = []
        started: dict[str, tuple[Job, float, float]] = {}
        while events:
            now, kind, _, payload = heapq.heappop(events)
            if until is not None and now > until:
                break
            if kind == _FINISH:
                app_id = payload
                cluster.release([app_id])
                job, arrival, start = started.pop(app_id)
                outcomes.append(Outcome(job.job_id, arrival, start, now, job.processors))
            else:
                job, score = payload
                per_vm_mb = (job.memory_mb or 0.0) / job.processors
                if job.processors > self.shape.total_cores or per_vm_mb > self.shape.ram_mb:
                    never_fit.append(job.job_id)
                else:
                    queue.append((job, score, now))
            self._dispatch(now, queue, cluster, events, order, started)
        return Result(
            self.scenario.name,
            outcomes,
            never_fit,
            unfinished=len(queue) + len(started),
            total_cores=self.shape.total_cores,
        )

    def _dispatch(self, now, queue, cluster, events, order, started) -> None:
        while queue and self._start(queue[0], now, cluster, events, order, started):
            queue.popleft()
        if not self.backfill:
            return
        for entry in list(itertools.islice(queue, 1, self.backfill_depth)):
            if self._start(entry, now, cluster, events, order, started):
                queue.remove(entry)

    def _start(self, entry, now, cluster, events, order, started) -> bool:
        job, score, arrival = entry
        memory = (job.memory_mb or 0.0) / job.processors
        scenario = self.scenario
        app_id = str(job.job_id)
        app_class = scenario.app_class or (
            AppClass.SYNC_HPC if job.processors > 1 else AppClass.ASYNC_HPC
        )
        request = PlacementRequest(
            ApplicationProfile(app_class, score, None),
            Resources(1, memory, 0),
            job.processors,
            app_id,
        )
        try:
            plan = algorithm.plan(
                request, cluster.columns(), scenario.thresholds, policy=scenario.policy
            )
        except NoPlacement:
            return False
        cluster.apply(plan, request)
        started[app_id] = (job, arrival, now)
        end = now + job.run_time * scenario.runtime_factor
        heapq.heappush(events, (end, _FINISH, next(order), app_id))
        return True
