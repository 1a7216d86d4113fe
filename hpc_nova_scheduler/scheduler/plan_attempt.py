"""The steps of one attempt at a plan, as :class:`.HpcPlacementFilter` makes it.

A plan that lost a race to a concurrent one is made again from fresh data;
each attempt sees the hosts as the core engine does (:func:`core_hosts`),
keeps the application where it already is (:func:`keep_together`), runs the
planner over the fair-share tries (:func:`first_plan`) and offers alternates
(:func:`alternates`). What stays the same across attempts is a
:class:`Setting`.
"""

from __future__ import annotations

import dataclasses

from nova import conf as nova_conf
from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.cluster import Host, RunningVM
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.scheduler import claims, fairness, held_domains, host_view, refusals
from hpc_nova_scheduler.scheduler.aggregate_tags import Tags
from hpc_nova_scheduler.scheduler.fair_scope import Try
from hpc_nova_scheduler.scheduler.request import PLAN_WEIGHER, Request, RequestState

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF
NOVA_CONF = nova_conf.CONF


@dataclasses.dataclass
class Setting:
    """What every attempt at one request's plan plans with."""

    #: The plan's request, thresholds and table; what the claim checks again.
    context: claims.PlanContext
    levels: tuple[str, ...]
    model: InterferenceModel | None
    #: The entitlements the request is held to; None without fair share.
    fair: fairness.InForce | None
    #: Cores the request adds, as fair share counts them.
    cores: int
    extreme: bool
    reserved: tuple[float, float, float]
    tags: Tags | None
    #: Hosts Placement showed busy with VMs the plugin does not know yet.
    occupied: set[str] = dataclasses.field(default_factory=set)


def context_of(
    state: RequestState,
    hosts: list,
    request: Request,
    own: set[str],
    moving: bool,
    table: InterferenceTable,
) -> claims.PlanContext:
    """The placement request and what its plan is made from."""
    group_conf = CONF.hpc_scheduler
    thresholds = Thresholds(group_conf.cache_threshold, group_conf.sync_cache_threshold)
    placement = algorithm.PlacementRequest(
        profile=state.profile,
        demand=request.demand,
        # Nova keeps the original request's count on the spec of a move.
        count=1 if moving else request.num_instances,
        application_id=state.application_id,
        topology=state.topology,
    )
    return claims.PlanContext(
        hosts=hosts,
        request=placement,
        thresholds=thresholds,
        table=table,
        instance_uuid=request.instance_uuid,
        own=own,
        project_id=request.project_id,
    )


def setting_of(
    state: RequestState,
    context: claims.PlanContext,
    levels: tuple[str, ...],
    model: InterferenceModel | None,
    fair: fairness.InForce | None,
    tags: Tags | None,
) -> Setting:
    """What every attempt plans with; records the cores of each VM on ``state``."""
    demand = context.request.demand
    # Cores the request adds: fair share counts a VM as its flavor's vCPUs.
    state.vm_cores = round(demand.vcpus) if demand is not None else 0
    return Setting(
        context=context,
        levels=levels,
        model=model,
        fair=fair,
        cores=state.vm_cores * context.request.count,
        extreme=state.profile.app_class is core_profile.AppClass.EXTREME_HPC,
        reserved=host_view.reservations(),
        tags=tags,
    )


def core_hosts(hosts: list, knowledge, setting: Setting) -> list[Host]:
    """The core engine's view of ``hosts``, with the co-runners of ``knowledge``
    and a stand-in VM on each host Placement showed busy."""
    for key in setting.occupied:
        knowledge.vms[key].append(RunningVM(uuid=f"placement:{key}"))
    return sorted(
        (
            host_view.to_host(
                hs,
                knowledge.vms[host_view.host_key(hs)],
                demand=setting.context.request.demand,
                reserved=setting.reserved,
                tags=setting.tags,
                levels=setting.levels,
                taken_cores=knowledge.taken_cores.get(host_view.host_key(hs), 0.0),
            )
            for hs in hosts
        ),
        key=lambda h: h.name,
    )


def keep_together(state: RequestState, request: Request, setting: Setting) -> bool:
    """Hold the plan to the domains the application already holds; False
    after refusing the request when they cannot be known."""
    context = setting.context
    context.topology = held_domains.domain_check(state, setting.levels, setting.tags)
    # Read again at each attempt: a conflict may be the group's other
    # request having taken a domain meanwhile.
    held = held_domains.held(state, request, setting.levels, setting.tags)
    if held is None:
        state.refusal = (
            f"{core_profile.TOPOLOGY_SPECS[0]}: cannot read the aggregates from "
            "Nova's database to know where the application runs"
        )
        LOG.warning("hpc-nova-scheduler: refusing %s: %s", state.application_id, state.refusal)
        return False
    context.request = dataclasses.replace(context.request, held_domains=held)
    return True


def log_hosts(hosts: list[Host]) -> None:
    if not LOG.isEnabledFor(logging.DEBUG):
        return
    for host in hosts:
        LOG.debug(
            "hpc-nova-scheduler: %s rack=%s group=%s free=%s capacity=%s vms=%s",
            host.name,
            host.rack_id,
            host.cpu_group,
            host.free,
            host.capacity,
            [(vm.uuid, vm.app_class.value, vm.application_id) for vm in host.vms],
        )


def first_plan(
    state: RequestState, setting: Setting, tries: list[Try]
) -> tuple[algorithm.Plan, list[Host], fairness.Choice | None] | None:
    """The plan of the first try that has one, with its hosts and choice;
    None after refusing the request for the first try's reason."""
    context = setting.context
    refused = None
    for hosts_tried, fair_choice in tries:
        try:
            plan = algorithm.plan(
                context.request,
                hosts_tried,
                context.thresholds,
                context.table,
                rule=context.rule,
                levels=setting.levels,
            )
        except algorithm.NoPlacement as refusal:
            refused = refused or (hosts_tried, refusal)
            continue
        return plan, hosts_tried, fair_choice
    tried, refusal = refused
    refusals.refused(
        context.request,
        tried,
        context.thresholds,
        context.table,
        context.rule,
        refusal.reason,
        levels=setting.levels,
    )
    state.refusal = refusal.reason
    record_unmet(state, context.request, [choice for _, choice in tries])
    return None


def record_unmet(state: RequestState, request: algorithm.PlacementRequest, choices: list) -> None:
    """A request its entitlement allows and no host can take: unmet demand.

    Under ``borrow`` the platform may be full of other projects' borrowed
    (or preemptible) VMs; the refusal tells the agent's next allocator run,
    which reclaims them. A request refused on borrowed choices only is not
    recorded here: it is beyond its project's entitlement.
    """
    entitled = next(
        (
            c
            for c in choices
            if c is not None and not c.borrowed and getattr(c, "loan", None) is None
        ),
        None,
    )
    if entitled is None or state.database is None:
        return
    level = request.topology.required if request.topology is not None else None
    try:
        state.database.record_refusal(
            entitled.project, state.profile.app_name, entitled.cores, topology_level=level
        )
    except db_api.ERRORS as error:
        LOG.warning("hpc-nova-scheduler: could not record the unmet demand: %s", error)


def alternates(setting: Setting, tried: list[Host], plan: algorithm.Plan) -> tuple[str, ...]:
    """Hosts Nova may rebuild on after a failed build, when the plan weigher is on;
    the hosts left out are logged at debug."""
    context = setting.context
    spares: tuple[str, ...] = ()
    if PLAN_WEIGHER.is_set():
        spares = algorithm.alternates(
            context.request,
            tried,
            plan,
            context.thresholds,
            context.table,
            limit=NOVA_CONF.scheduler.max_attempts - 1,
            rule=context.rule,
            levels=setting.levels,
        )
    refusals.left_out(
        context.request,
        tried,
        plan,
        context.thresholds,
        context.table,
        context.rule,
        spares,
        setting.levels,
    )
    return spares


def seen(context: claims.PlanContext, knowledge, hosts: list[Host]) -> None:
    """Record on ``context`` what the plan was made from, for the claim to check."""
    context.knowledge = knowledge.vms
    context.free_cores = {host.name: host.free.vcpus for host in hosts}
    context.claims_seen = knowledge.claims_seen
    context.groups = {host.name: host.cpu_group for host in hosts}


def accept(state: RequestState, plan: algorithm.Plan, spares: tuple[str, ...]) -> None:
    """Keep the claimed plan for the rounds to come, and say so."""
    profile = state.profile
    state.plan = plan
    state.spares = spares
    state.remaining = plan.vms_per_host()
    LOG.info(
        "hpc-nova-scheduler: %s %s: %s%s",
        profile.app_class,
        profile.app_name or state.application_id,
        state.remaining,
        f", alternates {list(spares)}" if spares else "",
    )
