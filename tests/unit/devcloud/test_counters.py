"""``up --measured``: the fake computes' counters and configuration; a real collector reads them."""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import sys
from pathlib import Path

import fixtures
import testtools
from hypothesis import given
from hypothesis import strategies as st
from oslo_config import cfg

from devcloud import cli, config, control, counters, fake_pmu, measured_collector
from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.collector import domains as collector_domains
from hpc_nova_scheduler.collector.collector import Collector, Settings
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.demo.measured_host import status_xml
from hpc_nova_scheduler.demo.resctrl_tree import ResctrlTree
from hpc_nova_scheduler.interference.cache_pressure import CachePressureModel
from hpc_nova_scheduler.measured import pressure
from tests.unit.devcloud.test_scale import trial_run

LLC = 60 * 2**20
MODEL = CachePressureModel()
UUIDS = [f"00000000-0000-4000-8000-{n:012d}" for n in range(1, 9)]


class TestGroundTruth(testtools.TestCase):
    def test_a_guest_alone_holds_its_share_of_the_cache(self) -> None:
        found = counters.host_counters([counters.Guest(UUIDS[0], 30.0)], LLC, MODEL)
        self.assertEqual(LLC // 2, found[UUIDS[0]].occupancy)
        # Seed 003's unit: 100,000 misses a second of 64-byte lines, no slowdown alone.
        self.assertEqual(30 * 100_000 * 64, found[UUIDS[0]].bytes_per_second)

    def test_past_the_knee_the_cache_is_shared_in_proportion_and_misses_grow(self) -> None:
        guests = [counters.Guest(UUIDS[0], 45.0), counters.Guest(UUIDS[1], 40.0)]
        found = counters.host_counters(guests, LLC, MODEL)
        self.assertAlmostEqual(LLC * 45 / 85, found[UUIDS[0]].occupancy, delta=1)
        self.assertAlmostEqual(LLC * 40 / 85, found[UUIDS[1]].occupancy, delta=1)
        self.assertGreater(found[UUIDS[0]].bytes_per_second, 45 * 100_000 * 64)

    @given(st.lists(st.floats(min_value=0, max_value=200), min_size=1, max_size=8))
    def test_the_cache_never_holds_more_than_it_has(self, scores: list[float]) -> None:
        guests = [counters.Guest(UUIDS[i], s) for i, s in enumerate(scores)]
        found = counters.host_counters(guests, LLC, MODEL)
        self.assertLessEqual(sum(c.occupancy for c in found.values()), LLC)
        for guest in guests:
            # No guest holds more than it wants; none is slowed to less than alone.
            self.assertLessEqual(found[guest.uuid].occupancy, LLC * guest.cache_score / 60 + 1)
            alone = guest.cache_score * 100_000 * 64
            self.assertGreaterEqual(found[guest.uuid].bytes_per_second, alone * (1 - 1e-9))


class TestStatusFiles(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.folder = Path(self.useFixture(fixtures.TempDir()).path)

    def test_only_guests_with_a_workload_are_driven(self) -> None:
        (self.folder / "a.xml").write_text(status_xml("a", UUIDS[0], 7, cache_score=55))
        (self.folder / "b.xml").write_text(status_xml("b", UUIDS[1], 7))
        (self.folder / "c.xml").write_text("<domstatus><domain>")
        (self.folder / "d.xml").write_text(
            status_xml("d", UUIDS[2], 7, cache_score=1).replace("cache_score='1'", "cache_score=''")
        )
        self.assertEqual(
            [counters.Guest(UUIDS[0], 55.0, "a", 4)], counters.read_guests(self.folder)
        )

    def test_phases_the_stress_writes_and_what_a_bad_file_gives(self) -> None:
        path = self.folder / counters.PHASES_FILE
        self.assertEqual({}, counters.read_phases(path))
        counters.write_phases(self.folder, {UUIDS[0].upper(): 45.0})
        self.assertEqual({UUIDS[0]: 45.0}, counters.read_phases(path))
        for text in ("[1]", "{not json", json.dumps({UUIDS[0]: -1, UUIDS[1]: "x"})):
            path.write_text(text)
            self.assertEqual({}, counters.read_phases(path))


class TestHost(testtools.TestCase):
    """The counters of one fake compute, read by a real collector."""

    def setUp(self) -> None:
        super().setUp()
        self.folder = Path(self.useFixture(fixtures.TempDir()).path) / "compute-00"
        self.tree = ResctrlTree(self.folder / "resctrl").lay_out()
        (self.folder / "qemu").mkdir()
        self.host = counters.Host(self.folder)

    def start(self, uuid: str, score: float) -> None:
        name = f"instance-{UUIDS.index(uuid) + 1:08x}"
        (self.folder / "qemu" / f"{name}.xml").write_text(
            status_xml(name, uuid, os.getpid(), cache_score=score)
        )
        self.tree.ensure_monitoring_group(uuid)

    def stop(self, uuid: str) -> None:
        name = f"instance-{UUIDS.index(uuid) + 1:08x}"
        (self.folder / "qemu" / f"{name}.xml").unlink()

    def test_counters_grow_and_the_host_total_never_goes_back(self) -> None:
        self.start(UUIDS[0], 30.0)
        self.start(UUIDS[1], 20.0)
        self.assertEqual(2, self.host.tick({}, 10.0, MODEL))
        group = self.tree.root / "mon_groups" / UUIDS[0]
        self.assertEqual(LLC // 2, sum(self.tree.read(group, "llc_occupancy")))
        self.assertEqual(30 * 100_000 * 64 * 10, sum(self.tree.read(group, "mbm_total_bytes")))
        host_moved = sum(self.tree.read(self.tree.root, "mbm_total_bytes"))
        self.assertEqual(50 * 100_000 * 64 * 10, host_moved)
        self.stop(UUIDS[0])
        self.assertEqual(1, self.host.tick({}, 10.0, MODEL))
        self.assertGreater(sum(self.tree.read(self.tree.root, "mbm_total_bytes")), host_moved)
        self.assertEqual(LLC // 3, sum(self.tree.read(self.tree.root, "llc_occupancy")))

    def test_a_phase_changes_what_the_collector_measures(self) -> None:
        database = db_api.Database("sqlite://")
        self.addCleanup(database.dispose)
        database.sync()
        said: list[str] = []
        at = [datetime.datetime(2026, 11, 30, 12, 0, 0)]
        collector = Collector(
            database,
            Settings(
                "compute-00",
                self.tree.root,
                self.folder / "qemu",
                10.0,
                datetime.timedelta(hours=1),
            ),
            said.append,
            now=lambda: at[0],
        )
        settings = pressure.Settings(source=pressure.MEASURED, min_samples=3)

        def measured() -> float | None:
            reports = {r.host: r for r in database.measured_hosts()}
            return pressure.Scores(
                settings, reports, database.measured_instances(), at[0]
            ).measured(UUIDS[0])

        self.start(UUIDS[0], 10.0)
        for _ in range(3):
            self.host.tick({}, 2.0, MODEL)
            collector.collect()
            at[0] += datetime.timedelta(seconds=2)
        self.assertAlmostEqual(10.0, measured(), places=3)
        # The application enters a phase of 55: within a few half-lives the
        # decayed mean is there.
        for _ in range(30):
            self.host.tick({UUIDS[0]: 55.0}, 2.0, MODEL)
            collector.collect()
            at[0] += datetime.timedelta(seconds=2)
        self.assertAlmostEqual(55.0, measured(), delta=1.0)
        self.assertEqual([], [line for line in said if "perf" not in line])


class TestFakePmu(testtools.TestCase):
    """The collector's own CPI counting (``CgroupCPI``) on the fake PMU."""

    def test_a_guest_slowed_by_a_neighbour_has_its_cpi_raised_by_the_slowdown(self) -> None:
        folder = Path(self.useFixture(fixtures.TempDir()).path) / "compute-00"
        tree = ResctrlTree(folder / "resctrl").lay_out()
        (folder / "qemu").mkdir()
        for number, (uuid, score) in enumerate([(UUIDS[0], 40.0), (UUIDS[1], 80.0)], 1):
            name = f"instance-{number:08x}"
            (folder / "qemu" / f"{name}.xml").write_text(
                status_xml(name, uuid, os.getpid(), vcpus=2, cache_score=score)
            )
            tree.ensure_monitoring_group(uuid)
        host = counters.Host(folder)
        said: list[str] = []
        # As devcloud.measured_collector grafts it.
        self.useFixture(
            fixtures.MonkeyPatch(
                "hpc_nova_scheduler.collector.perf.read_counter", fake_pmu.read_counter
            )
        )
        cpi = measured_collector.FakePmuCPI(folder / "cgroup", said.append)
        self.addCleanup(cpi.close)
        self.assertIsNone(cpi.problem)
        domains = collector_domains.running(folder / "qemu").domains
        host.tick({}, 2.0, MODEL)
        self.assertEqual({}, cpi.sample(domains))  # the first read is the baseline
        host.tick({}, 2.0, MODEL)
        found = cpi.sample(domains)
        # 40 beside 80: 120 against a knee of 60 slows the 40 by 1 + (40/60)(60/60).
        self.assertAlmostEqual(1 + 40 / 60, found[UUIDS[0]], places=6)
        self.assertAlmostEqual(1 + 80 / 60, found[UUIDS[1]], places=6)
        self.assertEqual([], said)

    def test_only_cycles_and_instructions_are_counted(self) -> None:
        self.assertRaises(OSError, fake_pmu.open_counter, 1, 0, -1, 0, 0)
        self.assertRaises(OSError, fake_pmu.open_counter, 0, 7, -1, 0, 0)


class TestMain(testtools.TestCase):
    def test_a_folder_without_trees_is_one_line_and_exit_2(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        for argv in (["--folder", folder], ["--folder", f"{folder}/none"]):
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr):
                self.assertEqual(2, counters.main(argv))
            self.assertEqual(1, len(stderr.getvalue().splitlines()), stderr.getvalue())
            self.assertIn("--folder", stderr.getvalue())


class TestConfiguration(testtools.TestCase):
    def test_each_compute_has_its_driver_and_collector_and_the_schedulers_the_options(
        self,
    ) -> None:
        run = trial_run(self, measured=True, cache_source="max")
        config.write_all(run)
        conf = cfg.ConfigOpts()
        hpc_conf.register_collector_opts(conf)
        conf.register_opts([cfg.StrOpt("compute_driver"), cfg.StrOpt("host")])
        conf(["--config-file", str(run.path / "etc" / "compute-01.conf")], project="nova")
        self.assertEqual(config.MEASURED_DRIVER, conf.compute_driver)
        folder = run.measured_folder("compute-01")
        self.assertEqual(str(folder / "resctrl"), conf.hpc_collector.resctrl_root)
        self.assertEqual(str(folder / "qemu"), conf.hpc_collector.libvirt_run_dir)
        self.assertEqual(config.COLLECTOR_INTERVAL, conf.hpc_collector.interval)
        # The tree is laid out as the kernel lays it out, for the counters.
        self.assertEqual(LLC, counters.Host(folder).llc_bytes)
        scheduler = cfg.ConfigOpts()
        scheduler.register_opts(hpc_conf.ALL_OPTS, group="hpc_scheduler")
        scheduler(["--config-file", str(run.path / "etc" / "nova.conf")], project="nova")
        self.assertEqual("max", scheduler.hpc_scheduler.cache_pressure_source)
        for option, value in config.MEASURED.items():
            self.assertEqual(value, scheduler.hpc_scheduler[option], option)
        command = control.collector_command(run, "compute-01")
        self.assertEqual([sys.executable, "-m", "devcloud.measured_collector"], command[:3])
        self.assertEqual(str(folder / "cgroup"), conf.hpc_collector.cgroup_root)
        self.assertEqual(str(run.path / "etc" / "compute-01.conf"), command[-1])

    def test_a_cloud_without_measured_computes_is_as_before(self) -> None:
        run = trial_run(self)
        config.write_all(run)
        text = (run.path / "etc" / "compute-00.conf").read_text()
        self.assertNotIn("hpc_collector", text)
        self.assertNotIn("compute_driver", text)
        self.assertFalse(run.measured_folder().exists())

    def test_measured_computes_have_one_node_each(self) -> None:
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            code = cli.main(["--root", "/nonexistent", "up", "--nodes", "8", "--measured"])
        self.assertEqual(2, code)
        self.assertIn("--measured", stdout.getvalue())
