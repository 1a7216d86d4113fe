"""The agent as an oslo.service service: looping calls, graceful stop, reload.

Imported only by :mod:`.main`, after the concurrency backend is chosen
(``oslo_service.service`` picks one when imported).

* Each task of :class:`~.tasks.Agent` is a dynamic looping call: the first
  run at once, then each run says how long until the next, from the
  options of the moment.
* SIGTERM: the looping calls take no new run, the running ones finish (a
  run of ``idle-traits`` after the provider it is writing), the leases are
  let go, the process exits 0.
* SIGHUP: the launcher re-reads the configuration files and restarts the
  worker process gracefully as on SIGTERM; the new one runs its tasks at
  the intervals of the new options.
"""

from __future__ import annotations

from collections.abc import Callable

from oslo_log import log as logging
from oslo_service import service

from hpc_nova_scheduler.agent.tasks import Agent

LOG = logging.getLogger(__name__)


class AgentService(service.Service):
    """The agent's tasks as looping calls of one worker process.

    ``name`` is the agent's name in the task record: the launcher's
    ``host:pid``, which a reload keeps (the worker process changes).
    """

    def __init__(self, name: str, make_agent: Callable[..., Agent] = Agent) -> None:
        super().__init__(threads=8)
        self.name = name
        self._make_agent = make_agent
        self.agent: Agent | None = None

    def start(self) -> None:
        super().start()
        # In the worker process: database connections are never shared across a fork.
        self.agent = self._make_agent(name=self.name)
        for task in self.agent.tasks():
            self.tg.add_dynamic_timer_args(self.agent.run, args=[task], stop_on_exception=False)
        LOG.info(
            "hpc-scheduler-agent %s: tasks %s started",
            self.agent.name,
            ", ".join(t.name for t in self.agent.tasks()),
        )

    def stop(self, graceful: bool = True) -> None:
        # Always graceful: a run of the allocator or a sweep is never cut
        # halfway. A run of idle-traits ends at its next provider: each
        # write is whole, and the next run writes the rest.
        if self.agent is not None:
            self.agent.stopping.set()
        super().stop(graceful=True)
        if self.agent is not None:
            self.agent.close()
            LOG.info("hpc-scheduler-agent %s: stopped", self.agent.name)
