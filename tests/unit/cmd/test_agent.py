"""``agent status`` on every backend: the task record and the lease, as a table and as JSON."""

from __future__ import annotations

import datetime
import json

import fixtures
import testtools
from oslo_utils import timeutils

from hpc_nova_scheduler.db import api as db_api
from tests import db_backends
from tests.unit.cmd.test_cli import CommandTests as _CommandBase
from tests.unit.cmd.test_cli import run


class AgentStatusTests(_CommandBase):
    """The command against a synced database (the base's own tests are not re-run)."""

    def setUp(self) -> None:
        super().setUp()
        self.ok("db", "sync")

    def record(self, task: str, agent: str, ago_s: float, interval: float, error=None) -> None:
        finished = timeutils.utcnow() - datetime.timedelta(seconds=ago_s)
        started = finished - datetime.timedelta(seconds=2)
        self.database.record_task(db_api.TaskRun(task, agent, started, finished, interval, error))

    def test_each_task_its_lag_and_the_lease(self) -> None:
        self.record("sweep", "h1:10", 5, 60)
        self.record("fairshare", "h1:10", 500, 2)
        self.record("sweep", "h2:20", 1, 60, "OperationalError: no such table")
        self.database.take_lease("h1:10:abcd", 20)
        found = json.loads(self.ok("agent", "status", "--format", "json"))
        by_key = {(t["task"], t["agent"]): t for t in found["tasks"]}
        self.assertEqual("ok", by_key["sweep", "h1:10"]["state"])
        self.assertEqual("late", by_key["fairshare", "h1:10"]["state"])
        self.assertEqual("error", by_key["sweep", "h2:20"]["state"])
        self.assertGreaterEqual(by_key["fairshare", "h1:10"]["lag_s"], 500)
        self.assertEqual(2, by_key["fairshare", "h1:10"]["interval_s"])
        self.assertEqual("h1:10:abcd", found["fairshare_lease"]["holder"])
        self.assertFalse(found["fairshare_lease"]["expired"])
        table = self.ok("agent", "status")
        self.assertIn("late", table)
        self.assertIn("error: OperationalError: no such table", table)
        self.assertIn("fair-share lease: h1:10:abcd until", table)
        self.assertNotIn("idle-traits lease", table)
        self.database.take_lease("h2:20:ef01", 30, name="idle_traits")
        found = json.loads(self.ok("agent", "status", "--format", "json"))
        self.assertEqual("h2:20:ef01", found["idle_traits_lease"]["holder"])
        self.assertIn("idle-traits lease: h2:20:ef01 until", self.ok("agent", "status"))

    def test_nothing_run_yet(self) -> None:
        out = self.ok("agent", "status")
        self.assertIn("no task has run yet", out)
        self.assertIn("fair-share lease: never taken", out)
        self.assertEqual(
            {"tasks": [], "fairshare_lease": None, "idle_traits_lease": None},
            json.loads(self.ok("agent", "status", "--format", "json")),
        )


# Only the status command's tests: the base class's own run in test_cli.
for _name in [n for n in vars(_CommandBase) if n.startswith("test_")]:
    setattr(AgentStatusTests, _name, None)

db_backends.for_each_backend(globals(), AgentStatusTests, "TestAgentStatus")


class TestAgentStatusErrors(testtools.TestCase):
    def test_a_database_that_cannot_be_read_is_one_line(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        conf = f"{folder}/empty.conf"
        open(conf, "w").close()
        url = f"sqlite:///{folder}/missing/none.sqlite"
        code, out, err = run("--config-file", conf, "--connection", url, "agent", "status")
        self.assertEqual(1, code)
        self.assertEqual("", out)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn("hpc-nova-scheduler:", err)
