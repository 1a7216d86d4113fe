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

Concurrency: nova-scheduler runs requests in native threads, and operators
run several scheduler workers. A plan is therefore claimed in the plugin
database before Nova places its first VM (:meth:`Database.claim`): under
row locks on the plan's hosts and application, the filter re-reads what runs
and is claimed there, checks the plan against it with
:mod:`hpc_nova_scheduler.core.admission`, and writes the claim in the same
transaction; a plan that lost a race is made again from fresh data. Other
requests count live claims as VMs, so two requests never spend the same
cache budget or take the same host as dedicated. Placement, not the plugin,
guards CPU, RAM and disk.

Alternates: when ``HpcPlanWeigher`` is enabled too, the filter also offers
Nova up to ``[scheduler] max_attempts - 1`` alternate hosts that keep every
rule with the whole plan in place (:func:`algorithm.alternates`), claimed as
spare slots; the weigher keeps them behind the planned hosts, so Nova
chooses planned hosts and hands the alternates to the conductor for a
rebuild after a failed build.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid as uuid_lib
import weakref
from typing import Any

from nova import conf as nova_conf
from nova.scheduler import filters
from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core import admission, algorithm
from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.interference import registry
from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.interference.cache_score import CacheScoreModel
from hpc_nova_scheduler.interference.rule import ModelRule
from hpc_nova_scheduler.scheduler import host_view
from hpc_nova_scheduler.scheduler.aggregate_tags import AggregateTags
from hpc_nova_scheduler.scheduler.corunners import CoRunnerSource, claimed_vms, look_up
from hpc_nova_scheduler.scheduler.fallback import FallbackStore
from hpc_nova_scheduler.scheduler.occupancy import PlacementOccupancy
from hpc_nova_scheduler.scheduler.sweeper import Sweeper

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF
NOVA_CONF = nova_conf.CONF

#: How often a plan that lost a race to a concurrent one is made again.
CLAIM_ATTEMPTS = 5

DATABASE_ERRORS = db_api.ERRORS


class DatabaseDown(Exception):
    """The plugin database failed and the policy says not to go on."""


@dataclasses.dataclass
class _RequestState:
    """What the filter decided for one scheduling request."""

    profile: ApplicationProfile
    application_id: str
    plan: algorithm.Plan | None = None
    refusal: str | None = None
    #: For requests left to Nova: the hosts they must avoid.
    avoid: frozenset[str] = frozenset()
    database: db_api.Database | None = None
    #: VMs the plan still puts on each host.
    remaining: dict[str, int] = dataclasses.field(default_factory=dict)
    #: The instance of the previous round, whose host Nova has chosen since.
    pending: str | None = None
    #: The hosts kept for each instance, so that a repeated round (Nova
    #: filters again when it looks for alternates) gets the same answer.
    answers: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    #: The claim of the plan in the plugin database, if one was written.
    claim_id: str | None = None
    #: Alternate hosts, best first, offered behind the planned ones.
    spares: tuple[str, ...] = ()
    #: The planned hosts offered in the current round (the weigher puts
    #: them first).
    planned_now: frozenset[str] = frozenset()
    #: Instances on each offered host when the pending instance was offered
    #: them: the host Nova claimed for it is the one that gained one.
    seen: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: For ExtremeHPC: the plan's host states, and the VMs of the
    #: application that may share them (checked against Placement).
    dedicated: dict[str, Any] = dataclasses.field(default_factory=dict)
    own_vms: frozenset[str] = frozenset()


#: The state of every request being scheduled. Nova hands the filter the
#: same RequestSpec object for every instance of a request, and drops it when
#: the request is done. Requests run in threads of their own.
REQUESTS: weakref.WeakKeyDictionary[Any, _RequestState] = weakref.WeakKeyDictionary()
_REQUESTS_LOCK = threading.Lock()

#: What the first round decided for the request this thread schedules: Nova
#: runs every round of one request in one thread, first round first.
_ROUND = threading.local()


def request_state(spec_obj: Any) -> _RequestState | None:
    """What the filter decided for the request of ``spec_obj``, if anything."""
    with _REQUESTS_LOCK:
        return REQUESTS.get(spec_obj)


def _remember(spec_obj: Any, state: _RequestState) -> None:
    with _REQUESTS_LOCK:
        REQUESTS[spec_obj] = state


#: Set when nova-scheduler loads ``HpcPlanWeigher``: only then are alternates
#: offered, since without it Nova's weighers could prefer one to a planned host.
PLAN_WEIGHER = threading.Event()

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


def _group(spec_obj: Any) -> Any:
    return spec_obj.instance_group if spec_obj.obj_attr_is_set("instance_group") else None


def _hints(spec_obj: Any) -> dict:
    if spec_obj.obj_attr_is_set("scheduler_hints") and spec_obj.scheduler_hints:
        return dict(spec_obj.scheduler_hints)
    return {}


def _settled(instance: Any) -> bool:
    """Whether Nova is done building (or moving) ``instance``."""
    if instance is None or getattr(instance, "deleted", False):
        return True
    vm_state = getattr(instance, "vm_state", None)
    if vm_state in ("error", "deleted"):
        return True
    return vm_state != "building" and getattr(instance, "task_state", None) is None


@dataclasses.dataclass
class _PlanContext:
    """What a plan was made from, to check it again under the claim's locks."""

    hosts: list
    request: algorithm.PlacementRequest
    thresholds: Thresholds
    table: InterferenceTable
    instance_uuid: str | None
    own: set[str]
    #: The interference model's admission (None: the cache thresholds).
    rule: ModelRule | None = None
    #: Co-runners per host key as planned on (Nova's view and the database's).
    knowledge: dict[str, list[RunningVM]] = dataclasses.field(default_factory=dict)
    #: Processor group per candidate host key.
    groups: dict[str, str] = dataclasses.field(default_factory=dict)
    project_id: str | None = None

    def _as_vm(self, row: db_api.RunningVM) -> RunningVM:
        application_id = self.request.application_id
        own = row.instance_uuid in self.own or row.request_id == application_id
        return RunningVM(
            uuid=row.instance_uuid,
            app_class=row.app_class,
            cache_score=row.cache_score,
            app_name=row.app_name,
            application_id=application_id if own else row.request_id,
        )

    def check(
        self, view: db_api.ClaimView, plan: algorithm.Plan, slots: dict[str, int]
    ) -> str | None:
        """Why the plan no longer holds against ``view``; None if it does.

        On each host the plan uses: what the database says runs and is
        claimed there now, plus what only Nova showed when the plan was made
        (VMs with no record), judged by the same rules the planner applied.
        """
        exclude = {self.instance_uuid} if self.instance_uuid else set()
        application_id = self.request.application_id
        fresh: dict[str, list[RunningVM]] = {}
        recorded = set()
        app_keys = set()
        for row in view.running:
            recorded.add(row.instance_uuid)
            if row.instance_uuid in exclude:
                continue
            vm = self._as_vm(row)
            fresh.setdefault(row.key, []).append(vm)
            if vm.application_id == application_id:
                app_keys.add(row.key)
        for claim in view.claims:
            fresh.setdefault(claim.key, []).extend(claimed_vms(claim, claim.application_id))
            if claim.application_id == application_id:
                app_keys.add(claim.key)
        profile = self.request.profile
        for key, adding in slots.items():
            nova_only = [
                vm
                for vm in self.knowledge.get(key, ())
                if vm.uuid not in recorded and not vm.uuid.startswith("claim:")
            ]
            reason = admission.refusal(
                [*fresh.get(key, ()), *nova_only],
                profile,
                application_id,
                adding,
                self.thresholds,
                self.table,
                self.rule,
                host_type=self.groups.get(key),
            )
            if reason is not None:
                return f"{key}: {reason}"
        if profile.app_class.needs_homogeneity and plan.cpu_group is not None:
            # The application may have grown elsewhere meanwhile (another
            # request of its server group): it must stay on one processor type.
            for key in app_keys:
                group = self.groups.get(key)
                if group is not None and group != plan.cpu_group:
                    return f"the application now runs on processor group {group}"
        return None


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
        self._sweeper = Sweeper(self._db, self._fallback)
        self._tags = AggregateTags()
        self._models: dict[str, InterferenceModel] = {}
        #: (kind, generation) of each stored model when it was read.
        self._model_stamps: dict[str, tuple] = {}
        self._models_lock = threading.Lock()
        report_threshold_problems()

    # -- plumbing ------------------------------------------------------------

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

    def _database_for(self, profile: ApplicationProfile) -> db_api.Database | None:
        """The database, or None where the policy allows going on without it."""
        try:
            return self._db()
        except DATABASE_ERRORS as error:
            return self._database_failed(profile, error)

    def _database_failed(
        self,
        profile: ApplicationProfile,
        error: Exception,
        failed: db_api.Database | None = None,
    ) -> db_api.Database | None:
        """What to go on with when ``failed`` (the plugin database) fails.

        Under ``reject`` an HPC request is refused (:class:`DatabaseDown`);
        otherwise the request goes on with the fallback copy, or with Nova's
        data alone (None) when there is no copy or the copy itself failed.
        """
        policy = CONF.hpc_scheduler.database_failure_policy
        if profile.is_hpc and policy == hpc_conf.REJECT:
            LOG.error(
                "hpc-nova-scheduler: plugin database unavailable (%s); refusing this "
                "%s request (database_failure_policy = reject)",
                error,
                profile.app_class,
            )
            raise DatabaseDown(str(error)) from error
        copy = None if self._fallback.owns(failed) else self._fallback.database()
        LOG.warning(
            "hpc-nova-scheduler: %s unavailable (%s); placing this %s request from %s",
            "the fallback copy" if self._fallback.owns(failed) else "plugin database",
            error,
            profile.app_class,
            "the fallback copy and Nova's data" if copy is not None else "Nova's own data only",
        )
        return copy

    def _degraded(self, database: db_api.Database | None) -> bool:
        return database is None or self._fallback.owns(database)

    def _hand_over(
        self, database: db_api.Database, profile: ApplicationProfile
    ) -> db_api.Database | None:
        """The database, once what the copy holds from an outage is in it."""
        try:
            self._fallback.hand_over(database)
        except DATABASE_ERRORS as error:
            return self._database_failed(profile, error, database)
        return database

    # -- Nova's entry point --------------------------------------------------

    def filter_all(self, filter_obj_list, spec_obj):
        hosts = list(filter_obj_list)
        state = request_state(spec_obj)
        _ROUND.settled = False
        try:
            if state is None:
                self._sweeper.ensure_started()
                state = self._start(hosts, spec_obj)
                _remember(spec_obj, state)
            _ROUND.settled = state.plan is None and state.refusal is None
            return self._select(state, hosts, spec_obj)
        except DatabaseDown:
            _remember(spec_obj, _RequestState(ApplicationProfile(), "", refusal="database"))
            return []
        except Exception:
            # A fault of the plugin must not take nova-scheduler down; an HPC
            # request is refused rather than placed blind.
            hpc = state is not None and state.profile.is_hpc
            if state is not None and state.plan is not None:
                self._abandon(state)
            LOG.exception(
                "hpc-nova-scheduler: unexpected error; %s",
                "refusing the request" if hpc else "leaving the request to Nova",
            )
            return [] if hpc or (state is None and self._looks_hpc(spec_obj)) else hosts

    @staticmethod
    def _existing_record(
        database: db_api.Database | None, instance_uuid: str | None
    ) -> db_api.RunningVM | None:
        """The record of an instance being moved (None for a new one)."""
        if database is None or not instance_uuid:
            return None
        try:
            rows = database.running_for((), [instance_uuid])
        except DATABASE_ERRORS as error:
            LOG.warning(
                "hpc-nova-scheduler: cannot read the record of %s: %s", instance_uuid, error
            )
            return None
        return rows[0] if rows else None

    @staticmethod
    def _looks_hpc(spec_obj: Any) -> bool:
        try:
            specs = spec_obj.flavor.extra_specs or {}
        except Exception:
            return True
        return core_profile.has_hpc_specs(specs) or core_profile.HINT_APP_NAME in _hints(spec_obj)

    # -- the first instance: plan -------------------------------------------

    def _start(self, hosts: list, spec_obj: Any) -> _RequestState:
        specs = dict(spec_obj.flavor.extra_specs or {})
        hints = _hints(spec_obj)
        plain = not core_profile.has_hpc_specs(specs) and core_profile.HINT_APP_NAME not in hints
        try:
            profile = core_profile.profile_from_request(specs, hints)
        except core_profile.ProfileError as error:
            LOG.error(
                "hpc-nova-scheduler: refusing request: invalid %s (%s); fix the flavor or the hint",
                error.key,
                error.reason,
            )
            return _RequestState(ApplicationProfile(), "", refusal=str(error))
        group = _group(spec_obj)
        instance_uuid = spec_obj.instance_uuid
        application_id = group.uuid if group is not None and group.uuid else instance_uuid
        own = set(group.members or []) if group is not None and "members" in group else set()
        database = self._database_for(profile)
        if database is not None and not self._degraded(database):
            database = self._hand_over(database, profile)
        if database is not None and profile.app_name and not plain:
            try:
                profile = self._with_stored_profile(profile, specs, database)
            except DATABASE_ERRORS as error:
                database = self._database_failed(profile, error, database)
                if database is not None:
                    try:
                        profile = self._with_stored_profile(profile, specs, database)
                    except DATABASE_ERRORS as again:
                        database = self._database_failed(profile, again, database)
        # A VM being moved already runs somewhere: it stays part of the
        # application it was placed with, and it is the only VM to place.
        existing = None if plain else self._existing_record(database, instance_uuid)
        moving = not plain and (
            existing is not None
            or any(instance_uuid in (getattr(hs, "instances", None) or {}) for hs in hosts)
        )
        if existing is not None and existing.request_id and group is None:
            application_id = existing.request_id
        state = _RequestState(profile, application_id, database=database)
        if plain:
            # Left to Nova: only another application's dedicated hosts are off
            # limits. Claims are settled by HPC requests: this path stays cheap.
            knowledge, state.database = self._knowledge(
                hosts, database, profile, instance_uuid, own, application_id, dedicated_only=True
            )
            state.avoid = frozenset(knowledge.vms)
            return state
        table = self._interference_table(profile, database)
        group_conf = CONF.hpc_scheduler
        thresholds = Thresholds(group_conf.cache_threshold, group_conf.sync_cache_threshold)
        demand = host_view.demand(spec_obj)
        request = algorithm.PlacementRequest(
            profile=profile,
            demand=demand,
            # Nova keeps the original request's count on the spec of a move.
            count=1 if moving else max(1, spec_obj.num_instances),
            application_id=application_id,
        )
        context = _PlanContext(
            hosts=hosts,
            request=request,
            thresholds=thresholds,
            table=table,
            instance_uuid=instance_uuid,
            own=own,
            project_id=getattr(spec_obj, "project_id", None),
        )
        try:
            model = self._interference_model(database)
        except registry.UnknownModel as error:
            LOG.error("hpc-nova-scheduler: refusing request: %s", error)
            state.refusal = f"[hpc_scheduler] interference_model: {error}"
            return state
        if database is not None:
            self._settle(database)
        extreme = profile.app_class is core_profile.AppClass.EXTREME_HPC
        reserved = host_view.reservations()
        tags = self._tags.current()
        #: Hosts Placement showed busy with VMs the plugin does not know yet.
        occupied: set[str] = set()
        for attempt in range(1, CLAIM_ATTEMPTS + 1):
            knowledge, state.database = self._knowledge(
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
                    )
                    for hs in hosts
                ),
                key=lambda h: h.name,
            )
            self._log_hosts(core_hosts)
            rule = None
            if model is not None and not extreme:
                rule, state.database = self._model_rule(model, profile, knowledge, state.database)
            context.rule = rule
            try:
                plan = algorithm.plan(request, core_hosts, thresholds, table, rule=rule)
            except algorithm.NoPlacement as refusal:
                LOG.info(
                    "hpc-nova-scheduler: no placement for %d x %s VM(s) of %s: %s",
                    request.count,
                    profile.app_class,
                    profile.app_name or application_id,
                    refusal.reason,
                )
                state.refusal = refusal.reason
                return state
            spares = self._alternates(request, core_hosts, plan, thresholds, table, rule)
            context.knowledge = knowledge.vms
            context.groups = {host.name: host.cpu_group for host in core_hosts}
            conflict = self._claim(state, context, plan, spares)
            if conflict is None and extreme:
                conflict = self._check_dedicated(state, context, plan, spares, knowledge, occupied)
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
    def _alternates(request, core_hosts, plan, thresholds, table, rule) -> tuple[str, ...]:
        if not PLAN_WEIGHER.is_set():
            return ()
        limit = NOVA_CONF.scheduler.max_attempts - 1
        return algorithm.alternates(
            request, core_hosts, plan, thresholds, table, limit=limit, rule=rule
        )

    # -- interference models ---------------------------------------------------

    def _interference_model(self, database) -> InterferenceModel | None:
        """The model ``interference_model`` names; None for seed 003's thresholds.

        A name the registry knows is built once. A learned model (or a name
        the registry does not know) is the fitted model stored under that
        name in the plugin database, read again whenever it changes there;
        while none is stored, a learned kind cannot judge shared hosts and
        refuses them. If the database fails, the last model read stays in use.
        """
        name = CONF.hpc_scheduler.interference_model
        if name == CacheScoreModel.name:
            return None
        if not registry.is_stored_kind(name) and name in registry.names():
            with self._models_lock:
                model = self._models.get(name)
                if model is None:
                    model = self._models[name] = registry.load(name)
                return model
        stamp = None
        if database is not None:
            try:
                stamp = database.stored_model_stamp(name)
            except DATABASE_ERRORS as error:
                LOG.warning("hpc-nova-scheduler: cannot read stored model %s: %s", name, error)
                with self._models_lock:
                    cached = self._models.get(name)
                if cached is not None:
                    return cached
        with self._models_lock:
            cached = self._models.get(name)
            if stamp is None:
                # The fallback copy holds no fitted models: keep the last one read.
                if cached is not None and (database is None or self._degraded(database)):
                    return cached
                if name in registry.names():
                    return registry.load(name)  # not fitted: refuses shared hosts, says why
                raise registry.UnknownModel(
                    f"no interference model {name!r}: not registered "
                    f"({', '.join(registry.names())}) nor stored in the plugin database"
                )
            if cached is not None and self._model_stamps.get(name) == stamp:
                return cached
        try:
            stored = database.stored_model(name)
        except DATABASE_ERRORS as error:
            LOG.warning("hpc-nova-scheduler: cannot read stored model %s: %s", name, error)
            if cached is not None:
                return cached
            raise registry.UnknownModel(f"stored model {name!r} cannot be read: {error}") from None
        if stored is None:  # deleted since its stamp was read
            raise registry.UnknownModel(f"stored model {name!r} is gone")
        try:
            model = registry.from_stored(stored.kind, stored.data)
        except Exception as error:  # a damaged or untrusted stored model must not stop Nova
            raise registry.UnknownModel(f"stored model {name!r} cannot be read: {error}") from None
        LOG.info(
            "hpc-nova-scheduler: interference model %s (%s) read from the plugin database, "
            "made with %s",
            name,
            stored.kind,
            stored.versions,
        )
        with self._models_lock:
            self._models[name] = model
            self._model_stamps[name] = stamp
        return model

    def _model_rule(self, model, profile, knowledge, database):
        """The model's admission, with the profiles of the request and every co-runner.

        Without the plugin database (or its fallback copy) there are no
        profiles: every shared host is refused, and hosts alone stay open.
        """
        names = {vm.app_name for vms in knowledge.vms.values() for vm in vms if vm.app_name}
        if profile.app_name:
            names.add(profile.app_name)
        records = None
        while database is not None and records is None:
            try:
                records = database.list_profiles(sorted(names)) if names else []
            except DATABASE_ERRORS as error:
                database = self._database_failed(profile, error, database)
        profiles = {r.name: r for r in records or ()}
        tolerance = CONF.hpc_scheduler.interference_tolerance
        return ModelRule(model, tolerance, profiles), database

    # -- claims ----------------------------------------------------------------

    def _claim(
        self,
        state: _RequestState,
        context: _PlanContext,
        plan: algorithm.Plan,
        spares: tuple[str, ...],
    ) -> str | None:
        """Claim the plan and its spares; say what conflicts if they cannot be.

        Without a database (``database_failure_policy = degrade``) nothing
        is claimed: the plan stands on what this scheduler alone knows.
        """
        database = state.database
        if database is None:
            return None
        by_key = {host_view.host_key(hs): hs for hs in context.hosts}
        profile = context.request.profile
        claim_id = str(uuid_lib.uuid4())
        adding = dict(plan.vms_per_host())
        claims = []
        for key in [*adding, *spares]:
            hs = by_key[key]
            claims.append(
                db_api.Claim(
                    claim_id=claim_id,
                    instance_uuid=context.instance_uuid or claim_id,
                    application_id=state.application_id,
                    host=hs.host,
                    nodename=hs.nodename or hs.host,
                    cell_uuid=getattr(hs, "cell_uuid", None),
                    vms=adding.get(key, 0),
                    spare=0 if key in adding else 1,
                    app_class=profile.app_class,
                    cache_score=profile.cache_score,
                    app_name=profile.app_name,
                    project_id=context.project_id,
                )
            )
        slots = {**{key: 1 for key in spares}, **adding}
        try:
            conflict = database.claim(
                claims,
                lambda view: context.check(view, plan, slots),
                ttl=CONF.hpc_scheduler.claim_timeout,
            )
        except DATABASE_ERRORS as error:
            state.database = self._database_failed(profile, error, database)
            if state.database is None:
                return None
            return "the plugin database failed; planning again from the fallback copy"
        if conflict is None:
            state.claim_id = claim_id
        return conflict

    def _check_dedicated(self, state, context, plan, spares, knowledge, occupied) -> str | None:
        """Whether Placement shows VMs the plugin does not know on ExtremeHPC hosts.

        Requests left to Nova are not claimed; one that read the database
        before this claim was written may have claimed Placement since.
        """
        by_key = {host_view.host_key(hs): hs for hs in context.hosts}
        keys = [*dict.fromkeys(plan.hosts), *spares]
        state.dedicated = {key: by_key[key] for key in keys}
        state.own_vms = frozenset(
            vm.uuid
            for key in keys
            for vm in knowledge.vms.get(key, ())
            if vm.application_id == state.application_id
        ) | ({context.instance_uuid} if context.instance_uuid else frozenset())
        busy = self._occupancy.foreign(state.dedicated.values(), set(state.own_vms))
        if not busy:
            return None
        occupied.update(busy)
        self._abandon(state)
        state.refusal = None
        state.claim_id = None
        return f"Placement shows other VMs on {sorted(busy)}"

    def _settle(self, database: db_api.Database) -> None:
        """End the claims of requests that Nova has finished building.

        A claim holds its planned VMs until they are recorded, and its spare
        slots until the request's builds have settled: until then Nova's
        conductor may still rebuild a VM on an alternate. A request whose
        instances are all active, failed or gone no longer needs either.
        """
        try:
            database.expire_claims()
            open_claims = database.open_claims()
            if not open_claims:
                return
            asked: dict[str | None, list[str]] = {}
            for cell_uuid, uuids in open_claims.values():
                asked.setdefault(cell_uuid, []).extend(uuids)
            instances, scheduling = look_up(self._source.nova, asked)
            settled = [
                claim_id
                for claim_id, (_, uuids) in open_claims.items()
                if all(uuid not in scheduling and _settled(instances.get(uuid)) for uuid in uuids)
            ]
            if settled:
                database.release_claims(settled)
        except Exception as error:
            # Best effort: an unsettled claim only holds room until it expires.
            LOG.warning("hpc-nova-scheduler: could not settle claims: %s", error)

    def _abandon(self, state: _RequestState) -> None:
        """The request will not be placed as planned: give its room back."""
        state.refusal = state.refusal or "abandoned"
        if state.database is None or state.claim_id is None:
            return
        try:
            state.database.release_claims([state.claim_id])
        except DATABASE_ERRORS as error:
            LOG.warning(
                "hpc-nova-scheduler: could not release claim %s (it expires by itself): %s",
                state.claim_id,
                error,
            )

    @staticmethod
    def _with_stored_profile(
        profile: ApplicationProfile, specs: dict, database: db_api.Database
    ) -> ApplicationProfile:
        """Fill what the flavor leaves out from the profile database."""
        stored = database.get_profile(profile.app_name)
        if stored is None:
            LOG.warning(
                "hpc-nova-scheduler: no profile named %r in the plugin database; using "
                "the flavor's values (%s, cache score %s)",
                profile.app_name,
                profile.app_class,
                profile.cache_score,
            )
            return profile
        return ApplicationProfile(
            app_class=(
                profile.app_class if core_profile.SPEC_APP_CLASS in specs else stored.app_class
            ),
            cache_score=(
                profile.cache_score
                if core_profile.SPEC_CACHE_SCORE in specs
                else stored.cache_score
            ),
            app_name=profile.app_name,
        )

    def _knowledge(
        self, hosts, database, profile, instance_uuid, own, application_id, dedicated_only=False
    ):
        exclude = {instance_uuid} if instance_uuid else set()

        def gather(db):
            if dedicated_only:
                return self._source.dedicated_hosts(
                    hosts, db, exclude=exclude, application_id=application_id
                )
            return self._source.collect(
                hosts, db, exclude=exclude, own=own, application_id=application_id
            )

        while database is not None:
            try:
                knowledge = gather(database)
                self._write_back(database, knowledge)
                break
            except DATABASE_ERRORS as error:
                database = self._database_failed(profile, error, database)
        else:
            knowledge = gather(None)
        if self._degraded(database):
            self._keep_off_unknown(hosts, knowledge, exclude)
        return knowledge, database

    def _keep_off_unknown(self, hosts, knowledge, exclude: set[str]) -> None:
        """Treat hosts where Placement shows unknown consumers as taken.

        Without the plugin database, VMs placed just before it failed are
        known to Placement (claimed when they were scheduled) but to no host
        state until their computes report them. Such a host counts as
        dedicated to an unknown application until then: no HPC plan and no
        request left to Nova goes there.
        """
        consumers = self._occupancy.consumers(hosts)
        if not consumers:
            return
        known = set(exclude)
        for hs in hosts:
            known.update(getattr(hs, "instances", None) or ())
        for vms in knowledge.vms.values():
            known.update(vm.uuid for vm in vms)
        for key, found in consumers.items():
            for consumer in sorted(found - known):
                knowledge.vms.setdefault(key, []).append(
                    RunningVM(
                        uuid=f"placement:{consumer}",
                        app_class=core_profile.AppClass.EXTREME_HPC,
                        application_id=f"placement:{consumer}",
                    )
                )

    @staticmethod
    def _write_back(database: db_api.Database, knowledge) -> None:
        try:
            if knowledge.backfill:
                database.record_running(knowledge.backfill)
            if knowledge.moved:
                database.record_running(knowledge.moved)
            if knowledge.stale:
                database.forget_running(knowledge.stale)
        except DATABASE_ERRORS as error:
            LOG.warning("hpc-nova-scheduler: could not update app_running: %s", error)

    def _interference_table(self, profile, database) -> InterferenceTable:
        records = None
        while database is not None and profile.app_name and records is None:
            try:
                records = database.list_interferences([profile.app_name])
            except DATABASE_ERRORS as error:
                database = self._database_failed(profile, error, database)
        if records is None:
            return InterferenceTable()
        return InterferenceTable.from_records(records, CONF.hpc_scheduler.interference_tolerance)

    # -- every instance: the planned host -----------------------------------

    def _select(self, state: _RequestState, hosts: list, spec_obj: Any) -> list:
        """The hosts this round may choose from.

        A plan fixes how many VMs go on each host, not in which order: each
        round keeps the hosts that still have planned VMs and lets Nova's
        weighers choose among them, with the alternates behind them (see
        ``HpcPlanWeigher``). The next round tells where the previous VM
        went: the host Nova claimed for it gained an instance in Nova's
        host state (Nova also puts it first, which is the fallback); in the
        last round one planned host is left, which tells where the last goes.
        """
        if state.refusal is not None:
            return []
        if state.plan is None:
            if not state.avoid:
                return hosts
            return [hs for hs in hosts if host_view.host_key(hs) not in state.avoid]
        instance_uuid = spec_obj.instance_uuid
        if instance_uuid in state.answers:
            # Nova filters the last instance again when it gathers alternates.
            return [hs for hs in hosts if host_view.host_key(hs) in state.answers[instance_uuid]]
        if state.pending is not None:
            went = self._claimed_host(state, hosts)
            if went is None or not self._took(state, went, spec_obj):
                self._abandon(state)
                return []
        kept = frozenset(key for key, count in state.remaining.items() if count > 0)
        state.planned_now = kept
        offered = kept | frozenset(state.spares)
        state.answers[instance_uuid] = offered
        chosen = [hs for hs in hosts if host_view.host_key(hs) in offered]
        state.pending = instance_uuid
        if sum(state.remaining.values()) == 1:
            planned = [hs for hs in chosen if host_view.host_key(hs) in kept]
            if not planned:
                LOG.warning(
                    "hpc-nova-scheduler: planned host %s no longer passes Nova's "
                    "filters; the request fails rather than being split",
                    sorted(kept),
                )
                state.pending = None
                self._abandon(state)
                return []
            if state.dedicated and len(state.answers) > 1:
                # Before the last VM: a request that read the database before
                # this plan was claimed may have claimed Placement meanwhile.
                busy = self._occupancy.foreign(
                    [hs for key, hs in state.dedicated.items() if key not in state.spares],
                    set(state.own_vms) | set(state.answers),
                )
                if busy:
                    LOG.warning(
                        "hpc-nova-scheduler: ExtremeHPC hosts %s of %s now run other VMs; "
                        "the request fails rather than sharing them",
                        sorted(busy),
                        state.application_id,
                    )
                    state.pending = None
                    self._abandon(state)
                    return []
            self._took(state, planned[0], spec_obj)
        else:
            state.seen = {host_view.host_key(hs): _instance_count(hs) for hs in chosen}
        return chosen

    @staticmethod
    def _claimed_host(state: _RequestState, hosts: list) -> Any:
        """The host Nova claimed for the pending instance, among ``hosts``.

        Nova consumes the claimed host's state, which counts one more
        instance. When Placement turned down the first host, Nova claimed a
        later one, so the first is not enough. Other requests of this
        scheduler may consume the same host states meanwhile; the first
        host, when it gained, and otherwise the first planned host that
        gained, is the one.
        """
        if not hosts:
            return None
        gained = [
            hs
            for hs in hosts
            if _instance_count(hs) is not None
            and state.seen.get(host_view.host_key(hs)) is not None
            and _instance_count(hs) > state.seen[host_view.host_key(hs)]
        ]
        if not gained or gained[0] is hosts[0]:
            return hosts[0]
        for hs in gained:
            if state.remaining.get(host_view.host_key(hs), 0) > 0:
                return hs
        return gained[0]

    def _took(self, state: _RequestState, host_state: Any, spec_obj: Any) -> bool:
        """The pending instance went to ``host_state``: count and record it."""
        key = host_view.host_key(host_state)
        instance_uuid, state.pending = state.pending, None
        if state.remaining.get(key, 0) <= 0:
            LOG.error(
                "hpc-nova-scheduler: %s went to %s, which the plan of %s does not "
                "have room on; refusing the rest of the request",
                instance_uuid,
                key,
                state.application_id,
            )
            state.refusal = "off plan"
            return False
        state.remaining[key] -= 1
        self._record(state, host_state, instance_uuid, spec_obj)
        return True

    def _record(
        self, state: _RequestState, host_state: Any, instance_uuid: str, spec_obj: Any
    ) -> None:
        if state.database is None or not instance_uuid:
            return
        profile = state.profile
        vm = db_api.RunningVM(
            instance_uuid=instance_uuid,
            host=host_state.host,
            nodename=host_state.nodename,
            app_class=profile.app_class,
            cache_score=profile.cache_score,
            app_name=profile.app_name,
            request_id=state.application_id,
            project_id=getattr(spec_obj, "project_id", None),
        )
        try:
            if state.claim_id is None:
                state.database.record_running([vm])
            else:
                state.database.record_placed(vm, state.claim_id)
        except DATABASE_ERRORS as error:
            copy = None if self._fallback.owns(state.database) else self._fallback.database()
            LOG.warning(
                "hpc-nova-scheduler: could not record %s in app_running (%s)%s",
                instance_uuid,
                error,
                "; recording it in the fallback copy" if copy is not None else "",
            )
            if copy is None:
                return
            try:
                copy.record_running([vm])
            except DATABASE_ERRORS as again:
                LOG.warning(
                    "hpc-nova-scheduler: nor in the fallback copy (%s); the sweep will "
                    "restore it from Nova",
                    again,
                )


def _instance_count(host_state: Any) -> int | None:
    count = getattr(host_state, "num_instances", None)
    return count if isinstance(count, int) else None
