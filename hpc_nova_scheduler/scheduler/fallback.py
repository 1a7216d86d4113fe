"""A local copy of the plugin database for the time it is down.

Under ``database_failure_policy = degrade`` HPC requests go on being placed
while the plugin database is unreachable. Placing from Nova's data alone is
not safe with several scheduler workers: each would plan without seeing the
others' placements until their computes report them. So the workers of one
host share a small SQLite database (``[hpc_scheduler] fallback_connection``)
with the plugin's schema:

- every sweep of ``hpc-scheduler-agent`` on this host (which shares the
  scheduler's nova.conf, so this file) copies the profiles, the
  interference table and the fair-share entitlements into it, so that
  stored profiles, harmful pairs and entitlements still count
  (entitlements until they turn stale);
- while the database is down, claims and ``app_running`` rows are written
  to the copy, which serialises the workers' plans as the database does;
- once the database answers again, the copy's rows and live claims are
  handed over to it (:meth:`Database.hand_over`), before the next request
  of this process plans from the database (:meth:`FailurePolicy.hand_over`,
  so without an agent too), and by the agent's sweep.

Co-runners placed before the outage that no compute has reported yet are
in neither: the filter keeps off hosts where Placement shows such
consumers while it works from the copy.

:class:`FailurePolicy` is what the filter does when a call to the plugin
database fails: ``database_failure_policy = reject`` refuses HPC requests,
``degrade`` goes on with the copy, or with Nova's data alone.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.parse
from collections.abc import Callable

from nova import conf as nova_conf
from oslo_concurrency import lockutils
from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF
NOVA_CONF = nova_conf.CONF
FILE_NAME = "hpc_scheduler_fallback.sqlite"
#: Seconds before a copy that could not be opened is tried again.
RETRY_OPEN = 60.0


def configured_url() -> str | None:
    """The copy's URL from the options; None when it is turned off."""
    url = CONF.hpc_scheduler.fallback_connection
    if url is None:
        return "sqlite:///" + os.path.join(os.path.abspath(NOVA_CONF.state_path), FILE_NAME)
    return url or None


def _sqlite_path(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme.startswith("sqlite") or not parts.path.strip("/"):
        return None
    # sqlite:///relative/file and sqlite:////absolute/file
    return parts.path[1:]


class FallbackStore:
    """The copy, opened and brought to the current schema on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._database: db_api.Database | None = None
        self._url: str | None = None
        self._warned = False
        #: When opening the copy last failed; it is not tried again at once.
        self._failed_at: float | None = None
        #: The copy's file modification time when it was last found empty.
        self._clean_mtime: float | None = None

    def owns(self, database: db_api.Database | None) -> bool:
        return database is not None and database is self._database

    def database(self) -> db_api.Database | None:
        """The copy, or None where there is none or it cannot be opened."""
        url = configured_url()
        if url is None:
            return None
        with self._lock:
            if self._database is not None and self._url == url:
                return self._database
            if self._failed_at is not None and time.monotonic() - self._failed_at < RETRY_OPEN:
                return None
            if self._database is not None:
                self._database.dispose()
                self._database = None
            try:
                database = db_api.Database(url)
                path = _sqlite_path(url)
                if path is not None:
                    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                    # Workers open the copy at the same moment: one migrates.
                    with lockutils.InterProcessLock(path + ".lock"):
                        database.sync()
                else:
                    database.sync()
            except Exception as error:
                self._failed_at = time.monotonic()
                if not self._warned:
                    self._warned = True
                    LOG.error(
                        "hpc-nova-scheduler: cannot open the fallback copy %s (%s); while "
                        "the plugin database is down, placement uses Nova's data alone",
                        url,
                        error,
                    )
                return None
            self._database, self._url = database, url
            self._warned, self._failed_at = False, None
            return database

    def _mtime(self) -> float | None:
        path = _sqlite_path(self._url or "")
        if path is None:
            return None
        try:
            return max(
                os.stat(name).st_mtime
                for name in (path, path + "-wal", path + "-journal")
                if os.path.exists(name)
            )
        except (OSError, ValueError):
            return None

    def hand_over(self, main: db_api.Database, *, force: bool = False) -> tuple[int, int]:
        """Give the copy's placements to the database; how many rows and claims.

        Cheap when nothing was written to the copy since it was last found
        empty (one ``stat`` of its file), so every request may call it; the
        agent's sweep forces a look.
        Database errors of ``main`` propagate, and the copy keeps everything.
        """
        fallback = self.database()
        if fallback is None:
            return 0, 0
        mtime = self._mtime()
        if not force and mtime is not None and mtime == self._clean_mtime:
            return 0, 0
        ttl = CONF.hpc_scheduler.claim_timeout
        failed: list[Exception] = []
        added = [0, 0]

        def adopt(rows: list, claims: list) -> None:
            try:
                added[:] = main.adopt(rows, claims, ttl=ttl)
            except Exception as error:
                failed.append(error)
                raise

        try:
            if not fallback.has_placements():
                self._clean_mtime = mtime
                return 0, 0
            rows, claims = fallback.hand_over(adopt)
        except Exception as error:
            if failed:
                raise failed[0] from None
            # The copy keeps its rows; the next request or sweep tries again.
            LOG.warning("hpc-nova-scheduler: cannot read the fallback copy: %s", error)
            return 0, 0
        if rows or claims:
            LOG.info(
                "hpc-nova-scheduler: the plugin database answers again; handed over the "
                "fallback copy's %d app_running row(s) and %d claim(s), of which %d and %d "
                "were new to it",
                rows,
                claims,
                *added,
            )
        return rows, claims

    def refresh(self, main: db_api.Database) -> None:
        """Copy the profiles, the interference table and the fair-share entitlements.

        The entitlements are the shares and the latest generation: while the
        database is down, governed requests are held to them, until they
        turn stale (:mod:`.fairness`).
        """
        fallback = self.database()
        if fallback is None:
            return
        fallback.replace_reference(main.list_profiles(), main.list_interferences())
        fallback.replace_entitlements(main.shares(), main.latest_generation())


FALLBACK = FallbackStore()

#: What a failed call to the plugin database raises.
DATABASE_ERRORS = db_api.ERRORS


class DatabaseDown(Exception):
    """The plugin database failed and the policy says not to go on."""


class FailurePolicy:
    """``database_failure_policy``: what a request goes on with when the database fails."""

    def __init__(self, store: FallbackStore) -> None:
        self.store = store

    def connect(
        self, profile: ApplicationProfile, connect: Callable[[], db_api.Database]
    ) -> db_api.Database | None:
        """The database ``connect`` opens, or None where the policy allows going on without it."""
        try:
            return connect()
        except DATABASE_ERRORS as error:
            return self.failed(profile, error)

    def failed(
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
        copy = None if self.store.owns(failed) else self.store.database()
        LOG.warning(
            "hpc-nova-scheduler: %s unavailable (%s); placing this %s request from %s",
            "the fallback copy" if self.store.owns(failed) else "plugin database",
            error,
            profile.app_class,
            "the fallback copy and Nova's data" if copy is not None else "Nova's own data only",
        )
        return copy

    def degraded(self, database: db_api.Database | None) -> bool:
        """Whether the request goes on without the plugin database itself."""
        return database is None or self.store.owns(database)

    def hand_over(
        self, database: db_api.Database, profile: ApplicationProfile
    ) -> db_api.Database | None:
        """The database, once what the copy holds from an outage is in it."""
        try:
            self.store.hand_over(database)
        except DATABASE_ERRORS as error:
            return self.failed(profile, error, database)
        return database
