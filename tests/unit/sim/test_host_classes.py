"""Planning per class of identical hosts makes plan()'s choices, to the bit."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import NoPlacement, PlacementRequest, Policy
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.state import ClusterState
from hpc_nova_scheduler.sim.host_classes import HostClasses, runs

NO_LIMITS = Thresholds(float("inf"), float("inf"))


@st.composite
def clouds(draw) -> list[Resources]:
    """Few host shapes, many hosts of each, so that classes hold several hosts."""
    shapes = draw(
        st.lists(
            st.tuples(
                st.sampled_from([1, 2, 4, 8]),
                st.sampled_from([2048, 4096, 8192]),
                st.sampled_from([0, 100]),
            ),
            min_size=1,
            max_size=3,
        )
    )
    hosts = draw(st.lists(st.sampled_from(range(len(shapes))), min_size=1, max_size=40))
    return [Resources(*shapes[i]) for i in hosts]


demands = st.sampled_from(
    [
        Resources(1, 0, 0),
        Resources(1, 1024, 0),
        Resources(1, 2048 / 3, 0),
        Resources(1, 100.7, 1),
        Resources(2, 512, 10),
        Resources(1, 3072, 20),
        Resources(0, 700, 0),
        Resources(0, 0, 0),
    ]
)

#: (demand, VMs, release the oldest running request first?)
streams = st.lists(st.tuples(demands, st.integers(1, 30), st.booleans()), min_size=1, max_size=25)


def cluster_of(capacities: list[Resources]) -> ClusterState:
    cluster = ClusterState()
    for i, capacity in enumerate(capacities):
        cluster.add_host(f"h{i:03d}", capacity)
    return cluster


def runs_of(hosts: tuple[str, ...], index: dict[str, int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for name in hosts:
        row = index[name]
        if runs and runs[-1][0] == row:
            runs[-1] = (row, runs[-1][1] + 1)
        else:
            runs.append((row, 1))
    return runs


class TestSameAsPlan(testtools.TestCase):
    @settings(max_examples=400, deadline=None)
    @given(
        clouds(),
        streams,
        st.sampled_from(algorithm.BLIND_PACKINGS),
        st.sampled_from([0, HostClasses.few_slots]),
        st.sampled_from([0, HostClasses.counting_share, 10**6]),
    )
    def test_same_plans_and_free_vectors(
        self, capacities, stream, packing, few_slots, counting_share
    ) -> None:
        policy = Policy.nova_like(packing)
        self.assertTrue(policy.blind)
        cluster = cluster_of(capacities)
        classes = HostClasses([c.as_tuple() for c in capacities], packing)
        classes.few_slots = few_slots  # score classes with numpy (0) or in Python
        # A release's hosts sorted (0), counted over every host (10**6), or as chosen.
        classes.counting_share = counting_share
        index = cluster.columns().index
        running: list[tuple[str, list, Resources]] = []
        for i, (demand, count, release) in enumerate(stream):
            if release and running:
                app, blocks, old = running.pop(0)
                cluster.release([app])
                classes.release(blocks, old.as_tuple())
            request = PlacementRequest(
                ApplicationProfile(AppClass.NON_HPC, 0.0, None), demand, count, f"app{i}"
            )
            try:
                expected = algorithm.plan(request, cluster.columns(), NO_LIMITS, policy=policy)
            except NoPlacement:
                expected = None
            try:
                got = classes.place(demand.as_tuple(), count)
            except NoPlacement:
                got = None
            if expected is None:
                self.assertIsNone(got)
            else:
                self.assertEqual(runs_of(expected.hosts, index), runs(got))
                cluster.apply(expected, request)
                running.append((request.application_id, got, demand))
            free = cluster.columns().free
            for row in range(len(capacities)):
                self.assertEqual(tuple(free[row].tolist()), classes.free_of(row))
            # Summed in another order: equal to rounding.
            for dim, total in enumerate(classes.total_free().tolist()):
                self.assertAlmostEqual(float(free[:, dim].sum()), total, delta=1e-6)


class TestClasses(testtools.TestCase):
    def test_identical_hosts_are_one_class(self) -> None:
        classes = HostClasses([(4, 2048, 0)] * 1000, algorithm.PACKING_COSINE)
        self.assertEqual(1, classes.class_count())
        # Cosine over CPU alone prefers the emptiest host: one VM on each of 10.
        self.assertEqual([(row, 1) for row in range(10)], runs(classes.place((1, 0, 0), 10)))
        self.assertEqual(2, classes.class_count())

    def test_a_refused_request_changes_nothing(self) -> None:
        classes = HostClasses([(4, 2048, 0)] * 3, algorithm.PACKING_LEAST_FREE_PES)
        classes.place((1, 1000, 0), 2)
        before = [classes.free_of(row) for row in range(3)]
        self.assertRaises(NoPlacement, classes.place, (1, 1000, 0), 5)
        self.assertEqual(before, [classes.free_of(row) for row in range(3)])

    def test_placed_and_released_hosts_return_to_their_class(self) -> None:
        classes = HostClasses([(4, 2048, 0)] * 8, algorithm.PACKING_LEAST_FREE_PES)
        blocks = classes.place((1, 512, 0), 6)
        self.assertEqual([(0, 4), (1, 2)], runs(blocks))
        classes.release(blocks, (1, 512, 0))
        self.assertEqual(1, classes.class_count())

    def test_packings_that_weigh_all_hosts_are_refused(self) -> None:
        self.assertRaises(ValueError, HostClasses, [(4, 2048, 0)], algorithm.PACKING_NOVA_WEIGHERS)
