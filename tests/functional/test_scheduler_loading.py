"""nova-scheduler starts with the plugin's classes in available_filters."""

from __future__ import annotations

from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights

from hpc_nova_scheduler.scheduler import filters, weights
from tests.functional import base


class TestSchedulerLoading(base.NovaTestCase):
    def test_scheduler_loads_and_places(self) -> None:
        manager = self.scheduler.manager
        handler_filters = manager.host_manager.filter_handler.get_matching_classes(
            [base.HPC_FILTERS]
        )
        self.assertEqual(filters.all_filters(), handler_filters)
        self.assertTrue(all(issubclass(c, nova_filters.BaseHostFilter) for c in handler_filters))
        weighers = manager.host_manager.weight_handler.get_matching_classes([base.HPC_WEIGHERS])
        self.assertEqual(weights.all_weighers(), weighers)
        self.assertTrue(all(issubclass(c, nova_weights.BaseHostWeigher) for c in weighers))
        flavor = self._create_flavor(memory_mb=512, vcpu=1, disk=1, ephemeral=0)
        server = self.boot(flavor)
        self.assertEqual("compute", server["OS-EXT-SRV-ATTR:host"])
