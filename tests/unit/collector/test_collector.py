"""The collector of one host, interval after interval, into a real plugin database."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler.collector.collector import Collector, Settings
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.demo.measured_host import status_xml as status
from hpc_nova_scheduler.demo.resctrl_tree import UNAVAILABLE, ResctrlTree

T0 = datetime.datetime(2026, 11, 29, 12, 0, 0)
A = "11111111-0000-0000-0000-00000000000a"
B = "11111111-0000-0000-0000-00000000000b"
MiB = 2**20


class TestCollector(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        folder = Path(self.useFixture(fixtures.TempDir()).path)
        self.database = db_api.Database(f"sqlite:///{folder / 'hpc.sqlite'}")
        self.addCleanup(self.database.dispose)
        self.database.sync()
        self.run_dir = folder / "qemu"
        self.run_dir.mkdir()
        self.tree = ResctrlTree(folder / "resctrl").lay_out()
        self.settings = Settings(
            "cn1", self.tree.root, self.run_dir, 60.0, datetime.timedelta(hours=1)
        )
        self.clock = 0.0
        self.said: list[str] = []

    def collector(self) -> Collector:
        return Collector(
            self.database,
            self.settings,
            self.said.append,
            clock=lambda: self.clock,
            now=lambda: T0 + datetime.timedelta(seconds=self.clock),
            threads=lambda pid: {pid},
        )

    def boot(self, uuid: str, name: str, pid: int) -> Path:
        (self.run_dir / f"{name}.xml").write_text(status(name, uuid, pid))
        # The kernel populates a group at mkdir; the tree does it here, first.
        return self.tree.add_monitoring_group(uuid)

    def test_instances_measured_reduced_and_written_interval_after_interval(self) -> None:
        a = self.boot(A, "instance-0000000a", 101)
        b = self.boot(B, "instance-0000000b", 102)
        self.tree.set(a, "llc_occupancy", [4 * MiB, 0])
        self.tree.set(b, "llc_occupancy", [MiB, 0])
        collector = self.collector()
        first = collector.collect()
        self.assertEqual({A, B}, {s.instance_uuid for s in first.samples})
        self.assertEqual("101\n", (a / "tasks").read_text())
        (host,) = self.database.measured_hosts()
        self.assertEqual(("cn1", 60 * MiB, T0), (host.host, host.llc_bytes, host.reported_at))
        self.assertEqual(
            4.0 * MiB, self.database.measured_instances()[A].figures["llc_occupancy"].mean
        )

        # Ten seconds on: A streams 1 MB/s, B is gone.
        self.clock = 10.0
        self.tree.set(a, "mbm_total_bytes", [10 * 10**6, 0])
        (self.run_dir / "instance-0000000b.xml").unlink()
        second = collector.collect()
        self.assertEqual([A], [s.instance_uuid for s in second.samples])
        self.assertEqual(10**6, second.samples[0].values["mbm_total_bps"])
        self.assertFalse(b.exists())
        figures = self.database.measured_instances()[A].figures
        self.assertEqual(2, figures["llc_occupancy"].samples)
        self.assertEqual(1, figures["mbm_total_bps"].samples)
        self.assertEqual(
            3, len(self.database.measured_samples(A)) + len(self.database.measured_samples(B))
        )
        self.assertEqual([], self.said)

        # A restarted collector goes on from the stored figures.
        self.clock = 20.0
        third = self.collector().collect()
        self.assertEqual(3, third.figures[A]["llc_occupancy"].samples)

    def test_what_cannot_be_read_is_said_once_and_stored_as_unknown(self) -> None:
        a = self.boot(A, "instance-0000000a", 101)
        self.tree.set(a, "llc_occupancy", [UNAVAILABLE, 0])
        (self.run_dir / "broken.xml").write_text("<domstatus")
        collector = self.collector()
        for second in range(3):
            self.clock = float(second)
            collected = collector.collect()
        # Occupancy is unknown, never zero; the bandwidth (the second read on) is known.
        self.assertEqual(
            [{}] + [{"mbm_total_bps": 0.0, "mbm_local_bps": 0.0}] * 2,
            [s.values for s in self.database.measured_samples(A)],
        )
        self.assertNotIn("llc_occupancy", collected.figures[A])
        self.assertEqual(2, len(self.said), self.said)
        self.assertTrue(any("broken.xml" in line for line in self.said))
        self.assertTrue(any("'Unavailable'" in line for line in self.said))

    def test_a_host_without_resctrl_reports_so_and_makes_no_group(self) -> None:
        self.settings = Settings(
            "cn1", self.run_dir.parent / "none", self.run_dir, 60.0, datetime.timedelta(hours=1)
        )
        (self.run_dir / "instance-0000000a.xml").write_text(
            status("instance-0000000a", A, os.getpid())
        )
        collector = self.collector()
        collected = collector.collect()
        collector.collect()
        self.assertEqual([], collected.samples)
        (host,) = self.database.measured_hosts()
        self.assertEqual((), host.measures)
        self.assertIn("resctrl is not mounted", host.problems[0])
        self.assertEqual(1, len(self.said))
