"""The counter sources, on recorded data: perf's CSV and resctrl's files."""

from __future__ import annotations

from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler.characterise import counters

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
