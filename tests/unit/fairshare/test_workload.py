"""Seed 002's workload: Tables 5, 6 and 8, generated run times, task noise, arrivals."""

from __future__ import annotations

import functools
import statistics

import numpy as np
import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core.sharing import Platform
from hpc_nova_scheduler.fairshare import workload
from hpc_nova_scheduler.fairshare.affinity import corunner_affinity, solo_runtimes
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.runs import TaskRun

PLATFORM_NAMES = ("gene", "cheetah", "darth", "lcloud")
APPS = ("AutoDock", "Blast", "CacheBench", "Montage", "ThreeKaonOmega")
# Table 4 of seed 002, raw difference (s): gene, cheetah, darth, lcloud.
TABLE_4_RAW = {
    "AutoDock": (26.75, 24.05, 34.85, 25.47),
    "Blast": (0.44, 12.80, 3.46, 4.62),
    "CacheBench": (47.59, 0.90, 13.30, 1.30),
    "Montage": (24.70, 106.72, 14.01, 13.57),
    "ThreeKaonOmega": (9.41, 4.42, 6.45, 3.77),
}
# Table 8: scenarios, platforms used, applications used, per kind.
TABLE_8 = {
    "default": (1, 4, 5),
    "w/o-plat": (4, 3, 5),
    "s/l-plat": (8, 4, 5),
    "w/o-app": (5, 4, 4),
    "s/l-app": (5, 4, 5),
}

seeds = st.integers(0, 2**32 - 1)


@functools.cache
def shipped() -> tuple[TaskRun, ...]:
    return tuple(workload.shipped_runs())


def ratios(table: CombinationTable) -> dict[tuple[str, str, frozenset[str]], float]:
    return {key: seconds / table.solo[key[:2]] for key, seconds in table.items()}


class TestTables5And6(testtools.TestCase):
    def test_table_5(self) -> None:
        self.assertEqual(
            (
                Platform("gene", 300, 2),
                Platform("cheetah", 75, 8),
                Platform("darth", 75, 8),
                Platform("lcloud", 50, 12),
            ),
            workload.PLATFORMS,
        )
        self.assertEqual([600] * 4, [p.cores for p in workload.PLATFORMS])

    def test_table_6(self) -> None:
        self.assertEqual(APPS, workload.APPLICATIONS)
        self.assertEqual((34_600, 248_800, 31_230, 72_950, 112_420), tuple(workload.TASKS.values()))
        self.assertEqual(500_000, sum(workload.TASKS.values()))

    def test_table_6_rule_every_application_ends_in_6_43_hours(self) -> None:
        # 120 cores of each platform per application, OneCore run times.
        solo = solo_runtimes(shipped())
        found = workload.equal_share_makespans(solo, workload.scenario("default"))
        self.assertEqual(set(APPS), set(found))
        for app, seconds in found.items():
            self.assertAlmostEqual(6.43, seconds / 3600, 2, app)
            self.assertLess(abs(seconds / workload.DEFAULT_MAKESPAN_S - 1), 0.001, app)

    def test_equal_share_without_solo_times_is_an_error(self) -> None:
        self.assertRaises(
            workload.WorkloadError,
            workload.equal_share_makespans,
            {},
            workload.scenario("default"),
        )


class TestScenarios(testtools.TestCase):
    def test_table_8_counts_per_kind(self) -> None:
        every = workload.scenarios()
        self.assertEqual(23, len(every))
        self.assertEqual(23, len({s.name for s in every}))
        for kind, (count, platforms, apps) in TABLE_8.items():
            of_kind = [s for s in every if s.kind == kind]
            self.assertEqual(count, len(of_kind), kind)
            for s in of_kind:
                self.assertEqual(platforms, len(s.platforms), s.name)
                self.assertEqual(apps, len(s.tasks), s.name)

    def test_table_8_order(self) -> None:
        kinds = [s.kind for s in workload.scenarios()]
        self.assertEqual(list(workload.KINDS), list(dict.fromkeys(kinds)))
        self.assertEqual(sorted(kinds, key=workload.KINDS.index), kinds)
        self.assertEqual("default", workload.scenarios()[0].name)

    def test_default(self) -> None:
        default = workload.scenario("default")
        self.assertEqual(workload.PLATFORMS, default.platforms)
        self.assertEqual(workload.TASKS, default.tasks)
        self.assertEqual(2_400, default.cores)

    def test_without_a_platform(self) -> None:
        found = workload.scenario("without-lcloud")
        self.assertEqual(("gene", "cheetah", "darth"), tuple(p.name for p in found.platforms))
        self.assertEqual(workload.TASKS, found.tasks)

    def test_small_and_large_platforms_halve_or_double_nodes(self) -> None:
        for platform in workload.PLATFORMS:
            for size, resize in (("small", lambda n: n // 2), ("large", lambda n: n * 2)):
                found = workload.scenario(f"{size}-{platform.name}")
                for default, changed in zip(workload.PLATFORMS, found.platforms, strict=True):
                    expected = resize(default.nodes) if default is platform else default.nodes
                    self.assertEqual(expected, changed.nodes, found.name)
                    self.assertEqual(default.cores_per_node, changed.cores_per_node)
                self.assertEqual(workload.TASKS, found.tasks)
        self.assertEqual(2_100, workload.scenario("small-gene").cores)
        self.assertEqual(3_000, workload.scenario("large-lcloud").cores)
        # 75 nodes of 8 cores cannot halve to 300 cores: 37 nodes, 296 cores.
        self.assertEqual(37, workload.PLATFORMS[1].nodes // 2)
        self.assertEqual(2_096, workload.scenario("small-cheetah").cores)

    def test_without_an_application(self) -> None:
        found = workload.scenario("without-montage")
        self.assertEqual(("AutoDock", "Blast", "CacheBench", "ThreeKaonOmega"), found.applications)
        self.assertEqual(workload.PLATFORMS, found.platforms)

    def test_small_application_halves_it_and_doubles_the_others(self) -> None:
        found = workload.scenario("small-threekaonomega")
        self.assertEqual(
            {
                "AutoDock": 69_200,
                "Blast": 497_600,
                "CacheBench": 62_460,
                "Montage": 145_900,
                "ThreeKaonOmega": 56_210,
            },
            found.tasks,
        )

    def test_names_are_lowercase(self) -> None:
        for s in workload.scenarios():
            self.assertEqual(s.name.lower(), s.name)
            self.assertIs(s, workload.scenario(s.name))

    def test_unknown_name_lists_the_known_ones(self) -> None:
        error = self.assertRaises(workload.UnknownScenario, workload.scenario, "Default")
        self.assertIsInstance(error, ValueError)
        message = str(error)
        self.assertNotIn("\n", message)
        self.assertIn("'Default'", message)
        for s in workload.scenarios():
            self.assertIn(s.name, message)

    def test_scenarios_are_values(self) -> None:
        tasks = {"A": 1}
        found = workload.Scenario("x", "default", workload.PLATFORMS, tasks)
        tasks["A"] = 2
        self.assertEqual({"A": 1}, found.tasks)
        same = workload.Scenario("x", "default", workload.PLATFORMS, {"A": 1})
        self.assertEqual(found, same)
        self.assertEqual(hash(found), hash(same))
        self.assertEqual(23, len(set(workload.scenarios())))

    def test_bad_scenarios(self) -> None:
        p = workload.PLATFORMS
        self.assertRaises(workload.WorkloadError, workload.Scenario, "x", "w/o", p, {"A": 1})
        self.assertRaises(workload.WorkloadError, workload.Scenario, "x", "default", p, {"A": 0})
        self.assertRaises(
            workload.WorkloadError, workload.Scenario, "x", "default", p + p[:1], {"A": 1}
        )


class TestGeneratedTimes(testtools.TestCase):
    def test_solo_times_are_the_shipped_ones(self) -> None:
        table = workload.generate_times()
        self.assertEqual(solo_runtimes(shipped()), table.solo)

    def test_means_are_table_4_raw(self) -> None:
        table = workload.generate_times()
        shipped_raw, _ = corunner_affinity(shipped(), table.solo)
        for app, printed in TABLE_4_RAW.items():
            for platform, raw in zip(PLATFORM_NAMES, printed, strict=True):
                differences = [
                    seconds - table.solo[(app, platform)]
                    for (a, p, _), seconds in table.items()
                    if (a, p) == (app, platform)
                ]
                mean = statistics.fmean(differences)
                self.assertLess(abs(raw - mean), 1e-9, f"{app} on {platform}")
                self.assertLess(abs(shipped_raw[app][platform] - mean), 1e-9)

    def test_every_legal_combination_is_present(self) -> None:
        table = workload.generate_times()
        keys = {key for key, _ in table.items()}
        for platform in workload.PLATFORMS:
            legal = table.combinations(platform, APPS)
            # AllCore + TwoApp (+ FourApp where 4 divides the node's cores).
            self.assertEqual(5 + 10 + (5 if platform.cores_per_node % 4 == 0 else 0), len(legal))
            for app in APPS:
                found = {s for a, p, s in keys if (a, p) == (app, platform.name)}
                self.assertEqual({s for s in legal if app in s}, found, f"{app} {platform}")
                self.assertEqual(5 if platform.name == "gene" else 9, len(found))
        self.assertEqual(5 * (5 + 9 * 3), len(keys))

    def test_every_scenario_finds_its_combinations(self) -> None:
        table = workload.generate_times()
        keys = {key for key, _ in table.items()}
        for s in workload.scenarios():
            for platform in s.platforms:
                for combination in table.combinations(platform, s.applications):
                    for app in combination:
                        self.assertIn((app, platform.name, combination), keys, s.name)

    def test_worst_slowdown_is_montage_with_blast_and_threekaonomega_on_cheetah(self) -> None:
        table = workload.generate_times()
        found = ratios(table)
        worst = max(found, key=found.__getitem__)
        app, platform, combination = worst
        self.assertEqual(("Montage", "cheetah"), (app, platform))
        self.assertLessEqual({"Montage", "Blast", "ThreeKaonOmega"}, combination)
        self.assertEqual(4, len(combination))
        self.assertAlmostEqual(3.28, found[worst], places=12)
        self.assertEqual(3.28 * table.solo[("Montage", "cheetah")], dict(table.items())[worst])
        for key, ratio in found.items():
            self.assertGreaterEqual(ratio, 1.0, key)
            if key != worst:
                self.assertLess(ratio, 3.28, key)

    def test_same_seed_same_table_other_seed_another(self) -> None:
        first = workload.generate_times(7).items()
        self.assertEqual(first, workload.generate_times(7).items())
        self.assertNotEqual(first, workload.generate_times(8).items())
        self.assertEqual(first, workload.generate_times(7, shipped()).items())

    @settings(deadline=None)
    @given(seeds)
    def test_invariants_for_any_seed(self, seed: int) -> None:
        table = workload.generate_times(seed, shipped())
        found = ratios(table)
        means: dict[tuple[str, str], list[float]] = {}
        for key, seconds in table.items():
            means.setdefault(key[:2], []).append(seconds - table.solo[key[:2]])
        for (app, platform), differences in means.items():
            raw = TABLE_4_RAW[app][PLATFORM_NAMES.index(platform)]
            self.assertLess(abs(raw - statistics.fmean(differences)), 1e-9)
        at_worst = [key for key, ratio in found.items() if ratio > 3.28 - 1e-9]
        self.assertEqual(1, len(at_worst))
        self.assertAlmostEqual(3.28, found[at_worst[0]], places=12)
        self.assertLessEqual({"Montage", "Blast", "ThreeKaonOmega"}, at_worst[0][2])
        self.assertGreaterEqual(min(found.values()), 1.0)

    def test_sigma_zero_spreads_nothing_but_the_worst_pair(self) -> None:
        table = workload.generate_times(sigma=0.0)
        found = ratios(table)
        ad = [r for (a, p, _), r in found.items() if (a, p) == ("AutoDock", "gene")]
        self.assertEqual(5, len(ad))
        for ratio in ad:
            self.assertAlmostEqual(1 + 26.75 / table.solo[("AutoDock", "gene")], ratio, 12)

    def test_corunners_that_speed_up_are_refused(self) -> None:
        runs = [TaskRun("A", "p", 100.0), TaskRun("A", "p", 90.0, ("B",))]
        error = self.assertRaises(
            workload.WorkloadError,
            workload.generate_times,
            0,
            runs,
            (Platform("p", 1, 2),),
        )
        self.assertIn("A on p", str(error))

    def test_a_worst_the_mean_cannot_hold_is_refused(self) -> None:
        error = self.assertRaises(
            workload.WorkloadError, workload.generate_times, 0, shipped(), worst=30.0
        )
        self.assertIn("Montage on cheetah", str(error))

    def test_a_worst_the_draws_reach_is_refused(self) -> None:
        # Montage on cheetah averages 1.71x; with a worst of 1.75 some other
        # set of the pair is drawn above it (for seed 0, deterministically).
        error = self.assertRaises(
            workload.WorkloadError, workload.generate_times, 0, shipped(), worst=1.75
        )
        self.assertIn("reaches the worst", str(error))

    def test_bad_parameters(self) -> None:
        self.assertRaises(workload.WorkloadError, workload.generate_times, sigma=-1.0)
        self.assertRaises(workload.WorkloadError, workload.generate_times, worst=1.0)
        self.assertRaises(
            workload.WorkloadError, workload.generate_times, 0, [TaskRun("A", "p", 1.0)]
        )


class TestTaskFactors(testtools.TestCase):
    def test_half_a_million_have_mean_one_and_the_chosen_spread(self) -> None:
        factors = workload.task_factors(0, 500_000)
        self.assertEqual((500_000,), factors.shape)
        self.assertGreater(factors.min(), 0.0)
        # Standard error of the mean: 0.1 / sqrt(500,000) = 0.00014.
        self.assertLess(abs(factors.mean() - 1.0), 0.001)
        self.assertLess(abs(factors.std() / factors.mean() - workload.TASK_CV), 0.002)

    def test_seeded(self) -> None:
        np.testing.assert_array_equal(
            workload.task_factors(3, 100), workload.task_factors(np.random.default_rng(3), 100)
        )
        other = workload.task_factors(4, 100)
        self.assertFalse(np.array_equal(workload.task_factors(3, 100), other))

    def test_no_spread_is_exactly_one(self) -> None:
        np.testing.assert_array_equal(np.ones(10), workload.task_factors(0, 10, cv=0.0))
        self.assertEqual((0,), workload.task_factors(0, 0).shape)

    def test_bad_input(self) -> None:
        self.assertRaises(workload.WorkloadError, workload.task_factors, 0, -1)
        self.assertRaises(workload.WorkloadError, workload.task_factors, 0, 1, cv=float("nan"))


class TestArrivals(testtools.TestCase):
    def test_four_named_rates_fractions_of_the_default_makespan(self) -> None:
        self.assertEqual(
            [workload.DEFAULT_MAKESPAN_S * f for f in (1 / 8, 1 / 4, 1 / 2, 1)],
            list(workload.ARRIVAL_RATES.values()),
        )
        self.assertEqual(23_148.0, workload.DEFAULT_MAKESPAN_S)
        self.assertEqual(workload.ARRIVAL_RATES["half"], workload.mean_interarrival("half"))
        error = self.assertRaises(workload.WorkloadError, workload.mean_interarrival, "fast")
        self.assertIn("eighth, quarter, half, whole", str(error))

    def test_first_at_zero_then_exponential_gaps(self) -> None:
        names = [f"app{i}" for i in range(20_000)]
        found = workload.arrival_times(5, names, 100.0)
        times = list(found.values())
        self.assertEqual(set(names), set(found))
        self.assertEqual(0.0, times[0])
        gaps = np.diff(times)
        self.assertTrue((gaps >= 0).all())
        # Exponential: mean 100 s, standard deviation 100 s; 20,000 gaps.
        self.assertLess(abs(gaps.mean() - 100.0), 3.0)
        self.assertLess(abs(gaps.std() - 100.0), 5.0)
        self.assertNotEqual(names, list(found))  # a random order

    def test_seeded(self) -> None:
        first = workload.arrival_times(1, APPS, 1000.0)
        self.assertEqual(first, workload.arrival_times(1, APPS, 1000.0))
        self.assertEqual(first, workload.arrival_times(np.random.default_rng(1), APPS, 1000.0))
        self.assertNotEqual(first, workload.arrival_times(2, APPS, 1000.0))

    def test_zero_mean_submits_all_at_once(self) -> None:
        found = workload.arrival_times(0, APPS, 0.0)
        self.assertEqual(dict.fromkeys(APPS, 0.0), found)
        self.assertEqual({}, workload.arrival_times(0, (), 10.0))

    def test_bad_input(self) -> None:
        self.assertRaises(workload.WorkloadError, workload.arrival_times, 0, APPS, -1.0)
        self.assertRaises(workload.WorkloadError, workload.arrival_times, 0, APPS, float("inf"))
        self.assertRaises(workload.WorkloadError, workload.arrival_times, 0, ("A", "A"), 1.0)

    @given(seeds, st.floats(0, 1e6), st.lists(st.text(min_size=1), unique=True, max_size=8))
    def test_invariants(self, seed: int, mean: float, names: list[str]) -> None:
        found = workload.arrival_times(seed, names, mean)
        self.assertEqual(sorted(names), sorted(found))
        times = list(found.values())
        if times:
            self.assertEqual(0.0, times[0])
            self.assertEqual(sorted(times), times)
