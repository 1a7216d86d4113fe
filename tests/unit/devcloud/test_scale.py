"""The scale benchmark's readers: the scheduler's timing and the whole-cloud checker."""

from __future__ import annotations

import configparser
import datetime
import json
from pathlib import Path

import fixtures
import testtools
from oslo_config import cfg
from oslo_log import log as oslo_logging

from devcloud import config, scale
from devcloud.layout import STATE_FILE, Run

A = "11111111-2222-3333-4444-555555555555"
B = "66666666-7777-8888-9999-000000000000"
CONTEXT = (
    "[req-aaaa0000-0000-0000-0000-000000000001 req-bbbb{n:04d}-0000-0000-0000-000000000002"
    " admin admin - - default default]"
)


def line(when: str, pid: int, level: str, logger: str, n: int, message: str) -> str:
    return f"2026-11-29 {when} {pid} {level} {logger} {CONTEXT.format(n=n)} {message}"


START = "nova.scheduler.manager"
END = "oslo.messaging.notification.scheduler.select_destinations.end"
RPC = "oslo_messaging.rpc.server"


class TestSchedulerTimings(testtools.TestCase):
    def test_start_and_end_of_interleaved_calls_pair_by_worker_and_request(self) -> None:
        lines = [
            line(
                "05:00:00.100",
                10,
                "DEBUG",
                START,
                1,
                f"Starting to schedule for instances: ['{A}']",
            ),
            line(
                "05:00:00.150",
                11,
                "DEBUG",
                START,
                2,
                f"Starting to schedule for instances: ['{B}']",
            ),
            line("05:00:00.170", 10, "INFO", "nova.filters", 1, "something else"),
            "a line that is not oslo.log's",
            line("05:00:00.400", 11, "INFO", END, 2, '{"event_type": "..."}'),
            line(
                "05:00:01.100", 10, "DEBUG", RPC, 1, "Expected exception during message handling ()"
            ),
        ]
        first, second = scale.scheduler_timings(lines)
        self.assertEqual((A,), first.instances)
        self.assertAlmostEqual(1.0, first.seconds)
        self.assertTrue(first.refused)
        self.assertEqual((B,), second.instances)
        self.assertAlmostEqual(0.25, second.seconds)
        self.assertFalse(second.refused)

    def test_a_call_without_its_end_has_no_duration(self) -> None:
        lines = [
            line(
                "05:00:00.100",
                10,
                "DEBUG",
                START,
                1,
                f"Starting to schedule for instances: ['{A}', '{B}']",
            )
        ]
        (timing,) = scale.scheduler_timings(lines)
        self.assertIsNone(timing.seconds)
        self.assertEqual((A, B), timing.instances)
        self.assertEqual(datetime.datetime(2026, 11, 29, 5, 0, 0, 100000), timing.started)

    def test_an_end_of_another_request_does_not_close_a_call(self) -> None:
        lines = [
            line(
                "05:00:00.100",
                10,
                "DEBUG",
                START,
                1,
                f"Starting to schedule for instances: ['{A}']",
            ),
            line("05:00:00.200", 10, "INFO", END, 2, "{}"),
        ]
        (timing,) = scale.scheduler_timings(lines)
        self.assertIsNone(timing.ended)

    def test_read_timings_starts_at_an_offset(self) -> None:
        path = self.useFixture(fixtures.TempDir()).join("scheduler.log")
        old = line(
            "04:00:00.000", 10, "DEBUG", START, 1, f"Starting to schedule for instances: ['{B}']"
        )
        new = line(
            "05:00:00.000", 10, "DEBUG", START, 1, f"Starting to schedule for instances: ['{A}']"
        )
        with open(path, "w") as stream:
            stream.write(old + "\n" + new + "\n")
        (timing,) = scale.read_timings(Path(path), len(old) + 1)
        self.assertEqual((A,), timing.instances)


def nodes() -> dict[str, scale.Node]:
    found = {}
    for rack in range(2):
        for i in range(4):
            found[f"r{rack}n{i}"] = scale.Node(
                f"svc{rack}", f"rack-{rack}", "block-0", f"g{rack}", 32
            )
    return found


class TestCloud(testtools.TestCase):
    def test_one_rack_fits_counts_slots_of_one_rack_and_group(self) -> None:
        cloud = scale.Cloud(nodes())
        self.assertTrue(cloud.one_rack_fits(16, 8))  # 4 nodes x 4 slots
        self.assertFalse(cloud.one_rack_fits(17, 8))
        cloud.add("x", "r0n0", 8)
        self.assertTrue(cloud.one_rack_fits(16, 8))  # rack 1 is still whole
        cloud.add("y", "r1n0", 8)
        self.assertFalse(cloud.one_rack_fits(16, 8))
        cloud.remove("y")
        self.assertTrue(cloud.one_rack_fits(16, 8))

    def test_a_dedicated_node_has_no_room_and_is_not_idle(self) -> None:
        cloud = scale.Cloud(nodes())
        self.assertEqual(8, cloud.idle_nodes())
        cloud.add("e", "r0n0", 16, dedicated=True)
        self.assertEqual(0, cloud.free("r0n0"))
        self.assertEqual(7, cloud.idle_nodes())
        cloud.add("p", "r1n0", 2)
        self.assertFalse(cloud.one_rack_fits(16, 8))
        self.assertTrue(cloud.one_rack_fits(15, 8))
        cloud.remove("p")
        cloud.remove("e")
        self.assertEqual(32, cloud.free("r0n0"))
        self.assertEqual(8, cloud.idle_nodes())

    def test_adding_a_server_twice_or_on_an_unknown_node_changes_nothing(self) -> None:
        cloud = scale.Cloud(nodes())
        cloud.add("x", "r0n0", 8)
        cloud.add("x", "r0n1", 8)
        cloud.add("z", "elsewhere", 8)
        self.assertEqual(24, cloud.free("r0n0"))
        self.assertEqual(32, cloud.free("r0n1"))
        cloud.remove("unknown")

    def test_spread_counts_racks_blocks_groups_and_nodes(self) -> None:
        found = scale.spread(nodes(), ["r0n0", "r0n0", "r0n1", "r1n3", "gone"])
        self.assertEqual(scale.Spread(racks=2, blocks=1, cpu_groups=2, nodes=3), found)


def trial_run(test: testtools.TestCase, **settings) -> Run:
    """A two-compute run in a folder of ``test``'s, its ports set, nothing started."""
    root = test.useFixture(fixtures.TempDir()).path
    run = Run.new(
        Path(root),
        mysql="mysql+pymysql://root@127.0.0.1",
        rabbit="rabbit://guest:guest@127.0.0.1:5672",
        computes=2,
        scheduler_workers=4,
        plugin=True,
        **settings,
    )
    run.ports = dict.fromkeys(("placement", "glance", "neutron", "nova"), 1)
    return run


class TestTimingConfiguration(testtools.TestCase):
    def conf(self, timing: bool) -> cfg.ConfigOpts:
        run = trial_run(self, timing=timing)
        conf = cfg.ConfigOpts()
        oslo_logging.register_options(conf)
        conf.register_opts(
            [cfg.StrOpt("driver", default="noop")], group="oslo_messaging_notifications"
        )
        conf.register_opts(
            [cfg.StrOpt("notification_format", default="unversioned")], group="notifications"
        )
        self.written = config.nova_conf(run)
        conf(["--config-file", str(self.written)], project="nova")
        return conf

    def test_the_scheduler_logs_its_calls_at_debug_and_the_rest_as_before(self) -> None:
        conf = self.conf(timing=True)
        levels = conf.default_log_levels
        for entry in scale.TIMING_LOG_LEVELS:
            self.assertIn(entry, levels)
        # oslo.log's own quiet loggers stay quiet.
        self.assertTrue(set(oslo_logging.get_default_log_levels()) <= set(levels))
        self.assertFalse(conf.debug)
        self.assertEqual("log", conf.oslo_messaging_notifications.driver)
        self.assertEqual("versioned", conf.notifications.notification_format)

    def test_without_timing_nothing_changes(self) -> None:
        conf = self.conf(timing=False)
        # The option keeps its default (which Nova's own setup may have
        # changed in this process): the file does not set it.
        self.assertNotIn("default_log_levels", self.written.read_text())
        self.assertEqual("noop", conf.oslo_messaging_notifications.driver)


class TestHotFrames(testtools.TestCase):
    def test_inclusive_and_self_shares_of_collapsed_stacks(self) -> None:
        lines = [
            "main (a.py:1);filter (b.py:2);host_passes (c.py:3) 6",
            "main (a.py:1);filter (b.py:2) 2",
            "main (a.py:1);weigh (d.py:4);main (a.py:1) 2",
            "garbage",
        ]
        found = {frame: (inc, own) for frame, inc, own in scale.hot_frames(lines)}
        self.assertEqual((1.0, 0.2), found["main (a.py:1)"])
        self.assertEqual((0.8, 0.2), found["filter (b.py:2)"])
        self.assertEqual((0.6, 0.6), found["host_passes (c.py:3)"])
        self.assertEqual([], scale.hot_frames([]))
        self.assertEqual(2, len(scale.hot_frames(lines, top=2)))
        within = scale.hot_frames(lines, within=("b.py", "c.py"))
        self.assertEqual(
            [("filter (b.py:2)", 0.8, 0.2), ("host_passes (c.py:3)", 0.6, 0.6)], within
        )


class TestReconcileInterval(testtools.TestCase):
    def run_with(self, **settings) -> Run:
        return trial_run(self, **settings)

    def written(self, run: Run) -> int:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.read(config.nova_conf(run))
        return parser.getint("hpc_scheduler", "reconcile_interval")

    def test_the_trial_cloud_sweeps_often_and_a_run_may_set_the_products_default(self) -> None:
        self.assertEqual(config.RECONCILE_INTERVAL, self.written(self.run_with()))
        self.assertEqual(60, self.written(self.run_with(reconcile_interval=60)))

    def test_a_run_saved_before_the_setting_loads_with_the_trial_clouds_interval(self) -> None:
        run = self.run_with(reconcile_interval=60)
        run.save()
        saved = json.loads((run.path / STATE_FILE).read_text())
        del saved["reconcile_interval"]
        (run.path / STATE_FILE).write_text(json.dumps(saved))
        self.assertEqual(config.RECONCILE_INTERVAL, Run.load(run.path).reconcile_interval)
