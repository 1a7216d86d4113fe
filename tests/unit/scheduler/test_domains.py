"""Each compute node's topology domains, as reclaim reads them (agent and dry run)."""

from __future__ import annotations

import testtools
from oslo_config import fixture as config_fixture

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.scheduler import domains

TAGS = {
    "h1": {"hpc:rack": frozenset({"r1"}), "hpc:pod": frozenset({"p1"})},
    "h2": {"hpc:rack": frozenset({"r1"}), "hpc:pod": frozenset({"p1"})},
}


class DomainsOfHostsTests(testtools.TestCase):
    def test_the_levels_in_force_by_default(self) -> None:
        fixture = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        fixture.config(topology_levels=["pod", "rack"], group=hpc_conf.GROUP_NAME)
        domains_of = domains.domains_of_hosts(TAGS)
        self.assertEqual(
            domains_of("h1"),
            domains.domains_of_hosts(TAGS, ("pod", "rack"))("h1"),
        )
        self.assertEqual({"pod", "rack"}, set(domains_of("h1")))
        # Two hosts of one rack share its domain; a node of its own is one apart.
        self.assertEqual(domains_of("h1")["rack"], domains_of("h2/n2")["rack"])

    def test_a_command_gives_its_own_levels(self) -> None:
        domains_of = domains.domains_of_hosts(TAGS, ("rack",))
        self.assertEqual(["rack"], list(domains_of("h1")))
        # A host with no rack is a domain of its own, as placement names it.
        self.assertNotEqual(domains_of("h1")["rack"], domains_of("h3")["rack"])
        self.assertEqual(
            {"rack": domains_of("h3")["rack"]}, domains.domains_of_hosts(None, ("rack",))("h3")
        )
