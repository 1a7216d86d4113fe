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
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

from nova.scheduler import filters
from oslo_db import exception as db_exc
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import host_view
from hpc_nova_scheduler.scheduler.corunners import CoRunnerSource

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF

DATABASE_ERRORS = (db_api.DatabaseUnavailable, db_exc.DBError, sa_exc.SQLAlchemyError)


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


#: The state of every request being scheduled. Nova hands the filter the
#: same RequestSpec object for every instance of a request, and drops it when
#: the request is done.
REQUESTS: weakref.WeakKeyDictionary[Any, _RequestState] = weakref.WeakKeyDictionary()


def _group(spec_obj: Any) -> Any:
    return spec_obj.instance_group if spec_obj.obj_attr_is_set("instance_group") else None


def _hints(spec_obj: Any) -> dict:
    if spec_obj.obj_attr_is_set("scheduler_hints") and spec_obj.scheduler_hints:
        return dict(spec_obj.scheduler_hints)
    return {}


class HpcPlacementFilter(filters.BaseHostFilter):
    """Places the k VMs of an HPC application as one unit (seed 003)."""

    RUN_ON_REBUILD = False
    run_filter_once_per_request = False

    def __init__(self) -> None:
        super().__init__()
        self._source = CoRunnerSource()
        self._database: db_api.Database | None = None
        self._database_url: str | None = None

    # -- plumbing ------------------------------------------------------------

    def _db(self) -> db_api.Database:
        group = CONF.hpc_scheduler
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

    def _database_failed(self, profile: ApplicationProfile, error: Exception) -> None:
        policy = CONF.hpc_scheduler.database_failure_policy
        if profile.is_hpc and policy == hpc_conf.REJECT:
            LOG.error(
                "hpc-nova-scheduler: plugin database unavailable (%s); refusing this "
                "%s request (database_failure_policy = reject)",
                error,
                profile.app_class,
            )
            raise DatabaseDown(str(error)) from error
        LOG.warning(
            "hpc-nova-scheduler: plugin database unavailable (%s); placing this %s "
            "request from Nova's own data only",
            error,
            profile.app_class,
        )
        return None

    # -- Nova's entry point --------------------------------------------------

    def filter_all(self, filter_obj_list, spec_obj):
        hosts = list(filter_obj_list)
        state = REQUESTS.get(spec_obj)
        try:
            if state is None:
                state = self._start(hosts, spec_obj)
                REQUESTS[spec_obj] = state
            return self._select(state, hosts, spec_obj)
        except DatabaseDown:
            REQUESTS[spec_obj] = _RequestState(ApplicationProfile(), "", refusal="database")
            return []
        except Exception:
            # A fault of the plugin must not take nova-scheduler down; an HPC
            # request is refused rather than placed blind.
            hpc = state is not None and state.profile.is_hpc
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
        if database is not None and profile.app_name and not plain:
            try:
                profile = self._with_stored_profile(profile, specs, database)
            except DATABASE_ERRORS as error:
                database = self._database_failed(profile, error)
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
            # Left to Nova: only another application's dedicated hosts are off limits.
            knowledge = self._knowledge(
                hosts, database, profile, instance_uuid, own, application_id, dedicated_only=True
            )
            state.avoid = frozenset(knowledge.vms)
            return state
        knowledge = self._knowledge(hosts, database, profile, instance_uuid, own, application_id)
        core_hosts = sorted(
            (host_view.to_host(hs, knowledge.vms[host_view.host_key(hs)]) for hs in hosts),
            key=lambda h: h.name,
        )
        if LOG.isEnabledFor(logging.DEBUG):
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
        table = self._interference_table(profile, database)
        group_conf = CONF.hpc_scheduler
        request = algorithm.PlacementRequest(
            profile=profile,
            demand=host_view.demand(spec_obj),
            # Nova keeps the original request's count on the spec of a move.
            count=1 if moving else max(1, spec_obj.num_instances),
            application_id=application_id,
        )
        try:
            state.plan = algorithm.plan(
                request,
                core_hosts,
                Thresholds(group_conf.cache_threshold, group_conf.sync_cache_threshold),
                table,
            )
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
        state.remaining = state.plan.vms_per_host()
        LOG.info(
            "hpc-nova-scheduler: %s %s: %s",
            profile.app_class,
            profile.app_name or application_id,
            state.plan.vms_per_host(),
        )
        return state

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

        if database is not None:
            try:
                knowledge = gather(database)
                self._write_back(database, knowledge)
                return knowledge
            except DATABASE_ERRORS as error:
                self._database_failed(profile, error)
        return gather(None)

    @staticmethod
    def _write_back(database: db_api.Database, knowledge) -> None:
        try:
            if knowledge.backfill:
                database.record_running(knowledge.backfill)
            if knowledge.stale:
                database.forget_running(knowledge.stale)
        except DATABASE_ERRORS as error:
            LOG.warning("hpc-nova-scheduler: could not update app_running: %s", error)

    def _interference_table(self, profile, database) -> InterferenceTable:
        if database is None or not profile.app_name:
            return InterferenceTable()
        try:
            records = database.list_interferences([profile.app_name])
        except DATABASE_ERRORS as error:
            self._database_failed(profile, error)
            return InterferenceTable()
        return InterferenceTable.from_records(records, CONF.hpc_scheduler.interference_tolerance)

    # -- every instance: the planned host -----------------------------------

    def _select(self, state: _RequestState, hosts: list, spec_obj: Any) -> list:
        """The hosts this round may choose from.

        A plan fixes how many VMs go on each host, not in which order: each
        round keeps the hosts that still have planned VMs and lets Nova's
        weighers choose among them. Nova passes the next round the hosts it
        kept with its choice first, which tells where the previous VM went;
        in the last round one host is left, which tells where the last goes.
        """
        if state.refusal is not None:
            return []
        if state.plan is None:
            if not state.avoid:
                return hosts
            return [hs for hs in hosts if host_view.host_key(hs) not in state.avoid]
        instance_uuid = spec_obj.instance_uuid
        if instance_uuid in state.answers:
            return [hs for hs in hosts if host_view.host_key(hs) in state.answers[instance_uuid]]
        if state.pending is not None and (not hosts or not self._took(state, hosts[0], spec_obj)):
            return []
        kept = frozenset(key for key, count in state.remaining.items() if count > 0)
        state.answers[instance_uuid] = kept
        chosen = [hs for hs in hosts if host_view.host_key(hs) in kept]
        if sum(state.remaining.values()) == 1:
            if not chosen:
                LOG.warning(
                    "hpc-nova-scheduler: planned host %s no longer passes Nova's "
                    "filters; the request fails rather than being split",
                    sorted(kept),
                )
                return []
            state.pending = instance_uuid
            self._took(state, chosen[0], spec_obj)
        else:
            state.pending = instance_uuid
        return chosen

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

    @staticmethod
    def _record(state: _RequestState, host_state: Any, instance_uuid: str, spec_obj: Any) -> None:
        if state.database is None or not instance_uuid:
            return
        profile = state.profile
        try:
            state.database.record_running(
                [
                    db_api.RunningVM(
                        instance_uuid=instance_uuid,
                        host=host_state.host,
                        nodename=host_state.nodename,
                        app_class=profile.app_class,
                        cache_score=profile.cache_score,
                        app_name=profile.app_name,
                        request_id=state.application_id,
                        project_id=getattr(spec_obj, "project_id", None),
                    )
                ]
            )
        except DATABASE_ERRORS as error:
            LOG.warning(
                "hpc-nova-scheduler: could not record %s in app_running: %s", instance_uuid, error
            )
