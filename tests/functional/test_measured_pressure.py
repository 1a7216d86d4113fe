"""``cache_pressure_source``: what the compute hosts measured, in Nova's scheduler.

A real collector (:class:`~hpc_nova_scheduler.collector.collector.Collector`)
reads a laid-out resctrl mount and libvirt run folder per compute host
(:class:`~hpc_nova_scheduler.demo.measured_host.MeasuredHost`) and writes
the plugin database, as ``hpc-scheduler-collector`` does on each host; the
servers are booted through Nova's API.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import fixtures
from oslo_utils import timeutils

from hpc_nova_scheduler.agent.tasks import Agent
from hpc_nova_scheduler.collector.collector import Collector, Settings
from hpc_nova_scheduler.db.measured import HostReport
from hpc_nova_scheduler.demo.fake_driver import Shape
from hpc_nova_scheduler.demo.measured_host import MeasuredHost
from tests.functional import base

BETA = 60.0
INTERVAL = datetime.timedelta(seconds=10)


class MeasuredCloud(base.HpcTestCase):
    #: One host: what the filter decides there is placed or refused.
    HOSTS = {"n1": Shape()}
    SOURCE = "measured"

    def setUp(self) -> None:
        self.HPC_FLAGS = {
            "sync_cache_threshold": BETA,
            "measured_full_llc_score": BETA,
            "measured_min_samples": 3,
            "cache_pressure_source": self.SOURCE,
        }
        super().setUp()
        self.folder = Path(self.useFixture(fixtures.TempDir()).path)
        self.measured: dict[str, MeasuredHost] = {}
        self.said: list[str] = []
        self.last = timeutils.utcnow() - datetime.timedelta(hours=1)

    def measure(self, server: dict, share: float, *, samples: int = 3, age: float = 0.0) -> None:
        """The collector of ``server``'s host reads it ``samples`` times, an
        interval apart, holding ``share`` of the LLC; the last read ``age``
        seconds ago, or later if earlier reads already took that time.

        Sample time only moves forward, as on a host: a decayed mean weighs
        samples by the time between them.
        """
        host = server["OS-EXT-SRV-ATTR:host"]
        if host not in self.measured:
            self.measured[host] = MeasuredHost(self.folder / host)
        measured = self.measured[host]
        measured.start(server["id"], pid=4242)
        measured.occupy(server["id"], int(share * measured.llc_bytes))
        settings = Settings(
            host, measured.tree.root, measured.run_dir, 300.0, datetime.timedelta(hours=1)
        )
        end = timeutils.utcnow() - datetime.timedelta(seconds=age)
        at = max(self.last + INTERVAL, end - (samples - 1) * INTERVAL)
        collector = Collector(
            self.database, settings, self.said.append, now=lambda: at, threads=lambda pid: {pid}
        )
        for _ in range(samples):
            collector.collect()
            self.last = at
            at += INTERVAL
        self.assertEqual([], self.said)

    def sync(self, score: float) -> str:
        return self.hpc_flavor(app_class="SyncHPC", cache_score=score)


class TestMeasured(MeasuredCloud):
    def test_a_vm_declared_quiet_that_fills_the_cache_takes_no_sync_co_runner(self) -> None:
        # A plain VM declares nothing (score 0) and holds the whole LLC.
        (noisy,) = self.launch(self.hpc_flavor())
        self.measure(noisy, 1.0)
        # Measured at beta: a SyncHPC VM next to it would bring the host over.
        self.assert_refused(self.launch(self.sync(10)))
        # Once its cache is quiet again, the host takes co-runners.
        self.measure(noisy, 0.0, samples=60)
        self.assertEqual({"n1": 1}, self.hosts_of(self.launch(self.sync(10))))

    def test_the_measured_score_counts_for_every_request_on_the_host(self) -> None:
        (noisy,) = self.launch(self.sync(10))
        self.measure(noisy, 0.9)
        # 54 measured + 10 is over beta; 54 + 5 is not.
        self.assert_refused(self.launch(self.sync(10)))
        self.assertEqual({"n1": 1}, self.hosts_of(self.launch(self.sync(5))))

    def test_too_few_samples_count_as_declared(self) -> None:
        (noisy,) = self.launch(self.sync(10))
        # Two samples of three: the declared 10 counts, and 10 + 10 fits.
        self.measure(noisy, 1.0, samples=2)
        self.assertEqual({"n1": 1}, self.hosts_of(self.launch(self.sync(10))))
        # The third sample: 60 + 10 + 10 is over beta.
        self.measure(noisy, 1.0, samples=1)
        self.assert_refused(self.launch(self.sync(10)))

    def test_a_stale_report_counts_as_declared(self) -> None:
        (noisy,) = self.launch(self.sync(10))
        # Enough samples, but the host last reported two minutes ago.
        self.measure(noisy, 1.0, age=120)
        self.assertEqual({"n1": 1}, self.hosts_of(self.launch(self.sync(10))))
        # It reports again.
        self.measure(noisy, 1.0, samples=1)
        self.assert_refused(self.launch(self.sync(10)))


class TestMeasuredElsewhere(MeasuredCloud):
    HOSTS = {"n1": Shape(), "n2": Shape()}

    def test_a_host_measured_full_sends_sync_vms_to_another(self) -> None:
        (noisy,) = self.launch(self.hpc_flavor())
        where = noisy["OS-EXT-SRV-ATTR:host"]
        self.measure(noisy, 1.0)
        later = self.hosts_of(self.launch(self.sync(10), 2))
        self.assertEqual({"n1", "n2"} - {where}, set(later))


class TestDeclared(MeasuredCloud):
    SOURCE = "declared"

    def test_the_measurements_change_nothing(self) -> None:
        (noisy,) = self.launch(self.hpc_flavor())
        self.measure(noisy, 1.0)
        # Its declared score is 0: 0 + 10 is under beta.
        self.assertEqual({"n1": 1}, self.hosts_of(self.launch(self.sync(10))))


class TestMax(MeasuredCloud):
    SOURCE = "max"

    def test_a_declared_score_higher_than_the_measured_one_counts(self) -> None:
        (loud,) = self.launch(self.sync(55))
        # Declared 55, measured 6: 55 + 10 is over beta (under measured, 6 + 10 fits).
        self.measure(loud, 0.1)
        self.assert_refused(self.launch(self.sync(10)))
        self.assertEqual({"n1": 1}, self.hosts_of(self.launch(self.sync(5))))

    def test_a_measured_score_higher_than_the_declared_one_counts(self) -> None:
        (noisy,) = self.launch(self.hpc_flavor())
        self.measure(noisy, 0.9)
        self.assert_refused(self.launch(self.sync(10)))


class TestBandwidthWeigher(MeasuredCloud):
    """``MeasuredBandwidthWeigher``, loaded with the plugin's weighers."""

    HOSTS = {"n1": Shape(), "n2": Shape(), "n3": Shape()}

    def setUp(self) -> None:
        super().setUp()
        # Far above Nova's own weighers (each at most 1 after normalisation).
        self.flags(measured_bandwidth_weight_multiplier=1000.0, group="hpc_scheduler")
        now = timeutils.utcnow()
        for host, used in (("n1", 5e9), ("n2", 1e9)):  # n3 never reports
            self.database.record_measurements(
                HostReport(host, now, 2**26, {"mbm_total_bps": used}, ("mbm_total_bps",)),
                [],
                {},
                retention=datetime.timedelta(hours=1),
            )

    def test_the_host_with_the_most_headroom_comes_first(self) -> None:
        # Nova's RAM and CPU weighers alone would spread these over the hosts.
        for _ in range(3):
            self.assertEqual({"n2": 1}, self.hosts_of(self.launch(self.hpc_flavor())))

    def test_a_zero_multiplier_leaves_nova_to_spread(self) -> None:
        self.flags(measured_bandwidth_weight_multiplier=0.0, group="hpc_scheduler")
        found = {}
        for _ in range(3):
            found.update(self.hosts_of(self.launch(self.hpc_flavor())))
        self.assertEqual({"n1", "n2", "n3"}, set(found))


class TestMeasuredRebalance(MeasuredCloud):
    """``measured-rebalance``: the agent's task, live migrations through Nova's API.

    Under ``max``, where a declared score is a floor: occupancies of one host
    add up to at most its cache, so under ``measured`` alone a host whose
    VMs are all measured never passes beta.
    """

    HOSTS = {"n1": Shape(), "n2": Shape()}
    SOURCE = "max"

    def setUp(self) -> None:
        super().setUp()
        self.flags(
            measured_rebalance_interval=10,
            measured_rebalance_sustain=0,
            measured_rebalance_cooldown=0,
            measured_rebalance_dry_run=False,
            group="hpc_scheduler",
        )
        conn = self.agent_connection()
        self.rebalancer = Agent(name="functional-test:0", connection=lambda: conn)
        self.addCleanup(self.rebalancer.close)

    def _setup_compute_service(self):
        # n2 comes later, empty: the application lands on n1 alone.
        self._start_compute("n1")

    def overloaded(self) -> list[dict]:
        """SyncHPC VMs declared at 40 and at 10 on n1 (50); the second's phase
        fills the cache: it measures 33 of it and the first 27, which counts
        its declared 40: 73, over beta."""
        servers = [*self.launch(self.sync(40)), *self.launch(self.sync(10))]
        self.assertEqual({"n1": 2}, self.hosts_of(servers))
        self._start_compute("n2")
        for server, share in zip(servers, (0.45, 0.55), strict=True):
            self.measure(server, share)
        return servers

    def test_the_fewest_vms_move_and_the_host_is_back_within_beta(self) -> None:
        servers = self.overloaded()
        (decision,) = self.rebalancer.measured_rebalance()
        self.assertEqual(
            ("n1", 73.0, BETA, False, ()),
            (
                decision.host,
                round(decision.total, 6),
                decision.limit,
                decision.dry_run,
                decision.failed,
            ),
        )
        (moved,) = decision.moved
        server = next(s for s in servers if s["id"] == moved)
        self._wait_for_migration_status(server, ["completed"])
        self._wait_for_server_parameter(server, {"OS-EXT-SRV-ATTR:host": "n2", "status": "ACTIVE"})
        # The plugin's record follows the VM; what n1 holds now is within beta.
        rows = {row.instance_uuid: row.host for row in self.database.list_running()}
        self.assertEqual("n2", rows[moved])
        self.assertEqual([], self.rebalancer.measured_rebalance())

    def test_dry_run_moves_nothing(self) -> None:
        self.flags(measured_rebalance_dry_run=True, group="hpc_scheduler")
        servers = self.overloaded()
        (decision,) = self.rebalancer.measured_rebalance()
        self.assertTrue(decision.dry_run)
        self.assertEqual(1, len(decision.moved))
        self.assertEqual({"n1": 2}, self.hosts_of([self.api.get_server(s["id"]) for s in servers]))

    def test_a_sustained_burst_only_and_not_again_while_cooling_down(self) -> None:
        self.flags(
            measured_rebalance_sustain=3600,
            measured_rebalance_dry_run=True,
            group="hpc_scheduler",
        )
        self.overloaded()
        self.assertEqual([], self.rebalancer.measured_rebalance())
        self.flags(
            measured_rebalance_sustain=0, measured_rebalance_cooldown=3600, group="hpc_scheduler"
        )
        self.assertEqual(1, len(self.rebalancer.measured_rebalance()))
        self.assertEqual([], self.rebalancer.measured_rebalance())
