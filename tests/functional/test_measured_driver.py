"""The measured fake driver in Nova's harness: the files libvirtd and the kernel would leave.

Each compute runs :class:`~hpc_nova_scheduler.demo.measured_driver.MeasuredFakeDriver`
(Nova's ``MediumFakeDriver`` underneath) with its own ``[hpc_collector]``
folders; a server booted, live-migrated and deleted through Nova's API
leaves, moves and removes its status file, and the devcloud's counters and
a real collector turn its workload into the score the scheduler counts.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import fixtures
from nova import conf as nova_conf

from devcloud import counters
from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.collector import domains
from hpc_nova_scheduler.collector.collector import Collector, Settings
from hpc_nova_scheduler.demo import measured_driver
from hpc_nova_scheduler.demo.resctrl_tree import ResctrlTree
from hpc_nova_scheduler.interference.cache_pressure import CachePressureModel
from hpc_nova_scheduler.measured import pressure
from tests.functional import base

CONF = nova_conf.CONF


class TestMeasuredFakeDriver(base.HpcTestCase):
    STOCK_DRIVER = "fake.MeasuredFakeDriver"
    HOSTS = {"n1": None, "n2": None}
    #: MediumFakeDriver's 10 vCPUs, as Nova's own tests run it.
    CPU_RATIO = 1.0

    def setUp(self) -> None:
        self.useFixture(
            fixtures.MonkeyPatch(
                "nova.virt.fake.MeasuredFakeDriver", measured_driver.MeasuredFakeDriver
            )
        )
        hpc_conf.register_collector_opts(CONF)
        self.folder = Path(self.useFixture(fixtures.TempDir()).path)
        for host in self.HOSTS:
            ResctrlTree(self.folder / host / "resctrl").lay_out()
        super().setUp()

    def _start_compute(self, host, *args, **kwargs):
        # Each host has its own nova.conf on a real cloud: here the driver
        # reads its folders as its service starts.
        self.flags(
            libvirt_run_dir=str(self.folder / host / "qemu"),
            resctrl_root=str(self.folder / host / "resctrl"),
            group=hpc_conf.COLLECTOR_GROUP_NAME,
        )
        return super()._start_compute(host, *args, **kwargs)

    def running(self, host: str) -> dict[str, domains.Domain]:
        found = domains.running(self.folder / host / "qemu")
        self.assertEqual([], found.skipped)
        return {d.uuid: d for d in found.domains}

    def boot_on(self, host: str, metadata: dict | None = None) -> dict:
        body = {
            "server": self._build_server(
                flavor_id=self.hpc_flavor(app_class="SyncHPC", cache_score="10"),
                networks="none",
            )
        }
        body["server"]["host"] = host
        if metadata:
            body["server"]["metadata"] = metadata
        self.api.microversion = "2.74"
        return self._wait_for_state_change(self.api.post_server(body), "ACTIVE")

    def test_a_server_leaves_its_status_file_where_it_runs_and_none_when_gone(self) -> None:
        server = self.boot_on("n1", {measured_driver.WORKLOAD_KEY: "55"})
        (domain,) = self.running("n1").values()
        self.assertEqual(server["id"], domain.uuid)
        # Nova's instance name, as libvirt names the domain.
        self.assertEqual(server["OS-EXT-SRV-ATTR:instance_name"], domain.name)
        group = self.folder / "n1" / "resctrl" / "mon_groups" / server["id"]
        self.assertTrue((group / "mon_data" / "mon_L3_00" / "llc_occupancy").is_file())
        self.assertEqual(
            [counters.Guest(server["id"], 55.0, domain.name, 1)],
            counters.read_guests(self.folder / "n1" / "qemu"),
        )
        self.assertEqual({}, self.running("n2"))

        self.api.post_server_action(
            server["id"], {"os-migrateLive": {"host": None, "block_migration": "auto"}}
        )
        self._wait_for_server_parameter(server, {"OS-EXT-SRV-ATTR:host": "n2", "status": "ACTIVE"})
        self.assertEqual({}, self.running("n1"))
        self.assertEqual([server["id"]], list(self.running("n2")))

        self._delete_server(server)
        self.assertEqual({}, self.running("n2"))

    def test_without_fake_cache_score_the_guest_behaves_as_its_flavor_says(self) -> None:
        server = self.boot_on("n2")
        ((uuid, score),) = [
            (g.uuid, g.cache_score) for g in counters.read_guests(self.folder / "n2" / "qemu")
        ]
        self.assertEqual((server["id"], 10.0), (uuid, score))

    def test_a_collector_measures_what_the_counters_make_of_the_workload(self) -> None:
        liar = self.boot_on("n1", {measured_driver.WORKLOAD_KEY: "55"})
        host = counters.Host(self.folder / "n1")
        at = [datetime.datetime(2026, 11, 30, 12, 0, 0)]
        collector = Collector(
            self.database,
            Settings(
                "n1",
                self.folder / "n1" / "resctrl",
                self.folder / "n1" / "qemu",
                10.0,
                datetime.timedelta(hours=1),
            ),
            lambda line: None,
            now=lambda: at[0],
        )
        for _ in range(3):
            host.tick({}, 2.0, CachePressureModel())
            collector.collect()
            at[0] += datetime.timedelta(seconds=2)
        settings = pressure.Settings(source=pressure.MEASURED, min_samples=3)
        reports = {r.host: r for r in self.database.measured_hosts()}
        scores = pressure.Scores(settings, reports, self.database.measured_instances(), at[0])
        self.assertAlmostEqual(55.0, scores.measured(liar["id"]), places=3)
