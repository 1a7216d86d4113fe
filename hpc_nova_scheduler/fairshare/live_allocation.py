"""One run of seed 002's allocator over the live cloud: its inputs, usage, generation.

The agent's allocator (``agent/allocator.py``) runs :func:`allocate` while
it holds the ``fairshare_lease`` row; ``hpc-nova-scheduler fairshare
allocate`` runs it on demand. Everything here reads and writes the plugin
database only: the compute nodes come in as a :class:`~.platforms.Cloud`.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
from collections.abc import Iterable

from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare import entitlements as live
from hpc_nova_scheduler.fairshare.allocator import TwoLevel
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.platforms import Cloud, cloud_as_json

#: Generations kept in the database (``fairshare show`` reads the newest).
KEEP_GENERATIONS = 100


def two_level(options: hpc_conf.FairnessSettings) -> TwoLevel:
    return TwoLevel(
        first=options.first_level,
        second=options.corunner_policy,
        metric=options.platform_affinity,
        corunner=options.corunner_affinity,
        top_percent=options.top_percent,
        core_unit=options.core_unit,
        node_unit=options.node_unit,
    )


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What one allocator run reads."""

    cloud: Cloud
    projects: tuple[live.ProjectView, ...]
    runs: tuple[live.Run, ...]
    #: Recorded VMs of governed projects on known hosts (for usage).
    records: tuple[db_api.RunningRecord, ...]
    #: The run times of the projects' applications on the cloud's platforms.
    table: CombinationTable
    #: VMs a reclaim stopped, shelved or deleted: they run nothing, nor are charged.
    taken_back: frozenset[str] = frozenset()

    def digest(self, options: hpc_conf.FairnessSettings) -> str:
        return live.digest(
            options,
            self.cloud.platforms,
            [(p.name, p.weight, p.demand, p.running_cores, p.application) for p in self.projects],
            [dataclasses.astuple(run) for run in self.runs],
        )


def read_inputs(
    database: db_api.Database, cloud: Cloud, interval: float, now: datetime.datetime
) -> Inputs:
    shares = database.shares()
    declared = database.demand()
    records = [
        vm
        for vm in database.list_running()
        if vm.project_id in shares and vm.key in cloud.platform_of
    ]
    refusals = [
        r
        for r in database.refusals(now - datetime.timedelta(seconds=interval))
        if r.project in shares
    ]
    # What the first level sees as a project's use: not its preemptible VMs
    # (they never count against its entitlement) nor VMs a reclaim stopped
    # (they run nothing).
    loans = database.loans()
    taken_back = frozenset(loan.instance_uuid for loan in loans if loan.stopped)
    not_counted = taken_back | {
        loan.instance_uuid for loan in loans if loan.kind == db_api.PREEMPTIBLE
    }
    running: dict[str, dict[str, int]] = collections.defaultdict(dict)
    weighted: dict[str, list[tuple[str | None, int]]] = collections.defaultdict(list)
    for vm in records:
        weighted[vm.project_id].append((vm.app_name, vm.cores))
        if vm.instance_uuid in not_counted:
            continue
        platform = cloud.platform_of[vm.key]
        by_platform = running[vm.project_id]
        by_platform[platform] = by_platform.get(platform, 0) + vm.cores
    for project, application in database.demand_applications().items():
        weighted[project].append((application, declared.get(project, 0)))
    refused = unmet_refusals(refusals, records)
    for refusal in refusals:
        weighted[refusal.project].append((refusal.application, refusal.cores))
    projects = tuple(
        live.ProjectView(
            name=name,
            weight=weight,
            declared=declared.get(name, 0),
            running=dict(running.get(name, {})),
            refused=refused.get(name, 0),
            application=live.main_application(weighted.get(name, ())),
        )
        for name, weight in sorted(shares.items())
    )
    runs = tuple(
        live.Run(run.application, run.platform, run.runtime_s, tuple(run.corunners))
        for run in database.runs()
    )
    table = live.table_for(projects, cloud.platforms, runs)
    return Inputs(cloud, projects, runs, tuple(records), table, taken_back)


def unmet_refusals(
    refusals: Iterable[db_api.Refusal], records: Iterable[db_api.RunningRecord]
) -> dict[str, int]:
    """Refused cores per project that no later placement of it has met.

    Nova has no queue: a refused user asks again, and once a retry is
    placed its cores run. Counting them as refused too would count that
    demand twice (and, within the interval, entitle the project to twice
    what it asked), so cores a project places after a refusal meet its
    oldest refused cores first.
    """
    # At one instant a refusal comes before a placement: the retry follows.
    # MariaDB keeps whole seconds, so there a placement in the refusal's
    # second meets it too; the error is at most one second's placements.
    events: list[tuple[datetime.datetime, int, str, int]] = [
        (r.at, 0, r.project, r.cores) for r in refusals
    ]
    first = min((at for at, *_ in events), default=None)
    if first is None:
        return {}
    events.extend(
        (vm.placed_at, 1, vm.project_id, -vm.cores)
        for vm in records
        if vm.placed_at is not None and vm.placed_at >= first and vm.project_id
    )
    unmet: dict[str, int] = collections.Counter()
    for _at, _order, project, cores in sorted(events, key=lambda e: (e[0], e[1])):
        unmet[project] = max(0, unmet[project] + cores)
    return {project: cores for project, cores in unmet.items() if cores}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One allocator run: what it read, what it planned, where it is stored."""

    inputs: Inputs
    allocation: dict[str, dict[str, int]]
    templates: dict[str, list[dict]]
    affinity: dict[str, dict[str, float]]
    usage: dict[tuple[str, str], float]
    generation: int | None


def charged(
    database: db_api.Database,
    inputs: Inputs,
    options: hpc_conf.FairnessSettings,
    since: datetime.datetime | None,
    now: datetime.datetime,
) -> dict[tuple[str, str], float]:
    """The usage now: the stored one decayed since ``since``, plus what ran meanwhile."""
    stored = database.usage()
    if since is None or now <= since:
        return stored
    elapsed = (now - since).total_seconds()
    core_seconds: dict[tuple[str, str], float] = collections.defaultdict(float)
    for vm in inputs.records:
        if vm.instance_uuid in inputs.taken_back:
            continue
        placed = vm.placed_at or since
        seconds = (now - max(placed, since)).total_seconds()
        if seconds > 0:
            core_seconds[(vm.project_id, inputs.cloud.platform_of[vm.key])] += vm.cores * seconds
    solo = live.solo_times(inputs.projects, inputs.cloud.platforms, inputs.table)
    return live.charge_usage(
        stored,
        core_seconds,
        elapsed,
        options.half_life,
        solo,
        two_level(options).usage_charge,
    )


def allocate(
    database: db_api.Database,
    options: hpc_conf.FairnessSettings,
    cloud: Cloud,
    *,
    write: bool = True,
    holder: str | None = None,
    now: datetime.datetime | None = None,
    inputs: Inputs | None = None,
    lease: db_api.Lease | None = None,
    latest: db_api.Generation | None = None,
) -> Outcome:
    """Run both levels once; store the generation unless ``write`` is False.

    With ``holder`` (the lease's holder) the run also charges the usage of
    the time since the last charge and stores it: only the lease's holder
    does, so no second is charged twice. The agent's allocator passes what
    it has just read to decide that a run is due (``inputs``, its ``lease``
    and the ``latest`` generation), so that they are not read again.
    """
    now = now or timeutils.utcnow()
    if inputs is None:
        inputs = read_inputs(database, cloud, options.interval, now)
    if holder is not None and write:
        if lease is None:
            lease = database.lease()
        usage = charged(database, inputs, options, lease.accounted_at if lease else None, now)
    else:
        usage = database.usage()
    if latest is None:
        latest = database.latest_generation()
    plan = live.allocate(
        two_level(options),
        inputs.projects,
        cloud.platforms,
        inputs.table,
        usage,
        latest.allocation if latest else None,
    )
    affinity = live.affinities(
        options.platform_affinity, inputs.projects, cloud.platforms, inputs.table
    )
    templates = live.templates_as_json(plan)
    number = None
    if write:
        number = database.write_generation(
            options.policy,
            plan.allocation,
            {"templates": templates, "affinity": affinity, "cloud": cloud_as_json(cloud)},
        )
        if holder is not None:
            database.set_usage(usage, now)
            database.mark_lease(holder, accounted_at=now, digest=inputs.digest(options))
        database.prune_generations(KEEP_GENERATIONS)
        database.prune_refusals(now - datetime.timedelta(seconds=4 * options.interval))
    allocation = {
        project: {platform: cores for platform, cores in by_platform.items() if cores > 0}
        for project, by_platform in plan.allocation.items()
    }
    return Outcome(inputs, allocation, templates, affinity, usage, number)
