"""The ``reclaim`` work of the agent: request reclaims after an allocator run, act on them.

Only the holder of the fair-share lease does either, so two agents never
act on one reclaim (and :meth:`update_reclaim`'s expected state guards the
rest).

* :meth:`Reclaimer.request` runs after each allocator run:
  :func:`.live_reclaim.plan` chooses the victims, the database records
  them as requested, and each victim's server gets the metadata key
  ``hpc:reclaim_at`` (when, and why) so that its tenant sees it coming.
* :meth:`Reclaimer.act` runs every few seconds: a requested reclaim whose
  grace has passed is acted on through Nova's API (stop, shelve-offload or
  delete) with the agent's own credentials. Before acting it checks that
  the victim is still a loan and, when borrowed, still beyond its
  project's entitlement by its cores; else the reclaim is cancelled. A
  call that fails is tried again at the next look, up to
  ``fairshare_reclaim_attempts`` times, then the reclaim is failed and
  reported. Acted reclaims are followed: a shelved victim is offloaded, a
  victim its tenant starts or unshelves again counts again (``restarted``).

Nova records each stop, shelve and delete as an instance action of the
agent's user (``openstack server event list``), next to the metadata key
that says why.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.fairshare import live_reclaim
from hpc_nova_scheduler.scheduler import domains as topology_domains

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF

#: The server metadata key that tells a victim's tenant when and why.
METADATA_KEY = "hpc:reclaim_at"
#: Nova keeps metadata values to 255 characters.
METADATA_LENGTH = 255
#: Seconds between two looks at reclaims to act on: what a reclaim may wait
#: beyond its grace (the look reads one indexed row set).
CHECK_SECONDS = 1.0
#: Ended reclaims are kept this long for ``fairshare reclaim list``.
KEPT = datetime.timedelta(days=7)


def metadata_value(at: datetime.datetime, mode: str, reason: str) -> str:
    """``<UTC time>; <mode>; <reason>``, cut to what Nova keeps."""
    value = f"{at:%Y-%m-%dT%H:%M:%SZ}; {mode}; {reason}"
    return value[:METADATA_LENGTH]


def connect(conf=CONF) -> Any:
    """openstacksdk on Nova's API with ``[hpc_scheduler_agent]``'s credentials."""
    import openstack
    from keystoneauth1 import loading as ks_loading

    hpc_conf.register_agent_opts(conf)
    group = hpc_conf.AGENT_GROUP_NAME
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(conf, group, auth=auth)
    options = conf[group]
    interfaces = options.valid_interfaces or ["public"]
    return openstack.connection.Connection(
        session=session,
        compute_endpoint_override=options.endpoint_override,
        region_name=options.region_name,
        interface=interfaces[0],
    )


class Reclaimer:
    """Reclaims of one agent: requested after allocator runs, acted on while it holds the lease."""

    def __init__(
        self,
        database: Callable[[], db_api.Database],
        tags: Callable[[], Any],
        holder: str,
        connection: Callable[[], Any] = connect,
    ) -> None:
        self._database = database
        self._tags = tags
        self._holder = holder
        self._connect = connection
        self._connection: Any = None

    def connection(self) -> Any:
        if self._connection is None:
            self._connection = self._connect()
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None

    # -- after an allocator run ------------------------------------------------

    def request(
        self, options: hpc_conf.FairnessSettings, now: datetime.datetime | None = None
    ) -> list[loans_db.ReclaimRecord]:
        """Choose victims for the generation in force, record them and mark their servers."""
        if options.reclaim == hpc_conf.RECLAIM_OFF:
            return []
        database = self._database()
        generation = database.latest_generation()
        if generation is None:
            return []
        now = now or timeutils.utcnow()
        database.prune_loans()
        # Once an allocator run, not at every look of the reclaim task.
        database.prune_reclaims(now - KEPT)
        found = live_reclaim.plan(
            database,
            generation,
            options.interval,
            now,
            domains_of=topology_domains.domains_of_hosts(self._tags()),
        )
        for unserved in found.unserved:
            LOG.info(
                "hpc-scheduler-agent: reclaim cannot serve %s on %s: %s",
                unserved.project,
                unserved.platform,
                unserved.reason,
            )
        written = database.request_reclaims(
            live_reclaim.new_reclaims(found.reclaims),
            options.reclaim,
            options.reclaim_grace,
            now,
        )
        for record in written:
            LOG.warning(
                "hpc-scheduler-agent: reclaim %s requested: %s in %s s (%s)",
                record.id,
                options.reclaim,
                options.reclaim_grace,
                record.reason,
            )
            self._mark(database, record, now)
        return written

    def _mark(
        self, database: db_api.Database, record: loans_db.ReclaimRecord, now: datetime.datetime
    ) -> None:
        """Tell the tenant: ``hpc:reclaim_at`` on the victim's server, tried at every look.

        A victim may still be building (the youngest go first), and Nova
        refuses its metadata until it is not: the mark is tried again at
        each look during the grace, and at the act.
        """
        value = metadata_value(record.act_after, record.mode, record.reason)
        try:
            self.connection().compute.set_server_metadata(
                record.instance_uuid, **{METADATA_KEY: value}
            )
        except Exception as error:
            LOG.debug(
                "hpc-scheduler-agent: cannot mark server %s for reclaim %s yet: %s",
                record.instance_uuid,
                record.id,
                error,
            )
            return
        database.mark_reclaim(record.id, now)

    # -- every few seconds ------------------------------------------------------

    def holds_lease(self, database: db_api.Database, now: datetime.datetime) -> bool:
        lease = database.lease()
        return lease is not None and lease.holder == self._holder and lease.expires_at > now

    def act(
        self, options: hpc_conf.FairnessSettings, now: datetime.datetime | None = None
    ) -> list[tuple[int, str]]:
        """Act on due reclaims and follow acted ones; (reclaim id, new state) of each change."""
        database = self._database()
        now = now or timeutils.utcnow()
        if not self.holds_lease(database, now):
            return []
        changed: list[tuple[int, str]] = []
        # Loans and cores in use are read only when a reclaim is due: most
        # looks (every second, through a whole grace) find none.
        loans: dict[str, loans_db.LoanRecord] | None = None
        overage: dict[tuple[str, str], int] = {}
        for record in sorted(
            database.reclaims(loans_db.OPEN_STATES), key=lambda r: (r.act_after, r.id)
        ):
            if record.state == loans_db.ACTED:
                state = self._follow(database, record)
            elif record.act_after <= timeutils.normalize_time(now):
                if loans is None:
                    loans = {loan.instance_uuid: loan for loan in database.loans()}
                    overage = self._overage(database)
                state = self._act(database, options, record, loans, overage, now)
            else:
                if record.marked_at is None:
                    self._mark(database, record, now)
                continue
            if state is not None:
                changed.append((record.id, state))
        return changed

    @staticmethod
    def _overage(database: db_api.Database) -> dict[tuple[str, str], int]:
        """(project, platform) -> cores beyond its entitlement now."""
        generation = database.latest_generation()
        if generation is None:
            return {}
        cloud = live_reclaim.cloud_of(generation)
        use: dict[tuple[str, str], int] = {}
        for project, by_key in database.cores_in_use().items():
            for key, cores in by_key.items():
                platform = cloud.platform_of.get(key)
                if platform is not None:
                    use[(project, platform)] = use.get((project, platform), 0) + cores
        return {
            (project, platform): cores - generation.allocation.get(project, {}).get(platform, 0)
            for (project, platform), cores in use.items()
        }

    def _act(
        self,
        database: db_api.Database,
        options: hpc_conf.FairnessSettings,
        record: loans_db.ReclaimRecord,
        loans: dict[str, loans_db.LoanRecord],
        overage: dict[tuple[str, str], int],
        now: datetime.datetime,
    ) -> str | None:
        loan = loans.get(record.instance_uuid)
        why_not = None
        if loan is None:
            why_not = "the VM is gone or no longer a loan"
        elif loan.kind == db_api.BORROWED:
            over = overage.get((loan.project, record.platform), 0)
            if over < loan.cores:
                why_not = (
                    f"{loan.project} is no longer {loan.cores} cores beyond its entitlement "
                    f"on {record.platform} ({over} now)"
                )
        if why_not is not None:
            database.update_reclaim(
                record.id, state=loans_db.CANCELLED, expected=loans_db.REQUESTED, error=why_not
            )
            LOG.info("hpc-scheduler-agent: reclaim %s cancelled: %s", record.id, why_not)
            return loans_db.CANCELLED
        attempts = record.attempts + 1
        try:
            done = self._call(record)
        except Exception as error:
            text = f"{type(error).__name__}: {' '.join(str(error).split())}"[:2000]
            if attempts >= options.reclaim_attempts:
                database.update_reclaim(
                    record.id,
                    state=loans_db.FAILED,
                    expected=loans_db.REQUESTED,
                    attempts=attempts,
                    error=text,
                )
                LOG.error(
                    "hpc-scheduler-agent: reclaim %s of server %s failed after %d attempts: %s",
                    record.id,
                    record.instance_uuid,
                    attempts,
                    text,
                )
                return loans_db.FAILED
            database.update_reclaim(
                record.id,
                state=loans_db.REQUESTED,
                expected=loans_db.REQUESTED,
                attempts=attempts,
                error=text,
            )
            return None
        if not done:
            database.update_reclaim(
                record.id,
                state=loans_db.CANCELLED,
                expected=loans_db.REQUESTED,
                attempts=attempts,
                error="the server is gone",
            )
            return loans_db.CANCELLED
        # Stopped, shelved or deleted, the victim runs nothing: fair share stops
        # counting it now, not when the sweep next sees Nova's view.
        database.set_stopped(record.instance_uuid, True)
        if loan is not None and loan.kind == db_api.BORROWED:
            key = (loan.project, record.platform)
            overage[key] = overage.get(key, 0) - loan.cores
        database.update_reclaim(
            record.id,
            state=loans_db.ACTED,
            expected=loans_db.REQUESTED,
            acted_at=now,
            attempts=attempts,
        )
        LOG.warning(
            "hpc-scheduler-agent: reclaim %s: server %s %s (%s)",
            record.id,
            record.instance_uuid,
            {"stop": "stopped", "shelve": "shelved", "delete": "deleted"}[record.mode],
            record.reason,
        )
        return loans_db.ACTED

    def _call(self, record: loans_db.ReclaimRecord) -> bool:
        """Mark and act on the victim through Nova's API; False when it is gone."""
        from openstack import exceptions

        compute = self.connection().compute
        try:
            server = compute.get_server(record.instance_uuid)
        except exceptions.NotFoundException:
            return False
        compute.set_server_metadata(
            record.instance_uuid,
            **{METADATA_KEY: metadata_value(record.act_after, record.mode, record.reason)},
        )
        status = (server.status or "").upper()
        if record.mode == hpc_conf.RECLAIM_STOP:
            if status != "SHUTOFF":
                compute.stop_server(record.instance_uuid)
        elif record.mode == hpc_conf.RECLAIM_SHELVE:
            if status == "SHELVED":
                compute.shelve_offload_server(record.instance_uuid)
            elif status != "SHELVED_OFFLOADED":
                compute.shelve_server(record.instance_uuid)
        else:
            compute.delete_server(record.instance_uuid, ignore_missing=True)
        return True

    def _follow(self, database: db_api.Database, record: loans_db.ReclaimRecord) -> str | None:
        """An acted reclaim: offload a shelved victim; notice one its tenant started again."""
        if record.mode == hpc_conf.RECLAIM_DELETE:
            return None
        from openstack import exceptions

        try:
            server = self.connection().compute.get_server(record.instance_uuid)
        except exceptions.NotFoundException:
            return None
        except Exception as error:
            LOG.debug("hpc-scheduler-agent: cannot follow reclaim %s: %s", record.id, error)
            return None
        status = (server.status or "").upper()
        if record.mode == hpc_conf.RECLAIM_SHELVE and status == "SHELVED":
            try:
                self.connection().compute.shelve_offload_server(record.instance_uuid)
            except Exception as error:
                LOG.debug("hpc-scheduler-agent: cannot offload %s: %s", record.instance_uuid, error)
            return None
        if status == "ACTIVE":
            database.set_stopped(record.instance_uuid, False)
            database.update_reclaim(
                record.id,
                state=loans_db.RESTARTED,
                expected=loans_db.ACTED,
                error="started again by its tenant",
            )
            LOG.info(
                "hpc-scheduler-agent: reclaim %s: server %s was started again; it counts again",
                record.id,
                record.instance_uuid,
            )
            return loans_db.RESTARTED
        return None
