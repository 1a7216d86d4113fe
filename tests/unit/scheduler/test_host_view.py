"""Reading Nova's host states and requests."""

from __future__ import annotations

import types

import testtools

from hpc_nova_scheduler.scheduler import host_view


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

    def test_resources_apply_allocation_ratios(self) -> None:
        state = types.SimpleNamespace(
            vcpus_total=4,
            cpu_allocation_ratio=2.0,
            vcpus_used=3,
            total_usable_ram_mb=8192,
            free_ram_mb=6144,
            ram_allocation_ratio=1.0,
            total_usable_disk_gb=100,
            free_disk_mb=50 * 1024,
            disk_allocation_ratio=None,
        )
        capacity, free = host_view.resources(state)
        self.assertEqual((8, 8192, 100), capacity.as_tuple())
        self.assertEqual((5, 6144, 50), free.as_tuple())

    def test_demand_counts_swap_as_disk(self) -> None:
        flavor = types.SimpleNamespace(
            vcpus=2, memory_mb=4096, root_gb=10, ephemeral_gb=5, swap=1500
        )
        self.assertEqual(
            (2, 4096, 17), host_view.demand(types.SimpleNamespace(flavor=flavor)).as_tuple()
        )

    def test_host_key(self) -> None:
        self.assertEqual("h", host_view.host_key(types.SimpleNamespace(host="h", nodename="h")))
        self.assertEqual("h/n", host_view.host_key(types.SimpleNamespace(host="h", nodename="n")))
