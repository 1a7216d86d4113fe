"""Seed 004's multistart Iterated Local Search for interference-aware placement.

The cost of a placement s (Alves, eq. 5.9) is

    f(s) = alpha Z(s) + (1 - alpha) M(s) + lambda (E_cpu(s) + E_mem(s))

* Z: the hosts' interference levels F_m (the ``ivmp`` model) summed and
  divided by omega |M|, omega being the level of a host filled with copies
  of the batch's most aggressive application (as many as fit, up to the
  model's n) -- the normalisation seed-notes settles on;
* M: used hosts over the |M| available;
* E: CPU and memory beyond capacity, over the cloud's capacity; a
  placement is feasible when both are 0.

ILS (Algorithms 2 to 4): each of ``multistart`` starts builds a solution
(constructive phase), then repeats VND (Move1, Swap1, Move2, first
improvement) and a perturbation of j random moves until j passes
``iter_max_ils``; j resets to 1 on each improvement of the best and at each
start (the thesis's printed "until j <= iterMaxILS" would stop after one
round). Before the last perturbation of a start a new host is opened.

The constructive phase sorts the applications by SLLC access, then CPU plus
memory, then network plus DRAM access, all decreasing; repeatedly draws one
from the first and one from the last ceil(beta |left|) and puts the pair on
the used host with room where their demand and the host's room are best
aligned (smallest angle theta; tie: smallest room left, tau), else on a new
host, else on a random used host. Two deviations, so that a placement that
fits is never lost: a pair no empty host can hold is placed one application
at a time, and the best placement kept is the cheapest feasible one seen
(with lambda = 0.5, overloading a host can cost less than opening one).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence

from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.planners.base import SLACK, Batch, BatchApp, Placement, Planner, host_level

ALPHA = 0.7
BETA = 0.4
PENALTY = 0.5
ITER_MAX_ILS = 10
MULTISTART = 50
#: An improvement smaller than this is rounding, not a better placement.
EPSILON = 1e-12


@dataclasses.dataclass(frozen=True)
class IlsParameters:
    alpha: float = ALPHA
    beta: float = BETA
    penalty: float = PENALTY
    iter_max_ils: int = ITER_MAX_ILS
    multistart: int = MULTISTART
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError("alpha weighs interference against hosts: from 0 to 1")
        if not 0.0 < self.beta <= 1.0:
            raise ValueError("beta is a share of the applications left: above 0, at most 1")
        if self.penalty < 0 or self.iter_max_ils < 1 or self.multistart < 1:
            raise ValueError("penalty >= 0, iter_max_ils >= 1 and multistart >= 1")


def omega(batch: Batch, model: InterferenceModel) -> float:
    """The level of a host full of copies of the batch's most aggressive application."""
    most = 0.0
    limit = getattr(model, "max_apps", 12)
    for app in batch.apps:
        share = max(app.cpu, app.mem)
        copies = limit if share <= 0 else min(limit, max(2, int((1.0 + SLACK) // share)))
        most = max(most, host_level(model, [app] * copies))
    return most if most > 0 else 1.0


class Cost:
    """f(s) and its change under a move, host levels remembered by content."""

    def __init__(self, batch: Batch, model: InterferenceModel, parameters: IlsParameters):
        self.batch = batch
        self.model = model
        self.alpha = parameters.alpha
        self.penalty = parameters.penalty
        self.omega = omega(batch, model)
        self._levels: dict[tuple[int, ...], float] = {}

    def level(self, apps: Sequence[int]) -> float:
        key = tuple(sorted(apps))
        found = self._levels.get(key)
        if found is None:
            found = host_level(self.model, [self.batch.apps[a] for a in key]) if len(key) > 1 else 0
            self._levels[key] = found
        return found

    def host(self, apps: Sequence[int], cpu: float, mem: float) -> float:
        """One host's share of f: its interference, its being used, its overload."""
        if not apps:
            return 0.0
        hosts = self.batch.hosts
        over = max(0.0, cpu - 1.0 - SLACK) + max(0.0, mem - 1.0 - SLACK)
        return (
            self.alpha * self.level(apps) / (self.omega * hosts)
            + (1.0 - self.alpha) / hosts
            + self.penalty * over / hosts
        )


#: A host's applications, CPU and memory load.
_Host = tuple[list[int], float, float]


class State:
    """A placement being improved: applications per host slot and the loads."""

    def __init__(self, cost: Cost, hosts: list[list[int]]) -> None:
        self.cost = cost
        apps = cost.batch.apps
        self.hosts = hosts
        self.cpu = [math.fsum(apps[a].cpu for a in h) for h in hosts]
        self.mem = [math.fsum(apps[a].mem for a in h) for h in hosts]
        self.where = {a: m for m, h in enumerate(hosts) for a in h}
        self.parts = [cost.host(h, self.cpu[m], self.mem[m]) for m, h in enumerate(hosts)]
        self.value = math.fsum(self.parts)

    def copy(self) -> State:
        return State(self.cost, [list(h) for h in self.hosts])

    def used(self) -> list[int]:
        return [m for m, h in enumerate(self.hosts) if h]

    def placement(self) -> Placement:
        # Hosts numbered in the order they are used, as seed 004's symmetry breaking does.
        order = {m: i for i, m in enumerate(self.used())}
        return Placement(tuple(order[self.where[a]] for a in range(len(self.where))))

    # -- moves: each returns the change of f, and applies it only if asked --

    def _parts_after(self, changes: dict[int, tuple[list[int], float, float]]) -> float:
        return math.fsum(
            self.cost.host(apps, cpu, mem) - self.parts[m]
            for m, (apps, cpu, mem) in changes.items()
        )

    def _changes(
        self, moves: Sequence[tuple[int, int]]
    ) -> dict[int, tuple[list[int], float, float]]:
        """New contents and loads of the hosts that ``(app, to)`` moves touch."""
        apps = self.cost.batch.apps
        changes: dict[int, _Host] = {}
        for app, to in moves:
            source = self.where[app]
            for m in (source, to):
                if m not in changes:
                    changes[m] = (list(self.hosts[m]), self.cpu[m], self.mem[m])
            held, cpu, mem = changes[source]
            held.remove(app)
            changes[source] = (held, cpu - apps[app].cpu, mem - apps[app].mem)
            held, cpu, mem = changes[to]
            held.append(app)
            changes[to] = (held, cpu + apps[app].cpu, mem + apps[app].mem)
        return changes

    def delta(self, moves: Sequence[tuple[int, int]]) -> float:
        return self._parts_after(self._changes(moves))

    def apply(self, moves: Sequence[tuple[int, int]]) -> None:
        for m, (held, cpu, mem) in self._changes(moves).items():
            self.hosts[m] = held
            self.cpu[m], self.mem[m] = cpu, mem
            self.parts[m] = self.cost.host(held, cpu, mem)
            for app in held:
                self.where[app] = m
        self.value = math.fsum(self.parts)

    def fits(self, to: int, moving: Sequence[int]) -> bool:
        apps = self.cost.batch.apps
        cpu = self.cpu[to] + math.fsum(apps[a].cpu for a in moving)
        mem = self.mem[to] + math.fsum(apps[a].mem for a in moving)
        return cpu <= 1.0 + SLACK and mem <= 1.0 + SLACK

    def feasible(self) -> bool:
        return all(
            c <= 1.0 + SLACK and m <= 1.0 + SLACK
            for c, m, h in zip(self.cpu, self.mem, self.hosts, strict=True)
            if h
        )


def _improve(state: State, candidates) -> bool:
    """First improvement over ``candidates`` (lists of moves); True if one was taken."""
    strict = state.feasible()
    for moves, targets in candidates:
        # From a feasible placement, a move that overloads a host never
        # pays: the penalty outweighs any interference it saves.
        if strict and not state.fits(targets[0], targets[1]):
            continue
        if state.delta(moves) < -EPSILON:
            state.apply(moves)
            return True
    return False


def move1(state: State) -> bool:
    used = state.used()
    return _improve(
        state,
        (
            ([(a, to)], (to, (a,)))
            for a in range(len(state.where))
            for to in used
            if to != state.where[a]
        ),
    )


def swap1(state: State) -> bool:
    count = len(state.where)
    apps = state.cost.batch.apps
    strict = state.feasible()
    for a in range(count):
        for b in range(a + 1, count):
            ma, mb = state.where[a], state.where[b]
            if ma == mb:
                continue
            if strict:
                cpu_a = state.cpu[ma] - apps[a].cpu + apps[b].cpu
                mem_a = state.mem[ma] - apps[a].mem + apps[b].mem
                cpu_b = state.cpu[mb] - apps[b].cpu + apps[a].cpu
                mem_b = state.mem[mb] - apps[b].mem + apps[a].mem
                if max(cpu_a, mem_a, cpu_b, mem_b) > 1.0 + SLACK:
                    continue
            moves = [(a, mb), (b, ma)]
            if state.delta(moves) < -EPSILON:
                state.apply(moves)
                return True
    return False


def move2(state: State) -> bool:
    used = state.used()
    count = len(state.where)
    return _improve(
        state,
        (
            ([(a, to), (b, to)], (to, (a, b)))
            for a in range(count)
            for b in range(a + 1, count)
            for to in used
            if to != state.where[a] and to != state.where[b]
        ),
    )


def vnd(state: State) -> State:
    """Algorithm 4: Move1, else Swap1, else Move2, until none improves."""
    while True:
        if move1(state):
            continue
        if swap1(state):
            continue
        if move2(state):
            continue
        return state


def perturb(state: State, j: int, open_host: bool, rng: random.Random) -> State:
    """j random moves (Move1, Move2 or Swap1), after opening a host if asked."""
    found = state.copy()
    count = len(found.where)
    if open_host:
        empty = [m for m, h in enumerate(found.hosts) if not h]
        if empty and count:
            found.apply([(rng.randrange(count), empty[0])])
    for _ in range(j):
        used = found.used()
        if len(used) < 2 or count < 2:
            break
        kind = rng.randrange(3)
        a = rng.randrange(count)
        if kind == 0:
            to = rng.choice([m for m in used if m != found.where[a]])
            found.apply([(a, to)])
        elif kind == 1:
            b = rng.choice([x for x in range(count) if found.where[x] != found.where[a]] or [a])
            if b != a:
                found.apply([(a, found.where[b]), (b, found.where[a])])
        else:
            b = rng.choice([x for x in range(count) if x != a])
            targets = [m for m in used if m not in (found.where[a], found.where[b])]
            if targets:
                to = rng.choice(targets)
                found.apply([(a, to), (b, to)])
    return found


def _sort_key(app: BatchApp) -> tuple[float, float, float]:
    profile = app.profile
    return (
        -(profile.sllc_score or 0.0),
        -(app.cpu + app.mem),
        -((profile.net_score or 0.0) + (profile.dram_score or 0.0)),
    )


def _alignment(demand: tuple[float, float], room: tuple[float, float]) -> tuple[float, float]:
    """(theta, tau): the angle between demand and room, and the room left after."""
    norm = math.hypot(*demand) * math.hypot(*room)
    if norm <= 0:
        theta = 0.0
    else:
        cosine = (demand[0] * room[0] + demand[1] * room[1]) / norm
        theta = math.acos(max(-1.0, min(1.0, cosine)))
    return theta, math.hypot(room[0] - demand[0], room[1] - demand[1])


def _demand(batch: Batch, apps: Sequence[int]) -> tuple[float, float]:
    return (
        math.fsum(batch.apps[a].cpu for a in apps),
        math.fsum(batch.apps[a].mem for a in apps),
    )


def constructive(cost: Cost, beta: float, rng: random.Random) -> State:
    """Algorithm 3: complementary pairs from both ends of the sorted list."""
    batch = cost.batch
    left = sorted(range(len(batch.apps)), key=lambda a: _sort_key(batch.apps[a]))
    hosts: list[list[int]] = [[] for _ in range(batch.hosts)]
    loads = [[0.0, 0.0] for _ in range(batch.hosts)]
    opened = [0]
    while left:
        size = math.ceil(beta * len(left))
        first = rng.choice(left[:size])
        rest = [a for a in left[-size:] if a != first] or [a for a in left if a != first]
        pair = [first] + ([rng.choice(rest)] if rest else [])
        # A pair no empty host can hold goes one application at a time:
        # seed 004 would put it on one host and overload it.
        units = (
            [pair] if _demand(batch, pair) <= (1.0 + SLACK, 1.0 + SLACK) else [[a] for a in pair]
        )
        if any(max(d) > 1.0 + SLACK for d in (_demand(batch, u) for u in units)):
            raise ValueError("an application needs more than one host")
        for unit in units:
            demand = _demand(batch, unit)
            roomy = [
                m
                for m in opened
                if loads[m][0] + demand[0] <= 1.0 + SLACK and loads[m][1] + demand[1] <= 1.0 + SLACK
            ]
            if roomy:
                host = min(
                    roomy,
                    key=lambda m: _alignment(demand, (1.0 - loads[m][0], 1.0 - loads[m][1])),
                )
            elif len(opened) < batch.hosts:
                host = len(opened)
                opened.append(host)
            else:
                host = rng.choice(opened)
            hosts[host] += unit
            loads[host][0] += demand[0]
            loads[host][1] += demand[1]
        for a in pair:
            left.remove(a)
    return State(cost, hosts)


def _better(state: State, best: State) -> bool:
    """Feasible first, then cheaper: the penalty guides the search, but an
    overloaded placement is never the answer while a feasible one was seen."""
    if state.feasible() != best.feasible():
        return state.feasible()
    return state.value < best.value - EPSILON


def ils(
    batch: Batch, model: InterferenceModel, parameters: IlsParameters = IlsParameters()
) -> tuple[Placement, float]:
    """Algorithm 2 with the loop fixed: the best placement found and its cost."""
    rng = random.Random(parameters.seed)
    cost = Cost(batch, model, parameters)
    best: State | None = None
    for _ in range(parameters.multistart):
        state = constructive(cost, parameters.beta, rng)
        j = 1
        while True:
            state = vnd(state)
            if best is None or _better(state, best):
                best = state.copy()
                j = 1
            else:
                j += 1
            if j > parameters.iter_max_ils:
                break
            state = perturb(state, j, j == parameters.iter_max_ils, rng)
    assert best is not None
    return best.placement(), best.value


class IteratedLocalSearch(Planner):
    """Seed 004's ILSivmp over an interference model (``ivmp`` by default)."""

    name = "ils"
    summary = "seed 004: multistart ILS over the ivmp model, fewer hosts and less interference"

    def __init__(
        self, model: InterferenceModel | None = None, parameters: IlsParameters | None = None
    ) -> None:
        if model is None:
            from hpc_nova_scheduler.ivmp.model import IvmpExtended

            model = IvmpExtended()
        self.model = model
        self.parameters = parameters or IlsParameters()

    def place(self, batch: Batch) -> Placement:
        return ils(batch, self.model, self.parameters)[0]
