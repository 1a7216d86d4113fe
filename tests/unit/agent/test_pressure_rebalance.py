"""``measured-rebalance`` against a real plugin database: which hosts, under which lease."""

from __future__ import annotations

import datetime
from pathlib import Path

import fixtures
import testtools
from oslo_config import fixture as config_fixture
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.agent import pressure_rebalance
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db.measured import Figure, HostReport

LLC = 60 * 2**20


def no_connection():
    raise AssertionError("a dry run never reaches Nova")


class TestPressureRebalancer(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(hpc_conf.CONF)).conf
        hpc_conf.register_opts(self.conf)
        for name, value in {
            "cache_pressure_source": "measured",
            "sync_cache_threshold": 60.0,
            "measured_rebalance_interval": 10,
            "measured_rebalance_sustain": 0,
            "measured_rebalance_cooldown": 0,
            "measured_min_samples": 1,
        }.items():
            self.conf.set_override(name, value, group="hpc_scheduler")
        folder = Path(self.useFixture(fixtures.TempDir()).path)
        self.database = db_api.Database(f"sqlite:///{folder / 'hpc.sqlite'}")
        self.addCleanup(self.database.dispose)
        self.database.sync()

    def host(self, name: str, vms: dict, *, age: float = 0.0, apps=None, cpi=None) -> None:
        """``vms``: uuid -> (class, declared, share of the LLC measured); ``apps``
        and ``cpi``: uuid -> application, CPI."""
        apps, cpi = apps or {}, cpi or {}
        at = timeutils.utcnow() - datetime.timedelta(seconds=age)
        self.database.record_running(
            [
                db_api.RunningRecord(
                    uuid, name, app_class, declared, nodename=name, request_id=apps.get(uuid)
                )
                for uuid, (app_class, declared, _) in vms.items()
            ]
        )
        figures = {}
        for uuid, (_, _, share) in vms.items():
            figures[uuid] = {"llc_occupancy": Figure(share * LLC, share * LLC, 5, at)}
            if uuid in cpi:
                figures[uuid]["cpi"] = Figure(cpi[uuid], cpi[uuid], 5, at)
        self.database.record_measurements(
            HostReport(name, at, LLC), [], figures, retention=datetime.timedelta(hours=1)
        )

    def rebalancer(self, holder: str = "agent-a") -> pressure_rebalance.PressureRebalancer:
        return pressure_rebalance.PressureRebalancer(lambda: self.database, holder, no_connection)

    def test_over_its_limit_the_loudest_would_move_and_extreme_never(self) -> None:
        sync, extreme = AppClass.SYNC_HPC, AppClass.EXTREME_HPC
        self.host("cn1", {"a": (sync, 10.0, 0.6), "b": (sync, 10.0, 0.5)})  # 66 over 60
        self.host("cn2", {"x": (extreme, 10.0, 1.0)})  # 60, alone: within alpha
        self.host("cn3", {"c": (sync, 10.0, 1.0)}, age=600)  # over, but stale
        (decision,) = self.rebalancer().run(10.0)
        self.assertEqual(("cn1", ("a",), True), (decision.host, decision.moved, decision.dry_run))
        self.assertAlmostEqual(66.0, decision.total)
        self.assertEqual(60.0, decision.limit)

    def test_a_suspect_goes_first_when_that_moves_no_more(self) -> None:
        sync = AppClass.SYNC_HPC
        # v (application V) runs three times slower than its siblings on cn2:
        # b, of another application on v's host, is the suspect; a is V's own.
        self.host(
            "cn1",
            {"a": (sync, 10.0, 0.6), "b": (sync, 10.0, 0.5), "v": (sync, 0.0, 0.0)},
            apps={"a": "V", "b": "B", "v": "V"},
            cpi={"v": 3.0, "a": 1.0},
        )
        self.host(
            "cn2",
            {"s1": (sync, 0.0, 0.0), "s2": (sync, 0.0, 0.0)},
            apps={"s1": "V", "s2": "V"},
            cpi={"s1": 1.0, "s2": 1.1},
        )
        # 66 over 60: a (36, the loudest) or b (30, the suspect) alone is enough.
        (decision,) = self.rebalancer().run(10.0)
        self.assertEqual(("cn1", ("b",)), (decision.host, decision.moved))

    def test_declared_does_nothing_and_one_agent_acts_at_a_time(self) -> None:
        self.host("cn1", {"a": (AppClass.SYNC_HPC, 10.0, 1.0), "b": (AppClass.SYNC_HPC, 10.0, 0.5)})
        self.conf.set_override("cache_pressure_source", "declared", group="hpc_scheduler")
        self.assertEqual([], self.rebalancer().run(10.0))
        self.conf.set_override("cache_pressure_source", "max", group="hpc_scheduler")
        first, second = self.rebalancer("agent-a"), self.rebalancer("agent-b")
        self.assertEqual(1, len(first.run(10.0)))
        self.assertIsNone(second.run(10.0))
        self.assertTrue(first.release())
        self.assertEqual(1, len(second.run(10.0)))

    def test_the_task_is_off_until_its_interval_is_set(self) -> None:
        self.assertEqual(10.0, pressure_rebalance.interval())
        self.conf.set_override("measured_rebalance_interval", 0, group="hpc_scheduler")
        self.assertIsNone(pressure_rebalance.interval())
