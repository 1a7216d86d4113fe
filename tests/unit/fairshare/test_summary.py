"""What ``fairshare simulate`` reports of judged runs: means over seeds and labels."""

from __future__ import annotations

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.fairshare import summary
from hpc_nova_scheduler.fairshare.experiments import Cell, Combination, Judged, Outcome

POLICY = Combination("paf", "rpa", "maf")


def judged(seed: int, fairness: float, jain: float, efficiency: float, **options) -> Judged:
    cell = Cell("s1", POLICY, seed, **options)
    outcome = Outcome(cell, fairness, jain, 0.5 * fairness, 3600.0 * (seed + 1), {}, cell.engine)
    return Judged(outcome, efficiency)


class TestSeedMeans(testtools.TestCase):
    def test_one_row_per_setting_with_means_over_its_seeds(self) -> None:
        runs = [
            judged(0, 0.2, 0.9, 1.0),
            judged(1, 0.4, 0.7, 0.8),
            judged(0, 0.5, 0.5, 0.5, top_percent=20),
        ]
        rows = summary.seed_means(runs)
        self.assertEqual(2, len(rows))
        first, second = rows
        self.assertEqual(("s1", POLICY.label, "-", "all-at-once", "rate", 2), first[:6])
        for value, expected in zip(first[6:], (0.3, 0.8, 0.15, 0.9, 1.5), strict=True):
            self.assertAlmostEqual(expected, value)
        self.assertEqual(("k=20", 1), (second[2], second[5]))

    @given(st.lists(st.floats(0, 1), min_size=1, max_size=8))
    def test_a_mean_lies_between_its_seeds(self, values: list[float]) -> None:
        runs = [judged(seed, value, value, value) for seed, value in enumerate(values)]
        (row,) = summary.seed_means(runs)
        for mean in row[6:9]:
            self.assertLessEqual(min(values) * 0.5 - 1e-12, mean)
            self.assertLessEqual(mean, max(values) + 1e-12)


class TestSettingsLabel(testtools.TestCase):
    def test_only_what_differs_from_the_defaults(self) -> None:
        self.assertEqual("-", summary.settings_label(Cell("s1", POLICY)))
        cell = Cell(
            "s1", POLICY, core_unit=200, top_percent=20, half_life_s=60.0, weights=(("CG", 2.0),)
        )
        self.assertEqual("k=20 D=200 half-life=60s CGx2", summary.settings_label(cell))
