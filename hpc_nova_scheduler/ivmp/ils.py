"""Seed 004's multistart Iterated Local Search for interference-aware placement.

The cost of a placement s (Alves, eq. 5.9) is

    f(s) = alpha Z(s) + (1 - alpha) M(s) + lambda (E_cpu(s) + E_mem(s))

* Z: the hosts' interference levels F_m (the ``ivmp`` model) summed and
  divided by omega |M|, omega being the level of a host filled with n
  copies of the batch's most aggressive application (n = the model's most
  applications a host) -- the normalisation seed-notes settles on;
* M: used hosts over the |M| available;
* E: CPU and memory beyond capacity, over the cloud's capacity; a
  placement is feasible when both are 0.

ILS (Algorithms 2 to 4): each of ``multistart`` starts builds a solution
(constructive phase), then repeats VND (Move1, Swap1, Move2; each takes its
neighbourhood's best improving move, or with ``first_improvement`` the
thesis's first one) and a perturbation of j random moves until j passes
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

import numpy as np

from hpc_nova_scheduler.interference.base import InterferenceModel, Tenant
from hpc_nova_scheduler.ivmp.model import RESOURCES, HostTerms, IvmpModel
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
    #: Seed 004 takes each neighbourhood's first improving move; pricing a
    #: neighbourhood whole costs the same either way, and its best move
    #: reaches a local optimum in fewer steps (about 2.7 times faster here).
    first_improvement: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError("alpha weighs interference against hosts: from 0 to 1")
        if not 0.0 < self.beta <= 1.0:
            raise ValueError("beta is a share of the applications left: above 0, at most 1")
        if self.penalty < 0 or self.iter_max_ils < 1 or self.multistart < 1:
            raise ValueError("penalty >= 0, iter_max_ils >= 1 and multistart >= 1")


def omega(batch: Batch, model: InterferenceModel) -> float:
    """The level of a full host: n copies of the batch's most aggressive application.

    n is the model's most applications on a host (12 on the thesis's
    testbed, where a host ran up to twelve one-VM applications). Counting
    only the copies that would fit the batch's demands instead makes omega
    small, and then the interference term outweighs a host: ILS opened
    extra hosts in half the cases, where seed 004 never uses more hosts
    than the best heuristic.
    """
    copies = getattr(model, "max_apps", 12)
    most = max((host_level(model, [app] * copies) for app in batch.apps), default=0.0)
    return most if most > 0 else 1.0


class Cost:
    """f(s) over seed 004's model, host by host, from running sums.

    A host's level F depends on its applications only through their count,
    the sum of their scores (T) and the sum over their pairs of the score
    differences (from which G follows): moving applications changes these
    sums by terms read from a table of pairwise differences, so a whole
    neighbourhood is priced with a few array operations.
    """

    def __init__(self, batch: Batch, model: IvmpModel, parameters: IlsParameters):
        if not isinstance(model, IvmpModel):
            raise ValueError("seed 004's ILS prices hosts with an ivmp model")
        self.batch = batch
        self.model = model
        self.alpha = parameters.alpha
        self.penalty = parameters.penalty
        self.first_improvement = parameters.first_improvement
        self.omega = omega(batch, model)
        apps = batch.apps
        for app in apps:
            model.check([Tenant.of(app.profile)])
        #: Scores (A x 3: sllc, dram, net) and their pairwise differences (3 x A x A).
        self.scores = np.array(
            [
                [app.profile.sllc_score, app.profile.dram_score, app.profile.net_score]
                for app in apps
            ],
            dtype=float,
        ).reshape(len(apps), len(RESOURCES))
        self.differences = np.abs(self.scores.T[:, :, None] - self.scores.T[:, None, :])
        self.cpu = np.array([app.cpu for app in apps], dtype=float)
        self.mem = np.array([app.mem for app in apps], dtype=float)
        self.hosts = batch.hosts
        #: Every unordered pair of applications, for Swap1 and Move2.
        self.pair_a, self.pair_b = np.triu_indices(len(apps), k=1)

    def levels(self, count: np.ndarray, total: np.ndarray, spread: np.ndarray) -> np.ndarray:
        """F (percent) of hosts with ``count`` applications, score sums ``total``
        (... x 3) and pairwise difference sums ``spread`` (... x 3)."""
        count = np.asarray(count, dtype=float)
        # Hosts with fewer than two applications get level 0 below; at least
        # one pair keeps the division defined for them.
        pairs = np.maximum(count * (count - 1.0) / 2.0, 1.0)
        similarity = 1.0 - spread / pairs[..., None]
        terms = HostTerms(
            {"sllc": total[..., 0], "dram": total[..., 1], "net": total[..., 2]},
            {"sllc": similarity[..., 0], "dram": similarity[..., 1], "net": similarity[..., 2]},
            (count - 1.0) / (self.model.max_apps - 1),
            count,
        )
        level = 0.0
        for c, term in zip(self.model.coefficients, self.model.terms, strict=True):
            level = level + c * term.value(terms)
        return np.maximum(100.0 * level, 0.0) * (count >= 2)

    def parts(
        self, count: np.ndarray, total: np.ndarray, spread: np.ndarray, cpu, mem
    ) -> np.ndarray:
        """Each host's share of f: its interference, its being used, its overload."""
        over = np.maximum(cpu - 1.0 - SLACK, 0.0) + np.maximum(mem - 1.0 - SLACK, 0.0)
        share = (
            self.alpha * self.levels(count, total, spread) / (self.omega * self.hosts)
            + (1.0 - self.alpha) / self.hosts
            + self.penalty * over / self.hosts
        )
        return np.where(count > 0, share, 0.0)

    def sums(self, apps: Sequence[int]) -> tuple[float, np.ndarray, np.ndarray]:
        """(count, score sums, pairwise difference sums) of a host holding ``apps``."""
        apps = list(apps)
        spread = self.differences[:, apps][:, :, apps].sum(axis=(1, 2)) / 2.0
        return float(len(apps)), self.scores[apps].sum(axis=0), spread

    def level(self, apps: Sequence[int]) -> float:
        """F of one host holding ``apps``."""
        count, total, spread = self.sums(apps)
        return float(self.levels(np.array(count), total, spread))


class State:
    """A placement being improved: per host the running sums f is read from."""

    def __init__(self, cost: Cost, hosts: list[list[int]]) -> None:
        self.cost = cost
        self.host_of = np.zeros(len(cost.batch.apps), dtype=np.int64)
        for m, held in enumerate(hosts):
            self.host_of[held] = m
        self._recount()

    def _recount(self) -> None:
        cost = self.cost
        slots = cost.hosts
        #: Membership: ``member[m, a]`` is 1 when application a is on host m.
        self.member = np.zeros((slots, len(self.host_of)))
        self.member[self.host_of, np.arange(len(self.host_of))] = 1.0
        self.count = self.member.sum(axis=1)
        self.total = self.member @ cost.scores
        self.cpu = self.member @ cost.cpu
        self.mem = self.member @ cost.mem
        #: ``near[k, m, a]``: the sum over host m's applications of |score_a - score_i|.
        self.near = np.einsum("ma,kab->kmb", self.member, cost.differences)
        self.spread = (self.near * self.member[None]).sum(axis=2).T / 2.0
        self.part = cost.parts(self.count, self.total, self.spread, self.cpu, self.mem)
        self.value = float(math.fsum(self.part.tolist()))

    @property
    def hosts(self) -> list[list[int]]:
        found: list[list[int]] = [[] for _ in range(self.cost.hosts)]
        for a, m in enumerate(self.host_of.tolist()):
            found[m].append(a)
        return found

    def copy(self) -> State:
        clone = State.__new__(State)
        clone.cost = self.cost
        clone.host_of = self.host_of.copy()
        for name in ("member", "count", "total", "cpu", "mem", "near", "spread", "part"):
            setattr(clone, name, getattr(self, name).copy())
        clone.value = self.value
        return clone

    def used(self) -> list[int]:
        return np.flatnonzero(self.count > 0).tolist()

    def placement(self) -> Placement:
        # Hosts numbered in the order they are used, as seed 004's symmetry breaking does.
        order = {m: i for i, m in enumerate(self.used())}
        return Placement(tuple(order[m] for m in self.host_of.tolist()))

    def feasible(self) -> bool:
        return bool((self.cpu <= 1.0 + SLACK).all() and (self.mem <= 1.0 + SLACK).all())

    def apply(self, moves: Sequence[tuple[int, int]]) -> None:
        """Move each ``(application, host)`` in turn and update the sums."""
        cost = self.cost
        touched = set()
        for app, to in moves:
            source = int(self.host_of[app])
            if source == to:
                continue
            row = cost.differences[:, app, :]
            for host, sign in ((source, -1.0), (to, 1.0)):
                if sign < 0:
                    self.member[host, app] = 0.0
                    self.near[:, host, :] -= row
                    self.spread[host] -= self.near[:, host, app]
                else:
                    self.spread[host] += self.near[:, host, app]
                    self.near[:, host, :] += row
                    self.member[host, app] = 1.0
                self.count[host] += sign
                self.total[host] += sign * cost.scores[app]
                self.cpu[host] += sign * cost.cpu[app]
                self.mem[host] += sign * cost.mem[app]
                touched.add(host)
            self.host_of[app] = to
        hosts = np.array(sorted(touched), dtype=np.int64)
        if len(hosts):
            self.part[hosts] = cost.parts(
                self.count[hosts],
                self.total[hosts],
                self.spread[hosts],
                self.cpu[hosts],
                self.mem[hosts],
            )
        self.value = float(math.fsum(self.part.tolist()))


def _first(delta: np.ndarray, first: bool = False) -> int | None:
    """The candidate taken: the best that lowers f, or with ``first`` the
    first in scan order (seed 004's first improvement)."""
    if first:
        found = np.flatnonzero(delta < -EPSILON)
        return int(found[0]) if len(found) else None
    if not len(delta):
        return None
    best = int(np.argmin(delta))
    return best if delta[best] < -EPSILON else None


def _after_removal(state: State, apps: np.ndarray, hosts: np.ndarray, extra=None):
    """(count, total, spread, cpu, mem) of ``hosts`` once ``apps`` leave them."""
    cost = state.cost
    spread = state.spread[hosts] - state.near[:, hosts, apps].T
    return (
        state.count[hosts] - 1.0,
        state.total[hosts] - cost.scores[apps],
        spread if extra is None else spread + extra,
        state.cpu[hosts] - cost.cpu[apps],
        state.mem[hosts] - cost.mem[apps],
    )


def move1(state: State) -> bool:
    """Move1: one application to another used host, first improvement."""
    cost = state.cost
    used = np.flatnonzero(state.count > 0)
    a = np.repeat(np.arange(len(state.host_of)), len(used))
    t = np.tile(used, len(state.host_of))
    source = state.host_of[a]
    keep = (source != t) & _fits(state, t, cost.cpu[a], cost.mem[a])
    a, t, source = a[keep], t[keep], source[keep]
    if not len(a):
        return False
    gone = _after_removal(state, a, source)
    came = (
        state.count[t] + 1.0,
        state.total[t] + cost.scores[a],
        state.spread[t] + state.near[:, t, a].T,
        state.cpu[t] + cost.cpu[a],
        state.mem[t] + cost.mem[a],
    )
    # One pricing call for both ends of every candidate.
    both = cost.parts(*(np.concatenate(pair) for pair in zip(gone, came, strict=True)))
    delta = both[: len(a)] + both[len(a) :] - state.part[source] - state.part[t]
    picks = _taken(state, delta, source, t)
    if not picks:
        return False
    state.apply([(int(a[k]), int(t[k])) for k in picks])
    return True


def _taken(state: State, delta: np.ndarray, first: np.ndarray, second: np.ndarray) -> list[int]:
    """The candidates a pricing of Move1 or Swap1 takes."""
    if state.cost.first_improvement:
        pick = _first(delta, True)
        return [] if pick is None else [pick]
    return _disjoint(delta, first, second)


def _disjoint(delta: np.ndarray, first: np.ndarray, second: np.ndarray) -> list[int]:
    """Improving candidates, best first, no two touching the same host.

    A move's change of f depends only on the two hosts it touches, so moves
    on disjoint hosts improve f together exactly as much as one by one: one
    pricing of the neighbourhood serves them all.
    """
    improving = np.flatnonzero(delta < -EPSILON)
    taken: set[int] = set()
    picks = []
    for k in improving[np.argsort(delta[improving], kind="stable")].tolist():
        hosts = (int(first[k]), int(second[k]))
        if hosts[0] in taken or hosts[1] in taken:
            continue
        taken.update(hosts)
        picks.append(k)
    return picks


def _fits(state: State, hosts: np.ndarray, cpu: np.ndarray, mem: np.ndarray) -> np.ndarray:
    # From a feasible placement a move that overloads a host never pays: the
    # penalty outweighs what it saves. From an infeasible one any move may.
    if not state.feasible():
        return np.ones(len(hosts), dtype=bool)
    return (state.cpu[hosts] + cpu <= 1.0 + SLACK) & (state.mem[hosts] + mem <= 1.0 + SLACK)


def swap1(state: State) -> bool:
    """Swap1: two applications on different hosts trade places, first improvement."""
    cost = state.cost
    a, b = cost.pair_a, cost.pair_b
    p, q = state.host_of[a], state.host_of[b]
    keep = p != q
    if state.feasible():
        keep &= (
            (state.cpu[p] - cost.cpu[a] + cost.cpu[b] <= 1.0 + SLACK)
            & (state.mem[p] - cost.mem[a] + cost.mem[b] <= 1.0 + SLACK)
            & (state.cpu[q] - cost.cpu[b] + cost.cpu[a] <= 1.0 + SLACK)
            & (state.mem[q] - cost.mem[b] + cost.mem[a] <= 1.0 + SLACK)
        )
    a, b, p, q = a[keep], b[keep], p[keep], q[keep]
    if not len(a):
        return False
    diff_ab = cost.differences[:, a, b].T

    # Both hosts of every swap, priced in one call: host p trades a for b, q b for a.
    host, out, into = np.concatenate([p, q]), np.concatenate([a, b]), np.concatenate([b, a])
    diff = np.concatenate([diff_ab, diff_ab])
    both = cost.parts(
        state.count[host],
        state.total[host] - cost.scores[out] + cost.scores[into],
        state.spread[host] - state.near[:, host, out].T + state.near[:, host, into].T - diff,
        state.cpu[host] - cost.cpu[out] + cost.cpu[into],
        state.mem[host] - cost.mem[out] + cost.mem[into],
    )
    delta = both[: len(a)] + both[len(a) :] - state.part[p] - state.part[q]
    picks = _taken(state, delta, p, q)
    if not picks:
        return False
    moves = []
    for k in picks:
        moves += [(int(a[k]), int(q[k])), (int(b[k]), int(p[k]))]
    state.apply(moves)
    return True


def move2(state: State) -> bool:
    """Move2: two applications to one other used host, first improvement."""
    cost = state.cost
    used = np.flatnonzero(state.count > 0)
    first, second = cost.pair_a, cost.pair_b
    if state.feasible():
        # A pair needs a host with room for both: most pairs fit none.
        room_cpu = 1.0 - state.cpu[used].min() + SLACK
        room_mem = 1.0 - state.mem[used].min() + SLACK
        fits = (cost.cpu[first] + cost.cpu[second] <= room_cpu) & (
            cost.mem[first] + cost.mem[second] <= room_mem
        )
        first, second = first[fits], second[fits]
        if not len(first):
            return False
    pair = np.repeat(np.arange(len(first)), len(used))
    t = np.tile(used, len(first))
    a, b = first[pair], second[pair]
    p, q = state.host_of[a], state.host_of[b]
    keep = (t != p) & (t != q)
    # Priced only where the pair fits (from a feasible placement): most do not.
    keep &= _fits(state, t, cost.cpu[a] + cost.cpu[b], cost.mem[a] + cost.mem[b])
    a, b, p, q, t = a[keep], b[keep], p[keep], q[keep], t[keep]
    if not len(a):
        return False
    diff_ab = cost.differences[:, a, b].T
    same = p == q
    # Leaving: from one host both (their own pair counted once), or one from each.
    both = cost.parts(
        state.count[p] - 2.0,
        state.total[p] - cost.scores[a] - cost.scores[b],
        state.spread[p] - state.near[:, p, a].T - state.near[:, p, b].T + diff_ab,
        state.cpu[p] - cost.cpu[a] - cost.cpu[b],
        state.mem[p] - cost.mem[a] - cost.mem[b],
    )
    one_a = cost.parts(*_after_removal(state, a, p))
    one_b = cost.parts(*_after_removal(state, b, q))
    leaving = np.where(same, both - state.part[p], one_a + one_b - state.part[p] - state.part[q])
    came = cost.parts(
        state.count[t] + 2.0,
        state.total[t] + cost.scores[a] + cost.scores[b],
        state.spread[t] + state.near[:, t, a].T + state.near[:, t, b].T + diff_ab,
        state.cpu[t] + cost.cpu[a] + cost.cpu[b],
        state.mem[t] + cost.mem[a] + cost.mem[b],
    )
    delta = leaving + came - state.part[t]
    pick = _first(delta, state.cost.first_improvement)
    if pick is None:
        return False
    to = int(t[pick])
    state.apply([(int(a[pick]), to), (int(b[pick]), to)])
    return True


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
    count = len(found.host_of)
    if open_host and count:
        empty = np.flatnonzero(found.count == 0)
        if len(empty):
            found.apply([(rng.randrange(count), int(empty[0]))])
    for _ in range(j):
        used = found.used()
        if len(used) < 2 or count < 2:
            break
        where = found.host_of.tolist()
        kind = rng.randrange(3)
        a = rng.randrange(count)
        if kind == 0:
            found.apply([(a, rng.choice([m for m in used if m != where[a]]))])
        elif kind == 1:
            others = [x for x in range(count) if where[x] != where[a]]
            if others:
                b = rng.choice(others)
                found.apply([(a, where[b]), (b, where[a])])
        else:
            b = rng.choice([x for x in range(count) if x != a])
            targets = [m for m in used if m not in (where[a], where[b])]
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
