"""``MeasuredBandwidthWeigher`` against a real plugin database."""

from __future__ import annotations

import datetime
import types
from pathlib import Path

import fixtures
import testtools
from nova import weights as nova_weights
from oslo_config import fixture as config_fixture
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db.measured import HostReport
from hpc_nova_scheduler.scheduler import bandwidth_weigher
from hpc_nova_scheduler.scheduler.bandwidth_weigher import MeasuredBandwidthWeigher

UNREACHABLE = "mysql+pymysql://nobody:x@127.0.0.1:1/none?connect_timeout=1"


def weighed(*names: str) -> list[nova_weights.WeighedObject]:
    return [
        nova_weights.WeighedObject(types.SimpleNamespace(host=name, nodename=name), 0.0)
        for name in names
    ]


class TestBandwidthWeigher(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(hpc_conf.CONF)).conf
        hpc_conf.register_opts(self.conf)
        folder = Path(self.useFixture(fixtures.TempDir()).path)
        url = f"sqlite:///{folder / 'hpc.sqlite'}"
        database = db_api.Database(url)
        self.addCleanup(database.dispose)
        database.sync()
        self.conf.set_override("connection", url, group="hpc_scheduler")
        self.conf.set_override("cache_pressure_source", "measured", group="hpc_scheduler")
        now = timeutils.utcnow()
        for host, used, age in (("a", 4e9, 0), ("b", 2e9, 0), ("old", 0.0, 600)):
            at = now - datetime.timedelta(seconds=age)
            totals = {"mbm_total_bps": used}
            database.record_measurements(
                HostReport(host, at, 2**26, totals, ("mbm_total_bps",)),
                [],
                {},
                retention=datetime.timedelta(hours=1),
            )
        # A host that reports no bandwidth (no MBM on its processor).
        database.record_measurements(
            HostReport("nombm", now, 2**26, {}, ()), [], {}, retention=datetime.timedelta(hours=1)
        )
        self.weigher = MeasuredBandwidthWeigher()
        self.addCleanup(self.weigher._database.dispose)

    def test_less_bandwidth_used_weighs_more_and_unknown_hosts_weigh_the_mean(self) -> None:
        found = self.weigher.weigh_objects(weighed("a", "b", "old", "nombm", "never"), None)
        self.assertEqual([-4.0, -2.0, -3.0, -3.0, -3.0], found)
        self.assertEqual(1.0, self.weigher.weight_multiplier(None))

    def test_declared_weighs_nothing(self) -> None:
        self.conf.set_override("cache_pressure_source", "declared", group="hpc_scheduler")
        self.assertEqual([], self.weigher.weigh_objects(weighed("a", "b"), None))

    def test_a_zero_multiplier_weighs_nothing(self) -> None:
        self.conf.set_override("measured_bandwidth_weight_multiplier", 0.0, group="hpc_scheduler")
        self.assertEqual([], self.weigher.weigh_objects(weighed("a", "b"), None))

    def test_no_fresh_report_among_the_hosts_weighs_nothing(self) -> None:
        self.assertEqual([], self.weigher.weigh_objects(weighed("old", "never"), None))
        self.assertEqual(0.0, self.weigher._weigh_object(weighed("never")[0].obj, None))

    def test_a_database_that_fails_weighs_nothing_and_says_why(self) -> None:
        self.conf.set_override("connection", UNREACHABLE, group="hpc_scheduler")
        # The weigher's own logger: other tests' logging setup may stop the root's.
        logged = self.useFixture(fixtures.FakeLogger(name=bandwidth_weigher.__name__))
        self.assertEqual([], self.weigher.weigh_objects(weighed("a", "b"), None))
        self.assertIn("cannot read the hosts' measured memory bandwidth", logged.output)

    def test_any_other_failure_weighs_nothing_and_says_why(self) -> None:
        logged = self.useFixture(fixtures.FakeLogger(name=bandwidth_weigher.__name__))
        # Host states without a host name: a fault of the weigher's own.
        broken = [nova_weights.WeighedObject(object(), 0.0)]
        self.assertEqual([], self.weigher.weigh_objects(broken, None))
        self.assertIn("MeasuredBandwidthWeigher failed; weighing without it", logged.output)
