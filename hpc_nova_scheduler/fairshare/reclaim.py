"""Borrowed capacity taken back: the VMs one allocator run reclaims, and why.

Seed 002's first level gives every project an entitlement per platform. The
``borrow`` enforcement lends idle cores beyond it; a VM placed so is a
**loan** (:class:`Loan`), and so is every VM of a flavor with
``hpc:preemptible = true``. Nothing else is ever taken back.

:func:`plan` is the first level's entitlement applied over time, for one
platform at a time. Nova-free and database-free: the agent
(``agent/reclaim.py``) and the simulator (``fairshare/cloud_sim.py``) give
it the same inputs and act on the same answer.

The rule
========

* A **beneficiary** is a project below its entitlement E_b on the platform
  with unmet demand d_b there. It may gain at most
  ``need_b = min(d_b, E_b - use_b)`` cores, less what reclaims already
  under way free for it (:class:`Pending`).
* Idle cores serve the need first; only when the platform has no free room
  left is anything reclaimed, and only the part the idle cores do not
  cover.
* **Victims**, in this order: preemptible VMs (never entitled to
  anything), youngest first; then borrowed VMs of the project furthest over
  its entitlement now (recomputed after each pick), youngest first. A
  borrowed VM is a victim only while its project's use, less what this run
  already takes from it, stays at or above its entitlement once the VM is
  gone.
* **As few VMs as cover the need**: of the victims in that order, the
  first that covers the rest of the need alone is taken if there is one
  (so that small VMs taken first do not shut out one that suffices);
  victims are taken until the need is covered, then any victim the others
  cover without is handed back (the last taken first). A need no set of
  victims covers whole is met in part only when it is several requests
  (``Demand.unit``, the cores of one): then as many whole requests as the
  loans cover.
* **Topology**: a need from a request with ``hpc:topology_required`` is
  met inside one domain of that level: the domain that needs the fewest
  victims (then the most idle cores, then the name), its own idle cores
  counted first. No domain that can hold it: nothing is taken for it.

Why a reclaim never causes another
==================================

Kueue proves its reclaim free of cycles with ``LessThanOrEqualToFinalShare``:
a workload preempts another only if its share afterwards is at most the
other's. Here, with entitlements fixed:

1. A beneficiary gains at most ``E_b - use_b`` cores, so afterwards
   ``use_b <= E_b``: the VMs it places in the freed cores are within its
   entitlement, not loans, never victims.
2. A project that lost a borrowed VM keeps ``use_q >= E_q``: it has no room
   below its entitlement, so it is never the beneficiary of a later
   reclaim of those cores. So ``use_b / E_b <= 1 <= use_q / E_q`` after
   every reclaim: cores move from a project at or above its share to one at
   or below it, never back.
3. A reclaim under way (requested, or acted while its victim still counts)
   covers its beneficiary's need: the same demand never takes a second
   victim. Its victim, passed among the loans, counts as already taken from
   its project, so a later run never takes the same overage twice (pass
   the victims under way among ``loans``: they still run and still count
   in ``use``). A run serves every need in the same order (idle cores,
   then cores under way for the project, then new victims; what a victim
   frees beyond its need is idle for the needs after it, and idle cores
   are booked per domain), so a later run finds covered every need this
   one covered.

Each run therefore only lowers the total overage ``sum(max(0, use - E))``
and never raises anyone below its entitlement above it by taking from
another below it. Entitlements change between runs (the first level
re-plans); a VM that a new generation leaves beyond its project's
entitlement is that generation's decision, not a cycle of reclaim.
``tests/unit/fairshare/test_reclaim.py`` checks all three as properties.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

#: Kinds of loan.
BORROWED = "borrowed"
PREEMPTIBLE = "preemptible"
LOAN_KINDS = (BORROWED, PREEMPTIBLE)


@dataclasses.dataclass(frozen=True)
class Loan:
    """A VM that may be taken back."""

    instance_uuid: str
    project: str
    platform: str
    cores: int
    #: When it was placed (any ordered value: seconds, a datetime).
    placed_at: object
    kind: str = BORROWED
    #: Its domain per topology level (level -> domain name).
    domains: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def preemptible(self) -> bool:
        return self.kind == PREEMPTIBLE


@dataclasses.dataclass(frozen=True)
class Demand:
    """A project's unmet demand on one platform."""

    project: str
    cores: int
    #: ``hpc:topology_required``'s level, when the cores must share one domain of it.
    level: str | None = None
    #: The cores of one of its requests, when the demand is several requests
    #: of that size: it may then be met in part, whole requests at a time.
    #: None: one request, met whole or not at all.
    unit: int | None = None


@dataclasses.dataclass(frozen=True)
class Pending:
    """A reclaim under way: its cores count as freed for its beneficiary."""

    instance_uuid: str
    beneficiary: str
    cores: int


@dataclasses.dataclass(frozen=True)
class PlatformState:
    """One platform as a reclaim decision sees it."""

    name: str
    capacity: int
    #: project -> entitled cores (the generation in force).
    entitled: Mapping[str, int]
    #: project -> cores in use that count against its entitlement (not preemptible).
    use: Mapping[str, int]
    #: Cores of preemptible VMs running on the platform.
    preemptible: int = 0
    #: level -> domain -> idle cores (for requests with a required level).
    idle_by_domain: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)

    @property
    def idle(self) -> int:
        return max(0, self.capacity - sum(self.use.values()) - self.preemptible)

    def room(self, project: str) -> int:
        """Cores ``project`` may still use within its entitlement."""
        return max(0, self.entitled.get(project, 0) - self.use.get(project, 0))

    def overage(self, project: str) -> int:
        """Cores ``project`` uses beyond its entitlement."""
        return max(0, self.use.get(project, 0) - self.entitled.get(project, 0))


@dataclasses.dataclass(frozen=True)
class Reclaim:
    """One victim taken back for one beneficiary."""

    victim: Loan
    beneficiary: str
    platform: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Unserved:
    """A need no reclaim can meet this run, and why (for ``reclaim plan``)."""

    project: str
    platform: str
    cores: int
    reason: str


@dataclasses.dataclass
class Decision:
    """What one run takes back on one platform, and what it cannot serve."""

    reclaims: list[Reclaim] = dataclasses.field(default_factory=list)
    unserved: list[Unserved] = dataclasses.field(default_factory=list)


def _youngest_first(loan: Loan) -> tuple:
    # Youngest first: it has run least, so taking it loses least work.
    # Ties by uuid, so that the answer never depends on input order.
    return (_negated(loan.placed_at), loan.instance_uuid)


class _Descending:
    """Orders any comparable value the other way round."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __lt__(self, other: _Descending) -> bool:
        return other.value < self.value  # type: ignore[operator]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.value == other.value


def _negated(value: object) -> object:
    if isinstance(value, int | float):
        return -value
    return _Descending(value)


class _Books:
    """What this run has taken so far on one platform."""

    def __init__(self, state: PlatformState, loans: Sequence[Loan], taken: set[str]) -> None:
        self.state = state
        self.taken = set(taken)
        self.taken_from: dict[str, int] = {}
        self.loans = [
            loan for loan in sorted(loans, key=_youngest_first) if loan.platform == state.name
        ]
        # A victim under way still runs, so its cores are still in its
        # project's use: they are already taken from its overage. Without
        # this, a later run would take them from that project a second time
        # and leave it below its entitlement once both victims are gone.
        for loan in self.loans:
            if loan.instance_uuid in self.taken and not loan.preemptible:
                self.taken_from[loan.project] = self.taken_from.get(loan.project, 0) + loan.cores

    def headroom(self, project: str) -> int:
        """Cores still takeable from ``project``'s borrowed VMs."""
        return self.state.overage(project) - self.taken_from.get(project, 0)

    def eligible(self, loan: Loan) -> bool:
        if loan.instance_uuid in self.taken or loan.cores <= 0:
            return False
        return loan.preemptible or loan.cores <= self.headroom(loan.project)

    def pick(self, within: str | None, domain: str | None, short: int) -> Loan | None:
        """The next victim for ``short`` more cores, in the rule's order.

        Preemptible VMs first, youngest first; then the project furthest
        over its entitlement, its youngest VM first. Of that order, the
        first VM that covers ``short`` alone is taken if there is one: as
        few victims as cover the need, and a large VM is not shut out by
        the small ones taken before it (each one lowers its project's
        headroom).
        """
        candidates = [
            loan
            for loan in self.loans
            if (within is None or loan.domains.get(within) == domain) and self.eligible(loan)
        ]
        if not candidates:
            return None
        order = sorted(
            candidates,
            key=lambda loan: (
                not loan.preemptible,
                0 if loan.preemptible else -self.headroom(loan.project),
                "" if loan.preemptible else loan.project,
                _youngest_first(loan),
            ),
        )
        return next((loan for loan in order if loan.cores >= short), order[0])

    def take(self, loan: Loan) -> None:
        self.taken.add(loan.instance_uuid)
        if not loan.preemptible:
            self.taken_from[loan.project] = self.taken_from.get(loan.project, 0) + loan.cores

    def give_back(self, loan: Loan) -> None:
        self.taken.discard(loan.instance_uuid)
        if not loan.preemptible:
            self.taken_from[loan.project] -= loan.cores


def _cover(books: _Books, short: int, within: str | None, domain: str | None) -> list[Loan] | None:
    """The fewest victims, in the rule's order, whose cores reach ``short``; None if none do."""
    chosen: list[Loan] = []
    covered = 0
    while covered < short:
        loan = books.pick(within, domain, short - covered)
        if loan is None:
            for taken in chosen:
                books.give_back(taken)
            return None
        books.take(loan)
        chosen.append(loan)
        covered += loan.cores
    # Hand back any victim the others cover without, the last taken first.
    for loan in reversed(list(chosen)):
        if covered - loan.cores >= short:
            books.give_back(loan)
            chosen.remove(loan)
            covered -= loan.cores
    return chosen


def _cover_in_part(books: _Books, short: int, unit: int) -> tuple[list[Loan] | None, int]:
    """(victims, cores left unmet) for the most whole requests of ``unit`` cores the loans cover."""
    part = short - short % unit
    if part == short:
        part -= unit
    while part >= unit:
        victims = _cover(books, part, None, None)
        if victims is not None:
            return victims, short - part
        part -= unit
    return None, short


def _beneficiaries(state: PlatformState, demands: Iterable[Demand]) -> list[tuple[Demand, int]]:
    """(demand, cores it may gain) for projects below their entitlement, neediest first."""
    found = []
    # A project's demands share its room: together they never gain more
    # than its entitlement less its use (step 1 of the argument).
    room_left = {project: state.room(project) for project in {d.project for d in demands}}
    for demand in sorted(demands, key=lambda d: (d.project, d.level is None, d.level or "")):
        room = room_left[demand.project]
        if demand.cores > 0 and room > 0:
            gain = min(demand.cores, room)
            room_left[demand.project] = room - gain
            found.append((demand, gain))
    # The project furthest below its entitlement (relatively) is served first.
    # A project's demands that need one domain go before the others: they
    # count the cores under way inside their domain first.
    return sorted(
        found,
        key=lambda item: (
            state.use.get(item[0].project, 0) / max(1, state.entitled.get(item[0].project, 0)),
            item[0].project,
            item[0].level is None,
            item[0].level or "",
        ),
    )


def plan(
    state: PlatformState,
    loans: Sequence[Loan],
    demands: Sequence[Demand],
    pending: Sequence[Pending] = (),
) -> Decision:
    """What to take back on ``state``'s platform now (see the module's docstring)."""
    decision = Decision()
    under_way = {p.instance_uuid for p in pending}
    books = _Books(state, loans, under_way)
    idle = state.idle
    idle_in = {level: dict(domains) for level, domains in state.idle_by_domain.items()}
    wanted = _beneficiaries(state, demands)
    gains: dict[str, int] = {}
    for demand, gain in wanted:
        gains[demand.project] = gains.get(demand.project, 0) + gain
    freeing = _Freeing(pending, loans, gains)

    def release(domains: Mapping[str, str], cores: int) -> None:
        # Cores freed beyond what their beneficiary needs: idle for anyone.
        nonlocal idle
        if cores <= 0:
            return
        idle += cores
        for level, domain in domains.items():
            idle_in.setdefault(level, {})
            idle_in[level][domain] = idle_in[level].get(domain, 0) + cores

    def consume(cores: int, level: str | None = None, domain: str | None = None) -> None:
        # Idle cores used: from ``domain`` at ``level``; at the other levels
        # (and for a need anywhere) from the domains with the fewest idle
        # cores first, as a best fit keeps large idle domains whole. So no
        # idle core serves two needs, a domain's or the platform's.
        for name, domains in idle_in.items():
            left = cores
            if name == level and domain is not None:
                domains[domain] = domains.get(domain, 0) - cores
                continue
            for key in sorted(domains, key=lambda d: (domains[d], d)):
                if left <= 0:
                    break
                use = min(left, max(domains[key], 0))
                domains[key] -= use
                left -= use

    for domains, cores in freeing.surplus:
        release(domains, cores)
    current = None
    for demand, gain in wanted:
        if demand.project != current:
            # The cores under way that the last project did not need are idle now.
            for domains, cores in freeing.rest(current):
                release(domains, cores)
            current = demand.project
        need = gain
        if demand.level is None:
            # Idle cores first, then those reclaims under way free for the
            # project (what it leaves of them is idle for the projects after
            # it): a later run serves each demand as this one did.
            served = min(idle, need)
            idle -= served
            consume(served)
            short = need - served
            short -= freeing.take(demand.project, short)
            if short <= 0:
                continue
            victims = _cover(books, short, None, None)
            where = ""
            if victims is None and demand.unit:
                # Several requests: as many whole ones as the loans cover.
                victims, left = _cover_in_part(books, short, demand.unit)
                if victims is not None:
                    short -= left
                    decision.unserved.append(
                        Unserved(
                            demand.project,
                            state.name,
                            left,
                            f"only {short} of the {short + left} cores can be taken back on "
                            f"{state.name} without leaving a project below its entitlement",
                        )
                    )
        else:
            found = _in_one_domain(
                books,
                idle_in.get(demand.level, {}),
                freeing.within(demand.project, demand.level),
                demand.level,
                need,
            )
            if found is None:
                decision.unserved.append(
                    Unserved(
                        demand.project,
                        state.name,
                        need,
                        f"no {demand.level} of {state.name} can hold {need} cores",
                    )
                )
                continue
            domain, served, victims = found
            short = need - served
            # The domain's idle cores serve first, then those under way there
            # for the project, as on a platform.
            idle_in.setdefault(demand.level, {})
            from_idle = min(idle_in[demand.level].get(domain, 0), served)
            freeing.take(demand.project, served - from_idle, demand.level, domain)
            consume(from_idle, demand.level, domain)
            idle = max(0, idle - from_idle)
            if not victims:
                continue
            where = f" in {demand.level} {domain}"
        if victims is None:
            decision.unserved.append(
                Unserved(
                    demand.project,
                    state.name,
                    short,
                    f"no loan on {state.name} can be taken without leaving its project "
                    "below its entitlement",
                )
            )
            continue
        # What the victims free beyond the need is idle for the needs that
        # follow, as a later run counts it (a reclaim under way's surplus).
        release(victims[-1].domains if victims else {}, sum(v.cores for v in victims) - short)
        for victim in victims:
            decision.reclaims.append(
                Reclaim(
                    victim=victim,
                    beneficiary=demand.project,
                    platform=state.name,
                    reason=(
                        f"{demand.project} has {state.use.get(demand.project, 0)} of its "
                        f"{state.entitled.get(demand.project, 0)} cores on {state.name} and "
                        f"asks {demand.cores} more{where}; {victim.instance_uuid} "
                        f"({victim.cores} cores of {victim.project}) is "
                        + (
                            "preemptible"
                            if victim.preemptible
                            else f"borrowed beyond {victim.project}'s entitlement"
                        )
                    ),
                )
            )
    return decision


class _Freeing:
    """The cores reclaims under way free, per beneficiary (and per domain of their victims).

    While the beneficiary still needs cores they are its alone: no other
    project's need is served by them, and a need of the beneficiary counts
    them before taking anyone; what it leaves of them is idle for the
    projects after it. Those of a project that needs nothing now
    (``surplus``) are idle for anyone.
    """

    def __init__(
        self, pending: Sequence[Pending], loans: Sequence[Loan], gains: Mapping[str, int]
    ) -> None:
        where = {loan.instance_uuid: loan.domains for loan in loans}
        self._left: dict[str, list[tuple[Mapping[str, str], int]]] = {}
        self.surplus: list[tuple[Mapping[str, str], int]] = []
        for p in sorted(pending, key=lambda p: p.instance_uuid):
            domains = where.get(p.instance_uuid, {})
            if gains.get(p.beneficiary, 0) > 0:
                # All of it: what the project leaves is given up after its
                # needs (``rest``), as a victim's surplus is once chosen.
                self._left.setdefault(p.beneficiary, []).append((domains, p.cores))
            else:
                self.surplus.append((domains, p.cores))

    def rest(self, project: str | None) -> list[tuple[Mapping[str, str], int]]:
        """What ``project`` did not use of its cores under way, given up."""
        left = [(d, c) for d, c in self._left.pop(project, []) if c > 0] if project else []
        return left

    def within(self, project: str, level: str) -> dict[str, int]:
        """Domain of ``level`` -> cores under way there for ``project``."""
        found: dict[str, int] = {}
        for domains, cores in self._left.get(project, ()):
            if level in domains and cores > 0:
                found[domains[level]] = found.get(domains[level], 0) + cores
        return found

    def take(
        self, project: str, cores: int, level: str | None = None, domain: str | None = None
    ) -> int:
        """Use up to ``cores`` of ``project``'s (inside ``domain`` of ``level``); how many."""
        taken = 0
        entries = self._left.get(project, [])
        for index, (domains, left) in enumerate(entries):
            if taken >= cores:
                break
            if level is not None and domains.get(level) != domain:
                continue
            use = min(left, cores - taken)
            entries[index] = (domains, left - use)
            taken += use
        return taken


def _in_one_domain(
    books: _Books,
    idle: Mapping[str, int],
    freeing: Mapping[str, int],
    level: str,
    need: int,
) -> tuple[str, int, list[Loan]] | None:
    """(domain, cores served without a new victim, victims) of the best domain for ``need``.

    A domain's own cores are its idle ones and those reclaims under way free
    there for the same project.
    """
    domains = (
        set(idle)
        | set(freeing)
        | {loan.domains[level] for loan in books.loans if level in loan.domains}
    )
    best: tuple[tuple, str, int, list[Loan]] | None = None
    for domain in sorted(domains):
        own = idle.get(domain, 0) + freeing.get(domain, 0)
        served = min(own, need)
        short = need - served
        victims: list[Loan] | None = []
        if short > 0:
            victims = _cover(books, short, level, domain)
            if victims is None:
                continue
            for victim in victims:
                books.give_back(victim)  # only trying: the best domain takes its own
        # Fewest victims, then the most idle cores: a domain where a reclaim
        # under way frees cores is kept for the need it was chosen for.
        rank = (len(victims), -idle.get(domain, 0), domain)
        if best is None or rank < best[0]:
            best = (rank, domain, served, victims)
    if best is None:
        return None
    _, domain, served, victims = best
    for victim in victims:
        books.take(victim)
    return domain, served, victims


def total_cores(reclaims: Iterable[Reclaim]) -> int:
    return sum(r.victim.cores for r in reclaims)


__all__ = [
    "BORROWED",
    "PREEMPTIBLE",
    "Decision",
    "Demand",
    "Loan",
    "Pending",
    "PlatformState",
    "Reclaim",
    "Unserved",
    "plan",
    "total_cores",
]
