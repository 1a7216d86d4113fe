"""Seed 001's pairing: blossom is optimal, greedy never beats it, neither loses to FIFO."""

from __future__ import annotations

import numpy as np
import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.pairwise import matching


def pairings(jobs: list[int]):
    """Every way to run ``jobs`` in pairs, one alone if their number is odd."""
    if not jobs:
        yield []
        return
    first, rest = jobs[0], jobs[1:]
    if len(jobs) % 2:
        for k in range(len(jobs)):
            alone = jobs[k]
            others = jobs[:k] + jobs[k + 1 :]
            for found in pairings(others):
                yield [(alone, matching.ALONE), *found]
        return
    for k, partner in enumerate(rest):
        for found in pairings(rest[:k] + rest[k + 1 :]):
            yield [(first, partner), *found]


def makespan(pairs, times, w) -> float:
    cost = matching.cost_of(times, w)
    return sum(times[i] if j == matching.ALONE else cost[i, j] for i, j in pairs)


queues = st.integers(1, 7).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(1, 100), min_size=n, max_size=n),
        st.lists(st.floats(-5, 150), min_size=n * n, max_size=n * n),
    )
)


class TestPairing(testtools.TestCase):
    @settings(max_examples=60, deadline=None)
    @given(queues)
    def test_blossom_is_optimal_and_greedy_never_better(self, queue) -> None:
        runtimes, flat = queue
        n = len(runtimes)
        table = np.asarray(flat).reshape(n, n)
        times = np.asarray(runtimes)
        w = matching.together(times, table)
        best = min(makespan(p, times, w) for p in pairings(list(range(n))))
        exact = matching.blossom(runtimes, table)
        quick = matching.greedy(runtimes, table)
        self.assertAlmostEqual(best, exact.makespan, places=6)
        self.assertGreaterEqual(quick.makespan, exact.makespan - 1e-6)
        for found in (exact, quick):
            self.assertLessEqual(found.makespan, matching.fifo(runtimes) + 1e-6)
            jobs = sorted(x for pair in found.pairs for x in pair if x != matching.ALONE)
            self.assertEqual(list(range(n)), jobs)

    def test_a_pair_too_slow_together_runs_one_after_the_other(self) -> None:
        # Together 10 x 3 = 30 > 10 + 10: serial; the other pair gains.
        table = np.full((4, 4), 150.0)
        table[0, 1] = table[1, 0] = 200.0
        table[2, 3] = table[3, 2] = 10.0
        found = matching.greedy([10, 10, 10, 10], table)
        self.assertEqual(((2, 3), (0, 1)), found.pairs)
        self.assertEqual(frozenset({(0, 1)}), found.serial)
        self.assertAlmostEqual(11 + 20, found.makespan)
        self.assertAlmostEqual(40, matching.fifo([10, 10, 10, 10]))

    def test_bad_input(self) -> None:
        self.assertRaises(ValueError, matching.blossom, [1, 2], np.zeros((3, 3)))
        self.assertRaises(ValueError, matching.greedy, [1, 0], np.zeros((2, 2)))
        self.assertRaises(ValueError, matching.greedy, [1, 2], [[0, float("nan")], [0, 0]])

    def test_realised_makespan_counts_the_true_degradations(self) -> None:
        runtimes = [10.0, 10.0, 20.0, 5.0]
        predicted = np.full((4, 4), 10.0)
        found = matching.greedy(runtimes, predicted)
        self.assertAlmostEqual(found.makespan, matching.realised(found, runtimes, predicted))
        # Far worse in truth: the pairs run together all the same, and pay for it.
        truth = np.full((4, 4), 150.0)
        self.assertGreater(matching.realised(found, runtimes, truth), matching.fifo(runtimes))
