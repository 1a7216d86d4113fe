"""The plugin on Nova's own fake drivers, which report no free disk.

Nova's ``fake.MediumFakeDriver`` and ``fake.SmallFakeDriver`` report
``disk_available_least = 0``, as shared storage and some real drivers do:
the plugin must count capacity as Placement does, never from that value.
"""

from __future__ import annotations

import time

import fixtures

from hpc_nova_scheduler.demo.fake_driver import Shape
from tests.functional import base


def named(*hosts: str) -> dict[str, Shape]:
    # With a stock driver the shape is the driver's; only the names count.
    return dict.fromkeys(hosts, Shape())


class TestMediumFakeDriver(base.HpcTestCase):
    """10 vCPU, 8 GB RAM, 1028 GB disk per host; disk_available_least 0."""

    STOCK_DRIVER = "fake.MediumFakeDriver"
    HOSTS = named("n1", "n2", "n3", "n4", "n5", "n6")
    RACKS = {"r1": ["n1", "n2"], "r2": ["n3", "n4", "n5", "n6"]}
    CPU_GROUPS = {"gA": ["n1", "n2", "n3", "n4"], "gB": ["n5", "n6"]}
    HPC_FLAGS = {"sync_cache_threshold": 60.0}

    def rack(self, host: str) -> str:
        return next(rack for rack, members in self.RACKS.items() if host in members)

    def group(self, host: str) -> str:
        return next(group for group, members in self.CPU_GROUPS.items() if host in members)

    def test_sync_in_one_group_and_rack_then_extreme_on_dedicated_hosts(self) -> None:
        # 2 GB VMs: RAM allows 4 per host, so 6 VMs need two hosts.
        sync = self.launch(self.hpc_flavor(vcpus=2, ram=2048, app_class="SyncHPC"), 6)
        hosts = self.hosts_of(sync)
        self.assertEqual([2, 4], sorted(hosts.values()), hosts)
        self.assertEqual(1, len({self.group(h) for h in hosts}), hosts)
        self.assertEqual(1, len({self.rack(h) for h in hosts}), hosts)
        extreme = self.hosts_of(
            self.launch(self.hpc_flavor(vcpus=2, ram=2048, app_class="ExtremeHPC"), 4)
        )
        self.assertEqual([4], list(extreme.values()), extreme)
        self.assertFalse(set(extreme) & set(hosts))
        later = self.hosts_of(self.launch(self.hpc_flavor(app_class="AsyncHPC")))
        self.assertFalse(set(later) & set(extreme), later)

    def test_cache_threshold_holds(self) -> None:
        sync = self.hpc_flavor(vcpus=1, ram=1024, app_class="SyncHPC", cache_score=20)
        hosts = self.hosts_of(self.launch(sync, 6))
        # beta = 60 allows 3 per host although capacity allows 8.
        self.assertEqual([3, 3], sorted(hosts.values()), hosts)


class TestSmallFakeDriver(base.HpcTestCase):
    """2 vCPU per host: the CPU decides, disk_available_least 0 does not."""

    STOCK_DRIVER = "fake.SmallFakeDriver"
    HOSTS = named("s1", "s2", "s3", "s4")
    RACKS = {"r1": ["s1", "s2"], "r2": ["s3", "s4"]}

    def test_sync_fills_a_rack_and_a_request_too_large_is_refused_whole(self) -> None:
        flavor = self.hpc_flavor(vcpus=1, ram=512, disk=10, app_class="SyncHPC")
        first = self.hosts_of(self.launch(flavor, 4))
        self.assertEqual([2, 2], sorted(first.values()), first)
        self.assertIn(set(first), ({"s1", "s2"}, {"s3", "s4"}))
        self.assert_refused(self.launch(flavor, 5))
        second = self.hosts_of(self.launch(flavor, 4))
        self.assertEqual({"s1", "s2", "s3", "s4"} - set(first), set(second))


class TestReservedAndRatios(base.HpcTestCase):
    """Reserved host resources and allocation ratios, counted as Placement does.

    Per host Placement offers (10 - 2) x 2.0 = 16 VCPU and
    (8192 - 2048) x 1.5 = 9216 MB; a count from the raw totals would offer
    18 VCPU and 10240 MB and plan more VMs than Placement accepts.
    """

    STOCK_DRIVER = "fake.MediumFakeDriver"
    HOSTS = named("n1", "n2")
    RACKS = {"r1": ["n1", "n2"]}

    def _setup_compute_service(self) -> None:
        # After HpcCloud's defaults, before the computes report inventory.
        self.flags(
            reserved_host_cpus=2,
            reserved_host_memory_mb=2048,
            cpu_allocation_ratio=2.0,
            ram_allocation_ratio=1.5,
            initial_cpu_allocation_ratio=2.0,
            initial_ram_allocation_ratio=1.5,
        )
        super()._setup_compute_service()

    def test_ram_counts_match_placement(self) -> None:
        flavor = self.hpc_flavor(vcpus=1, ram=2048, app_class="SyncHPC")
        self.assertEqual({"n1": 4, "n2": 4}, self.hosts_of(self.launch(flavor, 8)))
        self.assert_refused(self.launch(flavor))

    def test_cpu_counts_match_placement_and_too_large_is_refused_whole(self) -> None:
        flavor = self.hpc_flavor(vcpus=3, ram=512, app_class="SyncHPC")
        self.assert_refused(self.launch(flavor, 11))
        # Nothing of the refused request stayed behind: all ten fit.
        self.assertEqual({"n1": 5, "n2": 5}, self.hosts_of(self.launch(flavor, 10)))


class TestBootFromVolume(base.HpcTestCase):
    """A boot-from-volume VM asks Placement for no disk; neither may the plugin.

    Nova's harness already runs its ``CinderFixture`` (``self.cinder``): the
    root volumes are created there, not on the hosts.
    """

    STOCK_DRIVER = "fake.MediumFakeDriver"
    HOSTS = named("n1", "n2", "n3")
    RACKS = {"r1": ["n1", "n2", "n3"]}

    def setUp(self) -> None:
        super().setUp()
        # As Nova's own boot-from-volume tests do: the fake volume attachment
        # sends no event to wait for.
        self.useFixture(
            fixtures.MockPatch("nova.compute.manager.ComputeVirtAPI.wait_for_instance_event")
        )

    def test_root_disk_larger_than_any_host(self) -> None:
        # 2000 GB of root disk: only fits because Placement is not asked for it.
        flavor = self.hpc_flavor(vcpus=2, ram=2048, disk=2000, app_class="SyncHPC")
        server = self._build_server(flavor_id=flavor, networks="none")
        server.pop("imageRef")
        server["block_device_mapping_v2"] = [
            {
                "boot_index": 0,
                "uuid": self.glance.auto_disk_config_enabled_image["id"],
                "source_type": "image",
                "destination_type": "volume",
                "volume_size": 2000,
                "delete_on_termination": True,
            }
        ]
        server["min_count"] = 6
        server["return_reservation_id"] = True
        reservation = self.api.post_server({"server": server})["reservation_id"]
        servers = self.wait_for_reservation(reservation)
        hosts = self.hosts_of(servers)
        self.assertEqual([2, 4], sorted(hosts.values()), hosts)
        self.assertEqual(6, len(self.cinder.volumes))

    def wait_for_reservation(self, reservation: str) -> list[dict]:
        servers: list[dict] = []
        for _ in range(100):
            servers = self.api.get_servers(detail=True, search_opts={"reservation_id": reservation})
            if servers and all(s["status"] != "BUILD" for s in servers):
                return servers
            time.sleep(0.1)
        self.fail(f"servers of {reservation} still building: {servers}")
