"""``measured-rebalance``: live-migrate VMs off hosts whose measured cache pressure stays too high.

Every ``measured_rebalance_interval`` seconds, while this agent holds the
lease, it reads the recorded VMs and the collectors' figures, counts each
host with a fresh report as placement counts it
(:class:`~hpc_nova_scheduler.measured.pressure.Scores` under
``cache_pressure_source``), and lets :mod:`hpc_nova_scheduler.measured.trigger`
say which hosts are due and which VMs to move, CPI2's suspects
(:mod:`hpc_nova_scheduler.measured.suspects`) first where that moves no
more. Each VM is live-migrated
without a named destination: nova-scheduler and the plugin's filter choose
one that stays within the limits, with the same measured scores. Under
``measured_rebalance_dry_run`` it only logs what it would do.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.measured import pressure, suspects, trigger

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF
LEASE = db_api.MEASURED_REBALANCE_LEASE
LEASE_SECONDS = 20.0


def interval() -> float | None:
    """Seconds between two looks; None while the task is off."""
    seconds = CONF.hpc_scheduler.measured_rebalance_interval
    return float(seconds) if seconds > 0 else None


@dataclasses.dataclass(frozen=True)
class Decision:
    """What one look decided for one due host."""

    host: str
    total: float
    limit: float
    #: The VMs moved (or that would be, under dry run); empty: none would help.
    moved: tuple[str, ...]
    dry_run: bool
    #: Moves Nova refused, one line each.
    failed: tuple[str, ...] = ()


class PressureRebalancer:
    """The ``measured-rebalance`` task of one agent."""

    def __init__(
        self,
        database: Callable[[], db_api.Database],
        holder: str,
        connection: Callable[[], Any],
    ) -> None:
        self._database = database
        self.holder = holder
        self._connect = connection
        self._conn: Any = None
        self.watch = trigger.Watch(sustain=0.0, cooldown=0.0)
        #: When this agent last looked, holding the lease (monotonic seconds).
        self._looked: float | None = None

    def release(self) -> bool:
        """Let the lease go (an agent that stops)."""
        return self._database().release_lease(self.holder, name=LEASE)

    def run(self, every: float) -> list[Decision] | None:
        """One look, if this agent holds (or takes) the lease; None if it does not."""
        group = CONF.hpc_scheduler
        settings = pressure.Settings.of(group)
        if settings.source == pressure.DECLARED:
            return []
        database = self._database()
        if database.take_lease(self.holder, max(LEASE_SECONDS, 3.0 * every), name=LEASE) is None:
            self._looked = None
            return None
        looked, self._looked = self._looked, time.monotonic()
        if looked is None or self._looked - looked > 2.0 * every:
            # Not seen over at every look: another agent held the lease, or
            # the task was off. A host's sustain starts again.
            self.watch.over_since.clear()
        # Read at every look: a reload may change them.
        self.watch.sustain = float(group.measured_rebalance_sustain)
        self.watch.cooldown = float(group.measured_rebalance_cooldown)
        dry_run = group.measured_rebalance_dry_run
        limits = trigger.Limits(group.cache_threshold, group.sync_cache_threshold)
        running = database.list_running()
        reports = {r.host: r for r in database.measured_hosts()}
        instances = database.measured_instances()
        now = timeutils.utcnow()
        scores = pressure.Scores(settings, reports, instances, now)
        by_host: dict[str, list[db_api.RunningRecord]] = {}
        for row in running:
            report = reports.get(row.host)
            if report is not None and settings.fresh(report.reported_at, now):
                by_host.setdefault(row.host, []).append(row)
        totals = {}
        for host, rows in by_host.items():
            total = sum(scores.score(r.instance_uuid, r.cache_score) for r in rows)
            limit = limits.of(any(r.app_class is AppClass.SYNC_HPC for r in rows))
            totals[host] = (total, limit)
        due = self.watch.observe({h: t > lim for h, (t, lim) in totals.items()}, now)
        if not due:
            return []
        # CPI2's suspects go first where that moves no more VMs.
        fresh = suspects.fresh_figures(instances, now, settings)
        suspected = suspects.suspect_uuids(
            suspects.find(suspects.measured_vms(running, fresh, min_samples=settings.min_samples))
        )
        decisions = []
        for host in due:
            total, limit = totals[host]
            residents = [
                trigger.Resident(
                    r.instance_uuid,
                    scores.score(r.instance_uuid, r.cache_score),
                    movable=r.app_class is not AppClass.EXTREME_HPC,
                    suspect=r.instance_uuid in suspected,
                )
                for r in by_host[host]
            ]
            chosen = tuple(r.instance_uuid for r in trigger.fewest_to_move(residents, total, limit))
            failed = () if dry_run or not chosen else self._move(chosen)
            decisions.append(Decision(host, total, limit, chosen, dry_run, failed))
            self._log(decisions[-1])
            self.watch.acted(host, now)
        return decisions

    def _move(self, servers: tuple[str, ...]) -> tuple[str, ...]:
        failed = []
        for server in servers:
            try:
                if self._conn is None:
                    self._conn = self._connect()
                self._conn.compute.live_migrate_server(server, host=None, block_migration="auto")
            except Exception as error:  # Nova's refusal of one move must not stop the others
                failed.append(f"{server}: {' '.join(str(error).split())}"[:500])
        return tuple(failed)

    @staticmethod
    def _log(decision: Decision) -> None:
        what = (
            f"cache pressure {decision.total:.1f} over its limit {decision.limit:g} "
            f"for measured_rebalance_sustain"
        )
        if not decision.moved:
            LOG.warning(
                "hpc-scheduler-agent: host %s: %s, and moving every VM that may move would not "
                "bring it back within; moving none",
                decision.host,
                what,
            )
            return
        LOG.info(
            "hpc-scheduler-agent: host %s: %s; %s %s",
            decision.host,
            what,
            "would live-migrate (measured_rebalance_dry_run)"
            if decision.dry_run
            else "live-migrating",
            ", ".join(decision.moved),
        )
        for line in decision.failed:
            LOG.warning("hpc-scheduler-agent: Nova refused to live-migrate %s", line)
