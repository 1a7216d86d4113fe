"""Racks and processor groups come from Nova's database, not a worker's cache.

A nova-scheduler worker that oslo.service starts again after one died is
forked from the parent and inherits its aggregate cache as it was when the
parent started, typically before the operator tagged any host. The test
empties the scheduler's aggregate cache the same way and boots an
application that fits one processor group only if the groups are known.
"""

from __future__ import annotations

import collections

from hpc_nova_scheduler.demo.fake_driver import Shape
from tests.functional import base


class TestForgottenAggregates(base.HpcTestCase):
    HOSTS = {f"n{i}": Shape() for i in range(1, 5)}
    RACKS = {"r1": ["n1", "n2", "n3", "n4"]}
    # Alternating groups: by name order, the first two hosts differ.
    CPU_GROUPS = {"xeon": ["n1", "n3"], "epyc": ["n2", "n4"]}
    HPC_FLAGS = {"cache_threshold": 100.0, "sync_cache_threshold": 60.0}

    def forget_aggregates(self) -> None:
        host_manager = self.scheduler.manager.host_manager
        host_manager.aggs_by_id = {}
        host_manager.host_aggregates_map = collections.defaultdict(set)

    def test_an_application_stays_in_one_group(self) -> None:
        self.forget_aggregates()
        # One VM per host under beta: two hosts of one group are needed.
        flavor = self.hpc_flavor(app_class="SyncHPC", cache_score="35", app_name="LU")
        servers = self.launch(flavor, count=2)
        hosts = set(self.hosts_of(servers))
        self.assertEqual(2, len(hosts), servers)
        self.assertIn(hosts, ({"n1", "n3"}, {"n2", "n4"}))
