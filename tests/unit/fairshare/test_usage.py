"""Weights, decayed usage and whole-core apportionment."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core.sharing import Claimant, SharingError
from hpc_nova_scheduler.fairshare import usage


class TestApportion(testtools.TestCase):
    def test_equal_weights_split_equally_leftovers_in_order(self):
        shares = usage.apportion(10, {"a": 9, "b": 9, "c": 9}, dict.fromkeys("abc", 1.0))
        self.assertEqual({"a": 4, "b": 3, "c": 3}, shares)

    def test_unneeded_cores_are_water_filled(self):
        shares = usage.apportion(12, {"a": 2, "b": 20, "c": 20}, dict.fromkeys("abc", 1.0))
        self.assertEqual({"a": 2, "b": 5, "c": 5}, shares)

    def test_weights(self):
        shares = usage.apportion(9, {"a": 100, "b": 100}, {"a": 2.0, "b": 1.0})
        self.assertEqual({"a": 6, "b": 3}, shares)

    def test_more_cores_than_demand(self):
        shares = usage.apportion(100, {"a": 3, "b": 0}, {"a": 1.0, "b": 1.0})
        self.assertEqual({"a": 3, "b": 0}, shares)

    @settings(max_examples=200, deadline=None)
    @given(
        st.integers(0, 500),
        st.lists(
            st.tuples(st.integers(0, 200), st.sampled_from([1e-15, 1e-6, 0.3, 1.0, 1.7, 4.0, 1e9])),
            min_size=1,
            max_size=8,
        ),
    )
    def test_whole_cores_work_conserving_capped(self, total, claims):
        demand = {f"u{i}": want for i, (want, _) in enumerate(claims)}
        weights = {f"u{i}": weight for i, (_, weight) in enumerate(claims)}
        shares = usage.apportion(total, demand, weights)
        self.assertEqual(min(total, sum(demand.values())), sum(shares.values()))
        for name, share in shares.items():
            self.assertTrue(0 <= share <= demand[name])

    @settings(max_examples=200, deadline=None)
    @given(
        st.integers(1, 300),
        st.lists(st.integers(1, 100), min_size=2, max_size=6),
        st.floats(0.05, 0.99),
    )
    def test_population_monotone(self, total, wants, factor):
        demand = {f"u{i}": w for i, w in enumerate(wants)}
        weights = dict.fromkeys(demand, 1.0)
        before = usage.apportion(total, demand, weights)["u0"]
        weights["u0"] *= factor
        self.assertLessEqual(usage.apportion(total, demand, weights)["u0"], before)


class TestEffectiveWeights(testtools.TestCase):
    def test_no_history_keeps_the_weights(self):
        claimants = [Claimant("a", "x", 1, weight=2.0), Claimant("b", "y", 1)]
        self.assertEqual({"a": 2.0, "b": 1.0}, usage.effective_weights(claimants))

    def test_usage_halves_at_its_share(self):
        # One user used everything with half the shares: 2 ** (-1 / 0.5).
        claimants = [Claimant("a", "x", 1, usage=10.0), Claimant("b", "y", 1)]
        self.assertEqual({"a": 0.25, "b": 1.0}, usage.effective_weights(claimants))

    def test_one_project_with_all_the_usage_among_a_thousand(self):
        # 2 ** (-1100) underflows: the weight keeps a positive floor instead.
        claimants = [Claimant(f"u{i}", "x", 5, usage=5.0 if i == 0 else 0.0) for i in range(1100)]
        weights = usage.effective_weights(claimants)
        self.assertEqual(1.0, weights["u1"])
        self.assertGreater(weights["u0"], 0.0)
        shares = usage.apportion(800, {c.name: 5 for c in claimants}, weights)
        self.assertEqual(0, shares["u0"])
        self.assertEqual(800, sum(shares.values()))


class TestDecayAndCharge(testtools.TestCase):
    def test_half_life(self):
        self.assertEqual(50.0, usage.decay(100.0, 3600, 3600))
        self.assertEqual(25.0, usage.decay(100.0, 7200, 3600))

    def test_zero_half_life_is_no_history(self):
        self.assertEqual(0.0, usage.decay(100.0, 1, 0))

    def test_negative_half_life(self):
        error = self.assertRaises(SharingError, usage.decay, 1.0, 1.0, -1.0)
        self.assertIn("half-life", str(error))

    def test_best_equivalent_charges_less_where_slower(self):
        solo = {"fast": 100.0, "slow": 250.0}
        self.assertEqual(3600.0, usage.charge(3600, solo, "fast", usage.BEST_EQUIVALENT))
        self.assertEqual(1440.0, usage.charge(3600, solo, "slow", usage.BEST_EQUIVALENT))
        self.assertEqual(3600.0, usage.charge(3600, solo, "slow", usage.CORE_SECONDS))
        self.assertRaises(SharingError, usage.charge, 1.0, solo, "fast", "dollars")
