"""Re-planning running applications: from where they are to a planner's placement.

Seed 000 re-plans running applications as well as new ones. Here a
*pool* is a set of identical hosts (same capacity, processor group and
rack) holding only applications that may move; each application's VMs on
one host form a *unit*, the thing a planner places. A planner places the
pool's units afresh, as a batch; its hosts are then matched to the real
ones so that as many units as possible stay where they are (an
assignment problem, solved with SciPy's ``linear_sum_assignment``), and
the units that must change host become moves.

The moves are put in an order that an operator can carry out one at a
time: each move goes to a host with room for it at that moment, and
among those the move with the largest drop of predicted interference goes
first. Moves that only a swap could make (every target full until another
unit leaves) are unlocked by letting one unit wait on another host with
room, once: one extra move. Without such a host they are left out.

Moves are valued by seed 004's objective (interference against hosts in
use, weighed by ``alpha``), as ILS values placements, so that a unit
waiting on an empty host is not mistaken for a gain. The plan is then cut
where the running total is best, after at most ``max_moves`` moves, so
that a bounded plan never stops half way through a detour. Nothing here
knows about Nova.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from scipy import optimize

from hpc_nova_scheduler.core.errors import CannotPlace
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference.base import InterferenceModel, Tenant
from hpc_nova_scheduler.planners.base import (
    SLACK,
    Batch,
    BatchApp,
    Placement,
    Planner,
    omega,
)

#: A gain smaller than this is rounding, not a reason to move a server.
MIN_GAIN = 1e-6


@dataclasses.dataclass(frozen=True)
class Unit:
    """The VMs of one application instance on one host, moved together.

    ``cpu`` and ``mem`` are shares of one host of the pool; ``key`` names
    the application instance (its request or server group), ``servers``
    the instances on this host.
    """

    key: str
    profile: ProfileRecord
    host: str
    servers: tuple[str, ...]
    cpu: float
    mem: float

    @property
    def name(self) -> str:
        return self.profile.name

    def tenant(self) -> Tenant:
        return Tenant.of(self.profile, vms=len(self.servers))


@dataclasses.dataclass(frozen=True)
class Pool:
    """Identical hosts and the units on them; every host may send and receive."""

    label: str
    hosts: tuple[str, ...]
    units: tuple[Unit, ...]

    def __post_init__(self) -> None:
        known = set(self.hosts)
        for unit in self.units:
            if unit.host not in known:
                raise ValueError(f"pool {self.label}: {unit.key} is on {unit.host}, not a member")


@dataclasses.dataclass(frozen=True)
class Move:
    """One unit to another host: the drop of predicted interference it
    brings (``gain``, percent), and of seed 004's objective (``benefit``)."""

    unit: Unit
    target: str
    gain: float
    benefit: float = 0.0

    @property
    def source(self) -> str:
        return self.unit.host


@dataclasses.dataclass(frozen=True)
class MigrationPlan:
    """The moves proposed for one pool and what the model predicts of them.

    ``before`` and ``after`` are the pool's summed interference scores now
    and once the moves are done; ``planned`` that of the planner's whole
    placement. ``left`` units are still not where that placement puts
    them (the plan was cut by ``max_moves``, a swap with no spare host, or
    no gain).
    """

    pool: str
    planner: str
    moves: tuple[Move, ...]
    before: float
    after: float
    planned: float
    hosts_before: int
    hosts_after: int
    left: int
    #: Seed 004's objective f now and after the moves (lower is better).
    cost_before: float = 0.0
    cost_after: float = 0.0

    @property
    def gain(self) -> float:
        return self.before - self.after


class Objective:
    """Seed 004's objective f of a pool's hosts, each content priced once.

    f = alpha x (summed interference) / (omega x hosts) + (1 - alpha) x
    (hosts in use) / hosts: the weight ILS gives interference against
    hosts, so that the sequencer values a move as the planners value a
    placement (overload never arises: every move fits).
    """

    def __init__(self, pool: Pool, model: InterferenceModel, alpha: float) -> None:
        self._model = model
        self._known: dict[tuple[tuple[str, int], ...], float] = {}
        self.alpha = alpha
        self.hosts = max(1, len(pool.hosts))
        self.omega = omega(as_batch(pool), model) if pool.units else 1.0

    def level(self, units: Sequence[Unit]) -> float:
        if not units:
            return 0.0
        key = tuple(sorted((u.name, len(u.servers)) for u in units))
        level = self._known.get(key)
        if level is None:
            level = self._model.predict([u.tenant() for u in units]).score
            self._known[key] = level
        return level

    def host(self, units: Sequence[Unit]) -> float:
        """One host's share of f."""
        if not units:
            return 0.0
        return (
            self.alpha * self.level(units) / (self.omega * self.hosts)
            + (1.0 - self.alpha) / self.hosts
        )

    def interference(self, contents: dict[str, list[Unit]]) -> float:
        return math.fsum(self.level(units) for units in contents.values())

    def cost(self, contents: dict[str, list[Unit]]) -> float:
        return math.fsum(self.host(units) for units in contents.values())


def _in_use(contents: dict[str, list[Unit]]) -> int:
    return sum(1 for units in contents.values() if units)


def _contents(pool: Pool, host_of: dict[str, str]) -> dict[str, list[Unit]]:
    contents: dict[str, list[Unit]] = {host: [] for host in pool.hosts}
    for unit in pool.units:
        contents[host_of[unit.key]].append(unit)
    return contents


def _fits(units: Sequence[Unit], extra: Unit) -> bool:
    cpu = math.fsum(u.cpu for u in units) + extra.cpu
    mem = math.fsum(u.mem for u in units) + extra.mem
    return cpu <= 1.0 + SLACK and mem <= 1.0 + SLACK


def _best_move(
    units: Iterable[Unit],
    host_of: dict[str, str],
    contents: dict[str, list[Unit]],
    objective: Objective,
    destinations: Callable[[Unit], Sequence[str]],
) -> Move | None:
    """The move of one of ``units`` to one of its destinations with room
    now that lowers the objective most (or raises it least)."""
    best: Move | None = None
    for unit in units:
        here = host_of[unit.key]
        source_after = [u for u in contents[here] if u.key != unit.key]
        for there in destinations(unit):
            if not _fits(contents[there], unit):
                continue
            arriving = [*contents[there], unit]
            benefit = (
                objective.host(contents[here])
                + objective.host(contents[there])
                - objective.host(source_after)
                - objective.host(arriving)
            )
            if best is None or benefit > best.benefit + MIN_GAIN:
                gain = (
                    objective.level(contents[here])
                    + objective.level(contents[there])
                    - objective.level(source_after)
                    - objective.level(arriving)
                )
                best = Move(dataclasses.replace(unit, host=here), there, gain, benefit)
    return best


def as_batch(pool: Pool) -> Batch:
    return Batch(tuple(BatchApp(u.profile, u.cpu, u.mem) for u in pool.units), len(pool.hosts))


def _kind(unit: Unit) -> tuple:
    """What makes two units interchangeable: the same application and size."""
    return (unit.profile.name, len(unit.servers), unit.cpu, unit.mem)


def targets(pool: Pool, placement: Placement) -> dict[str, str]:
    """Each unit's host under ``placement``, planner hosts matched to real
    ones so that the most VMs stay where they are.

    Units of one application and size are interchangeable: the placement
    fixes how many of each kind a host holds, not which, so one already
    on a host stays in place of another of its kind rather than the two
    trading hosts.
    """
    groups = placement.groups()
    rows = list(groups)
    wanted = [collections.Counter(_kind(pool.units[a]) for a in groups[g]) for g in rows]
    present = {host: collections.Counter() for host in pool.hosts}
    for unit in pool.units:
        present[unit.host][_kind(unit)] += 1
    staying = np.zeros((len(rows), len(pool.hosts)))
    for r, want in enumerate(wanted):
        for h, host in enumerate(pool.hosts):
            staying[r, h] = sum(min(n, present[host][k]) * k[1] for k, n in want.items())
    chosen_rows, chosen_hosts = optimize.linear_sum_assignment(staying, maximize=True)
    room = {host: collections.Counter() for host in pool.hosts}
    for r, h in zip(chosen_rows, chosen_hosts, strict=True):
        room[pool.hosts[h]] = wanted[r].copy()
    result: dict[str, str] = {}
    for unit in pool.units:
        if room[unit.host][_kind(unit)] > 0:
            room[unit.host][_kind(unit)] -= 1
            result[unit.key] = unit.host
    for unit in pool.units:
        if unit.key not in result:
            host = next(h for h in pool.hosts if room[h][_kind(unit)] > 0)
            room[host][_kind(unit)] -= 1
            result[unit.key] = host
    return result


def sequence(pool: Pool, wanted: dict[str, str], objective: Objective) -> list[Move]:
    """Moves from where the units are to ``wanted``, each with room when made."""
    host_of = {u.key: u.host for u in pool.units}
    contents = _contents(pool, host_of)
    pending = {u.key: u for u in pool.units if wanted[u.key] != u.host}
    staged: set[str] = set()
    moves: list[Move] = []
    while pending:
        move = _best_move(pending.values(), host_of, contents, objective, lambda u: [wanted[u.key]])
        if move is None:
            # Only a swap is left: one unit waits on a host with room (once).
            move = _best_move(
                [u for u in pending.values() if u.key not in staged],
                host_of,
                contents,
                objective,
                lambda u: [h for h in pool.hosts if h not in (host_of[u.key], wanted[u.key])],
            )
            if move is None:
                break
            staged.add(move.unit.key)
        else:
            del pending[move.unit.key]
        key = move.unit.key
        contents[move.source] = [u for u in contents[move.source] if u.key != key]
        contents[move.target].append(dataclasses.replace(move.unit, host=move.target))
        host_of[key] = move.target
        moves.append(move)
    return moves


def propose(
    pool: Pool,
    planner: Planner,
    model: InterferenceModel,
    max_moves: int,
    *,
    alpha: float = 0.7,
) -> MigrationPlan:
    """The moves that take ``pool`` toward ``planner``'s placement, at most
    ``max_moves`` of them, in an order that keeps every host within its room."""
    if max_moves < 0:
        raise ValueError("max_moves must be 0 or more")
    keys = [u.key for u in pool.units]
    if len(set(keys)) != len(keys):
        raise ValueError(f"pool {pool.label}: a unit key appears twice")
    objective = Objective(pool, model, alpha)
    now = {u.key: u.host for u in pool.units}
    contents = _contents(pool, now)
    before = objective.interference(contents)
    if not pool.units:
        return MigrationPlan(pool.label, planner.name, (), 0.0, 0.0, 0.0, 0, 0, 0)
    wanted = targets(pool, planner.place(as_batch(pool)))
    planned = objective.interference(_contents(pool, wanted))
    steps = sequence(pool, wanted, objective)
    # Cut where the running total is best, within max_moves.
    cut, best_total, total = 0, 0.0, 0.0
    for i, move in enumerate(steps[:max_moves], start=1):
        total += move.benefit
        if total > best_total + MIN_GAIN:
            cut, best_total = i, total
    moves = tuple(steps[:cut])
    final = dict(now)
    for move in moves:
        final[move.unit.key] = move.target
    after = _contents(pool, final)
    return MigrationPlan(
        pool.label,
        planner.name,
        moves,
        before,
        objective.interference(after),
        planned,
        _in_use(contents),
        _in_use(after),
        sum(1 for key in wanted if wanted[key] != final[key]),
        objective.cost(contents),
        objective.cost(after),
    )


def propose_all(
    pools: Sequence[Pool],
    planner: Planner,
    model: InterferenceModel,
    max_moves: int,
    *,
    alpha: float = 0.7,
) -> tuple[list[MigrationPlan], list[tuple[Pool, str]]]:
    """A plan for each pool, ``max_moves`` shared among them in turn; and the
    pools the planner cannot place, with why (they stay as they are: the
    other pools are still worth planning)."""
    plans, unplanned = [], []
    budget = max_moves
    for pool in pools:
        try:
            plan = propose(pool, planner, model, budget, alpha=alpha)
        except CannotPlace as error:
            unplanned.append(
                (pool, f"planner {planner.name} cannot place its applications: {error}")
            )
            continue
        budget -= len(plan.moves)
        plans.append(plan)
    return plans, unplanned
