"""The agent's tasks, what they share, and the record of each run.

:class:`Agent` is one agent process: its name (``host:pid``), the plugin
database, the fallback copy, and the lease holder of its allocator. Each
:class:`Task` says how long until its next run (read from the options at
every run, so a reload changes it) and what a run does;
:meth:`Agent.run` runs one and writes its row in ``agent_tasks``. The
service (:mod:`.service`) calls :meth:`Agent.run` from its looping calls;
tests call it, or the task functions, directly.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import uuid as uuid_lib
from collections.abc import Callable, Mapping

from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.agent import allocator as allocator_mod
from hpc_nova_scheduler.agent import idle_traits as idle_traits_mod
from hpc_nova_scheduler.agent import pressure_rebalance
from hpc_nova_scheduler.agent import reclaim as reclaim_mod
from hpc_nova_scheduler.agent import sweep as sweep_mod
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare.platforms import Node
from hpc_nova_scheduler.scheduler import fairness
from hpc_nova_scheduler.scheduler.aggregate_tags import AggregateTags
from hpc_nova_scheduler.scheduler.fallback import FallbackStore

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF

SWEEP = "sweep"
FAIRSHARE = "fairshare"
RECLAIM = "reclaim"
IDLE_TRAITS = "idle-traits"
MEASURED_REBALANCE = "measured-rebalance"
#: Seconds before a task that is off looks at its options again.
IDLE_SECONDS = 60.0


def agent_name() -> str:
    """``host:pid``: the agent's name in the task record (the service's launcher process)."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    #: Seconds between two runs now; None while the task is off.
    interval: Callable[[], float | None]
    body: Callable[[], object]


def sweep_interval() -> float | None:
    interval = CONF.hpc_scheduler.reconcile_interval
    return float(interval) if interval > 0 else None


def fairshare_interval() -> float | None:
    try:
        off = CONF.hpc_scheduler.fairness_policy == hpc_conf.NO_FAIRNESS
    except ValueError:
        off = False  # a bad value: settings() says which, once
    if off or fairness.settings() is None:
        return None
    return allocator_mod.CHECK_SECONDS


def reclaim_interval() -> float | None:
    options = fairness.settings() if fairshare_interval() is not None else None
    if options is None or options.reclaim == hpc_conf.RECLAIM_OFF:
        return None
    return reclaim_mod.CHECK_SECONDS


def idle_traits_interval() -> float | None:
    interval = CONF.hpc_scheduler.idle_trait_interval
    return float(interval) if interval > 0 else None


class TaskProblem(Exception):
    """A run that did not do its work, though nothing raised (recorded as its error)."""


class Agent:
    """One agent process: its tasks and what they share."""

    def __init__(
        self,
        *,
        nodes: Callable[[], list[Node]] = allocator_mod.nova_nodes,
        tags: Callable[[], Mapping | None] | None = None,
        fallback: FallbackStore | None = None,
        name: str | None = None,
        connection: Callable[[], object] = reclaim_mod.connect,
        node_uses: Callable[[], tuple] = idle_traits_mod.nova_node_uses,
        placement: Callable[[], object] = idle_traits_mod.nova_placement,
    ) -> None:
        self.name = name or agent_name()
        #: Set when the agent stops: a long run ends at its next step.
        self.stopping = threading.Event()
        self._database = db_api.ConfiguredDatabase(CONF)
        #: task -> the error of its last run, so that a lasting one is logged once.
        self._errors: dict[str, str | None] = {}
        self.fallback = fallback if fallback is not None else FallbackStore()
        tags = tags or AggregateTags().current
        self.allocator = allocator_mod.Allocator(
            self.database,
            tags,
            nodes,
            # Unique per worker process, even where a pid is used again.
            holder=f"{self.name}:{os.getpid()}:{uuid_lib.uuid4().hex[:8]}",
        )
        self.reclaimer = reclaim_mod.Reclaimer(
            self.database, tags, self.allocator.holder, connection
        )
        self.idle_traits_keeper = idle_traits_mod.IdleTraitKeeper(
            self.database,
            self.allocator.holder,
            nodes=node_uses,
            placement=placement,
            stopping=self.stopping,
            tags=tags,
        )
        self.pressure_rebalancer = pressure_rebalance.PressureRebalancer(
            self.database, self.allocator.holder, connection
        )

    def database(self) -> db_api.Database:
        """The plugin database of the options now (a reload may change it)."""
        return self._database()

    def sweep(self) -> object:
        return sweep_mod.sweep(self.database(), self.fallback)

    def fairshare(self) -> object:
        outcome = self.allocator.tick()
        if self.allocator.problem is not None:
            raise TaskProblem(self.allocator.problem)
        options = fairness.settings()
        if outcome is not None and options is not None and outcome.generation is not None:
            # Each allocator run compares unmet demand with borrowed cores.
            self.reclaimer.request(options)
        return outcome

    def reclaim(self) -> object:
        options = fairness.settings()
        if options is None:
            return None
        return self.reclaimer.act(options)

    def idle_traits(self) -> object:
        interval = idle_traits_interval()
        if interval is None:
            return None
        return self.idle_traits_keeper.run(interval)

    def measured_rebalance(self) -> object:
        every = pressure_rebalance.interval()
        if every is None:
            return None
        return self.pressure_rebalancer.run(every)

    def tasks(self) -> list[Task]:
        return [
            Task(SWEEP, sweep_interval, self.sweep),
            Task(FAIRSHARE, fairshare_interval, self.fairshare),
            Task(RECLAIM, reclaim_interval, self.reclaim),
            Task(IDLE_TRAITS, idle_traits_interval, self.idle_traits),
            Task(MEASURED_REBALANCE, pressure_rebalance.interval, self.measured_rebalance),
        ]

    def run(self, task: Task) -> float:
        """Run ``task`` once if it is on, record the run; seconds until the next.

        Never raises: a failed run is logged and recorded, and the next one
        tries again. nova-scheduler places meanwhile from what it has.
        """
        interval = task.interval()
        if interval is None:
            return IDLE_SECONDS
        started = timeutils.utcnow()
        error = None
        try:
            task.body()
        except TaskProblem as problem:
            error = str(problem)[:2000]
        except Exception as failure:
            error = f"{type(failure).__name__}: {failure}"[:2000]
        if error is not None and error != self._errors.get(task.name):
            # Said once while it lasts: the fair-share task looks every 2 s.
            LOG.warning("hpc-scheduler-agent: task %s failed: %s", task.name, error)
        self._errors[task.name] = error
        finished = timeutils.utcnow()
        try:
            self.database().record_task(
                db_api.TaskRun(task.name, self.name, started, finished, interval, error)
            )
        except Exception as failure:
            LOG.warning(
                "hpc-scheduler-agent: cannot record the run of task %s: %s", task.name, failure
            )
        return interval

    def close(self) -> None:
        """Let the leases go and close the database (the agent stops)."""
        self.stopping.set()
        database = self._database.current
        if database is None:
            return
        try:
            self.reclaimer.close()
        except Exception as failure:
            LOG.debug("hpc-scheduler-agent: closing the Nova API connection: %s", failure)
        try:
            if self.allocator.release():
                LOG.info("hpc-scheduler-agent: fair-share lease released")
        except Exception as failure:
            LOG.warning("hpc-scheduler-agent: cannot release the fair-share lease: %s", failure)
        try:
            if self.idle_traits_keeper.release():
                LOG.info("hpc-scheduler-agent: idle-traits lease released")
        except Exception as failure:
            LOG.warning("hpc-scheduler-agent: cannot release the idle-traits lease: %s", failure)
        try:
            if self.pressure_rebalancer.release():
                LOG.info("hpc-scheduler-agent: measured-rebalance lease released")
        except Exception as failure:
            LOG.warning(
                "hpc-scheduler-agent: cannot release the measured-rebalance lease: %s", failure
            )
        self._database.dispose()
