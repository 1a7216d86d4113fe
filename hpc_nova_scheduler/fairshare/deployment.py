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
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

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


class Deployment:
    """Every core's owner and the run time of its owner's tasks there.

    Cores are numbered platform after platform, node after node: core
    ``offset[p] + node * cores_per_node + c``. ``owners`` holds a user index
    (-1: idle) and ``runtimes`` the mean run time of the owner's tasks on
    that core under its node's template (0 when idle), as numpy arrays,
    which the rate engine reads whole; ``owner`` and ``runtime`` the same as
    plain lists, which the discrete engine reads a million times (kept only
    with ``lists``: empty otherwise).

    A node's state is one of a few *patterns* (its template, and the owner
    and run time of each of its cores: :class:`_Nodes`), so that a plan is
    laid by numpy over the nodes, and a pattern's successor under a template
    (:func:`stable_cores`) and a template's run times
    (:meth:`CombinationTable.runtime`) are worked out once a run.
    """

    def __init__(
        self,
        platforms: Sequence[Platform],
        workload: Workload,
        times: CombinationTable,
        lists: bool = True,
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
        #: The platform index of every core, as an array and as a list.
        self.platform_index = np.repeat(
            np.arange(len(self.platforms)), [p.cores for p in self.platforms]
        )
        self.platform_of: list[int] = self.platform_index.tolist()
        self.owners = np.full(total, -1, dtype=np.int64)
        self.runtimes = np.zeros(total)
        self.lists = lists
        self.owner: list[int] = [-1] * total if lists else []
        self.runtime: list[float] = [0.0] * total if lists else []
        self._slots: dict[tuple[int, NodeKey], list[tuple[int, int, float]]] = {}
        self._nodes = [_Nodes(p.nodes, p.cores_per_node) for p in self.platforms]

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

    def laid(self, p: int) -> list[tuple[NodeKey, int]]:
        """The templates on platform ``p``'s nodes and how many nodes each, by first node."""
        nodes = self._nodes[p]
        if nodes.laid is None:
            keys = nodes.key_of[nodes.layout]
            counts = np.bincount(keys, minlength=len(nodes.keys))
            first = np.full(counts.size, keys.size)
            np.minimum.at(first, keys, np.arange(keys.size))
            order = np.argsort(first, kind="stable")[: np.count_nonzero(counts)]
            nodes.laid = [
                (nodes.keys[k], n)
                for k, n in zip(order.tolist(), counts[order].tolist(), strict=True)
                if k
            ]
        return nodes.laid

    def apply(self, templates: Mapping[str, Sequence[NodeTemplate]]) -> list[tuple[int, int]]:
        """Lay a plan's templates onto the nodes; (platform, node) of each node laid anew.

        ``owners`` and ``runtimes`` are changed in place: the state before
        is the caller's to keep.
        """
        unknown = sorted(set(templates) - {p.name for p in self.platforms})
        if unknown:
            raise SimulationError(f"plan: unknown platform {unknown[0]}")
        changed: list[tuple[int, int]] = []
        for p, platform in enumerate(self.platforms):
            wanted = self._check(platform, templates.get(platform.name, ()))
            # A repeated list of templates keeps its layout (stable_layout
            # keeps every node that runs its template).
            if wanted == self._nodes[p].wanted:
                continue
            changed.extend(zip(itertools.repeat(p), self._relay(p, wanted)))
            self._nodes[p].wanted = wanted
        return changed

    def _relay(self, p: int, wanted: Sequence[tuple[NodeKey, int]]) -> list[int]:
        """:func:`stable_layout` and :func:`stable_cores` over platform ``p``, in numpy."""
        nodes = self._nodes[p]
        kids = [nodes.key_id(key) for key, _ in wanted]
        old = nodes.key_of[nodes.layout]
        # Each template's nodes in ascending order, template after template.
        by_key = np.argsort(old, kind="stable")
        bounds = [0, *np.cumsum(np.bincount(old, minlength=len(nodes.keys))).tolist()]
        new = np.zeros_like(old)
        taken = dict.fromkeys(kids, 0)
        rest_ids: list[int] = []
        rest_counts: list[int] = []
        for kid, (_, count) in zip(kids, wanted, strict=True):
            # The lowest nodes already running it (not those an earlier
            # template of the same slots took).
            start = bounds[kid] + taken[kid]
            kept = min(count, bounds[kid + 1] - start)
            if kept:
                new[by_key[start : start + kept]] = kid
                taken[kid] += kept
            if count > kept:
                rest_ids.append(kid)
                rest_counts.append(count - kept)
        if rest_ids:
            free = np.flatnonzero(new == 0)
            new[free[: sum(rest_counts)]] = np.repeat(rest_ids, rest_counts)
        moved = np.flatnonzero(new != old)
        if not moved.size:
            return []
        # Nodes laid anew are many, their (pattern, template) pairs few.
        width = len(nodes.keys)
        pairs = nodes.layout[moved] * width + new[moved]
        present = np.flatnonzero(np.bincount(pairs))
        successor = np.zeros(present[-1] + 1, dtype=np.int64)
        successor[present] = [self._successor(p, *divmod(pair, width)) for pair in present.tolist()]
        patterns = successor[pairs]
        nodes.layout[moved] = patterns
        nodes.laid = None
        cpn = self.platforms[p].cores_per_node
        block = slice(self.offsets[p], self.offsets[p] + self.platforms[p].cores)
        self.owners[block].reshape(-1, cpn)[moved] = nodes.owner_of[patterns]
        self.runtimes[block].reshape(-1, cpn)[moved] = nodes.runtime_of[patterns]
        if self.lists:
            # In place: the discrete engine holds these lists.
            self.owner[block] = self.owners[block].tolist()
            self.runtime[block] = self.runtimes[block].tolist()
        return moved.tolist()

    def _successor(self, p: int, pattern: int, kid: int) -> int:
        """The pattern a node of platform ``p`` in ``pattern`` takes under template ``kid``."""
        nodes = self._nodes[p]
        found = nodes.successors.get((pattern, kid))
        if found is None:
            owners, runtimes = stable_cores(
                nodes.owner_tuples[pattern], self.slots(p, nodes.keys[kid])
            )
            found = nodes.successors[(pattern, kid)] = nodes.pattern(kid, owners, runtimes)
        return found

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


class _Nodes:
    """One platform's nodes: each one's pattern, the patterns, and what follows from them."""

    def __init__(self, nodes: int, cores_per_node: int) -> None:
        #: Templates by id (0: idle).
        self.key_ids: dict[NodeKey, int] = {None: 0}
        self.keys: list[NodeKey] = [None]
        #: Each node's pattern (0: idle).
        self.layout = np.zeros(nodes, dtype=np.int64)
        #: Per pattern: its template, and each core's owner and run time
        #: (rows beyond the patterns are room to grow).
        self.key_of = np.zeros(4, dtype=np.int64)
        self.owner_of = np.full((4, cores_per_node), -1, dtype=np.int64)
        self.runtime_of = np.zeros((4, cores_per_node))
        self.owner_tuples: list[tuple[int, ...]] = []
        self._ids: dict[tuple[int, tuple[int, ...], tuple[float, ...]], int] = {}
        #: (pattern, template) -> the pattern a node takes.
        self.successors: dict[tuple[int, int], int] = {}
        #: The templates last laid, as ``Deployment._check`` gives them.
        self.wanted: list[tuple[NodeKey, int]] = []
        #: ``Deployment.laid``'s answer, None once the layout changed.
        self.laid: list[tuple[NodeKey, int]] | None = []
        self.pattern(0, [-1] * cores_per_node, [0.0] * cores_per_node)

    def key_id(self, key: NodeKey) -> int:
        found = self.key_ids.get(key)
        if found is None:
            found = self.key_ids[key] = len(self.keys)
            self.keys.append(key)
        return found

    def pattern(self, kid: int, owners: Sequence[int], runtimes: Sequence[float]) -> int:
        """The id of the pattern of template ``kid`` with these cores, added if new."""
        state = (kid, tuple(owners), tuple(runtimes))
        found = self._ids.get(state)
        if found is None:
            found = self._ids[state] = len(self.owner_tuples)
            if found == len(self.key_of):
                self.key_of = np.concatenate((self.key_of, np.zeros_like(self.key_of)))
                self.owner_of = np.concatenate((self.owner_of, np.full_like(self.owner_of, -1)))
                self.runtime_of = np.concatenate((self.runtime_of, np.zeros_like(self.runtime_of)))
            self.key_of[found] = kid
            self.owner_of[found] = owners
            self.runtime_of[found] = runtimes
            self.owner_tuples.append(state[1])
        return found


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
    """Nodes for each (key, count): those already running the key first, then free ones in order.

    The rule :meth:`Deployment.apply` follows over all of a platform's nodes
    at once; stated node by node here.
    """
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
