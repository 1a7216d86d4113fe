"""The real ``hpc-scheduler-agent`` process: it runs its tasks, reloads on SIGHUP, stops on SIGTERM.

No timing assertions: every wait is on state the agent writes (its task
record), with bounds that only end a test that already failed.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import fixtures
import testtools

import hpc_nova_scheduler
from hpc_nova_scheduler.db import api as db_api

ROOT = pathlib.Path(hpc_nova_scheduler.__file__).parent.parent
#: Seconds that only bound a wait for something that should come much sooner.
PATIENCE = 180.0


def _conf(folder: str, reconcile_interval: int) -> str:
    return f"""[DEFAULT]
state_path = {folder}
[hpc_scheduler]
connection = sqlite:///{folder}/hpc.sqlite
fallback_connection = sqlite:///{folder}/fallback.sqlite
reconcile_interval = {reconcile_interval}
fairness_policy = none
[api_database]
connection = sqlite:///{folder}/nova_api.sqlite
[database]
connection = sqlite:///{folder}/nova.sqlite
"""


class TestAgentProcess(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.folder = self.useFixture(fixtures.TempDir()).path
        self.conf = os.path.join(self.folder, "agent.conf")
        self.write_conf(3600)
        self.database = db_api.Database(f"sqlite:///{self.folder}/hpc.sqlite")
        self.addCleanup(self.database.dispose)
        self.database.sync()

    def sync_nova_api_database(self) -> None:
        """Nova's API database, empty: the sweep finds no cell and no instance."""
        nova_manage = os.path.join(os.path.dirname(sys.executable), "nova-manage")
        subprocess.run(
            [nova_manage, "--config-file", self.conf, "api_db", "sync"],
            check=True,
            capture_output=True,
            cwd=self.folder,
        )

    def write_conf(self, reconcile_interval: int) -> None:
        with open(self.conf, "w") as stream:
            stream.write(_conf(self.folder, reconcile_interval))

    def start(self) -> subprocess.Popen:
        with open(os.path.join(self.folder, "agent.log"), "w") as log:
            agent = subprocess.Popen(
                [sys.executable, "-m", "hpc_nova_scheduler.agent.main", "--config-file", self.conf],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own process group: the launcher signals its whole group on SIGHUP.
                start_new_session=True,
            )
        self.addCleanup(self.kill, agent)
        return agent

    def kill(self, agent: subprocess.Popen) -> None:
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGKILL)
            agent.wait()

    def log(self) -> str:
        with open(os.path.join(self.folder, "agent.log")) as stream:
            return stream.read()

    def wait_for_sweep(self, agent: subprocess.Popen, interval: float) -> db_api.TaskRun:
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            self.assertIsNone(agent.poll(), self.log())
            runs = [r for r in self.database.task_runs() if r.task == "sweep"]
            if runs and runs[0].interval_s == interval:
                return runs[0]
            time.sleep(0.5)
        self.fail(f"no sweep at interval {interval}:\n{self.log()}")

    def test_runs_reloads_and_stops(self) -> None:
        self.sync_nova_api_database()
        agent = self.start()
        first = self.wait_for_sweep(agent, 3600.0)
        self.assertIsNone(first.error)
        self.assertEqual(f"{first.agent.split(':')[0]}:{agent.pid}", first.agent)
        # SIGHUP: the options are read again, and the sweep follows the new interval.
        self.write_conf(1800)
        os.kill(agent.pid, signal.SIGHUP)
        again = self.wait_for_sweep(agent, 1800.0)
        self.assertIsNone(again.error)
        # A reload keeps the agent's name: still one row for the task.
        self.assertEqual([first.agent], [r.agent for r in self.database.task_runs()])
        # SIGTERM: a graceful stop, status 0; the record stays.
        os.kill(agent.pid, signal.SIGTERM)
        self.assertEqual(0, agent.wait(timeout=PATIENCE), self.log())
        self.assertEqual(["sweep"], [r.task for r in self.database.task_runs()])
        self.assertIn("stopped", self.log())

    def test_a_missing_configuration_file_is_one_line(self) -> None:
        missing = os.path.join(self.folder, "nope.conf")
        done = subprocess.run(
            [sys.executable, "-m", "hpc_nova_scheduler.agent.main", "--config-file", missing],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
        self.assertEqual(2, done.returncode)
        # Nova 33 announces its experimental threading mode on stderr before
        # any configuration is read, as it does for nova-scheduler: the
        # agent's own error is one line, the last, and there is no traceback.
        lines = done.stderr.strip().splitlines()
        ours = [line for line in lines if line.startswith("hpc-scheduler-agent:")]
        self.assertEqual(lines[-1:], ours, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertIn("nope.conf", lines[-1])

    def test_reclaim_without_credentials_for_nova_is_one_line(self) -> None:
        with open(self.conf, "a") as conf:
            conf.write("[hpc_scheduler]\nfairness_policy = pa-rr\nfairshare_reclaim = shelve\n")
        done = subprocess.run(
            [sys.executable, "-m", "hpc_nova_scheduler.agent.main", "--config-file", self.conf],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
        self.assertEqual(2, done.returncode, done.stderr)
        lines = done.stderr.strip().splitlines()
        self.assertEqual(
            "hpc-scheduler-agent: [hpc_scheduler_agent] auth_type is not set: "
            "fairshare_reclaim = shelve needs the agent's own credentials for Nova's API",
            lines[-1],
        )
        self.assertNotIn("Traceback", done.stderr)

    def test_idle_traits_without_credentials_for_placement_is_one_line(self) -> None:
        with open(self.conf, "a") as conf:
            conf.write("[hpc_scheduler]\nidle_trait_interval = 10\n")
        done = subprocess.run(
            [sys.executable, "-m", "hpc_nova_scheduler.agent.main", "--config-file", self.conf],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
        self.assertEqual(2, done.returncode, done.stderr)
        lines = done.stderr.strip().splitlines()
        self.assertEqual(
            "hpc-scheduler-agent: [placement] auth_type is not set: idle_trait_interval = 10 "
            "needs nova.conf's credentials for Placement, as nova-scheduler uses them",
            lines[-1],
        )
        self.assertNotIn("Traceback", done.stderr)
