"""The real ``hpc-scheduler-collector`` process: it measures, reloads on SIGHUP, stops on SIGTERM.

No timing assertions: every wait is on state the collector writes (its
host's report), with bounds that only end a test that already failed.
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
from hpc_nova_scheduler.demo.measured_host import status_xml as status
from hpc_nova_scheduler.demo.resctrl_tree import ResctrlTree

ROOT = pathlib.Path(hpc_nova_scheduler.__file__).parent.parent
#: Seconds that only bound a wait for something that should come much sooner.
PATIENCE = 180.0
UUID = "11111111-0000-0000-0000-00000000000a"


class TestCollectorProcess(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.folder = pathlib.Path(self.useFixture(fixtures.TempDir()).path)
        self.tree = ResctrlTree(self.folder / "resctrl").lay_out()
        self.run_dir = self.folder / "qemu"
        self.run_dir.mkdir()
        self.conf = self.folder / "nova.conf"
        self.write_conf("cn1")
        self.database = db_api.Database(f"sqlite:///{self.folder}/hpc.sqlite")
        self.addCleanup(self.database.dispose)
        self.database.sync()

    def write_conf(self, host: str, connection: bool = True) -> None:
        self.conf.write_text(
            "[DEFAULT]\n"
            f"state_path = {self.folder}\n"
            "[hpc_scheduler]\n"
            + (f"connection = sqlite:///{self.folder}/hpc.sqlite\n" if connection else "")
            + "[hpc_collector]\n"
            "interval = 1\n"
            f"host = {host}\n"
            f"resctrl_root = {self.tree.root}\n"
            f"libvirt_run_dir = {self.run_dir}\n"
        )

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "hpc_nova_scheduler.collector.main",
            "--config-file",
            str(self.conf),
        ]

    def start(self) -> subprocess.Popen:
        with open(self.folder / "collector.log", "w") as log:
            collector = subprocess.Popen(
                self.command(),
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.addCleanup(self.kill, collector)
        return collector

    def kill(self, collector: subprocess.Popen) -> None:
        if collector.poll() is None:
            os.killpg(collector.pid, signal.SIGKILL)
            collector.wait()

    def log(self) -> str:
        return (self.folder / "collector.log").read_text()

    def wait_for_report(self, collector: subprocess.Popen, host: str) -> None:
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            self.assertIsNone(collector.poll(), self.log())
            if host in {
                h.host for h in self.database.measured_hosts()
            } and self.database.measured_samples(UUID):
                return
            time.sleep(0.5)
        self.fail(f"no report of {host}:\n{self.log()}")

    def test_measures_reloads_and_stops(self) -> None:
        (self.run_dir / "instance-0000000a.xml").write_text(
            status("instance-0000000a", UUID, os.getpid())
        )
        group = self.tree.add_monitoring_group(UUID)
        self.tree.set(group, "llc_occupancy", [2048, 2048])
        collector = self.start()
        self.wait_for_report(collector, "cn1")
        self.assertEqual(4096.0, self.database.measured_samples(UUID)[0].values["llc_occupancy"])
        # The collector wrote the instance's threads (this test's process) into its group.
        self.assertIn(str(os.getpid()), (group / "tasks").read_text().split())
        # SIGHUP: the options are read again.
        self.write_conf("cn1-renamed")
        os.kill(collector.pid, signal.SIGHUP)
        self.wait_for_report(collector, "cn1-renamed")
        # SIGTERM: a graceful stop, status 0.
        os.kill(collector.pid, signal.SIGTERM)
        self.assertEqual(0, collector.wait(timeout=PATIENCE), self.log())
        self.assertIn("stopped", self.log())
        self.assertNotIn("Traceback", self.log())

    def test_no_plugin_database_is_one_line(self) -> None:
        self.write_conf("cn1", connection=False)
        done = subprocess.run(
            self.command(), cwd=ROOT, capture_output=True, text=True, timeout=PATIENCE
        )
        self.assertEqual(2, done.returncode, done.stderr)
        lines = done.stderr.strip().splitlines()
        self.assertEqual(
            "hpc-scheduler-collector: [hpc_scheduler] connection is not set", lines[-1]
        )
        self.assertNotIn("Traceback", done.stderr)

    def test_a_bad_option_is_one_line_naming_it(self) -> None:
        with open(self.conf, "a") as conf:
            conf.write("interval = soon\n")
        done = subprocess.run(
            self.command(), cwd=ROOT, capture_output=True, text=True, timeout=PATIENCE
        )
        self.assertEqual(2, done.returncode, done.stderr)
        last = done.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith("hpc-scheduler-collector:"), done.stderr)
        self.assertIn("interval", last)
        self.assertNotIn("Traceback", done.stderr)
