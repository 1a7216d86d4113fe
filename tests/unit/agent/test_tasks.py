"""The agent's task runner on every backend: each run recorded, failures too, the lease let go."""

from __future__ import annotations

from oslo_config import fixture as config_fixture

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.agent import allocator, tasks
from hpc_nova_scheduler.db import migration
from hpc_nova_scheduler.fairshare.runs import TaskRun
from tests import db_backends
from tests.unit.agent.test_allocator import NODES, TAGS


class AgentTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)
        self.config = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        self.config.config(connection=self.db_url, group="hpc_scheduler")
        self.database.import_runs(
            [TaskRun("blast", "amd", 100.0), TaskRun("blast", "intel", 200.0)]
        )
        self.database.set_share("pb", 1.0)
        self.database.set_demand("pb", 4, "blast")

    def agent(self, name: str = "host-a:1") -> tasks.Agent:
        agent = tasks.Agent(nodes=lambda: NODES, tags=lambda: TAGS, name=name)
        self.addCleanup(agent.close)
        return agent

    def task(self, agent: tasks.Agent, name: str) -> tasks.Task:
        return next(t for t in agent.tasks() if t.name == name)

    def test_a_run_of_the_fairshare_task_is_recorded(self) -> None:
        self.config.config(fairness_policy="pa-rr", group="hpc_scheduler")
        agent = self.agent()
        next_in = agent.run(self.task(agent, tasks.FAIRSHARE))
        self.assertEqual(allocator.CHECK_SECONDS, next_in)
        self.assertEqual({"pb": {"amd": 4}}, self.database.latest_generation().allocation)
        (run,) = self.database.task_runs()
        self.assertEqual((tasks.FAIRSHARE, "host-a:1", None), (run.task, run.agent, run.error))
        self.assertEqual(allocator.CHECK_SECONDS, run.interval_s)
        self.assertLessEqual(run.started_at, run.finished_at)
        # One row per task and agent: a second run rewrites it.
        agent.run(self.task(agent, tasks.FAIRSHARE))
        self.assertEqual(1, len(self.database.task_runs()))

    def test_the_fairshare_task_is_off_under_fairness_none(self) -> None:
        agent = self.agent()
        self.assertEqual(tasks.IDLE_SECONDS, agent.run(self.task(agent, tasks.FAIRSHARE)))
        self.assertEqual([], self.database.task_runs())
        self.assertIsNone(self.database.latest_generation())

    def test_a_failed_run_is_recorded_and_the_next_one_comes(self) -> None:
        agent = self.agent()

        def broken() -> None:
            raise RuntimeError("cell1 did not answer")

        failing = tasks.Task(tasks.SWEEP, lambda: 7.0, broken)
        self.assertEqual(7.0, agent.run(failing))
        (run,) = self.database.task_runs()
        self.assertEqual("RuntimeError: cell1 did not answer", run.error)
        self.assertEqual(7.0, run.interval_s)
        agent.run(tasks.Task(tasks.SWEEP, lambda: 7.0, lambda: None))
        self.assertIsNone(self.database.task_runs()[0].error)

    def test_a_fairshare_run_that_cannot_allocate_is_recorded_as_an_error(self) -> None:
        self.config.config(fairness_policy="pa-rr", group="hpc_scheduler")
        bad = {**TAGS, "a0": {"hpc:cpu_group": frozenset({"amd", "intel"})}}
        agent = tasks.Agent(nodes=lambda: NODES, tags=lambda: bad, name="host-a:1")
        self.addCleanup(agent.close)
        agent.run(self.task(agent, tasks.FAIRSHARE))
        (run,) = self.database.task_runs()
        self.assertIn("host a0 is in two platforms", run.error)
        self.assertIsNone(self.database.latest_generation())

    def test_the_sweep_follows_reconcile_interval(self) -> None:
        self.config.config(reconcile_interval=5, group="hpc_scheduler")
        self.assertEqual(5.0, tasks.sweep_interval())
        self.config.config(reconcile_interval=0, group="hpc_scheduler")
        self.assertIsNone(tasks.sweep_interval())
        agent = self.agent()
        self.assertEqual(tasks.IDLE_SECONDS, agent.run(self.task(agent, tasks.SWEEP)))
        self.assertEqual([], self.database.task_runs())

    def test_idle_traits_is_off_by_default_and_follows_its_interval(self) -> None:
        agent = self.agent()
        self.assertIsNone(tasks.idle_traits_interval())
        self.assertEqual(tasks.IDLE_SECONDS, agent.run(self.task(agent, tasks.IDLE_TRAITS)))
        self.assertEqual([], self.database.task_runs())
        self.config.config(idle_trait_interval=15, group="hpc_scheduler")
        self.assertEqual(15.0, tasks.idle_traits_interval())

    def test_closing_the_agent_stops_its_runs_and_lets_the_idle_traits_lease_go(self) -> None:
        agent = self.agent()
        agent.database().take_lease(agent.allocator.holder, 60, name="idle_traits")
        self.assertIsNone(self.database.take_lease("host-b:2", 60, name="idle_traits"))
        agent.close()
        self.assertTrue(agent.stopping.is_set())
        self.assertIsNotNone(self.database.take_lease("host-b:2", 60, name="idle_traits"))

    def test_two_agents_one_allocates_and_a_stopping_one_hands_the_lease_on(self) -> None:
        self.config.config(fairness_policy="pa-rr", group="hpc_scheduler")
        first, second = self.agent("host-a:1"), self.agent("host-b:2")
        self.assertIsNotNone(first.fairshare())
        self.assertIsNone(second.fairshare())
        self.assertEqual(first.allocator.holder, self.database.lease().holder)
        self.assertNotEqual(first.allocator.holder, second.allocator.holder)
        first.close()
        # The lease is free at once: the other agent takes it at its next look.
        self.database.forget_digest()
        second.fairshare()
        self.assertEqual(second.allocator.holder, self.database.lease().holder)


db_backends.for_each_backend(globals(), AgentTests, "TestAgent")
