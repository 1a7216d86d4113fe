"""The reclaim decision over the live cloud: its inputs from the plugin database.

:func:`plan` reads what one allocator run's reclaim needs (the generation
in force, the cores in use, the loans, the demand, the reclaims under way)
and runs :func:`.reclaim.plan` on every platform. The agent runs it after
each allocator run and writes what it chose; ``hpc-nova-scheduler
fairshare reclaim plan`` runs it without writing (a dry run). Nova-free:
the compute nodes come as the generation's :class:`~.platforms.Cloud`,
and the topology domain of a host as a function from the adapter.

**Unmet demand** of a project is its declared demand not running, plus
the cores of its requests refused for entitlement in the last interval
that no later placement met (:func:`.live_allocation.unmet_refusals`). It
falls on the platforms of its entitlement with room left, highest affinity
first, as the placement filter tries them; a refusal of a request with
``hpc:topology_required`` keeps its level.

**Under way** are the reclaims requested and not yet acted on, those
acted on whose victim still counts (its record not yet gone), and those
failed whose victim still runs: their cores cover their beneficiary's
need, so no second victim is taken for it. A victim a reclaim stopped counts no more,
so its cores are idle for the beneficiary.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
from collections.abc import Callable, Mapping, Sequence

from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.fairshare import reclaim
from hpc_nova_scheduler.fairshare.live_allocation import unmet_refusals
from hpc_nova_scheduler.fairshare.platforms import Cloud, cloud_from_json

#: host key -> topology level -> domain (from the adapter, which knows the topology).
DomainsOf = Callable[[str], Mapping[str, str]]


def _no_domains(key: str) -> Mapping[str, str]:
    return {}


@dataclasses.dataclass(frozen=True)
class PlatformPlan:
    """One platform's decision and what it was made from."""

    state: reclaim.PlatformState
    decision: reclaim.Decision
    demands: tuple[reclaim.Demand, ...]
    loans: tuple[reclaim.Loan, ...]
    pending: tuple[reclaim.Pending, ...]


@dataclasses.dataclass(frozen=True)
class Plan:
    """The reclaims one run would request, per platform."""

    generation: int
    platforms: tuple[PlatformPlan, ...]

    @property
    def reclaims(self) -> list[reclaim.Reclaim]:
        return [r for p in self.platforms for r in p.decision.reclaims]

    @property
    def unserved(self) -> list[reclaim.Unserved]:
        return [u for p in self.platforms for u in p.decision.unserved]


def cloud_of(generation: db_api.Generation) -> Cloud:
    stored = generation.templates if isinstance(generation.templates, Mapping) else {}
    return cloud_from_json(stored.get("cloud", {"platforms": [], "hosts": {}}))


def affinity_of(generation: db_api.Generation) -> Mapping[str, Mapping[str, float]]:
    stored = generation.templates if isinstance(generation.templates, Mapping) else {}
    found = stored.get("affinity", {})
    return found if isinstance(found, Mapping) else {}


def as_loan(record: loans_db.LoanRecord, platform_of: Mapping[str, str], domains_of: DomainsOf):
    """The decision's view of a stored loan (None when it no longer runs on a platform)."""
    platform = platform_of.get(record.key) or record.platform
    if record.stopped:
        return None
    return reclaim.Loan(
        instance_uuid=record.instance_uuid,
        project=record.project,
        platform=platform,
        cores=record.cores,
        placed_at=record.placed_at,
        kind=record.kind,
        domains=dict(domains_of(record.key)),
    )


def unmet_demand(
    database: db_api.Database,
    running: Mapping[str, int],
    since: datetime.datetime,
) -> tuple[dict[str, int], list[tuple[str, int, str | None]]]:
    """Per project, declared cores not running; and the unmet refusals (project, cores, level).

    ``running`` is each project's counted cores everywhere.
    """
    declared = {
        project: max(0, cores - running.get(project, 0))
        for project, cores in database.demand().items()
    }
    refusals = database.refusals(since)
    unmet = unmet_refusals(refusals, database.list_running())
    found: list[tuple[str, int, str | None]] = []
    # The newest refusals are the ones still unmet (the oldest are met first).
    for refusal in reversed(refusals):
        left = unmet.get(refusal.project, 0)
        if left <= 0:
            continue
        cores = min(left, refusal.cores)
        unmet[refusal.project] = left - cores
        found.append((refusal.project, cores, refusal.topology_level))
    return {p: c for p, c in declared.items() if c > 0}, found


def spread(
    project: str,
    cores: int,
    level: str | None,
    room: Mapping[str, int],
    affinity: Mapping[str, float],
) -> list[tuple[str, reclaim.Demand]]:
    """A project's unmet cores on the platforms with room, highest affinity first."""
    found = []
    for platform in sorted(room, key=lambda p: (-affinity.get(p, 0.0), p)):
        if cores <= 0:
            break
        if room[platform] <= 0:
            continue
        if level is not None and cores > room[platform]:
            continue  # one domain must hold it whole: only a platform that can
        take = min(cores, room[platform])
        found.append((platform, reclaim.Demand(project, take, level)))
        cores -= take
    return found


def plan(
    database: db_api.Database,
    generation: db_api.Generation,
    interval: float,
    now: datetime.datetime,
    *,
    domains_of: DomainsOf = _no_domains,
    only: str | None = None,
) -> Plan:
    """The reclaims the generation in force calls for now (``only``: one platform)."""
    cloud = cloud_of(generation)
    affinity = affinity_of(generation)
    use = database.cores_in_use()
    per_platform: dict[str, dict[str, int]] = collections.defaultdict(collections.Counter)
    preemptible: dict[str, int] = collections.Counter()
    busy_keys: dict[str, int] = collections.Counter()
    running_total: dict[str, int] = collections.Counter()
    for project, by_key in use.items():
        for key, cores in by_key.items():
            busy_keys[key] += cores
            platform = cloud.platform_of.get(key)
            if project == db_api.PREEMPTIBLE_USE:
                if platform is not None:
                    preemptible[platform] += cores
                continue
            running_total[project] += cores
            if platform is not None:
                per_platform[platform][project] += cores
    stored_loans = [
        loan
        for loan in (as_loan(r, cloud.platform_of, domains_of) for r in database.loans())
        if loan is not None
    ]
    live_loans = {loan.instance_uuid for loan in stored_loans}
    pending_by_platform: dict[str, list[reclaim.Pending]] = collections.defaultdict(list)
    for record in database.reclaims(loans_db.COVERING_STATES):
        if record.instance_uuid in live_loans:
            pending_by_platform[record.platform].append(
                reclaim.Pending(record.instance_uuid, record.beneficiary, record.cores)
            )
    declared, refused = unmet_demand(
        database, running_total, now - datetime.timedelta(seconds=interval)
    )
    room = {
        project: {
            platform.name: max(
                0, by_platform.get(platform.name, 0) - per_platform[platform.name][project]
            )
            for platform in cloud.platforms
        }
        for project, by_platform in generation.allocation.items()
    }
    demands: dict[str, list[reclaim.Demand]] = collections.defaultdict(list)
    wanted = [(p, c, None) for p, c in sorted(declared.items())] + refused
    for project, cores, level in wanted:
        if project not in room:
            continue
        for platform, demand in spread(
            project, cores, level, room[project], affinity.get(project, {})
        ):
            demands[platform].append(demand)
    capacity_of_key = {p.name: p.cores_per_node for p in cloud.platforms}
    plans = []
    for platform in cloud.platforms:
        if only is not None and platform.name != only:
            continue
        state = reclaim.PlatformState(
            name=platform.name,
            capacity=platform.cores,
            entitled={
                project: by_platform.get(platform.name, 0)
                for project, by_platform in generation.allocation.items()
            },
            use=dict(per_platform[platform.name]),
            preemptible=preemptible[platform.name],
            idle_by_domain=_idle_by_domain(
                cloud, platform.name, capacity_of_key[platform.name], busy_keys, domains_of
            ),
        )
        on_platform = tuple(loan for loan in stored_loans if loan.platform == platform.name)
        pending = tuple(pending_by_platform[platform.name])
        wanted_here = tuple(demands[platform.name])
        decision = reclaim.plan(state, on_platform, wanted_here, pending)
        plans.append(PlatformPlan(state, decision, wanted_here, on_platform, pending))
    return Plan(generation.number, tuple(plans))


def _idle_by_domain(
    cloud: Cloud,
    platform: str,
    per_key: int,
    busy: Mapping[str, int],
    domains_of: DomainsOf,
) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = collections.defaultdict(collections.Counter)
    for key in sorted(cloud.keys.get(platform, ())):
        idle = max(0, per_key - busy.get(key, 0))
        for level, domain in domains_of(key).items():
            found[level][domain] += idle
    return {level: dict(domains) for level, domains in found.items()}


def new_reclaims(found: Sequence[reclaim.Reclaim]) -> list[loans_db.NewReclaim]:
    """What the database records of each chosen reclaim."""
    return [
        loans_db.NewReclaim(
            instance_uuid=r.victim.instance_uuid,
            project=r.victim.project,
            platform=r.platform,
            cores=r.victim.cores,
            kind=r.victim.kind,
            beneficiary=r.beneficiary,
            reason=r.reason,
        )
        for r in found
    ]
