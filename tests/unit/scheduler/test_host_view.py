"""Reading Nova's host states and requests."""

from __future__ import annotations

import datetime
import types

import nova.conf
import testtools
from nova import objects
from nova.scheduler import host_manager
from oslo_config import fixture as config_fixture

from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.scheduler import host_view

objects.register_all()

NODE_UUID = "9c1d3c4e-2f57-4d0e-8a0c-5b1f4a7e6d01"
POOL_UUID = "0d6c1f0e-6a8f-4f4d-9b9e-3c8e2f1a7b02"


def aggregate(**metadata: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(metadata={f"hpc:{k}": v for k, v in metadata.items()})


class TestTopology(testtools.TestCase):
    def state(self, aggregates=(), cpu_info=None) -> types.SimpleNamespace:
        return types.SimpleNamespace(
            host="h", nodename="h", aggregates=list(aggregates), cpu_info=cpu_info
        )

    def test_aggregate_metadata_wins(self) -> None:
        state = self.state(
            [aggregate(rack="r1"), aggregate(cpu_group="xeon")],
            '{"vendor": "Intel", "model": "Nehalem"}',
        )
        self.assertEqual(("r1", "xeon"), host_view.topology(state))

    def test_cpu_info_fallback(self) -> None:
        self.assertEqual(
            ("", "Intel/Nehalem"),
            host_view.topology(self.state(cpu_info='{"vendor": "Intel", "model": "Nehalem"}')),
        )
        self.assertEqual(
            "AMD/EPYC/2400MHz",
            host_view.cpu_group_from_cpu_info(
                {"vendor": "AMD", "model": "EPYC", "frequency": 2400}
            ),
        )
        for bad in (None, "", "not json", "[1]", {}):
            self.assertEqual("unknown", host_view.cpu_group_from_cpu_info(bad))

    def test_conflicting_values_pick_one_deterministically(self) -> None:
        state = self.state([aggregate(rack="r2"), aggregate(rack="r1")])
        self.assertEqual("r1", host_view.topology(state)[0])

    def test_host_key(self) -> None:
        self.assertEqual("h", host_view.host_key(types.SimpleNamespace(host="h", nodename="h")))
        self.assertEqual("h/n", host_view.host_key(types.SimpleNamespace(host="h", nodename="n")))


def flavor(vcpus=2, ram=2048, root=20, ephemeral=0, swap=0, **extra_specs) -> objects.Flavor:
    return objects.Flavor(
        vcpus=vcpus,
        memory_mb=ram,
        root_gb=root,
        ephemeral_gb=ephemeral,
        swap=swap,
        extra_specs=extra_specs,
    )


def spec(is_bfv: bool = False, **kwargs) -> objects.RequestSpec:
    return objects.RequestSpec(flavor=flavor(**kwargs), is_bfv=is_bfv, num_instances=1)


def candidate(disk_from: str = NODE_UUID, disk: int = 20) -> dict:
    """One allocation request of GET /allocation_candidates."""
    allocations = {NODE_UUID: {"resources": {"VCPU": 2, "MEMORY_MB": 2048}}}
    allocations.setdefault(disk_from, {"resources": {}})["resources"]["DISK_GB"] = disk
    return {"allocations": allocations, "mappings": {"": list(allocations)}}


class TestDemand(testtools.TestCase):
    """One VM's demand is what Nova asks Placement for."""

    def test_flavor(self) -> None:
        # Swap counts as disk, rounded up to GB.
        self.assertEqual(
            (2, 4096, 17),
            host_view.demand(spec(ram=4096, root=10, ephemeral=5, swap=1500)).as_tuple(),
        )

    def test_boot_from_volume_asks_no_root_disk(self) -> None:
        self.assertEqual((2, 2048, 0), host_view.demand(spec(is_bfv=True, root=2000)).as_tuple())
        self.assertEqual(
            (2, 2048, 5), host_view.demand(spec(is_bfv=True, root=2000, ephemeral=5)).as_tuple()
        )

    def test_resources_overrides(self) -> None:
        self.assertEqual(
            (4, 1024, 0),
            host_view.demand(
                spec(
                    **{
                        "resources:VCPU": "4",
                        "resources:MEMORY_MB": "1024",
                        "resources:DISK_GB": "0",
                    }
                )
            ).as_tuple(),
        )

    def test_dedicated_cpus_count_as_vcpus(self) -> None:
        self.assertEqual(
            (2, 2048, 20), host_view.demand(spec(**{"hw:cpu_policy": "dedicated"})).as_tuple()
        )

    def test_partial_spec_falls_back_to_the_flavor(self) -> None:
        partial = types.SimpleNamespace(
            vcpus=2, memory_mb=4096, root_gb=10, ephemeral_gb=5, swap=1500
        )
        self.assertEqual(
            (2, 4096, 17), host_view.demand(types.SimpleNamespace(flavor=partial)).as_tuple()
        )
        self.assertEqual(
            (2, 4096, 7),
            host_view.demand(types.SimpleNamespace(flavor=partial, is_bfv=True)).as_tuple(),
        )


class TestPlacementCapacity(testtools.TestCase):
    """Capacity and free resources from Nova's HostState, as Placement counts them.

    The compute node records are filled as Nova's resource tracker fills
    them: the ``reserved_host_*`` options count as used.
    """

    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        self.reserve()

    def reserve(self, cpus: int = 0, memory_mb: int = 0, disk_mb: int = 0) -> None:
        self.conf.config(
            reserved_host_cpus=cpus,
            reserved_host_memory_mb=memory_mb,
            reserved_host_disk_mb=disk_mb,
        )

    def host_state(
        self,
        *,
        vcpus: int = 10,
        memory_mb: int = 8192,
        local_gb: int = 1028,
        instances: tuple[tuple[int, int, int], ...] = (),
        disk_available_least: int | None = 0,
        ratios: tuple[float, float, float] = (1.0, 1.0, 1.0),
        candidates: list | None = None,
    ) -> host_manager.HostState:
        """A MediumFakeDriver host running ``(vcpus, ram, disk)`` instances."""
        conf = nova.conf.CONF
        vcpus_used = conf.reserved_host_cpus + sum(i[0] for i in instances)
        memory_mb_used = conf.reserved_host_memory_mb + sum(i[1] for i in instances)
        local_gb_used = int(conf.reserved_host_disk_mb / 1024) + sum(i[2] for i in instances)
        compute = objects.ComputeNode(
            uuid=NODE_UUID,
            id=1,
            host="h",
            hypervisor_hostname="h",
            vcpus=vcpus,
            vcpus_used=vcpus_used,
            memory_mb=memory_mb,
            free_ram_mb=memory_mb - memory_mb_used,
            local_gb=local_gb,
            local_gb_used=local_gb_used,
            free_disk_gb=local_gb - local_gb_used,
            disk_available_least=disk_available_least,
            updated_at=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
            host_ip="127.0.0.1",
            hypervisor_type="fake",
            hypervisor_version=1000,
            numa_topology=None,
            supported_hv_specs=[],
            pci_device_pools=None,
            cpu_info='{"vendor": "Intel", "model": "Nehalem"}',
            stats={"num_instances": str(len(instances))},
            metrics=None,
            cpu_allocation_ratio=ratios[0],
            ram_allocation_ratio=ratios[1],
            disk_allocation_ratio=ratios[2],
        )
        state = host_manager.HostState("h", "h", None)
        state.update(compute=compute)
        state.allocation_candidates = candidates or []
        return state

    def test_reserved_and_ratios(self) -> None:
        self.reserve(cpus=2, memory_mb=2048, disk_mb=1500)
        state = self.host_state(ratios=(2.0, 1.5, 1.0), instances=((3, 1024, 20),))
        capacity, free = host_view.resources(state)
        # Placement: (total - reserved) x ratio, reserved disk rounded up to GB.
        self.assertEqual((16, 9216, 1026), capacity.as_tuple())
        self.assertEqual((13, 8192, 1006), free.as_tuple())

    def test_pending_consumption_counts_for_cpu_and_ram(self) -> None:
        self.reserve(memory_mb=512)
        state = self.host_state(instances=((2, 1024, 20),))
        placed = spec(vcpus=1, ram=512, root=10)
        placed.numa_topology = placed.pci_requests = None
        state.consume_from_request(placed)
        self.assertEqual(2, state.num_instances)
        _, free = host_view.resources(state)
        # The scheduler's disk guess is mixed with disk_available_least (0
        # here): the pending VM's disk counts once its compute reports it.
        self.assertEqual((7, 8192 - 512 - 1024 - 512, 1008), free.as_tuple())

    def test_disk_available_least_does_not_count(self) -> None:
        vm = host_view.demand(spec(vcpus=1, ram=512, root=100))
        for least in (0, -50, 30, None):
            state = self.host_state(disk_available_least=least, instances=((1, 512, 128),))
            self.assertEqual(900, host_view.resources(state)[1].disk_gb, least)
            host = host_view.to_host(state, (), demand=vm)
            self.assertEqual(9, vm.copies_that_fit(host.free), least)

    def test_local_disk_limits_where_placement_counts_it_per_host(self) -> None:
        vm = host_view.demand(spec(vcpus=1, ram=512, root=300))
        state = self.host_state(candidates=[candidate(disk=300)])
        self.assertEqual(3, vm.copies_that_fit(host_view.to_host(state, (), demand=vm).free))

    def test_shared_storage_does_not_limit(self) -> None:
        vm = host_view.demand(spec(vcpus=1, ram=512, root=300))
        state = self.host_state(candidates=[candidate(disk_from=POOL_UUID, disk=300)])
        self.assertFalse(host_view.disk_is_per_host(state, vm))
        host = host_view.to_host(state, (), demand=vm)
        self.assertEqual(10, vm.copies_that_fit(host.free))
        self.assertLessEqual(host.free.disk_gb, host.capacity.disk_gb)

    def test_no_local_disk_does_not_limit(self) -> None:
        vm = host_view.demand(spec(vcpus=1, ram=512, root=300))
        state = self.host_state(local_gb=0)
        self.assertFalse(host_view.disk_is_per_host(state, vm))
        self.assertEqual(10, vm.copies_that_fit(host_view.to_host(state, (), demand=vm).free))

    def test_boot_from_volume_disk_does_not_count(self) -> None:
        vm = host_view.demand(spec(is_bfv=True, vcpus=2, ram=2048, root=2000))
        host = host_view.to_host(self.host_state(local_gb=100), (), demand=vm)
        self.assertEqual(4, vm.copies_that_fit(host.free))

    def test_placement_has_the_last_word_on_one(self) -> None:
        vm = host_view.demand(spec(vcpus=2, ram=2048, root=20))
        # The host state says the RAM is gone (say Placement's inventory has a
        # ratio the compute node does not know); Placement offered the host.
        full = {"instances": ((2, 8192, 20),)}
        offered = self.host_state(candidates=[candidate()], **full)
        host = host_view.to_host(offered, (), demand=vm)
        self.assertEqual(1, vm.copies_that_fit(host.free))
        self.assertTrue(host.free.fits_in(host.capacity))
        # Without Placement's word, the estimate stands.
        self.assertEqual(
            0, vm.copies_that_fit(host_view.to_host(self.host_state(**full), (), demand=vm).free)
        )
        # Where the estimate allows more, it decides how many.
        roomy = self.host_state(candidates=[candidate()])
        self.assertEqual(4, vm.copies_that_fit(host_view.to_host(roomy, (), demand=vm).free))

    def test_without_demand_the_estimate_is_unchanged(self) -> None:
        state = self.host_state(candidates=[candidate()], instances=((2, 8192, 20),))
        host = host_view.to_host(state, ())
        self.assertEqual(host_view.resources(state), (host.capacity, host.free))
        self.assertEqual(Resources(8, 0, 1008), host.free)


VM = "9d1b5c36-36e4-4b35-9d35-2f0e3c7e1f3b"


class TestListedNode(testtools.TestCase):
    """Each node of a multi-node service lists every instance of the service."""

    def node_state(self, node: str, **listed: objects.Instance) -> host_manager.HostState:
        state = host_manager.HostState("c1", node, None)
        state.instances = dict(listed)
        return state

    def test_the_node_of_a_whole_instance_a_compute_sent(self) -> None:
        state = self.node_state("c1-a", **{VM: objects.Instance(uuid=VM, node="c1-b")})
        self.assertEqual("c1-b", host_view.listed_node(state, VM))

    def test_none_for_an_instance_read_back_by_uuid_or_not_listed(self) -> None:
        state = self.node_state("c1-a", **{VM: objects.Instance(uuid=VM)})
        self.assertIsNone(host_view.listed_node(state, VM))
        self.assertIsNone(host_view.listed_node(state, "other"))
        self.assertIsNone(host_view.listed_node(self.node_state("c1-a"), VM))
