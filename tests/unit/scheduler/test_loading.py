"""Discovery of the plugin's scheduler classes through stevedore."""

from __future__ import annotations

import testtools
from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights

from hpc_nova_scheduler.scheduler import filters, loading, weights


class TestLoading(testtools.TestCase):
    def test_all_filters_are_nova_filters(self) -> None:
        found = filters.all_filters()
        self.assertIsInstance(found, list)
        self.assertTrue(all(issubclass(c, nova_filters.BaseHostFilter) for c in found))

    def test_all_weighers_are_nova_weighers(self) -> None:
        found = weights.all_weighers()
        self.assertIsInstance(found, list)
        self.assertTrue(all(issubclass(c, nova_weights.BaseHostWeigher) for c in found))

    def test_wrong_base_is_left_out(self) -> None:
        # The validators namespace holds modules, not filter classes: each is
        # refused with a log line and nothing is returned.
        self.assertEqual(
            [], loading.load_classes("nova.api.extra_spec_validators", nova_filters.BaseHostFilter)
        )

    def test_unknown_namespace_is_empty(self) -> None:
        self.assertEqual([], loading.load_classes("hpc_nova_scheduler.nothing", object))
