"""Seed 002's second level: which claimants share a node, platform by platform.

Algorithm 3 of the paper maps each platform's shares (cores per claimant,
from the first level) to nodes in two phases: while some claimant can
still take part in a whole combination, a policy places combinations on
nodes (lines 7-11); then the shares too small for any combination are
packed onto the nodes left (lines 12-15). Four policies:

* :class:`AllCore` ("allcore"): a claimant's share in whole nodes of its
  own (section 6.1's baseline).
* :class:`Random` ("random"): a random legal combination, one node at a
  time (section 6.1's other baseline).
* :class:`MAF` ("maf", most affected first, 5.2.1): the claimant whose
  co-runner affinity over the claimants still usable is highest picks the
  combination with its shortest run time and fills as many nodes with it
  as the members' shares allow.
* :class:`CARoundRobin` ("ca-rr", 5.2.2): every claimant in turn picks
  its own best combination for up to ``node_unit`` nodes.

Readings (the paper leaves these open; each is tested):

1. **Combinations are sets of applications, filled by claimants.** A
   combination is a legal set from ``times.combinations`` (AllCore,
   TwoApp, FourApp); each of its applications is filled by one claimant
   running it, which gets ``cores_per_node / len(set)`` cores of each of
   the template's nodes. Two claimants of one application are
   interchangeable for the run time, so they never share a node in the
   first phase (their set would be the AllCore one of their application:
   each runs AllCore nodes of its own instead). The paper's count of
   combinations "with repetition" (5.3.2) is an upper bound; its shapes
   (2.3) are sets.
2. **Which claimant fills a co-runner's place.** When a policy has chosen a
   set for claimant *i*, each other application of the set is filled by
   its claimant with the most cores left (ties: first by name), so that
   the combination fits on as many nodes as possible. Random draws it
   uniformly among the claimants of that application with enough cores.
3. **Legal sets.** ``times.combinations`` is asked once per call, over
   the applications of the claimants with a share; a set stays legal when
   other applications leave (true of :class:`.CombinationTable`). A set
   whose size does not divide the node's cores is an error.
4. **U_done, exactly.** A claimant is done when no legal set containing
   its application can be placed on one more node: its own share, or a
   co-runner application's largest share, is below the set's cores per
   member. Shares only shrink, so a set found impossible for a claimant
   stays impossible and is never looked at again (each claimant walks its
   sets, best first, once: this is what keeps MAF fast).
5. **MAF's co-runner affinity (line 8)** of claimant *i* running *K*: the
   mean, over the legal sets containing *K* whose applications all have a
   claimant not done, of C - S (metric "raw", seconds) or
   (C - S) / S x 100 ("normalised", %), with C = ``times.runtime(K, P,
   set)`` and S = K's solo run time on P: ``times.estimated_solo`` where
   the times have it (:class:`.CombinationTable`: the measured time, or for
   a pair never measured the application's mean over the platforms it was,
   the same estimate ``times.runtime`` uses), else the protocol's
   ``times.solo_runtime``; a ``times`` without either is refused rather
   than guessed, and so is an application with no solo time. The
   AllCore set {K} counts as a combination: its other cores run K's own
   tasks, which are co-runners too (as Fig. 2 and
   :mod:`.combinations` treat it). Affinities are kept as running sums and
   updated when an application's last claimant is done.
6. **MAF's ties** ("same application, or the same value"): values within
   a relative 1e-9 tie (the running sums may differ in the last bits); the
   tied claimants take turns in name order, each pick starting after the
   last one picked.
7. **Best combination** of a claimant: the legal set containing its
   application with the smallest ``times.runtime`` for it that can still
   be placed; ties by smaller set, then by the sorted names.
8. **CA-based RR's turn order** is the claimants' names; each turn places
   up to ``node_unit`` nodes (P_unit, default 1 as in 6.1), fewer when a
   member's share runs short; a claimant with nothing left to place is
   done; rounds go on until every claimant is done.
9. **Random** draws uniformly among the legal sets of applications every
   member of which still has a claimant with enough cores, one node at a
   time ("a possible combination of applications among the combinations
   that we have the trace of"), then a claimant per application as in 2.
10. **Leftovers (lines 12-15).** The claimants with cores left, in a
    random order (``rng``), fill the free nodes one after another: each
    puts as many of its cores as fit on the current node and the rest on
    the next. A node's cores may so be split unequally, and a claimant's
    leftover over two nodes; the nodes needed are ceil(left / cores per
    node), which always fit: the first phase fills its nodes' cores
    completely and the shares add up to at most the platform's cores.
    MAF, CA-RR and Random use the same rule.
11. **Output.** Templates with the same slots are merged (their nodes
    added), in the order first placed; slots are sorted by claimant;
    leftover templates come last. Only the leftovers use ``rng`` in MAF,
    CA-RR and AllCore; the same seed gives the same templates.
12. **Bad input** raises :class:`~hpc_nova_scheduler.core.sharing.SharingError`:
    a share that is not a whole number >= 0, a claimant with a share but no
    application, shares adding up to more than the platform's cores. A zero
    share is no claimant.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterable, Mapping
from typing import ClassVar

from hpc_nova_scheduler.core.sharing import CombinationTimes, NodeTemplate, Platform, SharingError

#: Co-runner affinity metrics of MAF (section 4.2).
CORUNNER_METRICS = ("raw", "normalised")
#: Affinities this close (relative) are the same value for MAF's round robin.
TIE_TOLERANCE = 1e-9

Slots = tuple[tuple[str, int], ...]


@dataclasses.dataclass
class Placement:
    """The first phase's templates and the cores each claimant has left."""

    templates: list[NodeTemplate]
    leftover: dict[str, int]


class _Platform:
    """Shares left on one platform, and the nodes placed so far."""

    def __init__(
        self, platform: Platform, shares: Mapping[str, int], applications: Mapping[str, str]
    ) -> None:
        self.platform = platform
        self.cores = platform.cores_per_node
        self.remaining = _validated(platform, shares, applications)
        self.claimants = sorted(self.remaining)
        self.app_of = {name: applications[name] for name in self.claimants}
        self.members: dict[str, list[str]] = {}
        for name in self.claimants:
            self.members.setdefault(self.app_of[name], []).append(name)
        self.free = platform.nodes
        self._placed: dict[Slots, int] = {}
        # The claimant of each application with the most cores left.
        self.best: dict[str, str] = {app: self._best_of(app) for app in self.members}

    def _best_of(self, app: str) -> str:
        return min(self.members[app], key=lambda name: (-self.remaining[name], name))

    def most(self, app: str) -> int:
        """The most cores any claimant of ``app`` has left."""
        return self.remaining[self.best[app]]

    def fits(self, combination: frozenset[str], q: int, apart: str | None = None) -> bool:
        """Whether every application of ``combination`` (but ``apart``) has q cores left."""
        return self.free > 0 and all(self.most(app) >= q for app in combination if app != apart)

    def place(self, members: Iterable[str], q: int, nodes: int) -> None:
        """``nodes`` nodes, each giving ``q`` cores to every member."""
        members = sorted(members)
        slots = tuple((name, q) for name in members)
        self._placed[slots] = self._placed.get(slots, 0) + nodes
        self.free -= nodes
        for name in members:
            self.remaining[name] -= q * nodes
        for app in {self.app_of[name] for name in members}:
            self.best[app] = self._best_of(app)

    def placement(self) -> Placement:
        return Placement(
            templates=_templates(self.platform.name, self._placed),
            leftover={name: left for name, left in self.remaining.items() if left},
        )


def _templates(platform: str, placed: Mapping[Slots, int]) -> list[NodeTemplate]:
    return [NodeTemplate(platform, slots, nodes) for slots, nodes in placed.items() if nodes]


def _validated(
    platform: Platform, shares: Mapping[str, int], applications: Mapping[str, str]
) -> dict[str, int]:
    """The positive shares by claimant; SharingError on a bad share."""
    for name, cores in shares.items():
        if isinstance(cores, bool) or not isinstance(cores, int) or cores < 0:
            raise SharingError(
                f"{name}: share on {platform.name} must be a whole number of cores >= 0, "
                f"not {cores!r}"
            )
        if cores and name not in applications:
            raise SharingError(f"{name}: a share on {platform.name} but no application")
    total = sum(shares.values())
    if total > platform.cores:
        raise SharingError(
            f"platform {platform.name}: shares add up to {total} cores, "
            f"more than its {platform.cores}"
        )
    return {name: cores for name, cores in sorted(shares.items()) if cores}


def legal_combinations(
    platform: Platform, applications: Iterable[str], times: CombinationTimes
) -> list[frozenset[str]]:
    """The legal sets of ``applications``, sorted (size, names); each splits a node equally."""
    apps = sorted(set(applications))
    if not apps:
        return []
    known = set(apps)
    found: set[frozenset[str]] = set()
    for combination in times.combinations(platform, apps):
        combination = frozenset(combination)
        if not combination or not combination <= known:
            raise SharingError(
                f"platform {platform.name}: combination {_named(combination)} is not a set "
                f"of the claimants' applications"
            )
        if platform.cores_per_node % len(combination):
            raise SharingError(
                f"platform {platform.name}: combination {_named(combination)} does not split "
                f"a node of {platform.cores_per_node} cores equally"
            )
        found.add(combination)
    return sorted(found, key=_set_key)


def _set_key(combination: frozenset[str]) -> tuple[int, tuple[str, ...]]:
    return (len(combination), tuple(sorted(combination)))


def _named(combination: frozenset[str]) -> str:
    return "{" + ", ".join(sorted(combination)) + "}"


def pack_leftovers(
    platform: Platform, leftover: Mapping[str, int], free_nodes: int, rng: random.Random
) -> list[NodeTemplate]:
    """Lines 12-15: the claimants' last cores, in random order, node after node (reading 10)."""
    order = sorted(name for name, cores in leftover.items() if cores > 0)
    rng.shuffle(order)
    nodes: list[list[tuple[str, int]]] = []
    room = 0
    for name in order:
        need = leftover[name]
        while need:
            if not room:
                nodes.append([])
                room = platform.cores_per_node
            take = min(need, room)
            nodes[-1].append((name, take))
            need -= take
            room -= take
    if len(nodes) > free_nodes:
        # Unreachable for validated shares (reading 10); a guard, not a policy.
        raise SharingError(
            f"platform {platform.name}: leftovers need {len(nodes)} nodes, {free_nodes} are free"
        )
    placed: dict[Slots, int] = {}
    for node in nodes:
        slots = tuple(sorted(node))
        placed[slots] = placed.get(slots, 0) + 1
    return _templates(platform.name, placed)


class TaskMapping:
    """A second-level policy: a first phase of combinations, then the leftovers packed."""

    name: ClassVar[str]

    def map(
        self,
        platform: Platform,
        shares: Mapping[str, int],
        applications: Mapping[str, str],
        times: CombinationTimes,
        rng: random.Random,
    ) -> list[NodeTemplate]:
        """Node templates covering ``shares`` exactly, on at most the platform's nodes."""
        placement = self.combine(platform, shares, applications, times, rng)
        used = sum(template.nodes for template in placement.templates)
        return placement.templates + pack_leftovers(
            platform, placement.leftover, platform.nodes - used, rng
        )

    def combine(
        self,
        platform: Platform,
        shares: Mapping[str, int],
        applications: Mapping[str, str],
        times: CombinationTimes,
        rng: random.Random,
    ) -> Placement:
        """Lines 5-11: whole combinations only; what is left is for :func:`pack_leftovers`."""
        raise NotImplementedError


class AllCore(TaskMapping):
    """Each claimant alone on whole nodes (one application per node)."""

    name = "allcore"

    def combine(
        self,
        platform: Platform,
        shares: Mapping[str, int],
        applications: Mapping[str, str],
        times: CombinationTimes,
        rng: random.Random,
    ) -> Placement:
        state = _Platform(platform, shares, applications)
        for name in state.claimants:
            nodes = state.remaining[name] // state.cores
            if nodes:
                state.place([name], state.cores, nodes)
        return state.placement()


class Random(TaskMapping):
    """A random legal combination on one node at a time (reading 9)."""

    name = "random"

    def combine(
        self,
        platform: Platform,
        shares: Mapping[str, int],
        applications: Mapping[str, str],
        times: CombinationTimes,
        rng: random.Random,
    ) -> Placement:
        state = _Platform(platform, shares, applications)
        candidates = legal_combinations(platform, state.members, times)
        while candidates:
            index = rng.randrange(len(candidates))
            combination = candidates[index]
            q = state.cores // len(combination)
            if not state.fits(combination, q):
                # Shares only shrink: it never fits again. Dropping it keeps
                # the draw uniform over the sets that still fit.
                candidates[index] = candidates[-1]
                candidates.pop()
                continue
            members = [
                rng.choice([name for name in state.members[app] if state.remaining[name] >= q])
                for app in sorted(combination)
            ]
            state.place(members, q, 1)
        return state.placement()


class _Ranked:
    """Each claimant's legal sets, shortest run time for it first, and where it has got to."""

    def __init__(self, state: _Platform, times: CombinationTimes) -> None:
        self.state = state
        platform = state.platform
        self.combinations = legal_combinations(platform, state.members, times)
        self.by_app: dict[str, list[frozenset[str]]] = {app: [] for app in state.members}
        for combination in self.combinations:
            for app in combination:
                self.by_app[app].append(combination)
        self.runtime: dict[tuple[str, frozenset[str]], float] = {}
        for combination in self.combinations:
            for app in combination:
                seconds = times.runtime(app, platform.name, combination)
                if not (math.isfinite(seconds) and seconds > 0):
                    raise SharingError(
                        f"{app} on {platform.name} beside {_named(combination)}: run time must "
                        f"be > 0 seconds, not {seconds!r}"
                    )
                self.runtime[(app, combination)] = seconds
        self.ranked = {
            app: sorted(sets, key=lambda c, a=app: (self.runtime[(a, c)], *_set_key(c)))
            for app, sets in self.by_app.items()
        }
        self._cursor = dict.fromkeys(state.claimants, 0)

    def best(self, name: str) -> frozenset[str] | None:
        """``name``'s best set that still fits one more node; None when it is done."""
        state = self.state
        app = state.app_of[name]
        ranked = self.ranked[app]
        at = self._cursor[name]
        while at < len(ranked):
            combination = ranked[at]
            q = state.cores // len(combination)
            if state.remaining[name] >= q and state.fits(combination, q, apart=app):
                break
            at += 1  # never fits again (reading 4)
        self._cursor[name] = at
        return ranked[at] if at < len(ranked) else None

    def place(self, name: str, combination: frozenset[str], limit: int) -> None:
        """Up to ``limit`` nodes of ``combination``, ``name`` in its application's place."""
        state = self.state
        q = state.cores // len(combination)
        app = state.app_of[name]
        members = [name] + [state.best[other] for other in combination if other != app]
        nodes = min(limit, state.free, *(state.remaining[member] // q for member in members))
        state.place(members, q, nodes)


class MAF(TaskMapping):
    """Most affected first: the claimant most slowed by co-runners chooses (5.2.1)."""

    name = "maf"

    def __init__(self, corunner_metric: str = "normalised") -> None:
        if corunner_metric not in CORUNNER_METRICS:
            raise SharingError(
                f"co-runner metric must be one of {', '.join(CORUNNER_METRICS)}, "
                f"not {corunner_metric!r}"
            )
        self.corunner_metric = corunner_metric

    def combine(
        self,
        platform: Platform,
        shares: Mapping[str, int],
        applications: Mapping[str, str],
        times: CombinationTimes,
        rng: random.Random,
    ) -> Placement:
        state = _Platform(platform, shares, applications)
        ranked = _Ranked(state, times)
        solo = _solo_runtimes(times, platform, state.members)
        order = {name: index for index, name in enumerate(state.claimants)}
        active = [name for name in state.claimants if ranked.best(name) is not None]
        affinity = _CorunnerSums(ranked, {state.app_of[name] for name in active})
        last = -1
        while active:
            values = {
                app: self._affinity(affinity.mean(app), solo[app])
                for app in {state.app_of[name] for name in active}
            }
            top = max(values.values())
            tied = [
                name
                for name in active
                if math.isclose(values[state.app_of[name]], top, rel_tol=TIE_TOLERANCE)
            ]
            # Round robin among the tied (reading 6): the first after the last pick.
            chosen = next((name for name in tied if order[name] > last), tied[0])
            last = order[chosen]
            combination = ranked.best(chosen)
            assert combination is not None  # active claimants always have one (reading 4)
            ranked.place(chosen, combination, state.free)
            still = [name for name in active if ranked.best(name) is not None]
            if len(still) < len(active):
                affinity.keep({state.app_of[name] for name in still})
            active = still
        return state.placement()

    def _affinity(self, mean_runtime: float, solo: float) -> float:
        raw = mean_runtime - solo
        return raw if self.corunner_metric == "raw" else raw / solo * 100.0


def _solo_runtimes(
    times: CombinationTimes, platform: Platform, applications: Iterable[str]
) -> dict[str, float]:
    """S of reading 5: each application's solo run time on ``platform``."""
    # The estimate first: a pair the first level gave cores to on neutral
    # affinity has no measured solo time, but runtime() answers for it.
    solo_runtime = getattr(times, "estimated_solo", None) or getattr(times, "solo_runtime", None)
    if solo_runtime is None:
        raise SharingError(f"maf needs solo run times: {type(times).__name__} has no solo_runtime")
    found: dict[str, float] = {}
    for app in sorted(applications):
        seconds = solo_runtime(app, platform.name)
        if seconds is None or not (math.isfinite(seconds) and seconds > 0):
            raise SharingError(
                f"maf: no solo run time of {app} on {platform.name} (found {seconds!r})"
            )
        found[app] = seconds
    return found


class _CorunnerSums:
    """Per application, the run times over the legal sets of the active applications."""

    def __init__(self, ranked: _Ranked, active: set[str]) -> None:
        self.ranked = ranked
        self.active = set(active)
        self.total = dict.fromkeys(ranked.by_app, 0.0)
        self.count = dict.fromkeys(ranked.by_app, 0)
        for combination in ranked.combinations:
            if combination <= self.active:
                for app in combination:
                    self.total[app] += ranked.runtime[(app, combination)]
                    self.count[app] += 1

    def keep(self, active: set[str]) -> None:
        """Drop the sets of every application no longer in ``active``."""
        for gone in sorted(self.active - active):
            self.active.discard(gone)
            for combination in self.ranked.by_app[gone]:
                # Counted until now only when every other member was active.
                if combination - {gone} <= self.active:
                    for app in combination - {gone}:
                        self.total[app] -= self.ranked.runtime[(app, combination)]
                        self.count[app] -= 1

    def mean(self, app: str) -> float:
        # An active application has at least its best set, all of it active.
        return self.total[app] / self.count[app]


class CARoundRobin(TaskMapping):
    """Co-runner affinity based round robin: each claimant in turn picks its best (5.2.2)."""

    name = "ca-rr"

    def __init__(self, node_unit: int = 1) -> None:
        if isinstance(node_unit, bool) or not isinstance(node_unit, int) or node_unit < 1:
            raise SharingError(f"node unit must be a whole number >= 1, not {node_unit!r}")
        self.node_unit = node_unit

    def combine(
        self,
        platform: Platform,
        shares: Mapping[str, int],
        applications: Mapping[str, str],
        times: CombinationTimes,
        rng: random.Random,
    ) -> Placement:
        state = _Platform(platform, shares, applications)
        ranked = _Ranked(state, times)
        active = list(state.claimants)
        while active:
            still: list[str] = []
            for name in active:
                combination = ranked.best(name)
                if combination is None:
                    continue  # done (line 10)
                ranked.place(name, combination, self.node_unit)
                still.append(name)
            active = still
        return state.placement()
