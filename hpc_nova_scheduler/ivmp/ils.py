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
import itertools
import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from hpc_nova_scheduler.interference.base import InterferenceModel, Tenant
from hpc_nova_scheduler.ivmp.model import RESOURCES, HostTerms, IvmpModel
from hpc_nova_scheduler.planners.base import (
    SLACK,
    Batch,
    BatchApp,
    Placement,
    Planner,
    check_alpha,
    omega,
)

ALPHA = 0.7
BETA = 0.4
PENALTY = 0.5
ITER_MAX_ILS = 10
MULTISTART = 50
#: An improvement smaller than this is rounding, not a better placement.
EPSILON = 1e-12
#: Move2 skips a move whose lower bound on the change of f is at least this:
#: far above what rounding could make of an improvement.
FLOOR_MARGIN = 1e-9


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
        check_alpha(self.alpha)
        if not 0.0 < self.beta <= 1.0:
            raise ValueError("beta is a share of the applications left: above 0, at most 1")
        if self.penalty < 0 or self.iter_max_ils < 1 or self.multistart < 1:
            raise ValueError("penalty >= 0, iter_max_ils >= 1 and multistart >= 1")


def tuned(parameters: IlsParameters | None, options: dict[str, Any]) -> IlsParameters:
    """``parameters`` (the paper's by default) with the shared planner options
    they hold (alpha, multistart, seed) taken out of ``options`` and applied."""
    tuning = {
        name: options.pop(name) for name in ("alpha", "multistart", "seed") if name in options
    }
    return dataclasses.replace(parameters or IlsParameters(), **tuning)


class Cost:
    """f(s) over seed 004's model, host by host, from running sums.

    A host's level F depends on its applications only through their count,
    the sum of their scores (T) and the sum over their pairs of the score
    differences (from which G follows): moving applications changes these
    sums by terms read from a table of pairwise differences, so a whole
    neighbourhood is priced with a few array operations. A move changes f
    by the new shares of the hosts it touches less their old ones, and each
    new share depends on one host: ``State`` keeps those Move1 and Swap1
    read and a step reprices only the ones of the hosts it changed.
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
        #: The same, application by application (A x A x 3): ``pairwise[a]``
        #: is what application a adds to a host's ``near``.
        self.pairwise = np.ascontiguousarray(self.differences.transpose(1, 2, 0))
        self.cpu = np.array([app.cpu for app in apps], dtype=float)
        self.mem = np.array([app.mem for app in apps], dtype=float)
        #: What an application adds to a host's count, score sums, CPU and memory.
        self.adds = np.column_stack([np.ones(len(apps)), self.scores, self.cpu, self.mem])
        self.hosts = batch.hosts
        #: Every unordered pair of applications, for Swap1 and Move2.
        self.pair_a, self.pair_b = np.triu_indices(len(apps), k=1)
        #: ``before[a, b]``: a < b.
        self.before = np.triu(np.ones((len(apps), len(apps)), dtype=bool), k=1)
        self._signs: dict[int, np.ndarray] = {}

    def signs(self, moves: int) -> np.ndarray:
        """-1 for each of ``moves`` sources, then +1 for each destination."""
        found = self._signs.get(moves)
        if found is None:
            found = self._signs[moves] = np.repeat([-1.0, 1.0], moves)
        return found

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

    def shares(self, sums: np.ndarray, spread: np.ndarray) -> np.ndarray:
        """``parts`` of hosts whose count, score sums, CPU and memory are the
        columns of ``sums`` (laid out as ``State.sums``)."""
        return self.parts(sums[..., 0], sums[..., 1:-2], spread, sums[..., -2], sums[..., -1])

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
        member = np.zeros((slots, len(self.host_of)))
        member[self.host_of, np.arange(len(self.host_of))] = 1.0
        #: Per host its count, score sums (3), CPU and memory, in one array
        #: so that a move updates them together; the names are views.
        self.sums = np.column_stack(
            [
                member.sum(axis=1),
                member @ cost.scores,
                member @ cost.cpu,
                member @ cost.mem,
            ]
        )
        self._views()
        near = np.einsum("ma,kab->kmb", member, cost.differences)
        self.spread = (near * member[None]).sum(axis=2).T / 2.0
        #: ``near[m, a, k]``: the sum over host m's applications i of |score_a,k - score_i,k|.
        self.near = np.ascontiguousarray(near.transpose(1, 2, 0))
        self.part = cost.parts(self.count, self.total, self.spread, self.cpu, self.mem)
        self._value = float(math.fsum(self.part.tolist()))
        #: Hosts whose ``part`` is out of date: apply leaves pricing them to
        #: the next pricing of the moves, in the same call.
        self.dirty = np.zeros(slots, dtype=bool)
        self._forget_prices()

    def _views(self) -> None:
        self.count = self.sums[:, 0]
        self.total = self.sums[:, 1 : 1 + len(RESOURCES)]
        self.cpu = self.sums[:, -2]
        self.mem = self.sums[:, -1]

    def _forget_prices(self) -> None:
        # A move's change of f is the new shares of the hosts it touches less
        # their old ones; each new share depends on one host and the
        # applications that leave or join it, so it stays valid until that
        # host changes and a VND step prices only what its last step made
        # stale.
        apps, slots = len(self.host_of), self.cost.hosts
        #: ``gone[a]``: the share of a's host once a leaves it.
        self.gone = np.full(apps, np.nan)
        #: ``came[a, m]``: the share of host m once a joins it.
        self.came = np.full((apps, slots), np.nan)
        #: ``trade[a, b]``: the share of a's host once b takes a's place there.
        self.trade = np.full((apps, apps), np.nan)
        #: Applications whose ``gone`` and row of ``trade`` are stale, hosts
        #: whose column of ``came`` is.
        self.stale_apps = np.ones(apps, dtype=bool)
        self.stale_hosts = np.ones(slots, dtype=bool)

    @property
    def value(self) -> float:
        """f of the placement."""
        if self.dirty.any():
            _reprice(self, moves=False)
        return self._value

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
        for name in (
            "sums",
            "near",
            "spread",
            "part",
            "dirty",
            "gone",
            "came",
            "trade",
            "stale_apps",
            "stale_hosts",
        ):
            setattr(clone, name, getattr(self, name).copy())
        clone._views()
        clone._value = self._value
        return clone

    def apart(self) -> np.ndarray:
        """``apart[a, b]``: applications a and b are on different hosts."""
        return self.host_of[:, None] != self.host_of[None, :]

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
        # Consecutive moves on distinct hosts are made together; a move
        # touching a host already touched starts a new batch. Each host's
        # sums see the same operations in the same order as one by one.
        batches: list[list[tuple[int, int, int]]] = [[]]
        busy: set[int] = set()
        where: dict[int, int] = {}
        for app, to in moves:
            app, to = int(app), int(to)
            source = where.get(app, int(self.host_of[app]))
            if source == to:
                continue
            if source in busy or to in busy:
                batches.append([])
                busy = set()
            batches[-1].append((app, source, to))
            busy.update((source, to))
            where[app] = to
        self.apply_batches(
            [tuple(np.array(x, dtype=np.int64) for x in zip(*b, strict=True)) for b in batches if b]
        )

    def apply_batches(self, batches: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Make batches of moves in turn: each ``(applications, sources,
        destinations)``, every host at most once in a batch."""
        cost = self.cost
        for apps, sources, tos in batches:
            # Both ends of every move at once: minus at its source, plus at
            # its destination. An application's own row of differences is
            # 0, so ``near[m, a]`` is the same before and after a moves.
            hosts = np.concatenate([sources, tos])
            both = np.concatenate([apps, apps])
            sign = cost.signs(len(apps))
            self.spread[hosts] += sign[:, None] * self.near[hosts, both]
            self.near[hosts] += sign[:, None, None] * cost.pairwise[both]
            self.sums[hosts] += sign[:, None] * cost.adds[both]
            self.host_of[apps] = tos
            self.dirty[hosts] = True
        # The shares of the changed hosts, whichever application leaves,
        # joins or is traded there, need new prices (those of hosts changed
        # before and not priced yet already do).
        self.stale_apps |= self.dirty[self.host_of]
        self.stale_hosts |= self.dirty


def _reprice(state: State, moves: bool = True) -> None:
    """Price in one call the hosts that changed and, with ``moves``, the
    shares Move1 and Swap1 read that they made stale: whole rows (an
    application's host changed) and columns (a host changed), as blocks."""
    cost = state.cost
    dirty = np.flatnonzero(state.dirty)
    if moves:
        rows = np.flatnonzero(state.stale_apps)
        columns = np.flatnonzero(state.stale_hosts & (state.count > 0))
        moves = bool(len(rows) or len(columns))
    if not len(dirty) and not moves:
        return
    # Each block: the sums (count, score sums, CPU, memory) and the
    # pairwise difference sums of the hosts it prices.
    blocks = [(state.sums[dirty], state.spread[dirty])]
    if moves:
        apps = len(state.host_of)
        host = state.host_of[rows]
        # Move1: an application leaves its host ...
        blocks.append(
            (state.sums[host] - cost.adds[rows], state.spread[host] - state.near[host, rows])
        )
        # ... or joins a used host: (application, host) blocks.
        blocks.append(
            (
                (state.sums[columns][None] + cost.adds[:, None]).reshape(-1, cost.adds.shape[1]),
                (state.spread[columns][None] + state.near[columns].transpose(1, 0, 2)).reshape(
                    -1, len(RESOURCES)
                ),
            )
        )
        # Swap1: an application's host trades it for any other: (x, y) blocks.
        blocks.append(
            (
                ((state.sums[host] - cost.adds[rows])[:, None] + cost.adds[None]).reshape(
                    -1, cost.adds.shape[1]
                ),
                (
                    (state.spread[host] - state.near[host, rows])[:, None]
                    + state.near[host]
                    - cost.pairwise[rows]
                ).reshape(-1, len(RESOURCES)),
            )
        )
    priced = cost.shares(*(np.concatenate(column) for column in zip(*blocks, strict=True)))
    bounds = np.cumsum([0] + [len(block[0]) for block in blocks]).tolist()
    parts = [priced[start:stop] for start, stop in itertools.pairwise(bounds)]
    if len(dirty):
        state.part[dirty] = parts[0]
        state.dirty[dirty] = False
        state._value = float(math.fsum(state.part.tolist()))
    if moves:
        state.gone[rows] = parts[1]
        state.came[:, columns] = parts[2].reshape(apps, len(columns))
        state.trade[rows] = parts[3].reshape(len(rows), apps)
        state.stale_apps[rows] = False
        state.stale_hosts[columns] = False


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


def move1(state: State) -> bool:
    """Move1: one application to another used host, first improvement."""
    cost = state.cost
    _reprice(state)
    used = np.flatnonzero(state.count > 0)
    source = state.host_of
    keep = source[:, None] != used[None, :]
    if state.feasible():
        # From a feasible placement a move that overloads a host never pays.
        keep &= (state.cpu[used][None, :] + cost.cpu[:, None] <= 1.0 + SLACK) & (
            state.mem[used][None, :] + cost.mem[:, None] <= 1.0 + SLACK
        )
    part = state.part
    delta = state.gone[:, None] + state.came[:, used] - part[source][:, None] - part[used][None, :]
    # The improving candidates in scan order: application by application,
    # hosts in increasing order.
    a, column = np.nonzero(keep & (delta < -EPSILON))
    if not len(a):
        return False
    t = used[column]
    picks = _taken(state, delta[a, column], source[a], t)
    # The picks touch disjoint hosts: one batch.
    a, t = a[picks], t[picks]
    state.apply_batches([(a, source[a], t)])
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
    left = improving[np.argsort(delta[improving], kind="stable")]
    picks = []
    while len(left):
        k = int(left[0])
        picks.append(k)
        # Drop every candidate touching either host of the one taken.
        hosts = (first[k], second[k])
        left = left[
            (first[left] != hosts[0])
            & (first[left] != hosts[1])
            & (second[left] != hosts[0])
            & (second[left] != hosts[1])
        ]
    return picks


def swap1(state: State) -> bool:
    """Swap1: two applications on different hosts trade places, first improvement."""
    cost = state.cost
    _reprice(state)
    # Every pair a < b on two hosts, as matrices: row a, column b.
    keep = state.apart() & cost.before
    if state.feasible():
        # Host p's load once a leaves it and b joins, for a on p (row) and any b.
        for load, demand in ((state.cpu, cost.cpu), (state.mem, cost.mem)):
            fits = (load[state.host_of] - demand)[:, None] + demand[None, :] <= 1.0 + SLACK
            keep &= fits & fits.T
    mine = state.part[state.host_of]
    delta = state.trade + state.trade.T - mine[:, None] - mine[None, :]
    a, b = np.nonzero(keep & (delta < -EPSILON))
    if not len(a):
        return False
    p, q = state.host_of[a], state.host_of[b]
    delta = delta[a, b]
    picks = _taken(state, delta, p, q)
    # The picks touch disjoint hosts: every first half of a swap, then every
    # second half, is the same as swap by swap.
    a, b, p, q = a[picks], b[picks], p[picks], q[picks]
    state.apply_batches([(a, p, q), (b, q, p)])
    return True


def move2(state: State) -> bool:
    """Move2: two applications to one other used host, first improvement."""
    cost = state.cost
    used = np.flatnonzero(state.count > 0)
    first, second = cost.pair_a, cost.pair_b
    feasible = state.feasible()
    if feasible:
        # A pair needs a host with room for both: most pairs fit none.
        room_cpu = 1.0 - state.cpu[used].min() + SLACK
        room_mem = 1.0 - state.mem[used].min() + SLACK
        fits = (cost.cpu[first] + cost.cpu[second] <= room_cpu) & (
            cost.mem[first] + cost.mem[second] <= room_mem
        )
        first, second = first[fits], second[fits]
        if not len(first):
            return False
    # Every pair (row) to every used host (column), in scan order.
    p, q = state.host_of[first], state.host_of[second]
    keep = (used[None, :] != p[:, None]) & (used[None, :] != q[:, None])
    if feasible:
        # Priced only where the pair fits (from a feasible placement): most do not.
        for load, demand in ((state.cpu, cost.cpu), (state.mem, cost.mem)):
            pair = demand[first] + demand[second]
            keep &= load[used][None, :] + pair[:, None] <= 1.0 + SLACK
    rows = np.flatnonzero(keep.any(axis=1))
    if not len(rows):
        return False
    _reprice(state, moves=False)
    keep, first, second, p, q = keep[rows], first[rows], second[rows], p[rows], q[rows]
    pair_adds = cost.adds[first], cost.adds[second]
    pair_near = cost.pairwise[first, second]
    blocks = [
        # Leaving: from one host both (their own pair counted once) ...
        (
            state.sums[p] - pair_adds[0] - pair_adds[1],
            state.spread[p] - state.near[p, first] - state.near[p, second] + pair_near,
        ),
        # ... or one from each.
        (state.sums[p] - pair_adds[0], state.spread[p] - state.near[p, first]),
        (state.sums[q] - pair_adds[1], state.spread[q] - state.near[q, second]),
    ]
    priced = cost.shares(*(np.concatenate(column) for column in zip(*blocks, strict=True)))
    both, one_a, one_b = np.split(priced, 3)
    part = state.part
    leaving = np.where(p == q, both - part[p], one_a + one_b - part[p] - part[q])
    # A host's level is never below 0: the new share of the host joined is at
    # least its being used and its overload. Where even that floor leaves f
    # no lower, the move does not improve and is not priced (most of them
    # from an infeasible placement).
    over = 0.0
    for load, demand in ((state.cpu, cost.cpu), (state.mem, cost.mem)):
        joined = load[used][None, :] + (demand[first] + demand[second])[:, None]
        over = over + np.maximum(joined - 1.0 - SLACK, 0.0)
    floor = (
        leaving[:, None]
        + ((1.0 - cost.alpha) + cost.penalty * over) / cost.hosts
        - part[used][None, :]
    )
    row, column = np.nonzero(keep & (floor < FLOOR_MARGIN))
    if not len(row):
        return False
    t, a, b = used[column], first[row], second[row]
    came = cost.shares(
        state.sums[t] + pair_adds[0][row] + pair_adds[1][row],
        state.spread[t] + state.near[t, a] + state.near[t, b] + pair_near[row],
    )
    delta = leaving[row] + came - part[t]
    pick = _first(delta, cost.first_improvement)
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
    # The moves are drawn on a plain copy of who is where and made at once.
    where = found.host_of.tolist()
    held = found.count.tolist()
    moves: list[tuple[int, int]] = []

    def move(app: int, to: int) -> None:
        moves.append((app, to))
        held[where[app]] -= 1
        held[to] += 1
        where[app] = to

    if open_host and count:
        empty = [m for m, n in enumerate(held) if n == 0]
        if empty:
            move(rng.randrange(count), empty[0])
    for _ in range(j):
        used = [m for m, n in enumerate(held) if n > 0]
        if len(used) < 2 or count < 2:
            break
        kind = rng.randrange(3)
        a = rng.randrange(count)
        if kind == 0:
            move(a, rng.choice([m for m in used if m != where[a]]))
        elif kind == 1:
            others = [x for x in range(count) if where[x] != where[a]]
            if others:
                b = rng.choice(others)
                source, to = where[a], where[b]
                move(a, to)
                move(b, source)
        else:
            b = rng.choice([x for x in range(count) if x != a])
            targets = [m for m in used if m not in (where[a], where[b])]
            if targets:
                to = rng.choice(targets)
                move(a, to)
                move(b, to)
    found.apply(moves)
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
        units = [pair] if max(_demand(batch, pair)) <= 1.0 + SLACK else [[a] for a in pair]
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
        self,
        model: InterferenceModel | None = None,
        parameters: IlsParameters | None = None,
        **options: Any,
    ) -> None:
        self.parameters = tuned(parameters, options)
        super().__init__(**options)
        if model is None:
            from hpc_nova_scheduler.ivmp.model import IvmpExtended

            model = IvmpExtended()
        self.model = model

    def place(self, batch: Batch) -> Placement:
        return ils(batch, self.model, self.parameters)[0]
