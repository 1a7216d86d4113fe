"""Seed 002's many-task workload evaluated by rates: no task is simulated.

The discrete engine (:mod:`.simulator`) runs every task. Here each pilot
starts (and completes) tasks of its user at the rate 1 / r, r the mean run
time of the user's application beside its node's co-runners (task factors
have mean 1), so between two allocator runs each user's queue drains at

    lambda_u = sum over its cores of 1 / r(core),

and the next event is the earliest of a queue emptying, a submission and
(``interval_s > 0``) the next periodic run. The allocator runs there, with
the same rules as the discrete engine (:mod:`.deployment`), and the rates
are recomputed. A run costs the allocator calls and a few thousand
arithmetic operations.

What the rates miss is made up at the events, from renewal theory: a
pilot that began fetching for its owner at s (its *phase*, kept per core)
has started 1 + m((t - s) / r) tasks by t on average, m the renewal
function of the tasks' factors, and its running task ends
r (1 + m((t - s) / r)) - (t - s) later. Long after s these tend to
(t - s) / r + (1 + cv^2) / 2 and r (1 + cv^2) / 2, cv the factors'
coefficient of variation; just after s, to 1 task and a whole run time.
Modelling decisions, each chosen so that this evaluation agrees with the
discrete one on average:

* **The queue**, Q_u, counts the tasks not started, as the discrete
  engine's does, so the allocator runs at the same moments (a queue
  emptying, a submission) and sees the same demand, ceil(Q_u). The rate
  credits a core's owner (t - s) / r + (1 + cv^2) / 2 tasks: its long-run
  count, booked from the moment the core is handed over. At every event,
  before the allocator runs, each core's owner is booked the difference
  between the tasks the core started for it (1 + m) and what the rate and
  earlier bookings credited, so the demand is the expected count of tasks
  not started. (Booked only at a hand-over, after the plan, the young
  pilots' difference could raise a queue past the demand it was planned
  for, leaving a user fewer cores than tasks.)
* **A core handed over** at a re-plan begins fetching for its new owner
  once its running task ends (non-preemptive, section 5): its new phase is
  now + the expected end of the running task (now for an idle core), and
  its new owner is booked the difference between the long-run count and
  the rate's from now. Its old owner is booked what the core started for
  it beyond the booking before the plan: nothing at a re-plan, as both
  are made at the same moment. The same holds for a core that stays with
  its owner when its node's template changes its run time. When a user's
  queue empties, each of its cores is free once its running task ends:
  that becomes the core's phase.
* **The renewal function** m(x) = sum over k of P(S_k <= x), S_k the sum
  of k factors: the log-normal's law for k = 1, a normal of mean k and
  variance k cv^2 beyond (close for the workload's cv = 0.1), and the
  asymptote x - (1 - cv^2) / 2 once sqrt(x) cv > 3 (the pilots have lost
  their phase); floor(x) when cv = 0.
* **The last task's tail.** A user ends when the last of its tasks in
  flight when its queue emptied does. Each core's residual time follows
  the equilibrium law P(R > x) = E[(rF - x)+] / r of a task of mean time r
  and factor F (log-normal, mean 1, coefficient of variation ``cv``, as
  :func:`.workload.task_factors` draws), so the tail is the expected
  largest of the user's cores' residuals: the integral over x of
  1 - prod over cores of (1 - P(R > x)). For c equal cores and cv = 0 it
  is c / (c + 1) r; for 500 cores and cv = 0.1, 1.21 r. (Pilots that
  still run their first task have longer residuals: not modelled.)
* **Usage** is charged per task started (times its mean run time), by
  the same :class:`.deployment.Ledger` as the discrete engine; the core-
  seconds of the result are the same sum, so they add up to the mean run
  time of every task started, as the discrete engine's add up to every
  task's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from hpc_nova_scheduler.core.sharing import Platform
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

#: A queue below this many tasks is empty: rounding of Q - lambda dt.
EPSILON = 1e-9
#: Points of the tail's integral.
TAIL_POINTS = 2000
#: sqrt(x) cv beyond which pilots count as out of phase (m takes its asymptote).
DEPHASED = 3.0
#: A z beyond which the normal's CDF is 1.0 in doubles (from about 8.3 up).
CERTAIN = 9.5
#: A log-probability whose -expm1 is 1.0 in doubles (from about -37.4 down).
SATURATED = -45.0
#: Every how many points of the tail's grid the coarse look takes one.
COARSE = 25


def evaluate(
    platforms: Sequence[Platform],
    workload: Workload,
    policy: Planner,
    times: CombinationTable,
    task_cv: float,
    half_life_s: float = 0.0,
    interval_s: float = 0.0,
) -> Result:
    """The rate-based run of ``policy`` over ``workload`` (see the module docstring)."""
    return Rates(platforms, workload, policy, times, task_cv, half_life_s, interval_s).run()


def log_sigma(task_cv: float) -> float:
    """The log-normal's sigma for a coefficient of variation."""
    return math.sqrt(math.log1p(task_cv * task_cv))


def renewals(x: float, task_cv: float) -> float:
    """m(x): tasks a pilot has completed, on average, ``x`` mean run times after its first start."""
    return float(renewals_of(np.array([float(x)]), task_cv)[0])


def renewals_of(x: np.ndarray, task_cv: float) -> np.ndarray:
    """m(x) of every element of ``x`` (see :func:`renewals`)."""
    x = np.asarray(x, dtype=float)
    positive = x > 0
    if task_cv == 0:
        return np.where(positive, np.floor(x), 0.0)
    found = np.zeros_like(x)
    dephased = positive & (np.sqrt(np.maximum(x, 0.0)) * task_cv > DEPHASED)
    found[dephased] = x[dephased] - (1.0 - task_cv * task_cv) / 2.0
    near = positive & ~dephased
    if near.any():
        xs = x[near]
        sigma = log_sigma(task_cv)
        first = special.ndtr((np.log(xs) + sigma * sigma / 2.0) / sigma)
        # P(S_k <= x) for k = 2 .. top - 1. Those of k <= low are 1.0 in
        # doubles (x - k >= CERTAIN sqrt(k) cv): counted, not evaluated; the
        # others, of every x, in one array.
        tops = (xs + 8.0 * np.sqrt(np.maximum(xs, 1.0)) * task_cv).astype(np.int64) + 4
        root = (np.sqrt((CERTAIN * task_cv) ** 2 + 4.0 * xs) - CERTAIN * task_cv) / 2.0
        lows = np.maximum(np.floor(root * root).astype(np.int64), 1)
        lengths = tops - lows - 1
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        k = np.arange(lengths.sum()) - np.repeat(starts - lows - 1, lengths)
        terms = special.ndtr((np.repeat(xs, lengths) - k) / (np.sqrt(k) * task_cv))
        found[near] = first + ((lows - 1) + np.add.reduceat(terms, starts))
    return found


def exceedance(k: np.ndarray, sigma: float) -> np.ndarray:
    """E[(F - k)+] of a log-normal F of mean 1 and log-sd ``sigma``: P(R > k r) of a residual."""
    if sigma == 0:
        return np.clip(1.0 - k, 0.0, None)
    # Black-Scholes' call: E[(F - k)+] = Phi(d1) - k Phi(d2).
    with np.errstate(divide="ignore"):
        d1 = (sigma * sigma / 2.0 - np.log(k)) / sigma
    return special.ndtr(d1) - k * special.ndtr(d1 - sigma)


def survival(k: np.ndarray, sigma: float) -> np.ndarray:
    """P(F > k) of a log-normal F of mean 1 and log-sd ``sigma``."""
    if sigma == 0:
        return (k < 1.0).astype(float)
    with np.errstate(divide="ignore"):
        return special.ndtr(-(np.log(k) + sigma * sigma / 2.0) / sigma)


#: Cores in flight: (mean run time, age of a first task or None) -> cores.
InFlight = dict[tuple[float, float | None], int]


def expected_tail(groups: InFlight, task_cv: float) -> float:
    """Expected largest residual time over the cores in ``groups``.

    A core long at work (age None) has the equilibrium residual; one that
    began its first task ``age`` seconds ago, what is left of that task.
    """
    if not groups:
        return 0.0
    sigma = log_sigma(task_cv)
    runtimes = np.array([runtime for runtime, _ in groups])
    ages = [age for _, age in groups]
    cores = np.array(list(groups.values()), dtype=float)
    x = np.linspace(0.0, runtimes.max() * math.exp(8.0 * sigma), TAIL_POINTS + 1)[1:]
    # P(every residual <= x) grows with x, and 1 - it is 1.0 in doubles
    # while its log is below SATURATED: a coarse look finds up to where,
    # and only the points beyond are worked out (the same integrand; in
    # the default run over a third of the points are skipped).
    low = _log_below(x[COARSE - 1 :: COARSE], runtimes, ages, cores, sigma) < SATURATED
    start = COARSE * (low.size if low.all() else int(low.argmin()))
    beyond = np.ones(x.size + 1)
    beyond[start + 1 :] = -np.expm1(_log_below(x[start:], runtimes, ages, cores, sigma))
    return float(np.trapezoid(beyond, np.concatenate(([0.0], x))))


def _log_below(
    x: np.ndarray,
    runtimes: np.ndarray,
    ages: Sequence[float | None],
    cores: np.ndarray,
    sigma: float,
) -> np.ndarray:
    """log P(every core's residual <= x) at each x: one row a group, summed in order."""
    above = np.empty((len(ages), x.size))
    settled = [i for i, age in enumerate(ages) if age is None]
    if settled:
        above[settled] = exceedance(x / runtimes[settled, None], sigma)
    first = [i for i, age in enumerate(ages) if age is not None]
    if first:
        runtime = runtimes[first, None]
        age = np.array([ages[i] for i in first])[:, None]
        begun = survival(age / runtime, sigma)
        with np.errstate(divide="ignore", invalid="ignore"):
            left = survival((age + x) / runtime, sigma) / begun
        above[first] = np.where(begun > 0, left, 0.0)
    return (cores[:, None] * np.log1p(-np.minimum(above, 1.0 - 1e-15))).sum(axis=0)


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and how often each occurs: ``np.unique``'s, in fewer steps."""
    ordered = np.sort(values)
    if not ordered.size:
        return ordered, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return ordered[starts], np.diff(starts, append=ordered.size)


class Rates:
    """The fluid engine's state between events."""

    def __init__(
        self,
        platforms: Sequence[Platform],
        workload: Workload,
        policy: Planner,
        times: CombinationTable,
        task_cv: float,
        half_life_s: float = 0.0,
        interval_s: float = 0.0,
    ) -> None:
        if not (math.isfinite(task_cv) and task_cv >= 0):
            raise SimulationError(f"task_cv must be a finite number >= 0, not {task_cv}")
        self.platforms = tuple(platforms)
        self.workload = workload
        self.policy = policy
        self.times = times
        self.interval_s = interval_s
        self.task_cv = task_cv
        #: What a pilot's long-run count of starts has beyond (t - s) / r.
        self.head = (1.0 + task_cv * task_cv) / 2.0
        self.deployment = Deployment(self.platforms, workload, times, lists=False)
        self.ledger = Ledger(workload, self.platforms, times, policy.usage_charge, half_life_s)
        users = len(workload.users)
        self.count = len(self.platforms)
        #: Tasks not started per user (fractions included).
        self.queue = [float(n) for n in workload.tasks]
        self.arrived = [False] * users
        self.emptied = [False] * users
        self.finish = [math.nan] * users
        self.core_seconds = [0.0] * (users * self.count)
        self.steps: list[Step] = []
        self.previous: Plan | None = None
        #: Per core: when its pilot began (or begins) fetching for its owner;
        #: for a core without an owner with tasks, when its last task ends.
        self.phase = np.full(self.deployment.total_cores, -math.inf)
        #: Per core: the tasks booked off the rates for its owner since its
        #: phase (its owner has been credited head + age / r + this).
        self.booked = np.zeros(self.deployment.total_cores)
        self.platform_of = self.deployment.platform_index
        # Of the current layout: tasks a second per user, cores per
        # (user, platform), and each user's cores per run time.
        self.rate = [0.0] * users
        self.placed = [0] * (users * self.count)
        self.groups: list[dict[float, int]] = [{} for _ in range(users)]

    def active(self, u: int) -> bool:
        """Submitted, and tasks still waiting."""
        return self.arrived[u] and not self.emptied[u]

    def run(self) -> Result:
        w = self.workload
        users = range(len(w.users))
        order = sorted(users, key=lambda u: (w.arrivals[u], u))
        pending = 0
        now = w.arrivals[order[0]]
        tick = now + self.interval_s if self.interval_s > 0 else math.inf
        while True:
            arrival = w.arrivals[order[pending]] if pending < len(order) else math.inf
            running = [u for u in users if self.active(u) and self.rate[u] > 0]
            dt = min((self.queue[u] / self.rate[u] for u in running), default=math.inf)
            limit = min(now + dt, arrival, tick if running else math.inf)
            if limit == math.inf:
                break
            self._advance(running, limit - now)
            now = limit
            for u in running:
                if self.queue[u] <= EPSILON * w.tasks[u]:
                    self._empty(u, now)
            while pending < len(order) and w.arrivals[order[pending]] <= now:
                self.arrived[order[pending]] = True
                pending += 1
            if tick <= now:
                tick += self.interval_s * (math.floor((now - tick) / self.interval_s) + 1)
            self.replan(now)
        left = [u for u in users if math.isnan(self.finish[u])]
        if left:
            raise SimulationError(
                f"the allocator left {w.users[left[0]]} with tasks waiting and no core to run them"
            )
        return result(
            "rate", w, self.platforms, self.times, self.finish, self.core_seconds, self.steps
        )

    def _advance(self, running: Sequence[int], dt: float) -> None:
        count = self.count
        for u in running:
            self.queue[u] -= self.rate[u] * dt
            for p in range(count):
                # Tasks started x their run time = cores x time.
                self.core_seconds[u * count + p] += self.placed[u * count + p] * dt

    def _renewals_of(self, x: np.ndarray) -> np.ndarray:
        """m(x) for many x: a few distinct values, pilots handed over together sharing one."""
        values, _ = _distinct(x)
        return renewals_of(values, self.task_cv)[np.searchsorted(values, x)]

    def _started(self, age: np.ndarray, runtime: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tasks pilots started in ``age`` seconds of fetching; when their tasks in flight end."""
        started = np.zeros_like(age)
        ends = -age
        on = age >= 0
        if on.any():
            m = self._renewals_of(age[on] / runtime[on])
            started[on] = 1.0 + m
            ends[on] = runtime[on] * (1.0 + m) - age[on]
        return started, ends

    def _empty(self, u: int, now: float, groups: dict[float, int] | None = None) -> None:
        """Q_u ran out: each pilot ends its task in flight; the user, with the last of them.

        ``groups``: the cores its tasks in flight run on, run time -> cores,
        when not its cores in the current layout (all long at work).
        """
        self.queue[u] = 0.0
        self.emptied[u] = True
        cores = np.flatnonzero(self.deployment.owners == u)
        runtime = self.deployment.runtimes[cores]
        age = now - self.phase[cores]
        in_flight: InFlight = {}
        if groups is not None:
            in_flight = {(r, None): count for r, count in groups.items()}
        else:
            # Within its first run time a pilot most likely runs its first task
            # (age kept); later, its residual is the equilibrium one (-1: None).
            begun = age >= 0
            first = np.where(age[begun] < runtime[begun], age[begun], -1.0)
            # Distinct (run time, age) pairs in lexicographic order: complex
            # numbers sort by real part, then imaginary part.
            pairs, counts = _distinct(runtime[begun] + 1j * first)
            for r, a, count in zip(
                pairs.real.tolist(), pairs.imag.tolist(), counts.tolist(), strict=True
            ):
                in_flight[(r, a if a >= 0 else None)] = count
        _, ends = self._started(age, runtime)
        self.phase[cores] = now + ends
        self.finish[u] = now + expected_tail(in_flight, self.task_cv)

    def replan(self, now: float) -> None:
        """Book every pilot's starts, run the allocator, book the hand-overs, recompute the
        rates; again if a queue ran out."""
        # The queues count the tasks not started before the allocator sees
        # them: what a hand-over would book could otherwise raise a demand
        # after it was planned for (young pilots credited tasks they had not
        # started), leaving the user fewer cores than tasks.
        self._settle(now)
        tasks = self.workload.tasks
        for u in range(len(self.queue)):
            if self.active(u) and self.queue[u] <= EPSILON * tasks[u]:
                self._empty(u, now)
        while True:
            if self.ledger.keeps_history:
                self.ledger.settle(now, self.core_seconds)
            demands = [
                math.ceil(q - EPSILON) if self.active(u) else 0 for u, q in enumerate(self.queue)
            ]
            claimants = self.ledger.claimants(demands)
            if not claimants:
                self._rates()
                return
            plan = self.policy.plan(claimants, self.platforms, self.times, previous=self.previous)
            self.previous = plan
            self.steps.append(step_of(plan, now))
            owner, runtime = self.deployment.owners.copy(), self.deployment.runtimes.copy()
            if self.deployment.apply(plan.templates):
                self._hand_over(owner, runtime, now)
            ran_out = [u for u in range(len(self.queue)) if self.active(u) and self.queue[u] <= 0]
            # A queue the hand-over emptied has its tasks in flight on the cores it had.
            before = self.groups
            self._rates()
            if not ran_out:
                return
            for u in ran_out:
                self._empty(u, now, before[u])

    def _hand_over(self, owner: np.ndarray, runtime: np.ndarray, now: float) -> None:
        """Book the tasks started by every core whose owner or run time changed.

        ``owner`` and ``runtime``: every core's, before the plan was laid.
        """
        cores = np.flatnonzero(
            (owner != self.deployment.owners) | (runtime != self.deployment.runtimes)
        )
        old, old_time = owner[cores], runtime[cores]
        new, new_time = self.deployment.owners[cores], self.deployment.runtimes[cores]
        platform = self.platform_of[cores]
        phase = self.phase[cores]
        free = np.maximum(now, phase)
        users = len(self.queue)
        active = np.asarray([self.active(u) for u in range(users)] + [False])
        # Old owners still fetching: the tasks the cores started for them,
        # against the head + age / r the rate credited from their phase on.
        on = active[old]
        if on.any():
            age = now - phase[on]
            started, ends = self._started(age, old_time[on])
            owed = started - (self.head + age / old_time[on]) - self.booked[cores[on]]
            self._book(old[on], platform[on], owed, old_time[on])
            free[on] = now + ends
        # New owners: the long-run count from the new phase, against the rate's from now.
        on = new >= 0
        if on.any():
            started = self.head - (free[on] - now) / new_time[on]
            self._book(new[on], platform[on], started, new_time[on])
        self.phase[cores] = free
        self.booked[cores] = 0.0

    def _settle(self, now: float) -> None:
        """Book off the rates what every pilot of a user with tasks waiting started by ``now``.

        The tasks a pilot started, 1 + m(age / r), against the head + age / r
        the rate credited and what was booked before: the same sum a hand-over
        books, so a core handed over at ``now`` owes its old owner nothing more.
        """
        owners = self.deployment.owners
        active = np.asarray([self.active(u) for u in range(len(self.queue))] + [False])
        cores = np.flatnonzero(active[owners])
        if not cores.size:
            return
        runtime = self.deployment.runtimes[cores]
        age = now - self.phase[cores]
        started, _ = self._started(age, runtime)
        owed = started - (self.head + age / runtime) - self.booked[cores]
        self._book(owners[cores], self.platform_of[cores], owed, runtime)
        self.booked[cores] += owed

    def _book(
        self, users: np.ndarray, platforms: np.ndarray, tasks: np.ndarray, runtimes: np.ndarray
    ) -> None:
        """Tasks started off the rates: out of the queues, into the core-seconds."""
        count = self.count
        for u, n in enumerate(np.bincount(users, tasks, len(self.queue)).tolist()):
            self.queue[u] -= n
        seconds = np.bincount(users * count + platforms, tasks * runtimes, len(self.core_seconds))
        for i, value in enumerate(seconds.tolist()):
            self.core_seconds[i] += value

    def _rates(self) -> None:
        """Rates, cores and run-time groups per user from the current layout."""
        users = len(self.queue)
        count = self.count
        self.rate = [0.0] * users
        self.placed = [0] * (users * count)
        self.groups = [{} for _ in range(users)]
        active = [self.active(u) for u in range(users)]
        for p in range(count):
            for key, nodes in self.deployment.laid(p):
                for u, cores, runtime in self.deployment.slots(p, key):
                    if not active[u]:
                        continue
                    self.rate[u] += nodes * cores / runtime
                    self.placed[u * count + p] += nodes * cores
                    group = self.groups[u]
                    group[runtime] = group.get(runtime, 0) + nodes * cores
