"""The agent's allocator tick, on every backend: one holder, due runs, usage charged once."""

from __future__ import annotations

import datetime

import sqlalchemy as sa
from oslo_config import fixture as config_fixture
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.agent.allocator import Allocator
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration
from hpc_nova_scheduler.fairshare import live_allocation, platforms
from hpc_nova_scheduler.fairshare.runs import TaskRun
from tests import db_backends

NODES = [platforms.Node(f"a{i}", f"a{i}", 4) for i in range(2)] + [
    platforms.Node(f"i{i}", f"i{i}", 4) for i in range(2)
]
TAGS = {f"a{i}": {"hpc:cpu_group": frozenset({"amd"})} for i in range(2)} | {
    f"i{i}": {"hpc:cpu_group": frozenset({"intel"})} for i in range(2)
}


class AllocatorTests:
    def setUp(self) -> None:
        super().setUp()
        # The allocator compares with the generations' real creation times.
        self.t0 = timeutils.utcnow()
        migration.upgrade(self.database.engine)
        config = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        config.config(fairness_policy="pa-rr", fairshare_interval=3600, group="hpc_scheduler")
        self.database.import_runs(
            [
                TaskRun("blast", "amd", 100.0),
                TaskRun("blast", "intel", 200.0),
                TaskRun("gene", "amd", 200.0),
                TaskRun("gene", "intel", 100.0),
            ]
        )
        self.database.set_share("pb", 1.0)
        self.database.set_share("pg", 1.0)
        self.database.set_demand("pb", 8, "blast")
        self.database.set_demand("pg", 8, "gene")

    def allocator(self) -> Allocator:
        database = db_api.Database(self.db_url)
        self.addCleanup(database.dispose)
        allocator = Allocator(lambda: database, lambda: TAGS, lambda: NODES)
        allocator.holder = f"agent-{id(allocator)}"
        return allocator

    def test_only_the_lease_holder_runs_and_only_when_due(self) -> None:
        first, second = self.allocator(), self.allocator()
        outcome = first.tick(self.t0)
        self.assertEqual({"pb": {"amd": 8}, "pg": {"intel": 8}}, outcome.allocation)
        self.assertEqual(1, outcome.generation)
        # The other worker waits for the lease; the holder has nothing to do.
        self.assertIsNone(second.tick(self.t0 + datetime.timedelta(seconds=5)))
        self.assertIsNone(first.tick(self.t0 + datetime.timedelta(seconds=5)))
        # Demand changed: a run long before the interval is up, but not
        # sooner than a thirtieth of it (a busy cloud changes at every placement).
        self.database.set_demand("pb", 4, "blast")
        self.assertIsNone(first.tick(self.t0 + datetime.timedelta(seconds=10)))
        outcome = first.tick(self.t0 + datetime.timedelta(seconds=125))
        self.assertEqual({"amd": 4}, outcome.allocation["pb"])
        self.assertEqual(2, self.database.latest_generation().number)

    def test_usage_is_charged_for_the_time_vms_ran_and_only_once(self) -> None:
        allocator = self.allocator()
        allocator.tick(self.t0)
        self.database.record_running(
            [
                db_api.RunningRecord(
                    "vm-1", "a0", AppClass.ASYNC_HPC, 1.0, "blast", "a0", project_id="pb", cores=4
                )
            ]
        )
        # The VM was placed just now: the next run charges from max(placed, last charge).
        placed = self.database.list_running()[0].placed_at
        later = placed + datetime.timedelta(seconds=200)
        outcome = allocator.tick(later)
        self.assertIsNotNone(outcome)
        charged = self.database.usage()[("pb", "amd")]
        # blast runs at its best on amd: a core-second counts in full.
        self.assertAlmostEqual(800.0, charged, delta=1.0)
        self.assertIsNone(allocator.tick(later))
        self.assertEqual(charged, self.database.usage()[("pb", "amd")])

    def test_a_host_in_two_platforms_keeps_the_last_entitlements(self) -> None:
        allocator = self.allocator()
        allocator.tick(self.t0)
        bad = {**TAGS, "a0": {"hpc:cpu_group": frozenset({"amd", "intel"})}}
        allocator._tags = lambda: bad
        self.database.set_demand("pb", 2, "blast")
        self.assertIsNone(allocator.tick(self.t0 + datetime.timedelta(seconds=5)))
        self.assertEqual(1, self.database.latest_generation().number)

    def project_view(self, cloud, now):
        inputs = live_allocation.read_inputs(self.database, cloud, 60, now)
        return next(p for p in inputs.projects if p.name == "pb")

    def test_a_refusal_met_by_a_later_placement_is_not_counted_twice(self) -> None:
        cloud = platforms.build_cloud(NODES, TAGS)
        self.database.set_demand("pb", 0)
        self.database.record_refusal("pb", "blast", 4)
        # MariaDB keeps whole seconds: the row may read earlier than t0.
        refused_at = self.database.refusals(datetime.datetime(2000, 1, 1))[0].at
        now = refused_at + datetime.timedelta(seconds=1)
        project = self.project_view(cloud, now)
        self.assertEqual(4, project.demand)
        # The retry is placed: 4 cores run, none wait.
        self.database.record_running(
            [
                db_api.RunningRecord(
                    "vm-1", "a0", AppClass.ASYNC_HPC, 1.0, "blast", "a0", project_id="pb", cores=4
                )
            ]
        )
        placed_at = self.database.list_running()[0].placed_at
        now = placed_at + datetime.timedelta(seconds=5)
        project = self.project_view(cloud, now)
        self.assertEqual((4, 0, 4), (project.running_cores, project.refused, project.demand))
        # A refusal after it is demand on top of what runs. Dated two seconds
        # later: in the same (whole, on MariaDB) second, a placement is taken
        # as the retry of the refusal.
        self.database.record_refusal("pb", "blast", 4)
        with self.database.engine.begin() as connection:
            last = connection.execute(sa.text("SELECT MAX(id) FROM fairshare_refusals")).scalar()
            connection.execute(
                sa.text("UPDATE fairshare_refusals SET created_at = :later WHERE id = :last"),
                {"later": placed_at + datetime.timedelta(seconds=2), "last": last},
            )
        project = self.project_view(cloud, now)
        self.assertEqual(8, project.demand)


db_backends.for_each_backend(globals(), AllocatorTests, "TestAllocator")
