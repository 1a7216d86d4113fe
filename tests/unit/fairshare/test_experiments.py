"""The evaluation grid: labels, baselines, and comparisons that never mix settings."""

from __future__ import annotations

import dataclasses

import testtools

from hpc_nova_scheduler.fairshare import comparisons, experiments, simulation
from hpc_nova_scheduler.fairshare.experiments import BASELINE, Cell, Combination


def run(cells):
    return experiments.judge(simulation.run(cell) for cell in cells)


class TestCombinations(testtools.TestCase):
    def test_labels_round_trip(self):
        for combination in (
            experiments.seed002_combinations()
            + experiments.anchor_combinations()
            + experiments.own_combinations()
        ):
            self.assertEqual(combination, Combination.parse(combination.label))
        self.assertEqual("pa-rr/rpa/maf", experiments.PAPER_BEST.label)
        self.assertEqual("paf/epa/maf:raw", Combination("paf", "epa", "maf", "raw").label)
        self.assertEqual("fairness/allcore", BASELINE.label)

    def test_table_7_has_fifty_combinations(self):
        # 4 second levels under Fairness and under 3 first levels x 3 metrics,
        # and MAF's raw-difference twin of each MAF.
        self.assertEqual(40 + 10, len(experiments.seed002_combinations()))

    def test_ours_beside_pa_rr_with_every_second_level(self):
        self.assertEqual(
            [
                "equivalent-rr/rpa/allcore",
                "equivalent-rr/rpa/random",
                "equivalent-rr/rpa/maf",
                "equivalent-rr/rpa/maf:raw",
                "equivalent-rr/rpa/ca-rr",
            ],
            [c.label for c in experiments.own_combinations()],
        )

    def test_bad_labels(self):
        self.assertRaises(ValueError, Combination.parse, "pa-rr/maf")
        self.assertRaises(ValueError, Combination.parse, "fairness/rpa/maf")


class TestJudging(testtools.TestCase):
    def test_the_baseline_is_judged_one_and_is_added_by_the_grid(self):
        cells = experiments.grid(["default"], [experiments.PAPER_BEST])
        self.assertEqual([experiments.PAPER_BEST, BASELINE], [c.combination for c in cells])
        judged = run(cells)
        self.assertEqual(1.0, judged[1].efficiency)
        self.assertLess(judged[0].efficiency, 1.0)

    def test_without_a_baseline_nothing_is_judged(self):
        outcome = simulation.run(Cell("default", experiments.PAPER_BEST))
        self.assertRaises(ValueError, experiments.judge, [outcome])

    def test_a_history_is_judged_against_the_baseline_with_the_same_history(self):
        plain = experiments.grid(["default"], [experiments.PAPER_BEST], interval_s=3600.0)
        history = [dataclasses.replace(c, half_life_s=7200.0) for c in plain]
        judged = run(plain + history)
        with_history = [j for j in judged if j.cell.half_life_s]
        self.assertEqual(
            1.0, next(j for j in with_history if j.cell.combination == BASELINE).efficiency
        )

    def test_comparisons_never_pair_runs_of_different_settings(self):
        pair = [Combination("pa-rr", "rpa", "maf"), Combination("pa-rr", "rpa", "random")]
        unit_1 = experiments.grid(["default"], pair)
        unit_200 = experiments.grid(["default"], pair, core_unit=200)
        alone = comparisons.maf_over_random(run(unit_1))
        mixed = comparisons.maf_over_random(run(unit_1 + unit_200))
        self.assertEqual(1.0, alone["runs"])
        self.assertEqual(2.0, mixed["runs"])
        rows = comparisons.against_anchors(
            run(
                experiments.grid(
                    ["default"], [experiments.PAPER_BEST, *experiments.anchor_combinations()]
                )
            )
        )
        self.assertEqual(1, len(rows))
        self.assertTrue(rows[0]["fairer_than_all"])
