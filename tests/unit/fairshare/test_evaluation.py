"""Seed 002's fairness and efficiency metrics, and Table 6's rule from the shipped runs."""

from __future__ import annotations

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler import resources
from hpc_nova_scheduler.fairshare import affinity, evaluation, runs
from hpc_nova_scheduler.fairshare.evaluation import UserRun

#: Seed 002's Table 6: tasks of each application in the default scenario.
TABLE_6 = {
    "AutoDock": 34_600,
    "Blast": 248_800,
    "CacheBench": 31_230,
    "Montage": 72_950,
    "ThreeKaonOmega": 112_420,
}

positive = st.floats(0.1, 1e6, allow_nan=False, allow_infinity=False)


class TestTable6(testtools.TestCase):
    def test_every_application_finishes_together_on_its_equal_share(self) -> None:
        # Table 6's rule: 120 cores of each of the four platforms per
        # application, OneCore run times: every application ends in 6.43 h.
        path = resources.example_profiles_dir() / "seed-002-runs.csv"
        solo = affinity.solo_runtimes(runs.read_runs(str(path)))
        for app, tasks in TABLE_6.items():
            rate = sum(120 / runtime for (name, _), runtime in solo.items() if name == app)
            self.assertAlmostEqual(6.43, tasks / rate / 3600, 2, app)
        self.assertEqual(500_000, sum(TABLE_6.values()))


class TestEvaluation(testtools.TestCase):
    def test_fastest_onecore_is_the_fair_share_on_the_fastest_platform(self) -> None:
        # 600 cores for 3 users: k = 200; 1,000 tasks of 100 s on 200 cores
        # take 500 s, so a makespan of 1,000 s is half of Fastest-OneCore.
        run = UserRun("a", 1000, 1000.0, 100.0)
        self.assertEqual(200.0, evaluation.fair_share(600, 3))
        self.assertEqual(0.5, evaluation.normalised_throughput(run, 200.0))

    def test_equal_users_are_perfectly_fair(self) -> None:
        runs_ = [UserRun("a", 100, 50.0, 10.0), UserRun("b", 200, 100.0, 10.0)]
        found = evaluation.evaluate(runs_, 40)
        self.assertEqual({"a": 1.0, "b": 1.0}, found.normalised)
        self.assertAlmostEqual(1.0, found.fairness)
        self.assertAlmostEqual(1.0, found.jain)
        self.assertAlmostEqual(1.0, found.spread)
        self.assertEqual(100.0, found.makespan_s)

    def test_an_unfair_pair(self) -> None:
        # k = 10: t = 2 and 6, mu 4, sigma 2, fairness 0.5; Jain 64 / (2 x 40) = 0.8.
        runs_ = [UserRun("a", 100, 50.0, 10.0), UserRun("b", 300, 50.0, 10.0)]
        found = evaluation.evaluate(runs_, 20)
        self.assertAlmostEqual(0.5, found.fairness)
        self.assertAlmostEqual(0.8, found.jain)
        self.assertAlmostEqual(3.0, found.spread)

    def test_efficiency_is_relative_to_the_baseline_makespan(self) -> None:
        self.assertEqual(0.8, evaluation.efficiency(80.0, 100.0))

    def test_bad_input(self) -> None:
        self.assertRaises(ValueError, UserRun, "a", 0, 1.0, 1.0)
        self.assertRaises(ValueError, UserRun, "a", 1, float("nan"), 1.0)
        self.assertRaises(ValueError, UserRun, "a", 1, 1.0, -1.0)
        self.assertRaises(ValueError, evaluation.evaluate, [], 10)
        self.assertRaises(ValueError, evaluation.fair_share, 0, 1)

    def test_fastest_runtime_per_application(self) -> None:
        solo = {("A", "p"): 10.0, ("A", "q"): 4.0, ("B", "p"): 7.0}
        self.assertEqual({"A": 4.0, "B": 7.0}, evaluation.fastest_runtimes(solo))

    @given(st.lists(positive, min_size=1, max_size=20), positive)
    def test_fairness_and_jain_bounds_and_scale(self, values, factor) -> None:
        fairness = evaluation.fairness(values)
        jain = evaluation.jain(values)
        self.assertLessEqual(fairness, 1.0 + 1e-12)
        self.assertLessEqual(jain, 1.0 + 1e-12)
        self.assertGreaterEqual(jain, 1.0 / len(values) - 1e-12)
        scaled = [v * factor for v in values]
        self.assertAlmostEqual(fairness, evaluation.fairness(scaled), 7)
        self.assertAlmostEqual(jain, evaluation.jain(scaled), 7)
