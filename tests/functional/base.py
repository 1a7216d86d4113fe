"""Base classes of the functional tests: the in-process cloud of the demo."""

from __future__ import annotations

import logging

from hpc_nova_scheduler.agent.tasks import Agent
from hpc_nova_scheduler.demo.cloud import HPC_FILTERS, HPC_WEIGHERS, HpcCloud, NovaCloud

__all__ = ["HPC_FILTERS", "HPC_WEIGHERS", "QUIET_LOGGERS", "HpcTestCase", "NovaTestCase"]

#: Loggers whose INFO lines no failing test needs, kept to WARNING and above:
#: Nova's thread pools announce each start and shutdown (four pools a
#: cloud, logged as the cloud is torn down, after Nova's log capture has
#: ended: some 500 lines in the test log of a run), and periodic tasks say
#: they are skipped, as the harness means them to be.
QUIET_LOGGERS = ("nova.thread_pool_factory", "oslo_service.periodic_task")
for _name in QUIET_LOGGERS:
    logging.getLogger(_name).setLevel(logging.WARNING)


class NovaTestCase(NovaCloud):
    """Nova with the plugin's classes available next to Nova's own."""


class HpcTestCase(HpcCloud):
    """A small cloud of shaped hosts, racks and processor groups, with the plugin on.

    nova-scheduler starts no background work: what ``hpc-scheduler-agent``
    does, a test does explicitly, in its own thread (:meth:`sweep`,
    :meth:`allocator_tick`), so nothing outlives the test.
    """

    def agent_connection(self):
        """openstacksdk on the harness's Nova API, as the agent's admin user."""
        import openstack
        from keystoneauth1 import noauth
        from keystoneauth1 import session as ks_session

        session = ks_session.Session(
            auth=noauth.NoAuth(),
            additional_headers={
                "X-Auth-User": "admin",
                "X-User-Id": "hpc-agent",
                "X-Auth-Project-Id": "service",
                "X-Project-Id": "service",
                "X-Roles": "admin,member,reader",
                "X-Auth-Token": "admin:service",
            },
        )
        conn = openstack.connection.Connection(
            session=session, compute_endpoint_override=self.api.base_url
        )
        self.addCleanup(conn.close)
        return conn

    def agent(self) -> Agent:
        """This test's agent (one per test, closed at its end)."""
        if getattr(self, "_agent", None) is None:
            self._agent = Agent(name="functional-test:0")
            self.addCleanup(self._agent.close)
        return self._agent

    def sweep(self):
        """One run of the agent's ``sweep`` task: hand over, reconcile, refresh the copy."""
        return self.agent().sweep()

    def allocator_tick(self):
        """One look of the agent's allocator at the lease; the run's outcome, if one was due."""
        return self.agent().fairshare()
