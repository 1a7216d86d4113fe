"""Seed 002's comparisons (Figs. 3-7, section 6.5, the anchors) on hand-made outcomes.

Every number expected here is worked out by hand from the fairness and
efficiency given to each run; no simulation runs.
"""

from __future__ import annotations

import math

import testtools

from hpc_nova_scheduler.fairshare import comparisons
from hpc_nova_scheduler.fairshare.experiments import Cell, Combination, Judged, Outcome


def run(
    combination: Combination | str,
    fairness: float,
    efficiency: float,
    scenario: str = "default",
    seed: int = 0,
    **options: object,
) -> Judged:
    """A judged run with the given fairness and efficiency (makespan 1000 s x efficiency)."""
    if isinstance(combination, str):
        combination = Combination.parse(combination)
    cell = Cell(scenario, combination, seed, **options)
    outcome = Outcome(
        cell=cell,
        fairness=fairness,
        jain=1.0,
        spread=0.0,
        makespan_s=1000.0 * efficiency,
        normalised={},
        engine=cell.engine,
    )
    return Judged(outcome, efficiency)


class SummaryMixin(testtools.TestCase):
    def assertSummary(
        self,
        summary: comparisons.Summary,
        fairness: float,
        efficiency: float,
        runs: int,
        fairness_range: tuple[float, float] | None = None,
        efficiency_range: tuple[float, float] | None = None,
    ) -> None:
        self.assertAlmostEqual(fairness, summary["fairness"])
        self.assertAlmostEqual(efficiency, summary["efficiency"])
        self.assertEqual(float(runs), summary["runs"])
        if fairness_range:
            self.assertAlmostEqual(fairness_range[0], summary["fairness_min"])
            self.assertAlmostEqual(fairness_range[1], summary["fairness_max"])
        if efficiency_range:
            self.assertAlmostEqual(efficiency_range[0], summary["efficiency_min"])
            self.assertAlmostEqual(efficiency_range[1], summary["efficiency_max"])


class TestByPlatformMetric(SummaryMixin):
    JUDGED = [
        run("pa-rr/rpa/maf", 0.9, 1.0),
        run("paf/rpa/allcore", 0.7, 0.8, scenario="without-gene"),
        run("pa-rr/epa/maf", 0.6, 1.2),
        # Left out: Fairness reads no metric, MAF:raw is Fig. 3's other
        # co-runner metric, and the anchors are no seed 002 first level.
        run("fairness/maf", 0.1, 2.0),
        run("pa-rr/rpa/maf:raw", 0.1, 2.0),
        run("equal-cores/random", 0.1, 2.0),
    ]

    def test_means_per_metric_and_scenario_kind(self) -> None:
        found = comparisons.by_platform_metric(self.JUDGED)
        self.assertEqual({"rpa", "epa"}, set(found))
        self.assertEqual({"all", "default", "w/o-plat"}, set(found["rpa"]))
        # (0.9 + 0.7) / 2 and (1.0 + 0.8) / 2.
        self.assertSummary(found["rpa"]["all"], 0.8, 0.9, 2, (0.7, 0.9), (0.8, 1.0))
        self.assertSummary(found["rpa"]["default"], 0.9, 1.0, 1)
        self.assertSummary(found["rpa"]["w/o-plat"], 0.7, 0.8, 1)
        self.assertEqual({"all", "default"}, set(found["epa"]))
        self.assertSummary(found["epa"]["all"], 0.6, 1.2, 1)

    def test_nothing_to_group_is_empty(self) -> None:
        self.assertEqual({}, comparisons.by_platform_metric([]))


class TestByLevel(SummaryMixin):
    # RPA and the normalised co-runner metric only (Figs. 5 and 6).
    JUDGED = [
        run("pa-rr/rpa/maf", 0.9, 0.9),
        run("pa-rr/rpa/random", 0.7, 1.1),
        run("fairness/maf", 0.6, 1.0, scenario="small-blast"),
        run("fairness/allcore", 0.5, 1.0),
        run("pa-rr/epa/maf", 0.1, 3.0),
        run("pa-rr/rpa/maf:raw", 0.1, 3.0),
        run("billing-weights/random", 0.1, 3.0),
    ]

    def test_by_first_level(self) -> None:
        found = comparisons.by_first_level(self.JUDGED)
        self.assertEqual({"pa-rr", "fairness"}, set(found))
        self.assertSummary(found["pa-rr"]["all"], 0.8, 1.0, 2, (0.7, 0.9), (0.9, 1.1))
        self.assertSummary(found["fairness"]["all"], 0.55, 1.0, 2)
        self.assertSummary(found["fairness"]["s/l-app"], 0.6, 1.0, 1)
        self.assertSummary(found["fairness"]["default"], 0.5, 1.0, 1)

    def test_by_second_level(self) -> None:
        found = comparisons.by_second_level(self.JUDGED)
        self.assertEqual({"maf", "random", "allcore"}, set(found))
        # pa-rr's 0.9 and Fairness' 0.6; efficiency (0.9 + 1.0) / 2.
        self.assertSummary(found["maf"]["all"], 0.75, 0.95, 2, (0.6, 0.9), (0.9, 1.0))
        self.assertSummary(found["random"]["all"], 0.7, 1.1, 1)
        self.assertSummary(found["allcore"]["all"], 0.5, 1.0, 1)


class TestRpaOverEpa(testtools.TestCase):
    def test_each_rpa_run_against_its_epa_twin(self) -> None:
        found = comparisons.rpa_over_epa(
            [
                # Fairness 0.9 against 0.8: +12.5 %; efficiency 0.9 against 1.0: +10 %.
                run("pa-rr/rpa/maf", 0.9, 0.9),
                run("pa-rr/epa/maf", 0.8, 1.0),
                # 0.7 against 0.8: -12.5 %; 1.1 against 1.0: -10 %.
                run("paf/rpa/random", 0.7, 1.1, seed=3),
                run("paf/epa/random", 0.8, 1.0, seed=3),
            ]
        )
        self.assertEqual([-12.5, 12.5], [round(v, 9) for v in found["fairness"]])
        self.assertEqual([-10.0, 10.0], [round(v, 9) for v in found["efficiency"]])
        self.assertEqual(50.0, found["fairness_better_share"])
        self.assertEqual(50.0, found["efficiency_better_share"])
        self.assertAlmostEqual(12.5, found["fairness_max"])
        self.assertAlmostEqual(10.0, found["efficiency_max"])

    def test_the_twin_keeps_the_co_runner_metric(self) -> None:
        found = comparisons.rpa_over_epa(
            [
                run("pa-rr/rpa/maf:raw", 1.0, 1.0),
                run("pa-rr/epa/maf:raw", 0.8, 1.0),  # the twin: +25 %
                run("pa-rr/epa/maf", 0.5, 1.0),  # not it: it would say +100 %
            ]
        )
        self.assertEqual([25.0], [round(v, 9) for v in found["fairness"]])

    def test_runs_with_other_settings_or_no_twin_are_skipped(self) -> None:
        found = comparisons.rpa_over_epa(
            [
                # Each would be a twin but for a setting.
                run("pa-rr/rpa/maf", 0.9, 0.9, core_unit=2),
                run("pa-rr/epa/maf", 0.8, 1.0, core_unit=1),
                run("aaf/rpa/maf", 0.9, 0.9, half_life_s=3600.0),
                run("aaf/epa/maf", 0.8, 1.0),
                run("paf/rpa/maf", 0.9, 0.9, arrivals="eighth"),
                run("paf/epa/maf", 0.8, 1.0),
                run("paf/rpa/allcore", 0.9, 0.9, seed=1),
                run("paf/epa/allcore", 0.8, 1.0, seed=2),
                run("paf/rpa/ca-rr", 0.9, 0.9, scenario="without-gene"),
                run("paf/epa/ca-rr", 0.8, 1.0),
                # No EPA twin at all; Fairness has no platform metric.
                run("pa-rr/rpa/random", 0.9, 0.9),
                run("fairness/maf", 0.9, 0.9),
            ]
        )
        self.assertEqual([], found["fairness"])
        self.assertEqual([], found["efficiency"])
        self.assertTrue(math.isnan(found["fairness_better_share"]))
        self.assertTrue(math.isnan(found["fairness_max"]))

    def test_the_same_settings_pair_off(self) -> None:
        found = comparisons.rpa_over_epa(
            [
                run("pa-rr/rpa/maf", 0.9, 0.9, core_unit=2, half_life_s=3600.0),
                run("pa-rr/epa/maf", 0.8, 1.0, core_unit=2, half_life_s=3600.0),
                run("pa-rr/epa/maf", 0.1, 1.0),  # the same policy, other settings
            ]
        )
        self.assertEqual([12.5], [round(v, 9) for v in found["fairness"]])


class TestMafOverRandom(testtools.TestCase):
    JUDGED = [
        # Seed 0: fairness 0.9 against 0.75, +20 %; efficiency 0.95 against 1.0, +5 %.
        run("pa-rr/rpa/maf", 0.9, 0.95),
        run("pa-rr/rpa/random", 0.75, 1.0),
        # Seed 1: fairness equal, 0 %; efficiency 1.0 against 0.8, -25 %.
        run("pa-rr/rpa/maf", 0.8, 1.0, seed=1),
        run("pa-rr/rpa/random", 0.8, 0.8, seed=1),
        # Not paired: other arrivals, or no Random twin, or EPA.
        run("pa-rr/rpa/maf", 0.9, 0.5, arrivals="quarter"),
        run("pa-rr/rpa/maf", 0.9, 0.5, seed=2),
        run("pa-rr/epa/maf", 0.9, 0.5, seed=4),
        run("pa-rr/epa/random", 0.1, 1.0, seed=4),
        # PAF's pair, for first="paf": +100 %, 0 %.
        run("paf/rpa/maf", 0.8, 1.0),
        run("paf/rpa/random", 0.4, 1.0),
    ]

    def test_pa_rr(self) -> None:
        found = comparisons.maf_over_random(self.JUDGED)
        self.assertAlmostEqual(10.0, found["fairness_mean"])  # (20 + 0) / 2
        self.assertAlmostEqual(20.0, found["fairness_max"])
        self.assertAlmostEqual(-10.0, found["efficiency_mean"])  # (5 - 25) / 2
        self.assertAlmostEqual(5.0, found["efficiency_max"])
        self.assertEqual(2.0, found["runs"])

    def test_another_first_level(self) -> None:
        found = comparisons.maf_over_random(self.JUDGED, first="paf")
        self.assertAlmostEqual(100.0, found["fairness_mean"])
        self.assertAlmostEqual(0.0, found["efficiency_mean"])
        self.assertEqual(1.0, found["runs"])

    def test_no_pair_is_nan(self) -> None:
        found = comparisons.maf_over_random(self.JUDGED, first="aaf")
        self.assertEqual(0.0, found["runs"])
        self.assertTrue(math.isnan(found["fairness_mean"]))


class TestLevelEffects(testtools.TestCase):
    def test_best_against_worst_per_group(self) -> None:
        found = comparisons.level_effects(
            [
                # Default, seed 0. First level (RPA, MAF): fairness 0.5..0.8,
                # (0.8 - 0.5) / 0.5 = 60 %; efficiency 0.8..1.0, (1.0 - 0.8) / 1.0 = 20 %.
                run("fairness/maf", 0.5, 1.0),
                run("paf/rpa/maf", 0.6, 0.9),
                run("pa-rr/rpa/maf", 0.8, 0.8),
                # Second level (PA-based RR, RPA), with the MAF run above:
                # fairness 0.7..0.8, 14.29 %; efficiency 0.8..1.0, 20 %.
                run("pa-rr/rpa/allcore", 0.7, 1.0),
                run("pa-rr/rpa/random", 0.75, 0.95),
                # Seed 1: first level only, 0.4..0.5 = 25 %, efficiency 0 %;
                # one second-level run is no comparison.
                run("fairness/maf", 0.4, 1.0, seed=1),
                run("aaf/rpa/maf", 0.5, 1.0, seed=1),
                run("pa-rr/rpa/ca-rr", 0.5, 1.0, seed=1),
                # Other settings: a group of their own, each alone, so never counted.
                run("aaf/rpa/maf", 10.0, 0.1, half_life_s=3600.0),
                run("pa-rr/rpa/ca-rr", 10.0, 0.1, arrivals="half"),
                run("pa-rr/rpa/ca-rr", 10.0, 0.1, seed=1, core_unit=4),
                # Neither level's family: EPA, MAF:raw.
                run("paf/epa/maf", 10.0, 0.1),
                run("pa-rr/rpa/maf:raw", 10.0, 0.1),
            ]
        )
        first, second = found["first"], found["second"]
        self.assertAlmostEqual(42.5, first["fairness_mean"])  # (60 + 25) / 2
        self.assertAlmostEqual(60.0, first["fairness_max"])
        self.assertAlmostEqual(10.0, first["efficiency_mean"])  # (20 + 0) / 2
        self.assertAlmostEqual(20.0, first["efficiency_max"])
        self.assertAlmostEqual(0.1 / 0.7 * 100, second["fairness_mean"])
        self.assertAlmostEqual(0.1 / 0.7 * 100, second["fairness_max"])
        self.assertAlmostEqual(20.0, second["efficiency_mean"])

    def test_no_group_with_two_runs_is_nan(self) -> None:
        found = comparisons.level_effects([run("pa-rr/rpa/maf", 0.8, 0.8)])
        self.assertTrue(math.isnan(found["first"]["fairness_mean"]))
        self.assertTrue(math.isnan(found["second"]["efficiency_max"]))


class TestAgainstAnchors(testtools.TestCase):
    def rows(self) -> dict[tuple[str, str, float], dict[str, object]]:
        table = comparisons.against_anchors(
            [
                # Default, all at once: ours 0.85 / 1.01 over two seeds.
                run("pa-rr/rpa/maf", 0.8, 1.0),
                run("pa-rr/rpa/maf", 0.9, 1.02, seed=1),
                run("equal-cores/random", 0.7, 1.0),
                run("equal-cores/random", 0.7, 1.0, seed=1),
                run("billing-weights/random", 0.8, 0.995),
                # The same, with a 1 h half-life: its own row, which has no
                # "ours", so it is left out (were it mixed in, ours would no
                # longer be fairer than every anchor).
                run("decayed-usage/random", 0.99, 0.5, half_life_s=3600.0),
                # Default, eighth: ours 0.8 / 1.05 against decayed usage 0.9 / 1.0.
                run("pa-rr/rpa/maf", 0.8, 1.05, arrivals="eighth"),
                run("decayed-usage/random", 0.9, 1.0, arrivals="eighth"),
                # Ours with no anchor beside it, and neither ours nor an anchor.
                run("pa-rr/rpa/maf", 0.8, 1.0, scenario="without-gene"),
                run("pa-rr/rpa/random", 0.1, 0.1),
                run("pa-rr/epa/maf", 0.1, 0.1),
            ]
        )
        return {(r["scenario"], r["arrivals"], r["half_life_s"]): r for r in table}

    def test_one_row_per_scenario_and_settings_with_ours_and_an_anchor(self) -> None:
        self.assertEqual(
            {("default", "all-at-once", 0.0), ("default", "eighth", 0.0)}, set(self.rows())
        )

    def test_fairer_and_within_two_percent(self) -> None:
        row = self.rows()[("default", "all-at-once", 0.0)]
        self.assertAlmostEqual(0.85, row["ours_fairness"])
        self.assertAlmostEqual(1.01, row["ours_efficiency"])
        self.assertAlmostEqual(0.7, row["equal-cores_fairness"])
        self.assertAlmostEqual(1.0, row["equal-cores_efficiency"])
        self.assertAlmostEqual(0.8, row["billing-weights_fairness"])
        self.assertNotIn("decayed-usage_fairness", row)
        self.assertIs(True, row["fairer_than_all"])  # 0.85 > 0.7 and 0.8
        # The best anchor's 0.995 x 1.02 = 1.0149 >= 1.01.
        self.assertIs(True, row["efficiency_within_2pct"])

    def test_less_fair_and_slower(self) -> None:
        row = self.rows()[("default", "eighth", 0.0)]
        self.assertAlmostEqual(0.9, row["decayed-usage_fairness"])
        self.assertIs(False, row["fairer_than_all"])  # 0.8 < 0.9
        self.assertIs(False, row["efficiency_within_2pct"])  # 1.05 > 1.02
        self.assertNotIn("equal-cores_fairness", row)

    def test_another_combination_as_ours(self) -> None:
        table = comparisons.against_anchors(
            [run("pa-rr/rpa/random", 0.9, 1.0), run("equal-cores/random", 0.7, 1.0)],
            ours=Combination("pa-rr", "rpa", "random"),
        )
        self.assertEqual(1, len(table))
        self.assertAlmostEqual(0.9, table[0]["ours_fairness"])


class TestSensitivity(SummaryMixin):
    def test_per_unit(self) -> None:
        found = comparisons.sensitivity(
            [
                # core_unit: PA-based RR with RPA, any second level.
                run("pa-rr/rpa/maf", 0.8, 1.0),
                run("pa-rr/rpa/random", 0.6, 1.2),
                run("pa-rr/rpa/maf", 0.9, 0.9, core_unit=5),
                run("pa-rr/epa/maf", 0.1, 3.0, core_unit=5),  # EPA: neither
                # node_unit: CA-based RR under PA-based RR, any metric. The
                # RPA one counts for core_unit=1 too.
                run("pa-rr/rpa/ca-rr", 0.5, 1.1),
                run("pa-rr/epa/ca-rr", 0.7, 1.0, node_unit=3),
                run("paf/rpa/ca-rr", 0.1, 3.0, node_unit=3),  # PAF: neither
            ]
        )
        self.assertEqual({"core_unit=1", "core_unit=5", "node_unit=1", "node_unit=3"}, set(found))
        # (0.8 + 0.6 + 0.5) / 3 and (1.0 + 1.2 + 1.1) / 3.
        self.assertSummary(found["core_unit=1"], 1.9 / 3, 1.1, 3, (0.5, 0.8), (1.0, 1.2))
        self.assertSummary(found["core_unit=5"], 0.9, 0.9, 1)
        self.assertSummary(found["node_unit=1"], 0.5, 1.1, 1)
        self.assertSummary(found["node_unit=3"], 0.7, 1.0, 1)
