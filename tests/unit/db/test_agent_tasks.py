"""The agent's task record (``agent_tasks``) on every backend: one row per task and agent."""

from __future__ import annotations

import datetime

from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration
from tests import db_backends

T0 = datetime.datetime(2026, 11, 28, 12, 0, 0)


def _run(task: str, agent: str, at: datetime.datetime, error: str | None = None):
    return db_api.TaskRun(task, agent, at, at + datetime.timedelta(seconds=3), 60.0, error)


class TaskRecordTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)

    def test_a_run_rewrites_the_row_of_its_task_and_agent(self) -> None:
        self.database.record_task(_run("sweep", "h1:1", T0))
        self.database.record_task(_run("sweep", "h1:1", T0 + datetime.timedelta(minutes=1), "x"))
        self.database.record_task(_run("fairshare", "h1:1", T0))
        self.database.record_task(_run("sweep", "h2:7", T0 + datetime.timedelta(minutes=2)))
        found = self.database.task_runs()
        self.assertEqual(
            [("fairshare", "h1:1"), ("sweep", "h2:7"), ("sweep", "h1:1")],
            [(r.task, r.agent) for r in found],
        )
        self.assertEqual(("x", 60.0), (found[2].error, found[2].interval_s))
        self.assertEqual(T0 + datetime.timedelta(minutes=1, seconds=3), found[2].finished_at)

    def test_rows_of_agents_gone_for_a_day_are_pruned(self) -> None:
        self.database.record_task(_run("sweep", "old:1", T0))
        later = T0 + db_api.TASK_RUNS_KEPT + datetime.timedelta(minutes=1)
        self.database.record_task(_run("sweep", "new:2", later))
        self.assertEqual(["new:2"], [r.agent for r in self.database.task_runs()])

    def test_an_aware_time_is_stored_as_utc(self) -> None:
        aware = datetime.datetime(
            2026, 11, 28, 13, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=1))
        )
        self.database.record_task(_run("sweep", "h1:1", aware))
        self.assertEqual(T0, self.database.task_runs()[0].started_at)


db_backends.for_each_backend(globals(), TaskRecordTests, "TestTaskRecord")
