"""Seed 003's HPC-aware placement, proven by booting through Nova's API."""

from __future__ import annotations

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
