"""The mutable cluster the simulator and the tests apply plans to."""

from __future__ import annotations

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import NoPlacement, PlacementRequest
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.columns import ordered_sum
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.state import ClusterState

NODE = Resources(4, 8192, 0)
VM = Resources(1, 1024, 0)


def request(name: str, score: float, count: int) -> PlacementRequest:
    return PlacementRequest(ApplicationProfile(AppClass.SYNC_HPC, score), VM, count, name)


def cluster(hosts: int = 2) -> ClusterState:
    state = ClusterState()
    for i in range(hosts):
        state.add_host(f"h{i}", NODE, rack="r1", cpu_group="g")
    return state


def place(state: ClusterState, name: str, score: float, count: int, beta: float = 60.0) -> None:
    wanted = request(name, score, count)
    state.apply(algorithm.plan(wanted, state.columns(), Thresholds(200, beta)), wanted)


class TestRescore(testtools.TestCase):
    def test_a_rescored_application_counts_with_its_new_score(self) -> None:
        state = cluster(1)
        place(state, "a", 20.0, 2)
        place(state, "b", 10.0, 1)
        # 50 of beta's 60 taken: a SyncHPC VM of 20 does not fit.
        self.assertRaises(
            NoPlacement,
            algorithm.plan,
            request("c", 20.0, 1),
            state.columns(),
            Thresholds(200, 60),
        )
        state.rescore("a", 5.0)
        self.assertEqual(20.0, state.columns().cache_total[0])
        self.assertEqual([5.0, 5.0, 10.0], [vm.cache_score for vm in state.vms_on(0)])
        place(state, "c", 20.0, 1)
        self.assertEqual(40.0, state.columns().cache_total[0])

    def test_an_unknown_application_changes_nothing(self) -> None:
        state = cluster()
        place(state, "a", 20.0, 2)
        state.rescore("nobody", 99.0)
        self.assertEqual(40.0, state.columns().cache_total.sum())

    @given(st.lists(st.floats(min_value=0, max_value=30), min_size=1, max_size=6))
    def test_the_totals_are_those_of_a_fresh_look(self, scores) -> None:
        state = cluster(4)
        for index, score in enumerate(scores):
            place(state, f"app{index}", score, 2, beta=200.0)
        state.rescore("app0", 7.5)
        rows = state.columns()
        for row, host in enumerate(state.hosts()):
            self.assertEqual(ordered_sum(vm.cache_score for vm in host.vms), rows.cache_total[row])
            self.assertTrue(all(vm.cache_score == 7.5 for vm in host.vms if vm.uuid[:5] == "app0#"))
