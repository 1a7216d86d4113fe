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
(:mod:`.model_cache`), the steps of one attempt at a plan
(:mod:`.plan_attempt`), fair share (:mod:`.fair_scope`), the domains the
application already holds (:mod:`.held_domains`), the measured cache scores
(:mod:`.measured_scores`), claims (:mod:`.claims`),
the rounds after the plan (:mod:`.rounds`), and why hosts were left out
(:mod:`.refusals`).
"""

from __future__ import annotations

import threading

from nova.scheduler import filters
from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core import narrowing
from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.algorithm import Plan
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.interference import model_registry
from hpc_nova_scheduler.scheduler import (
    claims,
    domains,
    fair_scope,
    fairness,
    held_domains,
    measured_scores,
    plan_attempt,
    refusals,
)
from hpc_nova_scheduler.scheduler.aggregate_tags import AggregateTags
from hpc_nova_scheduler.scheduler.corunners import CoRunnerSource
from hpc_nova_scheduler.scheduler.fallback import DatabaseDown, FailurePolicy, FallbackStore
from hpc_nova_scheduler.scheduler.model_cache import ModelCache
from hpc_nova_scheduler.scheduler.occupancy import PlacementOccupancy
from hpc_nova_scheduler.scheduler.plugin_data import PluginData
from hpc_nova_scheduler.scheduler.request import Request, RequestState, remember, request_state
from hpc_nova_scheduler.scheduler.rounds import Rounds

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF

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
        self._database = db_api.ConfiguredDatabase(CONF)
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
        return self._database()

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
                # A constraint on the topology is never dropped silently either,
                # nor a preemptible VM placed where no loan would record it.
                refuse = state.profile.is_hpc or not state.topology.empty or state.preemptible
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
            narrowing.check_narrowing_specs(specs)
            topology = domains.spec_of(specs)
            preemptible = core_profile.preemptible_from_specs(specs)
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
        where_now = None if plain else held_domains.where_now(existing, instance_uuid, hosts)
        moving = where_now is not None
        if existing is not None and existing.request_id and request.group_uuid is None:
            application_id = existing.request_id
        state = RequestState(
            profile, application_id, database=database, topology=topology, preemptible=preemptible
        )
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
        table = self._data.interference_table(state.profile, state.database)
        levels = domains.in_force()
        context = plan_attempt.context_of(state, hosts, request, own, moving, table)
        try:
            model = self._models.model(state.database)
        except model_registry.UnknownModel as error:
            LOG.error("hpc-nova-scheduler: refusing request: %s", error)
            state.refusal = f"[hpc_scheduler] interference_model: {error}"
            return state
        if state.database is not None:
            claims.settle(state.database, self._source.nova)
        # Read once: every attempt and the claim's check judge by the same scores.
        context.scores, state.database = measured_scores.read(
            hosts,
            state.database,
            state.profile,
            self._policy,
            moving=request.instance_uuid if moving else None,
        )
        if moving and context.scores is not None:
            # A VM being moved has run: it goes with its measured score (its
            # claim too), while its record keeps the declared one.
            context.request = measured_scores.as_measured(
                context.request, context.scores, request.instance_uuid
            )
        fair = fair_scope.scope(self._entitlements, state, request)
        setting = plan_attempt.setting_of(state, context, levels, model, fair, self._tags.current())
        # A plan that lost a race to a concurrent one is made again from fresh data.
        for attempt in range(1, CLAIM_ATTEMPTS + 1):
            outcome = self._attempt(state, hosts, request, setting)
            if outcome is None:
                return state
            plan, spares, conflict = outcome
            if conflict is None:
                break
            LOG.info(
                "hpc-nova-scheduler: the plan of %s conflicts with a concurrent placement "
                "(%s); planning again (attempt %d of %d)",
                state.profile.app_name or state.application_id,
                conflict,
                attempt,
                CLAIM_ATTEMPTS,
            )
        else:
            state.refusal = f"no plan survived {CLAIM_ATTEMPTS} concurrent placements"
            LOG.warning("hpc-nova-scheduler: refusing %s: %s", state.application_id, state.refusal)
            return state
        plan_attempt.accept(state, plan, spares)
        return state

    def _attempt(
        self, state: RequestState, hosts: list, request: Request, setting: plan_attempt.Setting
    ) -> tuple[Plan, tuple[str, ...], str | None] | None:
        """One plan from fresh data, claimed: (plan, alternates, the conflict
        that lost the claim or None); None after refusing the request."""
        knowledge, core_hosts = self._hosts_now(state, hosts, request, setting)
        if not plan_attempt.keep_together(state, request, setting):
            return None
        plan_attempt.log_hosts(core_hosts)
        setting.context.rule = self._rule(state, setting, knowledge)
        tries = fair_scope.tries(state, request, setting.fair, core_hosts, setting.cores)
        found = plan_attempt.first_plan(state, setting, tries) if tries else None
        if found is None:
            return None
        plan, tried, choice = found
        fair_scope.log_choice(state.application_id, choice, tried)
        spares = plan_attempt.alternates(setting, tried, plan)
        plan_attempt.seen(setting.context, knowledge, core_hosts)
        return plan, spares, self._claim(state, setting, knowledge, plan, spares, choice)

    def _hosts_now(
        self, state: RequestState, hosts: list, request: Request, setting: plan_attempt.Setting
    ):
        """What the databases tell of ``hosts`` now, and the core engine's view of them."""
        knowledge, state.database = self._data.knowledge(
            hosts,
            state.database,
            state.profile,
            request.instance_uuid,
            setting.context.own,
            state.application_id,
            scores=setting.context.scores,
        )
        if self._policy.degraded(state.database):
            # The measurements are the plugin database's: from here on the
            # plan and its claim's check both count declared scores.
            setting.context.scores = None
        return knowledge, plan_attempt.core_hosts(hosts, knowledge, setting)

    def _rule(self, state: RequestState, setting: plan_attempt.Setting, knowledge):
        """The interference model's admission; None for the cache thresholds
        (and for ExtremeHPC, which shares no host)."""
        if setting.model is None or setting.extreme:
            return None
        rule, state.database = self._models.rule(
            setting.model, state.profile, knowledge.vms, state.database
        )
        return rule

    def _claim(
        self,
        state: RequestState,
        setting: plan_attempt.Setting,
        knowledge,
        plan: Plan,
        spares: tuple[str, ...],
        choice,
    ) -> str | None:
        """Claim the plan; an ExtremeHPC plan's hosts must still be free of
        others. The conflict that lost the claim, or None."""
        context = setting.context
        conflict = claims.claim(state, context, plan, spares, self._policy, fair=choice)
        if conflict is None and setting.extreme:
            conflict = claims.check_dedicated(
                state, context, plan, spares, knowledge, setting.occupied, self._occupancy
            )
        return conflict
