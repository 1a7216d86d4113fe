"""Borrowed capacity taken back, as the commands print it.

``hpc-nova-scheduler fairshare reclaim list`` prints the reclaims the
plugin database holds (:func:`reclaim_rows`), ``fairshare reclaim plan``
what the next allocator run would take (:func:`plan_json`, :func:`needs`:
a :class:`~.live_reclaim.Plan` as plain values, and per project with unmet
demand on a platform what serves it or why nothing can), and ``fairshare
show`` each project's borrowed and preemptible cores per platform
(:func:`lent_by_platform`). Plain values in, plain values out: nothing
here reads the database or Nova.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence

from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.fairshare import live_reclaim, reclaim


def _time(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return str(value)


# -- reclaim list --------------------------------------------------------------


def reclaim_rows(records: Iterable[loans_db.ReclaimRecord]) -> list[dict]:
    """Each reclaim as a JSON object, in the order given (the database's: newest first)."""
    return [
        {
            "id": r.id,
            "state": r.state,
            "mode": r.mode,
            "instance_uuid": r.instance_uuid,
            "project": r.project,
            "platform": r.platform,
            "cores": r.cores,
            "kind": r.kind,
            "beneficiary": r.beneficiary,
            "requested_at": _time(r.requested_at),
            "act_after": _time(r.act_after),
            "acted_at": _time(r.acted_at),
            "attempts": r.attempts,
            "error": r.error,
            "reason": r.reason,
        }
        for r in records
    ]


def count_by_state(records: Iterable[loans_db.ReclaimRecord]) -> dict[str, int]:
    """Reclaims per state, in the order of :data:`~.loans.STATES` (states with none left out)."""
    found = collections.Counter(r.state for r in records)
    return {state: found[state] for state in loans_db.STATES if found[state]}


# -- reclaim plan --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Need:
    """A project's unmet demand on one platform, and what the run does about it."""

    platform: str
    project: str
    #: Cores it asks for there (declared demand not running, recent refusals).
    asks: int
    #: The required topology levels among its demands (``hpc:topology_required``).
    levels: tuple[str, ...]
    entitled: int
    in_use: int
    #: Cores that reclaims under way free for it.
    under_way: int
    #: Victims this run takes for it, and their cores.
    victims: int
    taken: int
    #: Cores of its need no reclaim can meet this run.
    unserved: int
    #: What serves it, or why nothing can.
    why: str


def needs(found: live_reclaim.PlatformPlan) -> list[Need]:
    """Per project with unmet demand on the platform, what the decision did for it."""
    state = found.state
    asks: dict[str, int] = collections.Counter()
    gains: dict[str, int] = collections.Counter()
    levels: dict[str, set[str]] = collections.defaultdict(set)
    for demand in found.demands:
        asks[demand.project] += demand.cores
        # The decision's own arithmetic: each demand gains up to the project's room.
        gains[demand.project] += min(demand.cores, state.room(demand.project))
        if demand.level is not None:
            levels[demand.project].add(demand.level)
    pending: dict[str, int] = collections.Counter()
    for p in found.pending:
        pending[p.beneficiary] += p.cores
    taken: dict[str, list[reclaim.Reclaim]] = collections.defaultdict(list)
    for r in found.decision.reclaims:
        taken[r.beneficiary].append(r)
    unserved: dict[str, list[reclaim.Unserved]] = collections.defaultdict(list)
    for u in found.decision.unserved:
        unserved[u.project].append(u)
    result = []
    for project in sorted(asks):
        entitled = state.entitled.get(project, 0)
        in_use = state.use.get(project, 0)
        victims = taken[project]
        freed = sum(r.victim.cores for r in victims)
        short = sum(u.cores for u in unserved[project])
        covered = min(gains[project], pending[project])
        if state.room(project) <= 0:
            why = (
                f"uses {in_use} of its {entitled} cores: at its entitlement, nothing is taken back"
            )
        else:
            parts = []
            if victims:
                parts.append(f"{len(victims)} victim(s) free {freed} cores")
            if covered:
                parts.append(f"reclaims under way free {covered} cores")
            rest = gains[project] - covered - freed - short
            if rest > 0:
                parts.append(f"idle cores cover {rest}")
            parts.extend(u.reason for u in unserved[project])
            why = "; ".join(parts) or "nothing left to serve"
        result.append(
            Need(
                platform=state.name,
                project=project,
                asks=asks[project],
                levels=tuple(sorted(levels[project])),
                entitled=entitled,
                in_use=in_use,
                under_way=pending[project],
                victims=len(victims),
                taken=freed,
                unserved=short,
                why=why,
            )
        )
    return result


def _reclaim_json(r: reclaim.Reclaim) -> dict:
    return {
        "instance_uuid": r.victim.instance_uuid,
        "project": r.victim.project,
        "kind": r.victim.kind,
        "cores": r.victim.cores,
        "placed_at": _time(r.victim.placed_at),
        "domains": dict(r.victim.domains),
        "beneficiary": r.beneficiary,
        "reason": r.reason,
    }


def plan_json(found: live_reclaim.Plan) -> dict:
    """The dry run as one JSON object: per platform its state, victims, needs and under way."""
    platforms = {}
    for p in found.platforms:
        platforms[p.state.name] = {
            "capacity": p.state.capacity,
            "idle": p.state.idle,
            "preemptible": p.state.preemptible,
            "entitled": dict(sorted(p.state.entitled.items())),
            "in_use": dict(sorted(p.state.use.items())),
            "reclaims": [_reclaim_json(r) for r in p.decision.reclaims],
            "unserved": [
                {"project": u.project, "cores": u.cores, "reason": u.reason}
                for u in p.decision.unserved
            ],
            "needs": [dataclasses.asdict(n) | {"levels": list(n.levels)} for n in needs(p)],
            "under_way": [
                {"instance_uuid": u.instance_uuid, "beneficiary": u.beneficiary, "cores": u.cores}
                for u in p.pending
            ],
        }
    return {
        "generation": found.generation,
        "reclaims": len(found.reclaims),
        "cores": reclaim.total_cores(found.reclaims),
        "platforms": platforms,
    }


def needs_domains(found: live_reclaim.Plan) -> bool:
    """Whether a need must be met inside one topology domain (the plan then needs the
    hosts' domains; without such a need the decision never looks at them)."""
    return any(d.level is not None for p in found.platforms for d in p.demands)


# -- fairshare show --------------------------------------------------------------


def lent_by_platform(
    loans: Sequence[loans_db.LoanRecord], platform_of: Mapping[str, str]
) -> dict[str, dict[str, dict[str, int]]]:
    """project -> platform -> loan kind -> cores of its running loans.

    A loan's platform is its host's in the generation (where it runs now),
    else the one it was placed on. Loans a reclaim stopped, shelved or
    deleted are left out: they hold no cores that count.
    """
    found: dict[str, dict[str, dict[str, int]]] = {}
    for loan in loans:
        if loan.stopped:
            continue
        platform = platform_of.get(loan.key) or loan.platform
        kinds = found.setdefault(loan.project, {}).setdefault(platform, {})
        kinds[loan.kind] = kinds.get(loan.kind, 0) + loan.cores
    return found
