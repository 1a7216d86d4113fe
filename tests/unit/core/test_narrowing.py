"""The keeper's decision (which providers to tag and untag) and the idle spec's rule."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core import narrowing
from hpc_nova_scheduler.core.narrowing import NodeUse
from hpc_nova_scheduler.core.profile import ProfileError


def idle(uuid: str) -> NodeUse:
    return NodeUse(uuid, 0, 0)


def busy(uuid: str, vms: int = 1, vcpus: int = 4) -> NodeUse:
    return NodeUse(uuid, vms, vcpus)


class TestChanges(testtools.TestCase):
    def test_idle_nodes_are_tagged_and_busy_ones_untagged(self) -> None:
        nodes = [idle("a"), idle("b"), busy("c"), busy("d")]
        found = narrowing.changes(nodes, {"b", "c"}, complete=True)
        self.assertEqual((frozenset({"a"}), frozenset({"c"})), (found.add, found.remove))

    def test_nothing_changes_when_the_trait_is_right(self) -> None:
        found = narrowing.changes([idle("a"), busy("b")], {"a"}, complete=True)
        self.assertFalse(found)

    def test_either_counter_makes_a_node_busy(self) -> None:
        # A migration's claim holds vCPUs before the VM runs there.
        nodes = [NodeUse("a", 0, 8), NodeUse("b", 1, 0)]
        found = narrowing.changes(nodes, {"a", "b"}, complete=True)
        self.assertEqual(frozenset({"a", "b"}), found.remove)

    def test_a_tagged_provider_that_is_no_compute_node_is_untagged(self) -> None:
        found = narrowing.changes([idle("a")], {"a", "deleted-node"}, complete=True)
        self.assertEqual(frozenset({"deleted-node"}), found.remove)

    def test_a_cell_that_did_not_answer_keeps_its_tags(self) -> None:
        # "x" may be an idle node of the silent cell: it keeps its trait;
        # "c" is busy in a cell that answered: it loses it.
        found = narrowing.changes([idle("a"), busy("c")], {"x", "c"}, complete=False)
        self.assertEqual((frozenset({"a"}), frozenset({"c"})), (found.add, found.remove))

    def test_a_node_read_twice_is_busy_if_either_read_says_so(self) -> None:
        found = narrowing.changes([idle("a"), busy("a")], {"a"}, complete=True)
        self.assertEqual((frozenset(), frozenset({"a"})), (found.add, found.remove))

    @settings(max_examples=300, deadline=None)
    @given(
        st.dictionaries(
            st.sampled_from([f"n{i}" for i in range(12)]),
            st.tuples(st.integers(0, 3), st.integers(0, 16)),
        ),
        st.sets(st.sampled_from([f"n{i}" for i in range(16)])),
        st.sets(st.sampled_from([f"n{i}" for i in range(12)])),
    )
    def test_applying_the_changes_tags_exactly_the_idle_nodes(
        self, uses: dict, tagged: set, silent: set
    ) -> None:
        nodes = [NodeUse(uuid, vms, vcpus) for uuid, (vms, vcpus) in uses.items()]
        wanted = {node.uuid for node in nodes if node.idle}
        found = narrowing.changes(nodes, tagged, complete=True)
        self.assertFalse(found.add & found.remove)
        self.assertEqual(wanted, (tagged | found.add) - found.remove)
        # Only what is wrong is written.
        self.assertFalse(found.add & tagged)
        self.assertLessEqual(found.remove, tagged)
        # A silent cell: its nodes are unread, and tagged ones keep the trait.
        answered = [node for node in nodes if node.uuid not in silent]
        partial = narrowing.changes(answered, tagged, complete=False)
        unread = tagged - {node.uuid for node in answered}
        self.assertLessEqual(unread, (tagged | partial.add) - partial.remove)
        self.assertLessEqual(partial.add, wanted)
        self.assertLessEqual(partial.remove, found.remove)


def host(uuid: str, rack: str, free: int, vcpus: int = 8) -> NodeUse:
    return NodeUse(uuid, 0, vcpus - free, key=f"{rack}-{uuid}", vcpus=vcpus)


def rack_of(key: str) -> str:
    return key.split("-", 1)[0]


class TestRoomiest(testtools.TestCase):
    def test_the_roomiest_whole_racks_within_the_budget(self) -> None:
        nodes = [
            *(host(f"a{i}", "ra", 8) for i in range(3)),  # 24 free
            *(host(f"b{i}", "rb", 4) for i in range(3)),  # 12 free
            *(host(f"c{i}", "rc", 2) for i in range(2)),  # 4 free
        ]
        self.assertEqual({"a0", "a1", "a2"}, narrowing.roomiest(nodes, rack_of, 4))
        self.assertEqual(
            {"a0", "a1", "a2", "b0", "b1", "b2"}, narrowing.roomiest(nodes, rack_of, 6)
        )
        # rb (3 hosts) is too large for what is left of 5: rc (2 hosts) after it fits.
        self.assertEqual({"a0", "a1", "a2", "c0", "c1"}, narrowing.roomiest(nodes, rack_of, 5))

    def test_extremehpc_hosts_count_no_room_and_full_racks_are_never_taken(self) -> None:
        nodes = [host("a0", "ra", 8), host("a1", "ra", 8), host("b0", "rb", 6), host("c0", "rc", 0)]
        chosen = narrowing.roomiest(nodes, rack_of, 10, held={"ra-a0", "ra-a1"})
        self.assertEqual({"b0"}, chosen)

    def test_on_equal_room_the_racks_tagged_now_stay(self) -> None:
        nodes = [host("a0", "ra", 4), host("b0", "rb", 4)]
        self.assertEqual({"a0"}, narrowing.roomiest(nodes, rack_of, 1))
        self.assertEqual({"b0"}, narrowing.roomiest(nodes, rack_of, 1, tagged={"b0"}))

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(st.tuples(st.integers(0, 7), st.integers(0, 8)), max_size=40),
        st.integers(0, 20),
    )
    def test_whole_racks_within_the_budget_and_the_roomiest_first(
        self, layout: list, budget: int
    ) -> None:
        nodes = [host(f"n{i}", f"r{rack}", free) for i, (rack, free) in enumerate(layout)]
        chosen = narrowing.roomiest(nodes, rack_of, budget)
        self.assertLessEqual(len(chosen), budget)
        members: dict[str, set[str]] = {}
        room: dict[str, int] = {}
        for node in nodes:
            members.setdefault(rack_of(node.key), set()).add(node.uuid)
            room[rack_of(node.key)] = room.get(rack_of(node.key), 0) + node.free_vcpus
        taken = {rack for rack, uuids in members.items() if uuids & chosen}
        for rack in taken:
            self.assertLessEqual(members[rack], chosen)  # whole racks
            self.assertGreater(room[rack], 0)
        # The roomiest rack that fits the budget is always among them.
        fitting = [rack for rack in members if len(members[rack]) <= budget and room[rack] > 0]
        if fitting:
            best = max(room[rack] for rack in fitting)
            self.assertIn(best, {room[rack] for rack in taken})


class TestIdleSpec(testtools.TestCase):
    def test_an_extreme_flavor_may_require_idle_hosts(self) -> None:
        narrowing.check_narrowing_specs(
            {"hpc:app_class": "extremehpc", "trait:CUSTOM_HPC_IDLE": "required"}
        )

    def test_another_class_may_not(self) -> None:
        for app_class in ("SyncHPC", "AsyncHPC", "NonHPC", None):
            specs = {"trait:CUSTOM_HPC_IDLE": "required"}
            if app_class:
                specs["hpc:app_class"] = app_class
            error = self.assertRaises(ProfileError, narrowing.check_narrowing_specs, specs)
            self.assertEqual("trait:CUSTOM_HPC_IDLE", error.key)
            self.assertIn(app_class or "NonHPC", error.reason)

    def test_a_granular_group_counts_too(self) -> None:
        specs = {"hpc:app_class": "SyncHPC", "trait1:CUSTOM_HPC_IDLE": "required"}
        error = self.assertRaises(ProfileError, narrowing.check_narrowing_specs, specs)
        self.assertEqual("trait1:CUSTOM_HPC_IDLE", error.key)

    def test_forbidding_it_or_other_traits_is_no_concern_of_ours(self) -> None:
        narrowing.check_narrowing_specs({"trait:CUSTOM_HPC_IDLE": "forbidden"})
        narrowing.check_narrowing_specs({"trait:CUSTOM_HPC_IDLER": "required"})
        narrowing.check_narrowing_specs(
            {"trait:HW_CPU_X86_AVX2": "required", "hpc:app_class": "SyncHPC"}
        )

    def test_the_roomy_racks_are_for_synchpc_only(self) -> None:
        narrowing.check_narrowing_specs(
            {"hpc:app_class": "SyncHPC", "trait:CUSTOM_HPC_ROOMY_RACK": "required"}
        )
        for app_class in ("ExtremeHPC", "AsyncHPC", None):
            specs = {"trait:CUSTOM_HPC_ROOMY_RACK": "required"}
            if app_class:
                specs["hpc:app_class"] = app_class
            error = self.assertRaises(ProfileError, narrowing.check_narrowing_specs, specs)
            self.assertIn("only SyncHPC flavors may require CUSTOM_HPC_ROOMY_RACK", error.reason)

    def test_placement_usages(self) -> None:
        self.assertTrue(narrowing.placement_idle({}))
        self.assertTrue(narrowing.placement_idle({"VCPU": 0, "MEMORY_MB": 0}))
        self.assertFalse(narrowing.placement_idle({"VCPU": 0, "MEMORY_MB": 512}))
