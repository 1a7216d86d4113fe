"""``up --nodes``: racks of nodes behind compute services sharing a process.

A small cloud of two racks of three nodes, both compute services in one
``devcloud.compute_pool`` process, on the local MariaDB and RabbitMQ: every
node is a resource provider and a hypervisor of its own, a request that
requires one rack lands on nodes of one compute service, and ``down``
leaves no process behind. Without MariaDB or RabbitMQ the test skips,
except where CI (or ``HPC_REQUIRE_DB_BACKENDS``) is set: there it fails.
"""

from __future__ import annotations

import time
from pathlib import Path

import fixtures
import testtools

from devcloud import cli, control, memory, operator, services
from tests import db_backends
from tests.system.test_cloud import _missing_backend

BUILD_TIMEOUT = 300.0
#: A SyncHPC flavor that requires every VM of the request in one rack.
FLAVOR = "hpc.SyncHPC.10.m.rack"


class TestCloudOfRacks(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        reason = _missing_backend()
        if reason is not None:
            if db_backends.backends_required():
                self.fail(f"{reason} (HPC_REQUIRE_DB_BACKENDS is set)")
            self.skipTest(reason)
        self.root = Path(self.useFixture(fixtures.TempDir()).path)
        self.log: list[str] = []

    def boot(self, run, conn, name: str, count: int) -> list:
        conn.compute.create_server(
            name=name,
            image_id=run.image_id,
            flavor_id=run.flavors[FLAVOR],
            networks="none",
            min_count=count,
            max_count=count,
            scheduler_hints={"hpc_app_name": "LU"},
        )
        deadline = time.monotonic() + BUILD_TIMEOUT
        while True:
            servers = list(conn.compute.servers(details=True, name=f"^{name}(-[0-9]+)?$"))
            if len(servers) == count and {s.status for s in servers} <= {"ACTIVE", "ERROR"}:
                return servers
            if time.monotonic() > deadline:
                self.fail(f"{name}: {[(s.name, s.status) for s in servers]} after the timeout")
            time.sleep(1)

    def test_a_request_of_one_rack_lands_on_nodes_of_one_service(self) -> None:
        try:
            run = control.up(
                self.root,
                mysql=cli.MYSQL,
                rabbit=cli.RABBIT,
                computes=0,
                scheduler_workers=1,
                plugin=True,
                say=self.log.append,
                nodes=6,
                rack_size=3,
                services_per_process=2,
            )
        except services.ServiceError as error:
            self.fail(f"up failed: {error}\n" + "\n".join(self.log))
        up_pids = [s.pid for s in run.services]
        try:
            report = "\n".join(self.log)
            self.assertEqual(
                ["nova-compute-pool-00"], [s.name for s in run.services_named(control.POOL)]
            )
            places = operator.node_places(run)
            self.assertEqual(6, len(places))
            conn = operator.connect(run)
            # Every node is a hypervisor of its own, behind its rack's service.
            hypervisors = {h.name: h for h in conn.compute.hypervisors(details=True)}
            self.assertEqual(set(places), set(hypervisors), report)
            providers = conn.placement.get("/resource_providers", microversion="1.14").json()
            for provider in providers["resource_providers"]:
                name = provider["name"]
                self.assertEqual(places[name].host, hypervisors[name].service_details["host"])
                inventory = conn.placement.get(
                    f"/resource_providers/{provider['uuid']}/inventories"
                ).json()["inventories"]
                self.assertEqual(places[name].vcpus, inventory["VCPU"]["total"])
                self.assertEqual(places[name].memory_mb, inventory["MEMORY_MB"]["total"])
            servers = self.boot(run, conn, "rack-probe", 3)
            placed = [(s.status, s.compute_host, s.hypervisor_hostname) for s in servers]
            self.assertEqual({"ACTIVE"}, {status for status, _, _ in placed}, placed)
            self.assertEqual(1, len({places[node].host for _, _, node in placed}), placed)
            for _, host, node in placed:
                self.assertEqual(places[node].host, host)
            rows = memory.usage(run)
            self.assertEqual(memory.TOTAL, rows[-1][0])
            self.assertGreater(
                dict((name, pss) for name, _, _, pss in rows)[control.POOL + "-00"], 0
            )
            for server in servers:
                conn.compute.delete_server(server)
        finally:
            control.down(run, say=self.log.append)
        self.assertEqual([], [pid for pid in up_pids if services.group_alive(pid)])
