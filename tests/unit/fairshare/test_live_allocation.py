"""What the allocator reads as a project's running cores, with loans (issue 45)."""

from __future__ import annotations

import datetime

from oslo_config import fixture as config_fixture

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as db_loans
from hpc_nova_scheduler.db import migration
from hpc_nova_scheduler.fairshare import live_allocation, platforms
from tests import db_backends
from tests.unit.fairshare.test_live_share import NODES, TAGS

NOW = datetime.datetime(2026, 11, 25, 12, 0, 0)


def vm(uuid: str, host: str, cores: int) -> db_api.RunningRecord:
    return db_api.RunningRecord(
        uuid, host, AppClass.ASYNC_HPC, 1.0, "blast", host, project_id="p", cores=cores
    )


def loan(uuid: str, host: str, cores: int, kind: str, stopped: bool = False):
    return db_loans.LoanRecord(
        uuid, "p", "amd" if host[0] == "a" else "intel", cores, kind, NOW, 0, stopped, host, host
    )


class RunningCoresTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)
        self.database.set_share("p", 1.0)
        self.cloud = platforms.build_cloud(NODES, TAGS)
        self.conf = self.useFixture(config_fixture.Config(hpc_conf.CONF)).conf
        self.conf.set_override("fairness_policy", "equal", group="hpc_scheduler")
        self.conf.set_override("fairshare_half_life", 3600, group="hpc_scheduler")

    def running(self) -> dict[str, int]:
        inputs = live_allocation.read_inputs(self.database, self.cloud, 60, NOW)
        (project,) = inputs.projects
        return project.running

    def test_preemptible_and_stopped_vms_are_not_a_projects_use(self) -> None:
        self.database.record_running(
            [
                vm("entitled", "a0", 4),
                vm("borrowed", "i0", 2),
                vm("preemptible", "a1", 3),
                vm("stopped", "i1", 4),
            ]
        )
        self.assertEqual({"amd": 7, "intel": 6}, self.running())
        self.database.add_loan(loan("borrowed", "i0", 2, db_api.BORROWED))
        self.database.add_loan(loan("preemptible", "a1", 3, db_api.PREEMPTIBLE))
        self.database.add_loan(loan("stopped", "i1", 4, db_api.BORROWED, stopped=True))
        # A borrowed VM that runs is the project's use; the others are not.
        self.assertEqual({"amd": 4, "intel": 2}, self.running())
        self.database.set_stopped("stopped", False)
        self.assertEqual({"amd": 4, "intel": 6}, self.running())

    def test_a_vm_taken_back_is_not_charged(self) -> None:
        self.database.record_running([vm("runs", "a0", 4), vm("stopped", "a1", 4)])
        self.database.add_loan(loan("stopped", "a1", 4, db_api.BORROWED, stopped=True))
        inputs = live_allocation.read_inputs(self.database, self.cloud, 60, NOW)
        self.assertEqual(frozenset({"stopped"}), inputs.taken_back)
        placed = min(r.placed_at for r in inputs.records)
        later = placed + datetime.timedelta(seconds=100)
        options = hpc_conf.fairness_settings(self.conf)
        usage = live_allocation.charged(self.database, inputs, options, placed, later)
        # 4 cores for 100 s of the VM that runs; nothing of the stopped one.
        self.assertAlmostEqual(400.0, sum(usage.values()), delta=1.0)


db_backends.for_each_backend(globals(), RunningCoresTests, "TestRunningCores")
