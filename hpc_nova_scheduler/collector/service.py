"""The collector as an oslo.service service: one looping call, graceful stop, reload.

Imported only by :mod:`.main`, after the concurrency backend is chosen.

* Every ``[hpc_collector] interval`` seconds one read of the host and its
  instances (:meth:`~.collector.Collector.collect`).
* SIGTERM: a read under way finishes, then the process exits 0.
* SIGHUP: the launcher re-reads the configuration files and restarts the
  worker process gracefully; the new one reads at the new interval.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from pathlib import Path

from oslo_log import log as logging
from oslo_service import service

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.collector.collector import Collector, Settings
from hpc_nova_scheduler.db import api as db_api

LOG = logging.getLogger(__name__)


def settings(conf) -> Settings:
    group = conf[hpc_conf.COLLECTOR_GROUP_NAME]
    return Settings(
        host=group.host or conf.host,
        resctrl_root=Path(group.resctrl_root),
        libvirt_run_dir=Path(group.libvirt_run_dir),
        half_life=float(group.half_life),
        retention=datetime.timedelta(seconds=group.retention),
        cgroup_root=Path(group.cgroup_root) if group.cgroup_root else None,
    )


class CollectorService(service.Service):
    """One collector, read at its interval in one worker process."""

    def __init__(self, conf, make_database: Callable[[str], db_api.Database] = db_api.Database):
        super().__init__(threads=2)
        self.conf = conf
        self._make_database = make_database
        self.collector: Collector | None = None
        self._failing: str | None = None

    def start(self) -> None:
        super().start()
        # In the worker process: database connections are never shared across a fork.
        database = self._make_database(self.conf.hpc_scheduler.connection)
        options = settings(self.conf)
        self.collector = Collector(database, options, LOG.warning)
        self.tg.add_dynamic_timer_args(self.read, stop_on_exception=False)
        LOG.info(
            "hpc-scheduler-collector: measuring host %s every %d s (resctrl at %s)",
            options.host,
            self.conf[hpc_conf.COLLECTOR_GROUP_NAME].interval,
            options.resctrl_root,
        )

    def read(self) -> float:
        """One read; the seconds until the next."""
        interval = float(self.conf[hpc_conf.COLLECTOR_GROUP_NAME].interval)
        started = time.monotonic()
        try:
            collected = self.collector.collect()
        except db_api.ERRORS as error:
            # The plugin database is down: this read's samples are lost, the
            # next read measures afresh. Said when it starts and when it ends.
            problem = " ".join(str(error).split())[:300]
            if self._failing is None:
                LOG.warning("hpc-scheduler-collector: cannot write measurements: %s", problem)
            self._failing = problem
        else:
            if self._failing is not None:
                LOG.info("hpc-scheduler-collector: writing measurements again")
                self._failing = None
            LOG.debug(
                "hpc-scheduler-collector: %d instances measured in %.3f s",
                len(collected.samples),
                time.monotonic() - started,
            )
        return max(0.0, interval - (time.monotonic() - started))

    def stop(self, graceful: bool = True) -> None:
        # Always graceful: a read is never cut between its samples and its write.
        super().stop(graceful=True)
        if self.collector is not None:
            self.collector.close()
            self.collector.database.dispose()
            LOG.info("hpc-scheduler-collector: stopped")
