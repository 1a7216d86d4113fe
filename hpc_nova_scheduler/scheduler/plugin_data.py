"""What the plugin database, Placement and Nova tell of one request's hosts.

The filter reads, for a request it plans: the record of an instance being
moved, the application's stored profile, the interference table, and the
co-runners on every candidate host. Each read goes through the database
failure policy (:class:`~hpc_nova_scheduler.scheduler.fallback.FailurePolicy`),
so a failing database hands the request over to the fallback copy, or to
Nova's data alone, in one place.
"""

from __future__ import annotations

from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.criteria import InterferenceTable
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler.corunners import CoRunnerSource
from hpc_nova_scheduler.scheduler.fallback import DATABASE_ERRORS, FailurePolicy
from hpc_nova_scheduler.scheduler.occupancy import PlacementOccupancy

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF


class PluginData:
    """Reads for one request, each under the database failure policy."""

    def __init__(
        self, source: CoRunnerSource, occupancy: PlacementOccupancy, policy: FailurePolicy
    ) -> None:
        self.source = source
        self._occupancy = occupancy
        self._policy = policy

    def profile(
        self, profile: ApplicationProfile, specs: dict, database: db_api.Database | None
    ) -> tuple[ApplicationProfile, db_api.Database | None]:
        """The request's profile with what the flavor leaves out filled from the database."""
        if database is None or not profile.app_name:
            return profile, database
        try:
            return self._with_stored_profile(profile, specs, database), database
        except DATABASE_ERRORS as error:
            database = self._policy.failed(profile, error, database)
        if database is not None:
            try:
                return self._with_stored_profile(profile, specs, database), database
            except DATABASE_ERRORS as again:
                database = self._policy.failed(profile, again, database)
        return profile, database

    @staticmethod
    def existing_record(
        database: db_api.Database | None, instance_uuid: str | None
    ) -> db_api.RunningRecord | None:
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

    def knowledge(
        self,
        hosts,
        database,
        profile,
        instance_uuid,
        own,
        application_id,
        dedicated_only=False,
        scores=None,
    ):
        exclude = {instance_uuid} if instance_uuid else set()

        def gather(db):
            if dedicated_only:
                return self.source.dedicated_hosts(
                    hosts, db, exclude=exclude, application_id=application_id
                )
            return self.source.collect(
                hosts,
                db,
                exclude=exclude,
                own=own,
                application_id=application_id,
                # The measurements are the plugin database's: without it
                # (the fallback copy, Nova alone) every score is declared.
                scores=None if self._policy.degraded(db) else scores,
            )

        while database is not None:
            try:
                knowledge = gather(database)
                self._write_back(database, knowledge)
                break
            except DATABASE_ERRORS as error:
                database = self._policy.failed(profile, error, database)
        else:
            knowledge = gather(None)
        if self._policy.degraded(database):
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

    def interference_table(self, profile, database) -> InterferenceTable:
        records = None
        while database is not None and profile.app_name and records is None:
            try:
                records = database.list_interferences([profile.app_name])
            except DATABASE_ERRORS as error:
                database = self._policy.failed(profile, error, database)
        if records is None:
            return InterferenceTable()
        return InterferenceTable.from_records(records, CONF.hpc_scheduler.interference_tolerance)
