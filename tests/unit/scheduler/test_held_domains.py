"""Where an application already is in the topology, as the filter plans it."""

from __future__ import annotations

import types

import testtools

from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import held_domains
from hpc_nova_scheduler.scheduler.request import Request, RequestState
from hpc_nova_scheduler.topology.levels import TopologySpec
from tests.unit.scheduler.test_corunners import Listed

LEVELS = ("block", "rack")
TAGS = {
    "h1": {"hpc:block": frozenset({"b1"}), "hpc:rack": frozenset({"r1"})},
    "h2": {"hpc:block": frozenset({"b1"}), "hpc:rack": frozenset({"r2"})},
}
RACK = TopologySpec(required="rack")


def state(topology: TopologySpec = RACK, moving_from=None) -> RequestState:
    found = RequestState(ApplicationProfile(), "app", topology=topology)
    found.moving_from = moving_from
    return found


class TestWhereNow(testtools.TestCase):
    def test_the_record_wins_then_the_host_nova_shows_it_on(self) -> None:
        record = types.SimpleNamespace(host="h1", nodename="n1")
        hosts = [
            types.SimpleNamespace(host="h2", nodename="n2", instances={"vm": object()}),
            types.SimpleNamespace(host="h3", instances=None),
        ]
        self.assertEqual(("h1", "n1"), held_domains.where_now(record, "vm", hosts))
        self.assertEqual(("h2", "n2"), held_domains.where_now(None, "vm", hosts))
        self.assertIsNone(held_domains.where_now(None, "new", hosts))

    def test_the_node_nova_names_among_the_nodes_of_one_service(self) -> None:
        # Both nodes of h1 list the VM; the compute's copy of it names n2.
        listed = {"vm": Listed("n2")}
        hosts = [
            types.SimpleNamespace(host="h1", nodename=node, instances=listed)
            for node in ("n1", "n2")
        ]
        self.assertEqual(("h1", "n2"), held_domains.where_now(None, "vm", hosts))
        # Read back by uuid, it names none: the first node listing it, as before.
        hosts[0].instances = hosts[1].instances = {"vm": Listed(None)}
        self.assertEqual(("h1", "n1"), held_domains.where_now(None, "vm", hosts))


class TestHeld(testtools.TestCase):
    def test_a_new_ungrouped_request_holds_nothing(self) -> None:
        self.assertEqual((), held_domains.held(state(), Request(), LEVELS, TAGS))

    def test_seed_003s_single_level_reads_its_own_vms_only(self) -> None:
        grouped = Request(group_uuid="g")
        self.assertEqual((), held_domains.held(state(TopologySpec()), grouped, ("rack",), TAGS))

    def test_a_moved_vm_holds_its_domains_at_every_level(self) -> None:
        found = held_domains.held(state(moving_from=("h2", None)), Request(), LEVELS, TAGS)
        self.assertEqual(
            (frozenset({"b1"}), frozenset({"b1/r2"}), frozenset({db_api.host_key("h2", None)})),
            found,
        )

    def test_unknown_when_a_level_is_required_and_cannot_be_read(self) -> None:
        grouped = Request(group_uuid="g")
        self.assertIsNone(held_domains.held(state(), grouped, LEVELS, None))
        # No database to ask where the group runs.
        self.assertIsNone(held_domains.held(state(), grouped, LEVELS, TAGS))
        # Without a required level the plan goes on without them.
        self.assertEqual(
            (), held_domains.held(state(TopologySpec(preferred="rack")), grouped, LEVELS, None)
        )


class TestDomainCheck(testtools.TestCase):
    def test_the_required_levels_domain_of_a_host(self) -> None:
        depth, domain_of = held_domains.domain_check(state(), LEVELS, TAGS)
        self.assertEqual(1, depth)
        self.assertEqual("b1/r1", domain_of("h1", "h1"))
        self.assertEqual("b1/r2", domain_of("h2", "h2"))

    def test_nothing_to_check_without_a_required_level_or_tags(self) -> None:
        self.assertIsNone(held_domains.domain_check(state(TopologySpec()), LEVELS, TAGS))
        self.assertIsNone(held_domains.domain_check(state(), LEVELS, None))
