"""A thread in each nova-scheduler worker that keeps ``app_running`` true.

The filter corrects the records of the hosts it looks at while it places
VMs; servers deleted or moved in between are corrected every
``[hpc_scheduler] reconcile_interval`` seconds by this sweep, with the same
repair as ``hpc-nova-scheduler reconcile``. The thread starts with the
first request a worker schedules (workers are forked after the filter is
made, and threads do not survive a fork).

Each sweep also keeps the fallback copy
(:mod:`hpc_nova_scheduler.scheduler.fallback`) ready for an outage of the
plugin database, and hands what it holds from the last one over to the
database before repairing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import reconcile
from hpc_nova_scheduler.scheduler.fallback import FallbackStore

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF


class Sweeper:
    def __init__(
        self,
        database: Callable[[], db_api.Database],
        fallback: FallbackStore | None = None,
    ) -> None:
        self._database = database
        self._fallback = fallback
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid: int | None = None

    def ensure_started(self) -> None:
        if CONF.hpc_scheduler.reconcile_interval <= 0:
            return
        if self._running():
            return
        with self._lock:
            if self._running():
                return
            self._pid = os.getpid()
            self._thread = threading.Thread(
                target=self._loop,
                args=(CONF.hpc_scheduler.connection,),
                name="hpc-app-running-sweeper",
                daemon=True,
            )
            self._thread.start()

    def _running(self) -> bool:
        return self._pid == os.getpid() and self._thread is not None and self._thread.is_alive()

    def _loop(self, connection: str | None) -> None:
        # The first sweep at once: a worker that starts during an outage of
        # the database finds the copy as ready as it can be.
        first = True
        while True:
            interval = CONF.hpc_scheduler.reconcile_interval
            if interval <= 0:
                return
            if not first:
                time.sleep(interval)
            first = False
            if CONF.hpc_scheduler.connection != connection:
                # Another database now: the next request starts a new sweeper.
                return
            try:
                self.sweep()
            except Exception as error:
                # The next sweep tries again; scheduling goes on meanwhile.
                LOG.warning("hpc-nova-scheduler: sweeping app_running failed: %s", error)

    def sweep(self) -> reconcile.Changes:
        database = self._database()
        if self._fallback is not None:
            self._fallback.hand_over(database, force=True)
        changes = reconcile.plan(database.list_running(), reconcile.NovaView())
        if changes:
            reconcile.apply(database, changes)
            for line in changes.describe():
                LOG.info("hpc-nova-scheduler: app_running %s", line)
        if self._fallback is not None:
            self._fallback.refresh(database)
        return changes
