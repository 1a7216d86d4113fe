"""The collector's sampler on a resctrl tree that the test drives over time."""

from __future__ import annotations

import datetime
from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler.characterise.counters import ResctrlMount
from hpc_nova_scheduler.collector.sampler import Sampler
from hpc_nova_scheduler.demo.resctrl_tree import ERROR, UNAVAILABLE, ResctrlTree

WALL = datetime.datetime(2026, 11, 29, 12, 0, 0)
A = "11111111-0000-0000-0000-00000000000a"
B = "11111111-0000-0000-0000-00000000000b"
MiB = 2**20


class TestSampler(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.said: list[str] = []
        root = Path(self.useFixture(fixtures.TempDir()).path) / "resctrl"
        self.tree = ResctrlTree(root, llc_bytes_per_domain=30 * MiB).lay_out()
        self.paths = {A: self.tree.add_monitoring_group(A), B: self.tree.add_monitoring_group(B)}
        self.groups = {uuid: [path] for uuid, path in self.paths.items()}

    def sampler(self, root: Path | None = None) -> Sampler:
        return Sampler("cn1", ResctrlMount(root or self.tree.root), self.said.append)

    def test_occupancy_at_once_and_bandwidth_from_the_growth_of_the_counters(self) -> None:
        sampler = self.sampler()
        self.tree.set(self.paths[A], "llc_occupancy", [4 * MiB, 2 * MiB])
        self.tree.set(self.paths[A], "mbm_total_bytes", [1000, 0])
        report, samples = sampler.sample(self.groups, 100.0, WALL)
        self.assertEqual(60 * MiB, report.llc_bytes)
        self.assertEqual(("llc_occupancy", "mbm_total_bps", "mbm_local_bps"), report.measures)
        self.assertEqual(((), []), (tuple(report.problems), self.said))
        by_uuid = {s.instance_uuid: s.values for s in samples}
        # The first read has no bandwidth yet.
        self.assertEqual({"llc_occupancy": 6.0 * MiB}, by_uuid[A])
        self.tree.set(self.paths[A], "mbm_total_bytes", [21000, 10000])
        self.tree.set(self.paths[A], "mbm_local_bytes", [5000, 5000])
        _, samples = sampler.sample(self.groups, 110.0, WALL + datetime.timedelta(seconds=10))
        by_uuid = {s.instance_uuid: s.values for s in samples}
        self.assertEqual(3000.0, by_uuid[A]["mbm_total_bps"])
        self.assertEqual(1000.0, by_uuid[A]["mbm_local_bps"])
        self.assertEqual(0.0, by_uuid[B]["mbm_total_bps"])

    def test_a_counter_that_went_down_starts_over(self) -> None:
        sampler = self.sampler()
        self.tree.set(self.paths[A], "mbm_total_bytes", [5000, 5000])
        sampler.sample(self.groups, 0.0, WALL)
        self.tree.set(self.paths[A], "mbm_total_bytes", [100, 0])
        _, samples = sampler.sample(self.groups, 10.0, WALL)
        self.assertNotIn("mbm_total_bps", samples[0].values)
        self.tree.set(self.paths[A], "mbm_total_bytes", [600, 0])
        _, samples = sampler.sample(self.groups, 20.0, WALL)
        self.assertEqual(50.0, samples[0].values["mbm_total_bps"])

    def test_unavailable_is_left_out_and_said_once(self) -> None:
        sampler = self.sampler()
        for group in self.paths.values():
            self.tree.set(group, "llc_occupancy", [UNAVAILABLE, 1])
        for second in range(3):
            _, samples = sampler.sample(self.groups, float(second), WALL)
            self.assertEqual([False, False], ["llc_occupancy" in s.values for s in samples])
        self.assertEqual(1, len(self.said), self.said)
        self.assertIn("llc_occupancy unreadable", self.said[0])
        self.assertIn("'Unavailable'", self.said[0])
        # Another kind of problem with the same counter is news.
        self.tree.set(self.paths[A], "llc_occupancy", [ERROR, 1])
        sampler.sample(self.groups, 4.0, WALL)
        self.assertEqual(2, len(self.said))
        self.assertIn("'Error'", self.said[1])

    def test_no_resctrl_is_said_once_and_nothing_is_recorded_as_zero(self) -> None:
        missing = Path(self.useFixture(fixtures.TempDir()).path) / "nothing"
        sampler = self.sampler(missing)
        report, samples = sampler.sample({}, 0.0, WALL)
        sampler.sample({}, 10.0, WALL)
        self.assertEqual(1, len(self.said))
        self.assertIn(f"resctrl is not mounted at {missing}", self.said[0])
        self.assertEqual(
            ({}, (), None, []), (report.totals, report.measures, report.llc_bytes, samples)
        )
        self.assertEqual(1, len(report.problems))

    def test_a_host_that_monitors_occupancy_only_says_so_once(self) -> None:
        root = Path(self.useFixture(fixtures.TempDir()).path) / "occupancy-only"
        tree = ResctrlTree(root, features=("llc_occupancy",)).lay_out()
        group = tree.add_monitoring_group(A)
        tree.set(group, "llc_occupancy", [10, 20])
        sampler = self.sampler(root)
        sampler.sample({A: [group]}, 0.0, WALL)
        report, samples = sampler.sample({A: [group]}, 10.0, WALL)
        self.assertEqual(("llc_occupancy",), report.measures)
        self.assertEqual({"llc_occupancy": 30.0}, samples[0].values)
        self.assertEqual(1, len(self.said))
        self.assertIn("does not monitor mbm_total_bytes, mbm_local_bytes", self.said[0])

    def test_an_instance_of_several_groups_is_their_sum(self) -> None:
        sampler = self.sampler()
        self.tree.set(self.paths[A], "llc_occupancy", [1, 2])
        self.tree.set(self.paths[B], "llc_occupancy", [3, 4])
        _, samples = sampler.sample({A: [self.paths[A], self.paths[B]]}, 0.0, WALL)
        self.assertEqual({"llc_occupancy": 10.0}, samples[0].values)

    def test_host_totals_count_every_control_group(self) -> None:
        sampler = self.sampler()
        self.tree.set(self.tree.root, "llc_occupancy", [8 * MiB, 8 * MiB])
        tune = self.tree.add_control_group("qemu-3-instance-00000003-vcpus_0-3")
        self.tree.set(tune, "llc_occupancy", [MiB, 0])
        report, _ = sampler.sample(self.groups, 0.0, WALL)
        self.assertEqual(17.0 * MiB, report.totals["llc_occupancy"])
