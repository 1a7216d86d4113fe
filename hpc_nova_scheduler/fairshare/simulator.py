"""Seed 002's many-task simulator: pilots fetching one-core tasks (sections 5, 6.1, 6.5).

Each user submits one many-task application: a queue of one-core tasks.
The allocator (:class:`.allocator.TwoLevel`) decides each user's cores per
platform and which users share a node; one pilot runs on every allocated
core and keeps fetching the next task of its user's queue until the queue
is empty. :func:`simulate` is the entry point of both engines: this
module's discrete one (every task, in event order) and the rate-based
evaluation of :mod:`.fluid`.

Modelling decisions of the discrete engine (those both engines share are
in :mod:`.deployment`'s docstring):

* **When the allocator runs**: at the first submission, at every later
  submission (seed 002's "Dynamic Submission", section 6.5), whenever a
  user's queue empties (the moment its last task starts: from then on its
  cores are better spent on the others), and, if ``interval_s > 0``, every
  ``interval_s`` seconds from the first submission while tasks wait. The
  paper invokes it "when there are some changes in the system such as the
  submission and termination of an application" (section 5); the queue
  emptying is the termination that frees cores, since pilots leave once
  there is nothing to fetch.
* **Non-preemptive re-deployment** (section 5): a re-planned core keeps
  running its task and fetches from its new owner when the task ends. An
  idle core whose new owner has tasks starts one at once.
* **Run times**: a task's time is the combination run time of its node's
  template when it starts times its own factor, drawn once per task before
  the run from a numpy generator seeded with ``seed`` (each user's factors
  in turn, in the order of ``tasks``) by :func:`.workload.task_factors`:
  log-normal, mean 1, coefficient of variation ``task_cv``. The paper
  replicated traced tasks; a factor stands for a traced task's deviation
  from its mean.
* **Ties**: the paper gives a task to a random one of the pilots that fetch
  at the same instant, and averages 100 runs. Here pilots that fetch at the
  same instant do so in core order: tasks of a queue are exchangeable (their
  factors are independent draws), so which pilot takes which changes
  nothing in distribution; the seed varies the factors between runs.
* **Performance**: a heap of (end time, core) pilot completions, the
  factors pre-drawn as lists, per-core owner and run time kept by
  :class:`.deployment.Deployment` per node template; no object per task.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence

import numpy as np

from hpc_nova_scheduler.core.sharing import Platform
from hpc_nova_scheduler.fairshare import fluid
from hpc_nova_scheduler.fairshare.allocator import Plan
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.deployment import (
    Deployment,
    Ledger,
    Planner,
    Result,
    SimulationError,
    Step,
    Workload,
    result,
    step_of,
)
from hpc_nova_scheduler.fairshare.workload import TASK_CV, task_factors

METHODS = ("discrete", "rate")


def simulate(
    platforms: Sequence[Platform],
    tasks: Mapping[str, int],
    arrivals: Mapping[str, float] | None,
    policy: Planner,
    times: CombinationTable,
    seed: int = 0,
    method: str = "discrete",
    half_life_s: float = 0.0,
    weights: Mapping[str, float] | None = None,
    interval_s: float = 0.0,
    applications: Mapping[str, str] | None = None,
    task_cv: float = TASK_CV,
) -> Result:
    """Run ``policy`` over a workload: ``tasks`` per user, submitted at ``arrivals``.

    ``arrivals`` maps a user to its submission time (missing: 0; None: all
    at 0); ``applications`` a user to its application (missing: the user's
    own name, as in the paper, where each user is its application);
    ``weights`` a user to its weight (missing: 1). ``half_life_s`` 0 keeps no
    usage history. ``task_cv`` is the coefficient of variation of a task's
    run time around its mean. ``method`` is "discrete" (this module) or
    "rate" (:mod:`.fluid`, which draws nothing: it uses the mean run times,
    and ``task_cv`` for the tail of each user's last tasks).
    """
    if method not in METHODS:
        raise SimulationError(f"method must be one of {', '.join(METHODS)}, not {method}")
    if not (math.isfinite(interval_s) and interval_s >= 0):
        raise SimulationError(f"interval_s must be a finite number >= 0, not {interval_s}")
    if not (half_life_s >= 0):
        raise SimulationError(f"half_life_s must be >= 0, not {half_life_s}")
    workload = Workload.build(platforms, tasks, times, arrivals, weights, applications)
    if not (math.isfinite(task_cv) and task_cv >= 0):
        raise SimulationError(f"task_cv must be a finite number >= 0, not {task_cv}")
    if method == "rate":
        return fluid.evaluate(platforms, workload, policy, times, task_cv, half_life_s, interval_s)
    rng = np.random.default_rng(seed)
    drawn = [task_factors(rng, count, task_cv).tolist() for count in workload.tasks]
    return Pilots(platforms, workload, policy, times, drawn, half_life_s, interval_s).run()


class Pilots:
    """The discrete engine: one pilot a core, one heap entry a running task."""

    def __init__(
        self,
        platforms: Sequence[Platform],
        workload: Workload,
        policy: Planner,
        times: CombinationTable,
        factors: Sequence[Sequence[float]],
        half_life_s: float = 0.0,
        interval_s: float = 0.0,
    ) -> None:
        self.platforms = tuple(platforms)
        self.workload = workload
        self.policy = policy
        self.times = times
        self.factors = factors
        self.interval_s = interval_s
        self.deployment = Deployment(self.platforms, workload, times)
        self.ledger = Ledger(workload, self.platforms, times, policy.usage_charge, half_life_s)
        users = len(workload.users)
        cores = self.deployment.total_cores
        self.count = len(self.platforms)
        #: Tasks started (taken from the queue) per user.
        self.started = [0] * users
        self.arrived = [False] * users
        self.last_end = [0.0] * users
        #: Core-seconds of finished tasks per (user, platform).
        self.finished_seconds = [0.0] * (users * self.count)
        #: The user whose task each core runs (-1: none), and since when.
        self.running = [-1] * cores
        self.began = [0.0] * cores
        self.idle = set(range(cores))
        self.heap: list[tuple[float, int]] = []
        self.steps: list[Step] = []
        self.previous: Plan | None = None

    def run(self) -> Result:
        w = self.workload
        order = sorted(range(len(w.users)), key=lambda u: (w.arrivals[u], u))
        pending = 0
        now = w.arrivals[order[0]]
        tick = now + self.interval_s if self.interval_s > 0 else math.inf
        while True:
            arrival = w.arrivals[order[pending]] if pending < len(order) else math.inf
            # Ticks matter only while pilots run: an idle system waits for a submission.
            limit = min(arrival, tick) if self.heap else arrival
            self._run_until(limit)
            if limit == math.inf:
                break
            now = limit
            while pending < len(order) and w.arrivals[order[pending]] <= now:
                self.arrived[order[pending]] = True
                pending += 1
            if tick <= now:
                tick += self.interval_s * (math.floor((now - tick) / self.interval_s) + 1)
            self.replan(now)
            if not self.heap and pending == len(order):
                break
        left = [u for u in range(len(w.users)) if self.started[u] < w.tasks[u]]
        if left or self.heap:
            user = w.users[left[0]] if left else "?"
            raise SimulationError(
                f"the allocator left {user} with tasks waiting and no core to run them"
            )
        return result(
            "discrete",
            w,
            self.platforms,
            self.times,
            self.last_end,
            self.finished_seconds,
            self.steps,
        )

    def _run_until(self, limit: float) -> None:
        """Pilot completions up to ``limit`` (included), each fetching its owner's next task."""
        # Locals: this loop runs once per task.
        heap = self.heap
        owner = self.deployment.owner
        runtime = self.deployment.runtime
        platform_of = self.deployment.platform_of
        running = self.running
        began = self.began
        started = self.started
        tasks = self.workload.tasks
        factors = self.factors
        last_end = self.last_end
        seconds = self.finished_seconds
        count = self.count
        idle = self.idle
        heapreplace = heapq.heapreplace
        heappop = heapq.heappop
        while heap:
            end, core = heap[0]
            if end > limit:
                return
            user = running[core]
            last_end[user] = end
            seconds[user * count + platform_of[core]] += end - began[core]
            new = owner[core]
            if new >= 0:
                task = started[new]
                if task < tasks[new]:
                    started[new] = task + 1
                    running[core] = new
                    began[core] = end
                    heapreplace(heap, (end + runtime[core] * factors[new][task], core))
                    if task + 1 == tasks[new]:
                        self.replan(end)
                    continue
            heappop(heap)
            running[core] = -1
            idle.add(core)

    def replan(self, now: float) -> None:
        """Run the allocator and start the idle pilots it gave work; again if a queue empties."""
        while True:
            if self.ledger.keeps_history:
                self.ledger.settle(now, self._core_seconds(now))
            demands = [
                tasks - started if arrived else 0
                for tasks, started, arrived in zip(
                    self.workload.tasks, self.started, self.arrived, strict=True
                )
            ]
            claimants = self.ledger.claimants(demands)
            if not claimants:
                return
            plan = self.policy.plan(claimants, self.platforms, self.times, previous=self.previous)
            self.previous = plan
            self.steps.append(step_of(plan, now))
            self.deployment.apply(plan.templates)
            if not self._start_idle(now):
                return

    def _start_idle(self, now: float) -> bool:
        """Idle pilots fetch from their owners, in core order; whether a queue emptied."""
        owner = self.deployment.owner
        runtime = self.deployment.runtime
        emptied = False
        for core in sorted(self.idle):
            user = owner[core]
            if user < 0:
                continue
            task = self.started[user]
            if task >= self.workload.tasks[user]:
                continue
            self.started[user] = task + 1
            self.running[core] = user
            self.began[core] = now
            heapq.heappush(self.heap, (now + runtime[core] * self.factors[user][task], core))
            self.idle.discard(core)
            if task + 1 == self.workload.tasks[user]:
                emptied = True
        return emptied

    def _core_seconds(self, now: float) -> list[float]:
        """Core-seconds run per (user, platform) up to ``now``, running tasks included."""
        seconds = list(self.finished_seconds)
        platform_of = self.deployment.platform_of
        for core, user in enumerate(self.running):
            if user >= 0:
                seconds[user * self.count + platform_of[core]] += now - self.began[core]
        return seconds
