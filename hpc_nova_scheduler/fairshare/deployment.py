"""What both many-task simulators share: the workload, pilots on nodes, usage, the result.

Seed 002 (section 5) deploys one pilot job per allocated core; a pilot keeps
fetching the next task of its user's queue until the queue is empty. The
allocator's plan says how many cores of each platform each user gets and
which users share a node (node templates); this module lays the templates
onto concrete nodes, so that every core has a well-defined owner, and keeps
the books both engines need:

* :class:`Workload`: users, their applications, tasks, submission times and
  weights, checked once;
* :class:`Deployment`: the owner of every core and the run time of its
  owner's tasks there;
* :class:`Ledger`: each user's decayed past usage, for policies with
  history;
* :class:`Result`: what a run produced, judged by :mod:`.evaluation`.

Modelling decisions (every one a reading: the paper's simulator is not
published):

* **Nodes are laid out stably.** A platform's nodes are numbered 0..N-1.
  On a new plan, a template keeps the nodes that already run exactly its
  slots (lowest numbers first); the rest of its nodes are the free ones in
  ascending order. On a node given a new template, a user who stays keeps
  the cores it had there (lowest first), and the other slots take the free
  cores in ascending order, in slot order. The mapping depends on nothing
  but the plan and the previous layout, so a core's new owner is well
  defined, and a plan that repeats the last one moves no pilot. Cores of a
  node beyond its template's slots, and nodes beyond the templates, stay
  idle. (The paper does not say which pilots move; moving as few as the
  plan allows is what a pilot service would do.)
* **A task's run time is fixed when it starts**: the combination run time
  (:meth:`CombinationTable.runtime`) of its application on the platform
  beside the applications of its node's template at that moment. A node
  whose template changes keeps running the old tasks to their end at their
  old speed (non-preemptive re-deployment, section 5); the mixed co-runners
  of that hand-over are not modelled.
* **Demand** is the tasks still in a user's queue (not started): the cores
  a plan gives beyond it would have nothing to fetch. A user whose queue is
  empty is left out of the plan (its running tasks finish on the cores that
  run them); when no user has tasks waiting, the allocator is not called.
* **Usage** (policies with history, ``half_life_s > 0``) is charged per
  core-second of tasks run, by :func:`.allocator.charge` in the policy's
  ``usage_charge``; between two allocator runs, dt apart, the old usage
  decays over dt and the charges of the interval over dt / 2 (as if
  incurred at its midpoint), so that a half-life of 0 keeps no history at
  all. The claimants are given their usage at each run.
* **Makespan.** A user's makespan runs from its submission to its last
  task's end; the system's from the first submission to the last end (with
  every user submitted at once, the largest user makespan, as in
  :func:`.evaluation.evaluate`). Fastest-OneCore uses the user's fastest
  solo run time over the scenario's platforms and k = total cores / users.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from hpc_nova_scheduler.core.sharing import Claimant, NodeTemplate, Platform
from hpc_nova_scheduler.fairshare import evaluation
from hpc_nova_scheduler.fairshare.allocator import Plan, charge, decay
from hpc_nova_scheduler.fairshare.combinations import CombinationTable

#: The slots of a node's template: ((user, cores), ...); None for an idle node.
NodeKey = tuple[tuple[str, int], ...] | None


class SimulationError(ValueError):
    """A run that cannot be posed or cannot finish: bad input or a plan that strands tasks."""


class Planner(Protocol):
    """The allocator both engines call (:class:`.allocator.TwoLevel`)."""

    usage_charge: str

    def plan(
        self,
        claimants: Sequence[Claimant],
        platforms: Sequence[Platform],
        times: CombinationTable,
        previous: Plan | None = None,
    ) -> Plan: ...


@dataclasses.dataclass(frozen=True)
class Workload:
    """The users of one run, in a fixed order, with everything checked."""

    users: tuple[str, ...]
    applications: tuple[str, ...]
    tasks: tuple[int, ...]
    #: Submission time of each user, seconds.
    arrivals: tuple[float, ...]
    weights: tuple[float, ...]

    @classmethod
    def build(
        cls,
        platforms: Sequence[Platform],
        tasks: Mapping[str, int],
        times: CombinationTable,
        arrivals: Mapping[str, float] | None = None,
        weights: Mapping[str, float] | None = None,
        applications: Mapping[str, str] | None = None,
    ) -> Workload:
        """Users in ``tasks``' order; each runs the application of its own name by default."""
        if not platforms:
            raise SimulationError("no platforms to run on")
        names = [p.name for p in platforms]
        if len(set(names)) != len(names):
            raise SimulationError(f"a platform is named twice: {', '.join(names)}")
        if not tasks:
            raise SimulationError("no users to simulate")
        for label, given in (
            ("arrivals", arrivals),
            ("weights", weights),
            ("applications", applications),
        ):
            unknown = sorted(set(given or {}) - set(tasks))
            if unknown:
                raise SimulationError(f"{label}: unknown user {unknown[0]}")
        users = tuple(tasks)
        apps = tuple((applications or {}).get(u, u) for u in users)
        counts = []
        for user in users:
            count = tasks[user]
            if isinstance(count, bool) or int(count) != count or count < 1:
                raise SimulationError(f"tasks of {user} must be a whole number >= 1, not {count}")
            counts.append(int(count))
        submitted = []
        for user in users:
            at = float((arrivals or {}).get(user, 0.0))
            if not (math.isfinite(at) and at >= 0):
                raise SimulationError(f"arrival of {user} must be a finite time >= 0, not {at}")
            submitted.append(at)
        weighed = []
        for user in users:
            weight = float((weights or {}).get(user, 1.0))
            if not (math.isfinite(weight) and weight > 0):
                raise SimulationError(f"weight of {user} must be > 0, not {weight}")
            weighed.append(weight)
        for user, app in zip(users, apps, strict=True):
            if not any(times.solo_runtime(app, p.name) is not None for p in platforms):
                raise SimulationError(f"{user}: no solo run time of {app} on any platform")
        return cls(users, apps, tuple(counts), tuple(submitted), tuple(weighed))

    def fastest_runtimes(
        self, platforms: Sequence[Platform], times: CombinationTable
    ) -> list[float]:
        """Each user's fastest solo run time over the scenario's platforms."""
        found = []
        for app in self.applications:
            known = [times.solo_runtime(app, p.name) for p in platforms]
            found.append(min(t for t in known if t is not None))
        return found


@dataclasses.dataclass(frozen=True)
class Change:
    """A node a new plan laid out anew, and what its cores had before."""

    platform: int
    node: int
    #: Its first core's number.
    first: int
    owners: list[int]
    runtimes: list[float]


class Deployment:
    """Every core's owner and the run time of its owner's tasks there.

    Cores are numbered platform after platform, node after node: core
    ``offset[p] + node * cores_per_node + c``. ``owner`` holds a user index
    (-1: idle) and ``runtime`` the mean run time of the owner's tasks on
    that core under its node's template (0 when idle); both are plain lists,
    which the discrete engine reads a million times.
    """

    def __init__(
        self,
        platforms: Sequence[Platform],
        workload: Workload,
        times: CombinationTable,
    ) -> None:
        self.platforms = tuple(platforms)
        self.times = times
        self._index = {user: i for i, user in enumerate(workload.users)}
        self._apps = dict(zip(workload.users, workload.applications, strict=True))
        self.offsets: list[int] = []
        total = 0
        for platform in self.platforms:
            self.offsets.append(total)
            total += platform.cores
        self.total_cores = total
        #: The platform index of every core.
        self.platform_of = [
            p for p, platform in enumerate(self.platforms) for _ in range(platform.cores)
        ]
        self.owner = [-1] * total
        self.runtime = [0.0] * total
        self.keys: list[list[NodeKey]] = [[None] * p.nodes for p in self.platforms]
        self._slots: dict[tuple[int, NodeKey], list[tuple[int, int, float]]] = {}
        self._cores: dict[tuple[int, NodeKey, tuple[int, ...]], tuple[list[int], list[float]]] = {}

    def slots(self, p: int, key: NodeKey) -> list[tuple[int, int, float]]:
        """(user index, cores, run time) of each slot of a node of platform ``p`` under ``key``."""
        cached = self._slots.get((p, key))
        if cached is not None:
            return cached
        platform = self.platforms[p]
        found: list[tuple[int, int, float]] = []
        if key is not None:
            apps = frozenset(self._apps[user] for user, _ in key)
            for user, cores in key:
                runtime = self.times.runtime(self._apps[user], platform.name, apps)
                if not (math.isfinite(runtime) and runtime > 0):
                    raise SimulationError(
                        f"run time of {self._apps[user]} on {platform.name} must be > 0"
                    )
                found.append((self._index[user], cores, runtime))
        self._slots[(p, key)] = found
        return found

    def apply(self, templates: Mapping[str, Sequence[NodeTemplate]]) -> list[Change]:
        """Lay a plan's templates onto the nodes; each changed node with its cores' old state."""
        unknown = sorted(set(templates) - {p.name for p in self.platforms})
        if unknown:
            raise SimulationError(f"plan: unknown platform {unknown[0]}")
        changed: list[Change] = []
        for p, platform in enumerate(self.platforms):
            wanted = self._check(platform, templates.get(platform.name, ()))
            old = self.keys[p]
            new = stable_layout(old, wanted)
            cpn = platform.cores_per_node
            for node, key in enumerate(new):
                if key == old[node]:
                    continue
                start = self.offsets[p] + node * cpn
                owners = self.owner[start : start + cpn]
                runtimes = self.runtime[start : start + cpn]
                changed.append(Change(p, node, start, owners, runtimes))
                # Nodes re-laid alike are many: one answer a (previous owners, template).
                laid = self._cores.get((p, key, tuple(owners)))
                if laid is None:
                    laid = stable_cores(owners, self.slots(p, key))
                    self._cores[(p, key, tuple(owners))] = laid
                self.owner[start : start + cpn], self.runtime[start : start + cpn] = laid
            self.keys[p] = new
        return changed

    def _check(
        self, platform: Platform, templates: Sequence[NodeTemplate]
    ) -> list[tuple[NodeKey, int]]:
        wanted: list[tuple[NodeKey, int]] = []
        nodes = 0
        for template in templates:
            if template.platform != platform.name:
                raise SimulationError(
                    f"plan: a template of {template.platform} listed under {platform.name}"
                )
            if template.nodes < 0:
                raise SimulationError(
                    f"plan: {template.nodes} nodes of a template on {platform.name}"
                )
            if template.cores > platform.cores_per_node:
                raise SimulationError(
                    f"plan: a template of {template.cores} cores on {platform.name}'s "
                    f"{platform.cores_per_node}-core nodes"
                )
            for user, cores in template.slots:
                if user not in self._index:
                    raise SimulationError(f"plan: unknown claimant {user} on {platform.name}")
                if cores < 1:
                    raise SimulationError(f"plan: {cores} cores of {user} on {platform.name}")
            nodes += template.nodes
            if template.nodes and template.slots:
                wanted.append((tuple(template.slots), template.nodes))
        if nodes > platform.nodes:
            raise SimulationError(
                f"plan: {nodes} nodes of {platform.name}, which has {platform.nodes}"
            )
        return wanted


def stable_cores(
    old: Sequence[int], slots: Sequence[tuple[int, int, float]]
) -> tuple[list[int], list[float]]:
    """A node's cores for its new slots: each user keeps the cores it had, lowest first.

    The rest of a slot's cores are the node's free ones in ascending order,
    so that a user who stays on a node keeps its pilots there.
    """
    owners = [-1] * len(old)
    runtimes = [0.0] * len(old)
    rest: list[tuple[int, int, float]] = []
    for user, cores, runtime in slots:
        for core, had in enumerate(old):
            if not cores:
                break
            if had == user and owners[core] < 0:
                owners[core], runtimes[core] = user, runtime
                cores -= 1
        if cores:
            rest.append((user, cores, runtime))
    free = (core for core, user in enumerate(owners) if user < 0)
    for user, cores, runtime in rest:
        for _ in range(cores):
            core = next(free)
            owners[core], runtimes[core] = user, runtime
    return owners, runtimes


def stable_layout(old: Sequence[NodeKey], wanted: Sequence[tuple[NodeKey, int]]) -> list[NodeKey]:
    """Nodes for each (key, count): those already running the key first, then free ones in order."""
    keeping: dict[NodeKey, collections.deque[int]] = {}
    for node, key in enumerate(old):
        if key is not None:
            keeping.setdefault(key, collections.deque()).append(node)
    new: list[NodeKey] = [None] * len(old)
    rest: list[tuple[NodeKey, int]] = []
    for key, count in wanted:
        kept = keeping.get(key)
        while count and kept:
            new[kept.popleft()] = key
            count -= 1
        if count:
            rest.append((key, count))
    free = (node for node, key in enumerate(new) if key is None)
    for key, count in rest:
        for _ in range(count):
            new[next(free)] = key
    return new


class Ledger:
    """Each user's decayed usage, charged per core-second run on each platform."""

    def __init__(
        self,
        workload: Workload,
        platforms: Sequence[Platform],
        times: CombinationTable,
        how: str,
        half_life_s: float,
    ) -> None:
        if not (half_life_s >= 0):
            raise SimulationError(f"half_life_s must be >= 0, not {half_life_s}")
        self.workload = workload
        self.platforms = tuple(platforms)
        self.times = times
        self.how = how
        self.half_life_s = half_life_s
        #: Each user's solo run times over the scenario's platforms, what ``charge`` scales by.
        self._solo = [
            {
                p.name: seconds
                for p in self.platforms
                if (seconds := times.solo_runtime(app, p.name)) is not None
            }
            for app in workload.applications
        ]
        self.usage = [0.0] * len(workload.users)
        self._last: float | None = None
        #: Core-seconds per (user, platform) charged so far.
        self._charged = [0.0] * (len(workload.users) * len(self.platforms))

    @property
    def keeps_history(self) -> bool:
        return self.half_life_s > 0

    def settle(self, now: float, core_seconds: Sequence[float]) -> None:
        """Bring usage to ``now``; ``core_seconds`` per (user, platform), run so far."""
        if not self.keeps_history:
            return
        if self._last is None:
            self._last = now
        elapsed = now - self._last
        count = len(self.platforms)
        for u, solo in enumerate(self._solo):
            fresh = 0.0
            for p, platform in enumerate(self.platforms):
                i = u * count + p
                seconds = core_seconds[i] - self._charged[i]
                if seconds > 0:
                    fresh += charge(seconds, solo, platform.name, self.how)
                self._charged[i] = core_seconds[i]
            self.usage[u] = decay(self.usage[u], elapsed, self.half_life_s) + decay(
                fresh, elapsed / 2, self.half_life_s
            )
        self._last = now

    def claimants(self, demands: Sequence[int]) -> list[Claimant]:
        """The users with tasks waiting, as the allocator's claimants."""
        w = self.workload
        return [
            Claimant(w.users[u], w.applications[u], demand, w.weights[u], self.usage[u])
            for u, demand in enumerate(demands)
            if demand > 0
        ]


@dataclasses.dataclass(frozen=True)
class Step:
    """One allocator run: when, and the cores of each platform it gave each user."""

    time_s: float
    allocation: dict[str, dict[str, int]]


@dataclasses.dataclass(frozen=True)
class UserOutcome:
    """One user's application in a run."""

    user: str
    application: str
    tasks: int
    submit_s: float
    finish_s: float
    #: Submission to the last task's end.
    makespan_s: float
    #: Core-seconds its tasks ran, per platform.
    core_seconds: dict[str, float]
    #: Most cores the allocator gave it at once, over all platforms.
    peak_cores: int

    @property
    def mean_cores(self) -> float:
        """Cores it kept busy on average over its makespan."""
        return sum(self.core_seconds.values()) / self.makespan_s


@dataclasses.dataclass(frozen=True)
class Result:
    """A run of a policy over a workload, judged by seed 002's metrics."""

    #: "discrete" (pilots and tasks) or "rate" (the fluid evaluation).
    method: str
    users: dict[str, UserOutcome]
    #: Every allocator run, in time order.
    steps: tuple[Step, ...]
    evaluation: evaluation.Evaluation

    @property
    def invocations(self) -> int:
        return len(self.steps)

    @property
    def makespan_s(self) -> float:
        """The system's: first submission to last end."""
        return self.evaluation.makespan_s

    @property
    def fairness(self) -> float:
        return self.evaluation.fairness

    @property
    def jain(self) -> float:
        return self.evaluation.jain

    @property
    def spread(self) -> float:
        return self.evaluation.spread

    @property
    def normalised(self) -> dict[str, float]:
        return self.evaluation.normalised


def result(
    method: str,
    workload: Workload,
    platforms: Sequence[Platform],
    times: CombinationTable,
    finish: Sequence[float],
    core_seconds: Sequence[float],
    steps: Sequence[Step],
) -> Result:
    """Assemble a :class:`Result` from the engines' per-user arrays."""
    count = len(platforms)
    fastest = workload.fastest_runtimes(platforms, times)
    users: dict[str, UserOutcome] = {}
    runs = []
    for u, user in enumerate(workload.users):
        peak = max(
            (sum(step.allocation.get(user, {}).values()) for step in steps),
            default=0,
        )
        outcome = UserOutcome(
            user=user,
            application=workload.applications[u],
            tasks=workload.tasks[u],
            submit_s=workload.arrivals[u],
            finish_s=finish[u],
            makespan_s=finish[u] - workload.arrivals[u],
            core_seconds={p.name: core_seconds[u * count + i] for i, p in enumerate(platforms)},
            peak_cores=peak,
        )
        users[user] = outcome
        runs.append(evaluation.UserRun(user, outcome.tasks, outcome.makespan_s, fastest[u]))
    total = sum(p.cores for p in platforms)
    judged = evaluation.evaluate(runs, total)
    system = max(finish) - min(workload.arrivals)
    return Result(method, users, tuple(steps), dataclasses.replace(judged, makespan_s=system))


def step_of(plan: Plan, time_s: float) -> Step:
    """The allocator's answer as a :class:`Step` (a copy: plans are the allocator's)."""
    return Step(time_s, {user: dict(cores) for user, cores in plan.allocation.items()})
