"""A build that fails on a planned host is retried where the plan allows.

Nova's conductor retries a failed build on the alternates the scheduler
returned with each selected host (``[scheduler] max_attempts - 1`` of them,
taken from the hosts of the last filtering round minus every host selected
for the request) without asking the scheduler again. The alternates must
therefore keep every constraint of the plan themselves: the processor
group, Algorithm 1's rack order and the cache thresholds. When none does,
the VM ends in ERROR ("Exceeded maximum number of retries") rather than
breaking one.

``FAIL_SPAWN_ONCE_ON`` makes the first spawn of each instance on the named
hosts raise ``ComputeResourcesUnavailable``, which Nova reschedules. When two
builds run at once on one compute, the harness occasionally fails the
second in the resource tracker's claim ("Can't upgrade a READER transaction
to a WRITER mid-transaction"), which Nova reschedules as well: the computes
here build one VM at a time, and the tests check where every VM ends rather
than how many spawns failed.
"""

from __future__ import annotations

import collections

import fixtures

from hpc_nova_scheduler.demo import fake_driver
from hpc_nova_scheduler.demo.fake_driver import Shape
from tests.functional import base

ALPHA = 100.0
BETA = 60.0
RETRIES_EXCEEDED = "Exceeded maximum number of retries"


class RescheduleMixin:
    """Helpers for clouds whose computes fail a spawn once on chosen hosts."""

    HPC_FLAGS = {"cache_threshold": ALPHA, "sync_cache_threshold": BETA}

    def _setup_services(self) -> None:
        # One build at a time per compute (see the note above).
        self.flags(max_concurrent_builds=1)
        super()._setup_services()

    def fail_spawn_once_on(self, *hosts: str) -> None:
        self.useFixture(
            fixtures.MonkeyPatch(f"{fake_driver.__name__}.FAIL_SPAWN_ONCE_ON", set(hosts))
        )

    def failed_spawns(self, host: str) -> list[str]:
        """Instances whose spawn failed on ``host`` on purpose."""
        return list(self.computes[host].manager.driver.failed_spawns)

    def boot_on(self, flavor_id: str, host: str) -> dict:
        """One server on ``host`` (a requested host: the filters still run)."""
        body = {"server": self._build_server(flavor_id=flavor_id, networks="none", host=host)}
        server = self._wait_for_state_change(self.api.post_server(body), "ACTIVE")
        self.assertEqual(host, server["OS-EXT-SRV-ATTR:host"])
        return server

    def fault(self, server: dict) -> str:
        return self.api.get_server(server["id"]).get("fault", {}).get("message", "")

    def describe(self, servers: list[dict]) -> str:
        return repr(
            [
                (s["id"][:8], s["status"], s["OS-EXT-SRV-ATTR:host"], self.fault(s)[:120])
                for s in servers
            ]
        )

    def assert_thresholds_hold(self) -> None:
        """alpha on every host; beta on every host that runs SyncHPC."""
        cache: collections.Counter[str] = collections.Counter()
        sync: set[str] = set()
        for server in self.api.get_servers(detail=True):
            if server["status"] != "ACTIVE":
                continue
            host = server["OS-EXT-SRV-ATTR:host"]
            specs = server["flavor"].get("extra_specs", {})
            cache[host] += float(specs.get("hpc:cache_score", 0))
            if specs.get("hpc:app_class") == "SyncHPC":
                sync.add(host)
        for host, total in cache.items():
            limit = BETA if host in sync else ALPHA
            self.assertLessEqual(total, limit, f"cache on {host}: {dict(cache)}, sync on {sync}")


class TestSyncAlternateInThePlanRack(RescheduleMixin, base.HpcTestCase):
    """Six SyncHPC VMs; the plan's second host fails them once.

    Algorithm 1 plans processor group x in its roomiest rack, rack-a:
    x1 takes four VMs, x2 two (group h, two 2-vCPU hosts, cannot hold six).
    The retries must stay in group x and in rack-a, which still has x3:
    not x4 (group x, rack-b), not h1 or h2 (rack-b, group h).
    """

    HOSTS = {
        "x1": Shape(),
        "x2": Shape(),
        "x3": Shape(),
        "x4": Shape(),
        "h1": Shape(vcpus=2, cpu_model="Haswell"),
        "h2": Shape(vcpus=2, cpu_model="Haswell"),
    }
    RACKS = {"rack-a": ["x1", "x2", "x3"], "rack-b": ["x4", "h1", "h2"]}

    def test_failed_builds_are_retried_in_the_plan_rack(self) -> None:
        self.fail_spawn_once_on("x2")
        servers = self.launch(self.hpc_flavor(app_class="SyncHPC", cache_score=10), 6)
        retried = set(self.failed_spawns("x2"))
        # The plan ({x1: 4, x2: 2}) sent builds to x2, and they failed there.
        self.assertTrue(retried, self.describe(servers))
        self.assertEqual(["ACTIVE"] * 6, [s["status"] for s in servers], self.describe(servers))
        self.assertEqual(
            {"x3"},
            {s["OS-EXT-SRV-ATTR:host"] for s in servers if s["id"] in retried},
            self.describe(servers),
        )
        self.assertEqual({"x1": 4, "x3": 2}, self.hosts_of(servers), self.describe(servers))
        self.assert_thresholds_hold()


class TestSyncAlternateInTheNextRack(RescheduleMixin, base.HpcTestCase):
    """As above, but the plan's rack has no other host.

    rack-a (x1, x2: 8 vCPUs) is group x's roomiest rack and takes the plan;
    a retry goes to the next rack in Algorithm 1's order, rack-b (x3 and x5:
    7 vCPUs of group x) before rack-c (x4: 4), and never to h1 or h2, which
    share rack-b with x3 but are of group h.
    """

    HOSTS = {
        "x1": Shape(),
        "x2": Shape(),
        "x3": Shape(),
        "x5": Shape(vcpus=3),
        "x4": Shape(),
        "h1": Shape(vcpus=2, cpu_model="Haswell"),
        "h2": Shape(vcpus=2, cpu_model="Haswell"),
    }
    RACKS = {"rack-a": ["x1", "x2"], "rack-b": ["x3", "x5", "h1", "h2"], "rack-c": ["x4"]}

    def test_failed_builds_are_retried_in_the_next_rack_of_the_group(self) -> None:
        self.fail_spawn_once_on("x2")
        servers = self.launch(self.hpc_flavor(app_class="SyncHPC", cache_score=10), 6)
        retried = set(self.failed_spawns("x2"))
        self.assertTrue(retried, self.describe(servers))
        self.assertEqual(["ACTIVE"] * 6, [s["status"] for s in servers], self.describe(servers))
        hosts = self.hosts_of(servers)
        self.assertEqual(4, hosts.pop("x1", 0), self.describe(servers))
        # Whatever went to x2 (failed there) is now in rack-b, group x.
        self.assertEqual(2, sum(hosts.values()), self.describe(servers))
        self.assertLessEqual(set(hosts), {"x3", "x5"}, self.describe(servers))
        self.assert_thresholds_hold()


class TestAlternatesKeepBeta(RescheduleMixin, base.HpcTestCase):
    """One SyncHPC VM (cache score 20) whose planned host fails once.

    n2 runs SyncHPC at 50: another 20 would exceed beta (60). Nova's own
    weighers prefer n2 (twice the room of the others), so an alternate list
    that ignores beta would put the retry there. One rack: without one,
    each host is a rack of its own and the roomiest would come first.
    """

    HOSTS = {"n1": Shape(), "n2": Shape(vcpus=8, memory_mb=16384), "n3": Shape()}
    RACKS = {"r1": ["n1", "n2", "n3"]}

    def setUp(self) -> None:
        super().setUp()
        self.sync = self.hpc_flavor(app_class="SyncHPC", cache_score=20)
        self.boot_on(self.hpc_flavor(app_class="SyncHPC", cache_score=50), "n2")

    def test_retry_lands_on_a_host_that_keeps_beta(self) -> None:
        # AsyncHPC at 30 on n3: 50 with the new VM, within beta; the host
        # with the least room left after placement, so the plan takes it.
        self.boot_on(self.hpc_flavor(app_class="AsyncHPC", cache_score=30), "n3")
        self.fail_spawn_once_on("n3")
        servers = self.launch(self.sync)
        self.assertEqual([servers[0]["id"]], self.failed_spawns("n3"), self.describe(servers))
        self.assertEqual("ACTIVE", servers[0]["status"], self.describe(servers))
        self.assertEqual({"n1": 1}, self.hosts_of(servers))
        self.assert_thresholds_hold()

    def test_no_alternate_within_beta_leaves_the_vm_in_error(self) -> None:
        # n1 runs SyncHPC at 50 too: only n3 admits the new VM, and when its
        # build fails no other host may take it.
        self.boot_on(self.hpc_flavor(app_class="SyncHPC", cache_score=50), "n1")
        self.boot_on(self.hpc_flavor(app_class="AsyncHPC", cache_score=30), "n3")
        self.fail_spawn_once_on("n3")
        servers = self.launch(self.sync)
        self.assertEqual([servers[0]["id"]], self.failed_spawns("n3"), self.describe(servers))
        self.assertEqual("ERROR", servers[0]["status"], self.describe(servers))
        self.assertIsNone(servers[0]["OS-EXT-SRV-ATTR:host"])
        self.assertIn(RETRIES_EXCEEDED, self.fault(servers[0]))
        self.assert_thresholds_hold()


class TestNoAlternateInAnotherGroup(RescheduleMixin, base.HpcTestCase):
    """Two SyncHPC VMs planned on x1, the only host of group x.

    Group h (h1, h2: one vCPU each) would need two hosts, so the plan is
    x1 alone. When x1 fails the builds, h1 and h2 have room but are of
    another processor type: the VMs end in ERROR instead.
    """

    HOSTS = {
        "x1": Shape(),
        "h1": Shape(vcpus=1, cpu_model="Haswell"),
        "h2": Shape(vcpus=1, cpu_model="Haswell"),
    }

    def test_failed_builds_do_not_leave_the_processor_group(self) -> None:
        self.fail_spawn_once_on("x1")
        servers = self.launch(self.hpc_flavor(app_class="SyncHPC", cache_score=10), 2)
        self.assertTrue(self.failed_spawns("x1"), self.describe(servers))
        self.assertEqual(["ERROR", "ERROR"], [s["status"] for s in servers], self.describe(servers))
        for server in servers:
            self.assertIsNone(server["OS-EXT-SRV-ATTR:host"])
            self.assertIn(RETRIES_EXCEEDED, self.fault(server))
        self.assertEqual({}, self.hosts_of(self.api.get_servers(detail=True)))
