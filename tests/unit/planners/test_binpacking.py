"""The six bin-packing baselines on normalised (cpu, mem) demands."""

from __future__ import annotations

import math

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.planners import binpacking
from hpc_nova_scheduler.planners.base import Batch, BatchApp


def batch(demands, hosts=None) -> Batch:
    apps = tuple(BatchApp(ProfileRecord(f"a{i}"), cpu, mem) for i, (cpu, mem) in enumerate(demands))
    return Batch(apps, hosts or len(apps))


class TestBaselines(testtools.TestCase):
    def test_first_best_and_worst_fit_choose_differently(self) -> None:
        # Two hosts opened by 0.6 and 0.3; the 0.3 app then fits both.
        demands = [(0.6, 0.6), (0.5, 0.5), (0.3, 0.3)]
        b = batch(demands)
        self.assertEqual((0, 1, 0), binpacking.FirstFit().place(b).host_of)
        self.assertEqual((0, 1, 0), binpacking.BestFit().place(b).host_of)
        self.assertEqual((0, 1, 1), binpacking.WorstFit().place(b).host_of)

    def test_decreasing_sorts_by_the_larger_dimension(self) -> None:
        demands = [(0.2, 0.2), (0.5, 0.1), (0.1, 0.7), (0.4, 0.3)]
        b = batch(demands)
        plain = binpacking.FirstFit().place(b)
        decreasing = binpacking.FirstFitDecreasing().place(b)
        self.assertEqual((0, 0, 0, 1), plain.host_of)
        # Order 0.7, 0.5, 0.4, 0.2: the 0.7 app opens host 0.
        self.assertEqual(0, decreasing.host_of[2])
        self.assertTrue(decreasing.feasible(b))

    def test_no_room_is_said(self) -> None:
        b = batch([(0.7, 0.1), (0.7, 0.1), (0.7, 0.1)], hosts=2)
        for planner in binpacking.BASELINES:
            self.assertRaises(binpacking.NoRoom, planner().place, b)
        self.assertRaises(binpacking.NoRoom, binpacking.FirstFit().place, batch([(1.2, 0.1)]))

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.tuples(st.sampled_from([0.1, 0.25, 1 / 3, 0.5, 0.6, 1.0]), st.floats(0, 1)),
            min_size=1,
            max_size=30,
        )
    )
    def test_every_baseline_packs_within_capacity(self, demands) -> None:
        b = batch(demands)
        bound = max(
            math.ceil(sum(c for c, _ in demands) - 1e-9),
            math.ceil(sum(m for _, m in demands) - 1e-9),
        )
        for planner in binpacking.BASELINES:
            placement = planner().place(b)
            self.assertTrue(placement.feasible(b), planner.name)
            self.assertEqual(len(demands), len(placement.host_of))
            self.assertGreaterEqual(placement.hosts_used, bound)
            # Hosts are opened in order: no gap in their numbers.
            self.assertEqual(set(range(placement.hosts_used)), set(placement.host_of))
