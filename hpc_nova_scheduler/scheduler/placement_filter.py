"""``HpcPlacementFilter``: seed 003's HPC-aware placement inside nova-scheduler.

Nova schedules a multi-create request one instance at a time, filtering and
weighing the hosts again for each, and each round sees only the hosts the
previous round kept. The filter plans the whole request at its first
instance with the core engine (Algorithm 1 over every candidate host that
Nova's other filters let through) and from then on keeps only the hosts the
plan still needs, leaving Nova's weighers to choose among them.
The request is thereby one application: its VMs fill racks together, stay in
one processor group, and count as co-runners of each other; if the plan
fails, the first instance finds no host and Nova answers NoValidHost for the
whole request, splitting nothing.

Requests with no ``hpc:`` extra spec and no ``hpc_app_name`` hint are left to
Nova's weighers; the filter only keeps them off hosts dedicated to another
application's ExtremeHPC VMs.

Enable it last in ``[filter_scheduler] enabled_filters`` so that it plans
over the hosts Nova's own filters accept.

Concurrency: a plan is claimed in the plugin database before Nova places
its first VM (:mod:`.claims`); a plan that lost a race to a concurrent one
is made again from fresh data. Placement, not the plugin, guards CPU, RAM
and disk.

Alternates: when ``HpcPlanWeigher`` is enabled too, the filter also offers
Nova up to ``[scheduler] max_attempts - 1`` alternate hosts that keep every
rule with the whole plan in place (:func:`algorithm.alternates`), claimed as
spare slots; the weigher keeps them behind the planned hosts, so Nova
chooses planned hosts and hands the alternates to the conductor for a
rebuild after a failed build.

The filter's parts: the request read once from Nova's spec and its state
(:mod:`.request`), what the databases tell of its hosts (:mod:`.plugin_data`),
the database failure policy (:mod:`.fallback`), the interference model
(:mod:`.model_cache`), claims (:mod:`.claims`), the rounds after the plan
(:mod:`.rounds`), and why hosts were left out (:mod:`.refusals`).
"""

from __future__ import annotations

import dataclasses
import threading

from nova import conf as nova_conf
from nova.scheduler import filters
from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.columns import domain_ids
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.interference import model_registry
from hpc_nova_scheduler.scheduler import claims, domains, fairness, host_view, refusals
from hpc_nova_scheduler.scheduler.aggregate_tags import AggregateTags
from hpc_nova_scheduler.scheduler.corunners import CoRunnerSource
from hpc_nova_scheduler.scheduler.fallback import DatabaseDown, FailurePolicy, FallbackStore
from hpc_nova_scheduler.scheduler.model_cache import ModelCache
from hpc_nova_scheduler.scheduler.occupancy import PlacementOccupancy
from hpc_nova_scheduler.scheduler.plugin_data import PluginData
from hpc_nova_scheduler.scheduler.request import (
    PLAN_WEIGHER,
    Request,
    RequestState,
    remember,
    request_state,
)
from hpc_nova_scheduler.scheduler.rounds import Rounds

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF
NOVA_CONF = nova_conf.CONF

#: How often a plan that lost a race to a concurrent one is made again.
CLAIM_ATTEMPTS = 5

#: What the first round decided for the request this thread schedules: Nova
#: runs every round of one request in one thread, first round first.
_ROUND = threading.local()

#: Threshold pairs already reported as inconsistent, so each is said once.
_REPORTED_THRESHOLDS: set[tuple[float, float]] = set()
_REPORTED_LOCK = threading.Lock()


def report_threshold_problems() -> None:
    """Log, once per value pair, thresholds that contradict each other.

    alpha below beta is a mistake, but a safe one: every host is held to
    alpha, so a SyncHPC host is held to the smaller of the two anyway.
    Refusing every HPC request over it would turn a typo into an outage,
    so the filter goes on and says so in the log.
    """
    group = CONF.hpc_scheduler
    pair = (group.cache_threshold, group.sync_cache_threshold)
    try:
        hpc_conf.check_thresholds(CONF)
    except hpc_conf.ConfigurationError as error:
        with _REPORTED_LOCK:
            if pair in _REPORTED_THRESHOLDS:
                return
            _REPORTED_THRESHOLDS.add(pair)
        LOG.error(
            "hpc-nova-scheduler: %s; every host is held to cache_threshold, so "
            "sync_cache_threshold has no effect until this is fixed",
            error,
        )


class HpcPlacementFilter(filters.BaseHostFilter):
    """Places the k VMs of an HPC application as one unit (seed 003)."""

    RUN_ON_REBUILD = False
    run_filter_once_per_request = False

    def run_filter_for_index(self, index: int) -> bool:
        # Each round sees only the hosts the previous one kept, so a request
        # left to Nova is settled in its first round: the later ones would
        # cost Nova a pass over every host for nothing.
        return index == 0 or not getattr(_ROUND, "settled", False)

    def __init__(self) -> None:
        super().__init__()
        self._source = CoRunnerSource()
        self._database: db_api.Database | None = None
        self._database_url: str | None = None
        self._database_lock = threading.Lock()
        self._occupancy = PlacementOccupancy()
        self._fallback = FallbackStore()
        self._policy = FailurePolicy(self._fallback)
        self._data = PluginData(self._source, self._occupancy, self._policy)
        self._rounds = Rounds(self._occupancy, self._fallback, self._source.placed_here)
        self._models = ModelCache(self._policy)
        self._tags = AggregateTags()
        self._entitlements = fairness.Entitlements()
        report_threshold_problems()
        # A bad fair-share option is said once, now, rather than at the first request.
        fairness.settings()

    def _db(self) -> db_api.Database:
        group = CONF.hpc_scheduler
        with self._database_lock:
            if self._database is None or self._database_url != group.connection:
                if self._database is not None:
                    self._database.dispose()
                self._database = None
                self._database_url = group.connection
                self._database = db_api.Database.from_conf(CONF)
            return self._database

    # -- Nova's entry point --------------------------------------------------

    def filter_all(self, filter_obj_list, spec_obj):
        hosts = list(filter_obj_list)
        state = request_state(spec_obj)
        request = None
        _ROUND.settled = False
        try:
            request = Request.from_spec(spec_obj, planning=state is None)
            if state is None:
                state = self._start(hosts, request)
                remember(spec_obj, state)
            _ROUND.settled = state.plan is None and state.refusal is None
            return self._select(state, hosts, request)
        except DatabaseDown:
            remember(spec_obj, RequestState(ApplicationProfile(), "", refusal="database"))
            return []
        except Exception:
            # A fault of the plugin must not take nova-scheduler down; an HPC
            # request is refused rather than placed blind.
            if state is not None and state.plan is not None:
                claims.abandon(state)
            if state is None:
                refuse = (request or Request.of_flavor(spec_obj)).hpc
            else:
                # A constraint on the topology is never dropped silently either.
                refuse = state.profile.is_hpc or not state.topology.empty
            LOG.exception(
                "hpc-nova-scheduler: unexpected error; %s",
                "refusing the request" if refuse else "leaving the request to Nova",
            )
            return [] if refuse else hosts

    def _select(self, state: RequestState, hosts: list, request: Request) -> list:
        """The hosts this round may choose from (:meth:`Rounds.select`)."""
        return self._rounds.select(state, hosts, request)

    # -- the first instance: plan -------------------------------------------

    def _start(self, hosts: list, request: Request) -> RequestState:
        if request.extra_specs is None:
            raise ValueError("the request's flavor and its extra specs cannot be read")
        specs, plain = request.extra_specs, request.plain
        try:
            profile = core_profile.profile_from_request(specs, request.hints)
            topology = domains.spec_of(specs)
        except core_profile.ProfileError as error:
            LOG.error(
                "hpc-nova-scheduler: refusing request: invalid %s (%s); fix the flavor or the hint",
                error.key,
                error.reason,
            )
            return RequestState(ApplicationProfile(), "", refusal=str(error))
        instance_uuid = request.instance_uuid
        application_id = request.group_uuid or instance_uuid
        own = set(request.members)
        database = self._policy.connect(profile, self._db)
        if database is not None and not self._policy.degraded(database):
            database = self._policy.hand_over(database, profile)
        if not plain:
            profile, database = self._data.profile(profile, specs, database)
        # A VM being moved already runs somewhere: it stays part of the
        # application it was placed with, and it is the only VM to place.
        existing = None if plain else self._data.existing_record(database, instance_uuid)
        where_now = None if plain else self._where_now(existing, instance_uuid, hosts)
        moving = where_now is not None
        if existing is not None and existing.request_id and request.group_uuid is None:
            application_id = existing.request_id
        state = RequestState(profile, application_id, database=database, topology=topology)
        state.moving_from = where_now
        if plain:
            # Left to Nova: only another application's dedicated hosts are off
            # limits. Claims are settled by HPC requests: this path stays cheap.
            knowledge, state.database = self._data.knowledge(
                hosts, database, profile, instance_uuid, own, application_id, dedicated_only=True
            )
            state.avoid = frozenset(knowledge.vms)
            refusals.avoided(knowledge.vms)
            return state
        return self._plan(state, hosts, request, own, moving)

    def _plan(
        self, state: RequestState, hosts: list, request: Request, own: set[str], moving: bool
    ) -> RequestState:
        """Plan the request over ``hosts`` and claim the plan; or say why not."""
        profile, application_id = state.profile, state.application_id
        instance_uuid = request.instance_uuid
        table = self._data.interference_table(profile, state.database)
        group_conf = CONF.hpc_scheduler
        thresholds = Thresholds(group_conf.cache_threshold, group_conf.sync_cache_threshold)
        demand = request.demand
        levels = domains.in_force()
        placement = algorithm.PlacementRequest(
            profile=profile,
            demand=demand,
            # Nova keeps the original request's count on the spec of a move.
            count=1 if moving else request.num_instances,
            application_id=application_id,
            topology=state.topology,
        )
        context = claims.PlanContext(
            hosts=hosts,
            request=placement,
            thresholds=thresholds,
            table=table,
            instance_uuid=instance_uuid,
            own=own,
            project_id=request.project_id,
        )
        try:
            model = self._models.model(state.database)
        except model_registry.UnknownModel as error:
            LOG.error("hpc-nova-scheduler: refusing request: %s", error)
            state.refusal = f"[hpc_scheduler] interference_model: {error}"
            return state
        if state.database is not None:
            claims.settle(state.database, self._source.nova)
        fair = self._fair_scope(state, request)
        # Cores the request adds: fair share counts a VM as its flavor's vCPUs.
        state.vm_cores = round(demand.vcpus) if demand is not None else 0
        cores = state.vm_cores * placement.count
        extreme = profile.app_class is core_profile.AppClass.EXTREME_HPC
        reserved = host_view.reservations()
        tags = self._tags.current()
        #: Hosts Placement showed busy with VMs the plugin does not know yet.
        occupied: set[str] = set()
        for attempt in range(1, CLAIM_ATTEMPTS + 1):
            knowledge, state.database = self._data.knowledge(
                hosts, state.database, profile, instance_uuid, own, application_id
            )
            for key in occupied:
                knowledge.vms[key].append(RunningVM(uuid=f"placement:{key}"))
            core_hosts = sorted(
                (
                    host_view.to_host(
                        hs,
                        knowledge.vms[host_view.host_key(hs)],
                        demand=demand,
                        reserved=reserved,
                        tags=tags,
                        levels=levels,
                        taken_cores=knowledge.taken_cores.get(host_view.host_key(hs), 0.0),
                    )
                    for hs in hosts
                ),
                key=lambda h: h.name,
            )
            context.topology = self._domain_check(state, levels, tags)
            # Read again at each attempt: a conflict may be the group's other
            # request having taken a domain meanwhile.
            held = self._held_domains(state, request, levels, tags)
            if held is None:
                state.refusal = (
                    f"{core_profile.TOPOLOGY_SPECS[0]}: cannot read the aggregates from "
                    "Nova's database to know where the application runs"
                )
                LOG.warning("hpc-nova-scheduler: refusing %s: %s", application_id, state.refusal)
                return state
            placement = dataclasses.replace(placement, held_domains=held)
            context.request = placement
            self._log_hosts(core_hosts)
            rule = None
            if model is not None and not extreme:
                rule, state.database = self._models.rule(
                    model, profile, knowledge.vms, state.database
                )
            context.rule = rule
            if fair is None:
                tries: list = [(core_hosts, None)]
            else:
                tries = self._fair_tries(state, request, fair, core_hosts, cores)
                if not tries:
                    return state
            plan = refused = None
            for hosts_tried, fair_choice in tries:
                try:
                    plan = algorithm.plan(
                        placement, hosts_tried, thresholds, table, rule=rule, levels=levels
                    )
                except algorithm.NoPlacement as refusal:
                    refused = refused or (hosts_tried, refusal)
                    continue
                tried, choice = hosts_tried, fair_choice
                break
            if plan is None:
                tried, refusal = refused
                refusals.refused(
                    placement, tried, thresholds, table, rule, refusal.reason, levels=levels
                )
                state.refusal = refusal.reason
                return state
            if choice is not None:
                LOG.debug(
                    "hpc-nova-scheduler: %s on platform %s (%s, %d hosts)",
                    application_id,
                    choice.platform,
                    "borrowed" if choice.borrowed else f"entitled {choice.entitled}",
                    len(tried),
                )
            spares = self._alternates(placement, tried, plan, thresholds, table, rule, levels)
            refusals.left_out(placement, tried, plan, thresholds, table, rule, spares, levels)
            context.knowledge = knowledge.vms
            context.free_cores = {host.name: host.free.vcpus for host in core_hosts}
            context.claims_seen = knowledge.claims_seen
            context.groups = {host.name: host.cpu_group for host in core_hosts}
            conflict = claims.claim(state, context, plan, spares, self._policy, fair=choice)
            if conflict is None and extreme:
                conflict = claims.check_dedicated(
                    state, context, plan, spares, knowledge, occupied, self._occupancy
                )
            if conflict is None:
                break
            LOG.info(
                "hpc-nova-scheduler: the plan of %s conflicts with a concurrent placement "
                "(%s); planning again (attempt %d of %d)",
                profile.app_name or application_id,
                conflict,
                attempt,
                CLAIM_ATTEMPTS,
            )
        else:
            state.refusal = f"no plan survived {CLAIM_ATTEMPTS} concurrent placements"
            LOG.warning("hpc-nova-scheduler: refusing %s: %s", application_id, state.refusal)
            return state
        state.plan = plan
        state.spares = spares
        state.remaining = plan.vms_per_host()
        LOG.info(
            "hpc-nova-scheduler: %s %s: %s%s",
            profile.app_class,
            profile.app_name or application_id,
            state.remaining,
            f", alternates {list(spares)}" if spares else "",
        )
        return state

    # -- fair share ----------------------------------------------------------

    def _fair_scope(self, state: RequestState, request: Request) -> fairness.InForce | None:
        """The entitlements the request is held to; None when fair share does not apply.

        It applies to the HPC requests of projects with a share, while a
        generation less than two intervals old is in force.
        """
        options = fairness.settings()
        if options is None or state.database is None or not request.project_id:
            return None
        try:
            in_force = self._entitlements.current(state.database)
        except db_api.ERRORS as error:
            LOG.warning(
                "hpc-nova-scheduler: cannot read entitlements (%s); fair share skipped", error
            )
            return None
        if in_force is None or request.project_id not in in_force.governed:
            return None
        if in_force.stale(options.interval, timeutils.utcnow()):
            fairness.warn_stale(in_force)
            return None
        return in_force

    def _fair_tries(
        self,
        state: RequestState,
        request: Request,
        in_force: fairness.InForce,
        core_hosts: list,
        cores: int,
    ) -> list:
        """(hosts, choice) to plan over in turn: each platform the project may
        use, its template-following hosts first; empty after refusing the request."""
        options = fairness.settings()
        project = request.project_id
        use = state.database.cores_in_use()
        found = fairness.choices(
            in_force,
            in_force.cloud,
            project,
            cores,
            [host.name for host in core_hosts],
            use,
            options.enforcement if options is not None else hpc_conf.STRICT,
        )
        tries = []
        for choice in found:
            on_platform = [host for host in core_hosts if host.name in choice.keys]
            if choice.preferred:
                following = [host for host in on_platform if host.name in choice.preferred]
                if following and len(following) < len(on_platform):
                    tries.append((following, choice))
            tries.append((on_platform, choice))
        if tries:
            return tries
        state.refusal = fairness.describe_refusal(in_force, in_force.cloud, project, cores, use)
        LOG.info("hpc-nova-scheduler: refusing %s: %s", state.application_id, state.refusal)
        try:
            state.database.record_refusal(project, state.profile.app_name, cores)
        except db_api.ERRORS as error:
            LOG.warning("hpc-nova-scheduler: could not record the refusal: %s", error)
        return []

    @staticmethod
    def _log_hosts(core_hosts) -> None:
        if not LOG.isEnabledFor(logging.DEBUG):
            return
        for host in core_hosts:
            LOG.debug(
                "hpc-nova-scheduler: %s rack=%s group=%s free=%s capacity=%s vms=%s",
                host.name,
                host.rack_id,
                host.cpu_group,
                host.free,
                host.capacity,
                [(vm.uuid, vm.app_class.value, vm.application_id) for vm in host.vms],
            )

    @staticmethod
    def _alternates(request, core_hosts, plan, thresholds, table, rule, levels) -> tuple[str, ...]:
        if not PLAN_WEIGHER.is_set():
            return ()
        limit = NOVA_CONF.scheduler.max_attempts - 1
        return algorithm.alternates(
            request, core_hosts, plan, thresholds, table, limit=limit, rule=rule, levels=levels
        )

    # -- topology --------------------------------------------------------------

    @staticmethod
    def _where_now(
        existing, instance_uuid: str | None, hosts: list
    ) -> tuple[str, str | None] | None:
        """Where the VM runs now, if it runs (it is being moved): its record's
        host, else the host Nova shows it on; None for a new VM."""
        if existing is not None:
            return existing.host, existing.nodename
        for hs in hosts:
            if instance_uuid in (getattr(hs, "instances", None) or {}):
                return hs.host, getattr(hs, "nodename", None)
        return None

    @staticmethod
    def _held_domains(
        state: RequestState, request: Request, levels, tags
    ) -> tuple[frozenset[str], ...] | None:
        """Per level, then the host level: where the application already runs
        or holds claims (a server group's), or where the VM being moved runs
        now. None when that cannot be known and a level is required."""
        grouped = request.group_uuid is not None
        if not grouped and state.moving_from is None:
            return ()
        if len(levels) == 1 and state.topology.empty:
            return ()  # seed 003's single level reads its own VMs only
        if tags is None:
            return None if state.topology.required is not None else ()
        if state.moving_from is not None:
            # A moved VM stays in its own segment's domain, and so in the
            # application's required one.
            places = {state.moving_from}
        elif state.database is None:
            return None if state.topology.required is not None else ()
        else:
            try:
                places = state.database.application_hosts(state.application_id)
            except db_api.ERRORS as error:
                LOG.warning(
                    "hpc-nova-scheduler: cannot read where %s runs: %s", state.application_id, error
                )
                return None if state.topology.required is not None else ()
        held: list[set[str]] = [set() for _ in range(len(levels) + 1)]
        for host, nodename in places:
            key = db_api.host_key(host, nodename)
            for level, domain in enumerate(domain_ids(key, domains.values_of(host, tags, levels))):
                held[level].add(domain)
            held[-1].add(key)
        if any(held):
            LOG.debug("hpc-nova-scheduler: %s already holds %s", state.application_id, held)
        return tuple(frozenset(level) for level in held)

    @staticmethod
    def _domain_check(state: RequestState, levels, tags):
        """For the claim: ``(depth, domain of (host, key))`` at the required level, or None."""
        depth = domains.constraint_depth(state.topology, levels)
        if depth is None or tags is None:
            return None
        return depth, lambda host, key: domains.domain_of(host, key, tags, levels, depth)
