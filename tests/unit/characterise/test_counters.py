"""The counter sources, on recorded data: perf's CSV and resctrl's files."""

from __future__ import annotations

from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler.characterise import counters
from hpc_nova_scheduler.demo.resctrl_tree import ERROR, UNAVAILABLE, ResctrlTree

#: ``perf stat -x , -e ...`` on a machine without hardware counters (recorded here).
PERF_NO_HARDWARE = """\
# started on Sun Nov 22 13:40:00 2026

<not supported>,,cycles,0,100.00,,
<not supported>,,instructions,0,100.00,,
<not supported>,,cache-misses,0,100.00,,
<not supported>,,cache-references,0,100.00,,
50,,page-faults,676830,100.00,,
1,,context-switches,676830,100.00,,
0,,cpu-migrations,676830,100.00,,
"""

#: The same on a machine with them (user-space events carry a modifier).
PERF_HARDWARE = """\
1234567,,cycles:u,1000,100.00,,
2345678,,instructions:u,1000,100.00,1.90,insn per cycle
3456,,cache-misses:u,1000,100.00,12.5,of all cache refs
27648,,cache-references:u,1000,100.00,,
<not counted>,,branch-misses:u,0,0.00,,
7,,page-faults:u,1000,100.00,,
"""


class TestPerf(testtools.TestCase):
    def test_unsupported_events_are_named_not_zero(self) -> None:
        result = counters.parse_perf(PERF_NO_HARDWARE)
        self.assertEqual(
            {"page_faults": 50.0, "context_switches": 1.0, "cpu_migrations": 0.0}, result.values
        )
        self.assertEqual(
            ["cycles", "instructions", "cache_misses", "cache_references"], result.unsupported
        )

    def test_hardware_events_with_modifiers(self) -> None:
        result = counters.parse_perf(PERF_HARDWARE)
        self.assertEqual(1234567.0, result.values["cycles"])
        self.assertEqual(27648.0, result.values["cache_references"])
        self.assertEqual(["branch_misses"], result.unsupported)

    def test_the_command(self) -> None:
        command = counters.perf_command("/tmp/x.csv")
        self.assertEqual(["perf", "stat", "-x", ",", "-o", "/tmp/x.csv", "-e"], command[:7])
        self.assertEqual("--", command[-1])
        self.assertIn("cache-misses", command[7])


class TestResctrl(testtools.TestCase):
    def test_occupancy_and_bandwidth_summed_over_domains(self) -> None:
        root = Path(self.useFixture(fixtures.TempDir()).path)
        (root / "mon_groups").mkdir()
        self.assertTrue(counters.ResctrlGroup.available(root))
        group = counters.ResctrlGroup(root, "g")
        group.create()
        for domain, (occupancy, total) in {"mon_L3_00": (1024, 10), "mon_L3_01": (2048, 5)}.items():
            folder = group.path / "mon_data" / domain
            folder.mkdir(parents=True)
            (folder / "llc_occupancy").write_text(f"{occupancy}\n")
            (folder / "mbm_total_bytes").write_text(f"{total}\n")
        (group.path / "mon_data" / "mon_L3_01" / "mbm_local_bytes").write_text("Unavailable\n")
        self.assertEqual({"llc_occupancy": 3072.0, "mbm_total_bytes": 15.0}, group.read())
        group.add(4242)
        self.assertEqual("4242\n", (group.path / "tasks").read_text())

    def test_not_mounted(self) -> None:
        root = Path(self.useFixture(fixtures.TempDir()).path)
        self.assertFalse(counters.ResctrlGroup.available(root))


class TestResctrlMount(testtools.TestCase):
    """The mount as a whole, on a tree laid out as the kernel lays it out."""

    def tree(self, **options) -> ResctrlTree:
        root = Path(self.useFixture(fixtures.TempDir()).path) / "resctrl"
        return ResctrlTree(root, **options).lay_out()

    def test_what_cannot_be_measured_is_one_line_naming_the_path(self) -> None:
        root = Path(self.useFixture(fixtures.TempDir()).path)
        self.assertEqual(f"resctrl is not mounted at {root}", counters.ResctrlMount(root).problem())
        no_monitoring = self.tree(features=())
        problem = counters.ResctrlMount(no_monitoring.root).problem()
        self.assertIn("no L3 monitoring", problem)
        self.assertIn(str(no_monitoring.root), problem)
        self.assertNotIn("\n", problem)
        only_bandwidth = self.tree(features=("mbm_total_bytes",))
        self.assertIsNone(counters.ResctrlMount(only_bandwidth.root).problem())
        self.assertEqual(["mbm_total_bytes"], counters.ResctrlMount(only_bandwidth.root).features())

    def test_groups_of_every_control_group_and_the_host_totals(self) -> None:
        tree = self.tree()
        mine = tree.add_monitoring_group("vm-a")
        tune = tree.add_control_group("qemu-2-instance-00000002-vcpus_0-3")
        theirs = tree.add_monitoring_group("vcpus_0-3", control=tune.name)
        mount = counters.ResctrlMount(tree.root)
        self.assertEqual(
            {"vm-a": mine, f"{tune.name}/vcpus_0-3": theirs}, mount.monitoring_groups()
        )
        # A control group's mon_data counts its monitoring groups' tasks too.
        tree.set(mine, "llc_occupancy", [100, 20])
        tree.set(tree.root, "llc_occupancy", [300, 20])
        tree.set(theirs, "llc_occupancy", [50, 0])
        tree.set(tune, "llc_occupancy", [70, 5])
        tree.set(tree.root, "mbm_total_bytes", [1, 2])
        tree.set(tune, "mbm_total_bytes", [3, 4])
        totals = mount.totals()
        self.assertEqual(
            {"llc_occupancy": 395.0, "mbm_total_bytes": 10.0, "mbm_local_bytes": 0.0},
            totals.values,
        )
        self.assertEqual({}, totals.unreadable)
        self.assertEqual(120.0, counters.read_mon_data(mine / "mon_data").values["llc_occupancy"])

    def test_a_counter_the_kernel_cannot_read_is_left_out_and_named(self) -> None:
        tree = self.tree()
        group = tree.add_monitoring_group("vm-a")
        tree.set(group, "llc_occupancy", [4096, 8192])
        tree.set(group, "mbm_total_bytes", [10, ERROR])
        tree.set(group, "mbm_local_bytes", [UNAVAILABLE, 3])
        sample = counters.ResctrlGroup(tree.root, "vm-a").sample()
        # Never a partial sum, never zero for unknown.
        self.assertEqual({"llc_occupancy": 12288.0}, sample.values)
        self.assertEqual({"mbm_total_bytes", "mbm_local_bytes"}, set(sample.unreadable))
        self.assertIn("mon_L3_01/mbm_total_bytes: 'Error'", sample.unreadable["mbm_total_bytes"])
        self.assertIn(
            "mon_L3_00/mbm_local_bytes: 'Unavailable'", sample.unreadable["mbm_local_bytes"]
        )
        # The host's totals cannot count what one group's files hide.
        tree.set(tree.root, "mbm_local_bytes", [UNAVAILABLE, 1])
        self.assertNotIn("mbm_local_bytes", counters.ResctrlMount(tree.root).totals().values)

    def test_a_file_that_is_not_a_counter_is_named(self) -> None:
        tree = self.tree(domains=1)
        group = tree.add_monitoring_group("vm-a")
        tree.set(group, "llc_occupancy", ["-12"])
        file = group / "mon_data" / "mon_L3_00" / "mbm_total_bytes"
        file.unlink()
        file.mkdir()
        sample = counters.read_mon_data(group / "mon_data")
        self.assertEqual({"mbm_local_bytes": 0.0}, sample.values)
        self.assertIn("'-12'", sample.unreadable["llc_occupancy"])
        self.assertIn(str(file), sample.unreadable["mbm_total_bytes"])

    def test_the_llc_size_is_what_the_default_groups_full_mask_covers(self) -> None:
        tree = self.tree(domains=2, llc_bytes_per_domain=32 * 2**20)
        mount = counters.ResctrlMount(tree.root)
        self.assertEqual(64 * 2**20, mount.llc_bytes())
        (tree.root / "size").write_text("MB:0=100;1=100\nL3:0=abc;1=5\n")
        self.assertIsNone(mount.llc_bytes())
        (tree.root / "size").unlink()
        self.assertIsNone(mount.llc_bytes())

    def test_a_group_that_has_gone_reads_as_nothing(self) -> None:
        tree = self.tree()
        sample = counters.read_mon_data(tree.root / "mon_groups" / "gone" / "mon_data")
        self.assertEqual(({}, {}), (sample.values, sample.unreadable))


class TestMeans(testtools.TestCase):
    def test_mean_of_counters_every_run_has(self) -> None:
        self.assertEqual({"a": 2.0}, counters.mean_counters([{"a": 1.0, "b": 3.0}, {"a": 3.0}]))

    def test_seed_000_metrics_from_resource_usage(self) -> None:
        # A recorded run: 2 s of wall time, 1.5 s user, 0.1 s system,
        # 4,000 blocks read and 2,000 written.
        usage = {
            "ru_utime": 1.5,
            "ru_stime": 0.1,
            "ru_maxrss": 1000,
            "ru_minflt": 1,
            "ru_majflt": 0,
            "ru_nvcsw": 1,
            "ru_nivcsw": 1,
            "ru_inblock": 4000,
            "ru_oublock": 2000,
        }
        found = counters.rusage_counters(usage, 2.0)
        self.assertEqual(
            {"cpu_user": 75.0, "cpu_idle": 20.0, "disk_read": 1.024, "disk_write": 0.512},
            counters.solo_metrics(found, 2.0),
        )
        self.assertEqual({}, counters.solo_metrics(found, 0.0))
