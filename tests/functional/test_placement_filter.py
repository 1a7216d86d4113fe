"""Seed 003's HPC-aware placement, proven by booting through Nova's API."""

from __future__ import annotations

from hpc_nova_scheduler.demo.fake_driver import Shape
from tests.functional import base


class TestExtremeHPC(base.HpcTestCase):
    """ExtremeHPC gets dedicated hosts, both ways."""

    def test_extreme_hpc_avoids_busy_hosts_and_keeps_its_hosts(self) -> None:
        plain = self.hpc_flavor()
        extreme = self.hpc_flavor(app_class="ExtremeHPC", cache_score=47, app_name="IS.B.8")
        first = self.launch(plain)
        busy = self.hosts_of(first)
        servers = self.launch(extreme, 8)
        hosts = self.hosts_of(servers)
        self.assertEqual([4, 4], sorted(hosts.values()))
        self.assertFalse(set(hosts) & set(busy))
        # Nothing else lands on the ExtremeHPC hosts afterwards.
        for flavor in (plain, self.hpc_flavor(app_class="AsyncHPC", cache_score=1)):
            later = self.hosts_of(self.launch(flavor))
            self.assertFalse(set(later) & set(hosts), later)

    def test_extreme_hpc_without_enough_empty_hosts_is_refused(self) -> None:
        self.launch(self.hpc_flavor())
        self.assert_refused(self.launch(self.hpc_flavor(app_class="ExtremeHPC"), 13))


class TestTopology(base.HpcTestCase):
    """SyncHPC and ExtremeHPC fill the roomiest rack first, host by host."""

    HOSTS = {f"n{i}": Shape() for i in range(1, 6)}
    RACKS = {"rack-a": ["n1", "n2"], "rack-b": ["n3", "n4", "n5"]}

    def test_sync_hpc_fills_one_rack_on_few_hosts(self) -> None:
        servers = self.launch(self.hpc_flavor(app_class="SyncHPC", cache_score=5), 8)
        hosts = self.hosts_of(servers)
        self.assertEqual([4, 4], sorted(hosts.values()))
        self.assertTrue(set(hosts) <= {"n3", "n4", "n5"}, hosts)

    def test_extreme_hpc_spills_into_the_next_rack_only_when_full(self) -> None:
        hosts = self.hosts_of(self.launch(self.hpc_flavor(app_class="ExtremeHPC"), 16))
        self.assertEqual({"n3", "n4", "n5"}, set(hosts) & {"n3", "n4", "n5"})
        self.assertEqual(1, len(set(hosts) & {"n1", "n2"}))

    def test_plain_requests_are_spread_as_nova_would(self) -> None:
        hosts = self.hosts_of(self.launch(self.hpc_flavor(), 5))
        self.assertEqual([1] * 5, list(hosts.values()))


class TestHomogeneity(base.HpcTestCase):
    """HPC applications stay on one processor type; NonHPC may mix."""

    HOSTS = {
        "x1": Shape(),
        "x2": Shape(),
        "e1": Shape(cpu_model="Haswell"),
        "e2": Shape(cpu_model="Haswell"),
        "t1": Shape(),
        "t2": Shape(),
    }
    # t1 and t2 report the same model as x1 and x2 but are tagged apart.
    CPU_GROUPS = {"tagged": ["t1", "t2"]}

    def groups(self, hosts: dict[str, int]) -> set[str]:
        return {name[0] for name in hosts}

    def test_hpc_request_lands_in_one_group(self) -> None:
        for cls in ("SyncHPC", "AsyncHPC"):
            hosts = self.hosts_of(self.launch(self.hpc_flavor(app_class=cls), 6))
            self.assertEqual(1, len(self.groups(hosts)), hosts)

    def test_request_larger_than_any_group_is_refused_not_split(self) -> None:
        self.assert_refused(self.launch(self.hpc_flavor(app_class="AsyncHPC"), 9))

    def test_non_hpc_may_span_groups(self) -> None:
        hosts = self.hosts_of(self.launch(self.hpc_flavor(app_class="NonHPC"), 20))
        self.assertEqual({"x", "e", "t"}, self.groups(hosts))


class TestFigure1(base.HpcTestCase):
    """Seed 003 Fig. 1 on a CPU-rich and a memory-rich host: both requests fit."""

    HOSTS = {"cpu-rich": Shape(vcpus=8, memory_mb=4096), "ram-rich": Shape(vcpus=4, memory_mb=8192)}
    SPECS: dict = {"app_class": "NonHPC"}

    def test_both_requests_fit(self) -> None:
        first = self.launch(self.hpc_flavor(vcpus=2, ram=1024, **self.SPECS), 4)
        second = self.launch(self.hpc_flavor(vcpus=1, ram=4096, **self.SPECS), 2)
        self.assertEqual({"cpu-rich": 4}, self.hosts_of(first))
        self.assertEqual({"ram-rich": 2}, self.hosts_of(second))


class TestFigure1WithNovaDefaults(TestFigure1):
    """The same two requests under Nova's default filters and weighers."""

    EXTRA_FILTERS = ()
    SPECS: dict = {}

    def test_both_requests_fit(self) -> None:
        first = self.launch(self.hpc_flavor(vcpus=2, ram=1024), 4)
        self.assertIn("ram-rich", self.hosts_of(first))
        self.assert_refused(self.launch(self.hpc_flavor(vcpus=1, ram=4096), 2))


class TestCacheThresholds(base.HpcTestCase):
    """alpha on every host, beta where SyncHPC runs or arrives."""

    HOSTS = {"n1": Shape(), "n2": Shape()}
    HPC_FLAGS = {"cache_threshold": 100.0, "sync_cache_threshold": 60.0}

    def test_thresholds_hold(self) -> None:
        async_heavy = self.hpc_flavor(app_class="AsyncHPC", cache_score=45)
        sync = self.hpc_flavor(app_class="SyncHPC", cache_score=20)
        hosts = self.hosts_of(self.launch(async_heavy, 4))
        self.assertEqual({"n1": 2, "n2": 2}, hosts)  # 3 x 45 > alpha
        # A SyncHPC VM would bring either host to 110 > beta.
        self.assert_refused(self.launch(sync))
        # Nor does a third AsyncHPC VM fit under alpha anywhere.
        self.assert_refused(self.launch(async_heavy))

    def test_sync_hosts_take_only_beta(self) -> None:
        sync = self.hpc_flavor(app_class="SyncHPC", cache_score=20)
        light = self.hpc_flavor(app_class="AsyncHPC", cache_score=15)
        self.assertEqual({"n1": 3}, self.hosts_of(self.launch(sync, 3)))  # 60 on n1
        # n1 runs SyncHPC at beta already: the AsyncHPC VM must go to n2.
        self.assertEqual({"n2": 1}, self.hosts_of(self.launch(light)))


class TestFigure8(base.HpcTestCase):
    """Seed 003 Fig. 8, beta = 60, booted through Nova."""

    HOSTS = {f"N{i}": Shape(vcpus=4, memory_mb=8192) for i in range(1, 9)}
    RACKS = {"r1": list(HOSTS)}
    HPC_FLAGS = {"sync_cache_threshold": 60.0}

    def test_stream(self) -> None:
        flavors = {
            name: self.hpc_flavor(ram=2048, app_class=cls, cache_score=score, app_name=name)
            for name, cls, score in (
                ("IS.B.4", "ExtremeHPC", 47),
                ("LU.C.16", "SyncHPC", 16),
                ("LU.B.4", "SyncHPC", 29),
                ("ChaNGa.4", "SyncHPC", 7.5),
                ("EP.B.4", "AsyncHPC", 2.5),
            )
        }
        counts = {"IS.B.4": 4, "LU.C.16": 16, "LU.B.4": 4, "ChaNGa.4": 4, "EP.B.4": 4}
        placed = {name: self.launch(flavors[name], counts[name]) for name in flavors}
        self.assertEqual({"N1": 4}, self.hosts_of(placed["IS.B.4"]))
        self.assertEqual(
            {"N2": 3, "N3": 3, "N4": 3, "N5": 3, "N6": 3, "N7": 1}, self.hosts_of(placed["LU.C.16"])
        )
        self.assert_refused(placed["LU.B.4"])
        self.assertEqual({"N2": 1, "N3": 1, "N4": 1, "N5": 1}, self.hosts_of(placed["ChaNGa.4"]))
        self.assertEqual({"N6": 1, "N7": 3}, self.hosts_of(placed["EP.B.4"]))
        for server in placed["IS.B.4"] + placed["LU.B.4"]:
            self._delete_server(server)
        self.assertEqual({"N1": 2, "N8": 2}, self.hosts_of(self.launch(flavors["LU.B.4"], 4)))
