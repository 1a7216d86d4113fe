"""Every rule judges node by node where one compute service manages several nodes.

One Ironic compute service manages many bare-metal nodes; Nova keeps a host
state per (host, node) and Placement a resource provider per node, while
aggregates name the service's host and so tag all its nodes at once. The
multi-node fake driver (``HpcCloud.NODES``) stands for such a service here:
dedication, cache thresholds, processor homogeneity, topology and fair-share
entitlements are each proven on nodes that share one compute service.

Nova lists every instance of a compute service in the host state of each of
its nodes (``HostManager._get_instance_info`` reads instances by host), in
an order that changes from one process to the next (a set of nodes). The
threshold tests start with a VM on every node of the service, so that VMs
counted on a wrong node of their service show whatever the order; the
dedication test puts ExtremeHPC VMs on the first node of one service and
the last of the other.
"""

from __future__ import annotations

import collections
import time

from hpc_nova_scheduler.core.cpu_groups import cpu_group_from_cpu_info
from hpc_nova_scheduler.demo.fake_driver import Shape
from hpc_nova_scheduler.fairshare.runs import TaskRun
from tests.functional import base
from tests.functional.test_concurrency import BurstMixin
from tests.functional.test_fairshare import FairshareCloud
from tests.functional.workers import TwoSchedulers

NODE = "OS-EXT-SRV-ATTR:hypervisor_hostname"


def group_of(model: str) -> str:
    """The processor group of a fake node of ``model`` (Nova's fake cpu_info is Intel's)."""
    return cpu_group_from_cpu_info({"vendor": "Intel", "model": model})


class MultiNode:
    """Mixin: VMs per node, and requests sent to one node."""

    def nodes_of(self, servers: list[dict]) -> dict[str, int]:
        """VMs per node of ACTIVE servers."""
        return dict(collections.Counter(s[NODE] for s in servers if s["status"] == "ACTIVE"))

    def placed(self, servers: list[dict]) -> dict[str, int]:
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers}, servers)
        return self.nodes_of(servers)

    def every_node(self) -> dict[str, int]:
        return self.nodes_of(self.api.get_servers(detail=True))

    def launch_on(self, flavor_id: str, node: str, count: int = 1) -> dict[str, int]:
        """``count`` VMs of one request on ``node``, as the administrator asks
        (``hypervisor_hostname``, microversion 2.74); VMs per node."""
        body: dict = {"server": self._build_server(flavor_id=flavor_id, networks="none")}
        body["server"].update(min_count=count, return_reservation_id=True, hypervisor_hostname=node)
        reservation = self.api.post_server(body)["reservation_id"]
        for _ in range(100):
            servers = self.api.get_servers(detail=True, search_opts={"reservation_id": reservation})
            if servers and all(s["status"] != "BUILD" for s in servers):
                placed = self.placed(servers)
                self.assertEqual({node: count}, placed)
                return placed
            time.sleep(0.1)
        self.fail(f"servers of {reservation} still building")


class TestDedication(MultiNode, base.HpcTestCase):
    """Two services of two 4-core nodes; an ExtremeHPC application on one node of each."""

    NODES = {
        "c1": {"c1-a": Shape(), "c1-b": Shape()},
        "c2": {"c2-a": Shape(), "c2-b": Shape()},
    }

    def test_extreme_hpc_dedicates_its_node_and_its_siblings_take_others(self) -> None:
        extreme = self.hpc_flavor(app_class="ExtremeHPC")
        self.launch_on(extreme, "c1-a", 2)
        self.launch_on(extreme, "c2-b", 2)
        # The sibling nodes of both services still take another application,
        # planned by the plugin, and plain VMs left to Nova's weighers.
        planned = self.placed(self.launch(self.hpc_flavor(app_class="AsyncHPC"), 4))
        self.assertLessEqual(set(planned), {"c1-b", "c2-a"})
        plain = self._create_flavor(memory_mb=1024, vcpu=1, disk=1, ephemeral=0)
        left = self.placed(self.launch(plain, 4))
        self.assertLessEqual(set(left), {"c1-b", "c2-a"})
        # The siblings are full; the dedicated nodes have room, not for them.
        self.assert_refused(self.launch(plain))
        self.assert_refused(self.launch(self.hpc_flavor(app_class="AsyncHPC")))
        self.assertEqual({"c1-a": 2, "c1-b": 4, "c2-a": 4, "c2-b": 2}, self.every_node())


class TestThresholds(MultiNode, base.HpcTestCase):
    """One service of three 4-core nodes, each running one VM of another application."""

    NODES = {"c1": {"c1-a": Shape(), "c1-b": Shape(), "c1-c": Shape()}}
    HPC_FLAGS = {"sync_cache_threshold": 60.0, "cache_threshold": 100.0}

    def one_on_each_node(self, flavor: str) -> None:
        for node in self.NODES["c1"]:
            self.launch_on(flavor, node)

    def test_beta_counts_the_cache_pressure_of_each_node(self) -> None:
        self.one_on_each_node(self.hpc_flavor(app_class="SyncHPC", cache_score=25))
        # 25 on each node, 75 on the service: one more fits on each node, two do not.
        other = self.hpc_flavor(app_class="SyncHPC", cache_score=25)
        self.assertEqual({"c1-a": 1, "c1-b": 1, "c1-c": 1}, self.placed(self.launch(other, 3)))
        self.assert_refused(self.launch(other))

    def test_alpha_counts_the_cache_pressure_of_each_node(self) -> None:
        self.one_on_each_node(self.hpc_flavor(app_class="AsyncHPC", cache_score=40))
        other = self.hpc_flavor(app_class="AsyncHPC", cache_score=40)
        self.assertEqual({"c1-a": 1, "c1-b": 1, "c1-c": 1}, self.placed(self.launch(other, 3)))
        self.assert_refused(self.launch(other))


class TestHomogeneity(MultiNode, base.HpcTestCase):
    """A service with nodes of two processor models, and one with the first model only."""

    NODES = {
        "c1": {"c1-a": Shape(cpu_model="Nehalem"), "c1-b": Shape(cpu_model="EPYC")},
        "c2": {"c2-a": Shape(cpu_model="Nehalem")},
    }

    def test_each_node_is_grouped_by_its_own_processor_model(self) -> None:
        sync = self.hpc_flavor(app_class="SyncHPC")
        nehalem = {"c1-a", "c2-a"}
        # Eight cores of Nehalem on two services, four of EPYC: 5 VMs go to
        # Nehalem, although c1 has eight cores too.
        first = self.placed(self.launch(sync, 5))
        self.assertLessEqual(set(first), nehalem)
        # Three Nehalem cores are left on partly used nodes: 4 VMs take the
        # whole EPYC node rather than mix models, and 3 more fill Nehalem.
        self.assertEqual({"c1-b": 4}, self.placed(self.launch(sync, 4)))
        self.assertLessEqual(set(self.placed(self.launch(sync, 3))), nehalem)


class TestTopology(MultiNode, base.HpcTestCase):
    """Racks of one service each; block b1 holds two services, b2 one."""

    NODES = {
        "c1": {"c1-a": Shape(), "c1-b": Shape()},
        "c2": {"c2-a": Shape(), "c2-b": Shape()},
        "c3": {"c3-a": Shape(), "c3-b": Shape()},
    }
    RACKS = {"r1": ["c1"], "r2": ["c2"], "r3": ["c3"]}
    TAGS = {"hpc:block": {"b1": ["c1", "c2"], "b2": ["c3"]}}
    HPC_FLAGS = {"topology_levels": ["block", "rack"]}

    def flavor(self, **topology: str) -> str:
        specs = {f"topology_{key}": value for key, value in topology.items()}
        return self.hpc_flavor(app_class="SyncHPC", cache_score=1, **specs)

    def pin(self, node: str) -> None:
        """A plain 4-core server on ``node``."""
        self.launch_on(self._create_flavor(memory_mb=1024, vcpu=4, disk=1, ephemeral=0), node)

    def test_required_rack_fits_in_the_nodes_of_one_service(self) -> None:
        self.pin("c3-b")
        self.pin("c1-a")
        # Racks r1 and r3 have one free node each: only r2 holds 8.
        self.assertEqual(
            {"c2-a": 4, "c2-b": 4}, self.placed(self.launch(self.flavor(required="rack"), 8))
        )
        # 8 cores are free, 4 in each of two racks: no rack holds 5.
        self.assert_refused(self.launch(self.flavor(required="rack"), 5))

    def test_required_block_spans_the_services_of_one_block(self) -> None:
        self.pin("c1-a")
        self.pin("c3-a")
        # b1 has 12 free cores on three nodes of two services, b2 has 4:
        # 13 VMs are refused (16 cores are free), 12 fill b1.
        self.assert_refused(self.launch(self.flavor(required="block"), 13))
        hosts = self.placed(self.launch(self.flavor(required="block"), 12))
        self.assertEqual({"c1-b": 4, "c2-a": 4, "c2-b": 4}, hosts)

    def test_required_host_is_one_node_not_one_service(self) -> None:
        # Every service has 8 free cores on two nodes; no node has 5.
        self.assert_refused(self.launch(self.flavor(required="host"), 5))
        self.assertEqual(
            [4], list(self.placed(self.launch(self.flavor(required="host"), 4)).values())
        )


#: blast runs twice as fast on EPYC nodes, gene on Xeon nodes.
NODE_RUNS = [
    TaskRun("blast", group_of("EPYC"), 100.0),
    TaskRun("blast", group_of("Xeon"), 200.0),
    TaskRun("gene", group_of("EPYC"), 200.0),
    TaskRun("gene", group_of("Xeon"), 100.0),
]


class TestEntitlements(MultiNode, FairshareCloud):
    """Two services, each with an EPYC node and a Xeon node: a platform of each
    model spans both services, and each service is on both platforms."""

    NODES = {
        "c1": {"c1-a": Shape(cpu_model="EPYC"), "c1-b": Shape(cpu_model="Xeon")},
        "c2": {"c2-a": Shape(cpu_model="EPYC"), "c2-b": Shape(cpu_model="Xeon")},
    }
    CPU_GROUPS: dict = {}
    DEMAND = {"p-blast": 4, "p-gene": 8}

    def setUp(self) -> None:
        super().setUp()
        self.database.import_runs(NODE_RUNS)

    def test_entitlements_count_the_cores_of_nodes(self) -> None:
        outcome = self.allocate()
        self.assertEqual({group_of("EPYC"): 4}, outcome.allocation["p-blast"])
        self.assertEqual({group_of("Xeon"): 8}, outcome.allocation["p-gene"])
        blast = self.app_flavor("blast")
        self.assertLessEqual(set(self.placed(self.boot_as("p-blast", blast, 4))), {"c1-a", "c2-a"})
        # Four EPYC cores are still idle, and both services have room: the
        # entitlement, counted on the EPYC nodes, is used up.
        self.assert_refused(self.boot_as("p-blast", blast, 1))
        gene = self.placed(self.boot_as("p-gene", self.app_flavor("gene"), 8))
        self.assertEqual({"c1-b": 4, "c2-b": 4}, gene)


class TestTwoWorkers(TwoSchedulers, BurstMixin, MultiNode, base.HpcTestCase):
    """Two scheduler services place a burst on the nodes of two services."""

    NODES = {
        "c1": {"c1-a": Shape(), "c1-b": Shape(), "c1-c": Shape()},
        "c2": {"c2-a": Shape(), "c2-b": Shape(), "c2-c": Shape()},
    }

    def test_concurrent_requests_never_share_a_dedicated_node(self) -> None:
        extreme = self.hpc_flavor(app_class="ExtremeHPC")
        sync = self.hpc_flavor(app_class="SyncHPC", cache_score=1)
        plain = self._create_flavor(memory_mb=1024, vcpu=1, disk=1, ephemeral=0)
        # 12 VMs of one vCPU on 6 nodes of 4: whether each fits depends on
        # the order the two workers place them in and on the races they lose.
        burst = [(extreme, 2), (sync, 2), (plain, 2)] * 2
        reservations = self.post_burst(burst)
        found = self.wait_for_burst(reservations, [count for _, count in burst])
        requests = list(zip(burst, reservations, strict=True))
        placements = [(flavor, found[reservation]) for (flavor, _), reservation in requests]
        # What a lost race refused must fit again, one request at a time,
        # wherever the cloud still has room for it: a refusal leaves nothing
        # held. How many races a loaded machine loses is not the question.
        for (flavor, count), reservation in requests:
            if self.outcome(found[reservation]) == "placed":
                continue
            room = self.room_for(flavor == extreme, count, placements, extreme)
            servers = self.launch(flavor, count)
            self.assertEqual(
                "placed" if room else "refused",
                self.outcome(servers),
                (flavor == extreme, flavor == sync, [self.nodes_of(s) for _, s in placements]),
            )
            placements.append((flavor, servers))
        apps_on: dict[str, set[int]] = collections.defaultdict(set)
        extreme_on: set[str] = set()
        for request, (flavor, servers) in enumerate(placements):
            for node in self.nodes_of(servers):
                apps_on[node].add(request)
                if flavor == extreme:
                    extreme_on.add(node)
        self.assertTrue(extreme_on, placements)
        for node in extreme_on:
            self.assertEqual(1, len(apps_on[node]), (node, dict(apps_on)))

    def room_for(self, dedicated: bool, count: int, placements, extreme: str) -> bool:
        """Whether ``count`` VMs of one vCPU fit: in the cores of idle nodes if
        ``dedicated`` (a request's own VMs may share its nodes), else in the
        free cores of nodes no ExtremeHPC VM holds."""
        used: collections.Counter[str] = collections.Counter()
        held: set[str] = set()
        for flavor, servers in placements:
            for node, vms in self.nodes_of(servers).items():
                used[node] += vms
                if flavor == extreme:
                    held.add(node)
        nodes = [node for service in self.NODES.values() for node in service]
        cores = Shape().vcpus
        if dedicated:
            return cores * sum(1 for node in nodes if not used[node]) >= count
        return sum(cores - used[node] for node in nodes if node not in held) >= count
