"""The agent's light read of compute nodes agrees with Nova's own objects.

``scheduler.nova_nodes`` reads a few columns of ``compute_nodes`` in every
cell instead of building ``ComputeNode`` objects. Here, in Nova's harness
with two cells and compute services of several nodes each, every figure it
returns is held against ``ComputeNodeList.get_all`` read at the same
moment: before and after servers land, for a record without an allocation
ratio, after a compute service is deleted, and with one cell silent.
"""

from __future__ import annotations

from nova import context as nova_context
from nova import objects
from nova.db.main import api as main_api
from nova.tests import fixtures as nova_fixtures

from hpc_nova_scheduler.agent import allocator, idle_traits
from hpc_nova_scheduler.demo.fake_driver import Shape
from hpc_nova_scheduler.fairshare.platforms import FairshareError
from hpc_nova_scheduler.scheduler import nova_nodes
from tests.functional import base


class TestNovaNodes(base.HpcTestCase):
    NUMBER_OF_CELLS = 2
    NODES = {
        "svc1": {"svc1-a": Shape(vcpus=8), "svc1-b": Shape(vcpus=16, cpu_model="Haswell")},
        "svc2": {"svc2-a": Shape(vcpus=4), "svc2-b": Shape(vcpus=4), "svc2-c": Shape(vcpus=12)},
    }
    CELL_OF = {"svc1": "cell1", "svc2": "cell2"}

    def _setup_compute_service(self):
        for host, cell in self.CELL_OF.items():
            self._start_compute(host, cell_name=cell)

    def nova_objects(self) -> dict[str, nova_nodes.NodeRow]:
        """Every live node as Nova's versioned objects give it, in the reader's terms."""
        ctxt = nova_context.get_admin_context()
        results = nova_context.scatter_gather_skip_cell0(ctxt, objects.ComputeNodeList.get_all)
        found = {}
        for result in results.values():
            self.assertFalse(nova_context.is_cell_failure_sentinel(result), result)
            for node in result:
                found[node.uuid] = nova_nodes.NodeRow(
                    uuid=node.uuid,
                    host=node.host,
                    nodename=node.hypervisor_hostname,
                    vcpus=node.vcpus,
                    vcpus_used=node.vcpus_used,
                    running_vms=node.running_vms,
                    cpu_allocation_ratio=node.cpu_allocation_ratio,
                    cpu_info=node.cpu_info,
                )
        return found

    def read(self) -> dict[str, nova_nodes.NodeRow]:
        cells = nova_nodes.read()
        self.assertTrue(cells.complete, cells.silent)
        by_uuid = {node.uuid: node for node in cells.nodes}
        self.assertEqual(len(cells.nodes), len(by_uuid), "a node was read twice")
        return by_uuid

    def cell(self, name: str):
        ctxt = nova_context.get_admin_context()
        return next(c for c in objects.CellMappingList.get_all(ctxt) if c.name == name)

    def test_every_node_of_both_cells_as_nova_objects_give_it(self) -> None:
        read = self.read()
        self.assertEqual(self.nova_objects(), read)
        self.assertEqual(
            {(n.host, n.nodename) for n in read.values()},
            {(host, node) for host, nodes in self.NODES.items() for node in nodes},
        )
        self.assertEqual({8, 16, 4, 12}, {n.vcpus for n in read.values()})
        self.assertTrue(all(n.cpu_info for n in read.values()))

    def test_vms_on_nodes_are_counted_as_nova_counts_them(self) -> None:
        flavor = self.hpc_flavor(vcpus=2)
        for _ in range(3):
            self.launch(flavor)
        read = self.read()
        self.assertEqual(6, sum(n.vcpus_used for n in read.values()))
        self.assertEqual(self.nova_objects(), read)

    def test_a_record_without_a_ratio_takes_novas_configured_one(self) -> None:
        victim = next(iter(self.read().values()))
        cell = self.cell(self.CELL_OF[victim.host])
        with nova_context.target_cell(nova_context.get_admin_context(), cell) as cctxt:
            node = objects.ComputeNode.get_by_uuid(cctxt, victim.uuid)
            # Through the DB API: the object's save would read the record
            # back and write Nova's configured ratio over the 0.0.
            main_api.compute_node_update(cctxt, node.id, {"cpu_allocation_ratio": 0.0})
        self.flags(cpu_allocation_ratio=None, initial_cpu_allocation_ratio=4.0)
        self.assertEqual(4.0, self.read()[victim.uuid].cpu_allocation_ratio)
        self.flags(cpu_allocation_ratio=2.5)
        read = self.read()
        self.assertEqual(2.5, read[victim.uuid].cpu_allocation_ratio)
        # Nova's object applies the same rule (and writes it back: read it last).
        self.assertEqual(self.nova_objects(), read)

    def test_the_nodes_of_a_deleted_compute_service_are_gone(self) -> None:
        self.computes["svc2"].stop()
        services = self.admin_api.get_services(binary="nova-compute", host="svc2")
        self.admin_api.api_delete(f"/os-services/{services[0]['id']}")
        read = self.read()
        self.assertEqual({"svc1"}, {n.host for n in read.values()})
        self.assertEqual(self.nova_objects(), read)

    def test_a_silent_cell_is_named_and_the_other_cells_still_read(self) -> None:
        with nova_fixtures.DownCellFixture([self.cell("cell2")]):
            cells = nova_nodes.read()
            self.assertEqual([self.cell("cell2").uuid], cells.silent)
            self.assertFalse(cells.complete)
            self.assertEqual({"svc1"}, {n.host for n in cells.nodes})
            # The keeper tags nothing it cannot see; the allocator does not run.
            uses, complete = idle_traits.nova_node_uses()
            self.assertFalse(complete)
            self.assertEqual(2, len(uses))
            self.assertRaisesRegex(FairshareError, "did not answer", allocator.nova_nodes)
