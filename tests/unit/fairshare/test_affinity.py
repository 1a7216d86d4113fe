"""Seed 002's affinity metrics: Tables 3 and 4 and the worked example, from the shipped runs."""

from __future__ import annotations

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler import resources
from hpc_nova_scheduler.fairshare import affinity, runs
from hpc_nova_scheduler.fairshare.runs import TaskRun

PLATFORMS = ("gene", "cheetah", "darth", "lcloud")
# Table 3 of seed 002: throughput (tasks/hour), EPA and RPA per platform.
TABLE_3 = {
    "AutoDock": (
        (7.49, 14.75, 10.37, 12.24),
        (0.614, 1.532, 0.978, 1.214),
        (0.966, 1.169, 0.918, 0.974),
    ),
    "Blast": (
        (56.28, 94.97, 77.66, 93.58),
        (0.640, 1.308, 1.009, 1.284),
        (1.009, 0.997, 0.955, 1.042),
    ),
    "CacheBench": (
        (9.57, 10.71, 10.06, 10.15),
        (0.929, 1.080, 0.994, 1.006),
        (1.473, 0.854, 0.988, 0.847),
    ),
    "Montage": (
        (11.64, 23.88, 25.28, 33.76),
        (0.431, 1.234, 1.326, 1.883),
        (0.684, 0.892, 1.203, 1.484),
    ),
    "ThreeKaonOmega": (
        (17.98, 50.69, 35.62, 41.44),
        (0.431, 1.822, 1.181, 1.428),
        (0.678, 1.341, 1.060, 1.102),
    ),
}
# Table 4 of seed 002: co-runner affinity, raw (s) and normalised (%).
TABLE_4 = {
    "AutoDock": ((26.75, 24.05, 34.85, 25.47), (5.57, 9.86, 10.04, 8.66)),
    "Blast": ((0.44, 12.80, 3.46, 4.62), (0.69, 33.76, 7.47, 12.01)),
    "CacheBench": ((47.59, 0.90, 13.30, 1.30), (12.65, 0.27, 3.72, 0.37)),
    "Montage": ((24.70, 106.72, 14.01, 13.57), (7.99, 70.78, 9.84, 12.73)),
    "ThreeKaonOmega": ((9.41, 4.42, 6.45, 3.77), (4.70, 6.22, 6.38, 4.34)),
}


def shipped() -> affinity.Affinities:
    path = resources.example_profiles_dir() / "seed-002-runs.csv"
    return affinity.affinities(runs.read_runs(str(path)))


def solo(app: str, times: dict[str, float]) -> list[TaskRun]:
    return [TaskRun(app, platform, runtime) for platform, runtime in times.items()]


class TestPaperTables(testtools.TestCase):
    def test_table_3_within_a_thousandth(self) -> None:
        found = shipped()
        self.assertEqual(tuple(TABLE_3), found.applications)
        self.assertEqual(PLATFORMS, found.platforms)
        for app, (throughput, epa, rpa) in TABLE_3.items():
            for index, platform in enumerate(PLATFORMS):
                where = f"{app} on {platform}"
                self.assertAlmostEqual(throughput[index], found.throughput[app][platform], 4, where)
                # As the paper prints them, rounded to three places; then within
                # one unit of the last place (the paper's own rounding, see
                # seed-notes: three values differ by exactly 0.001).
                for paper, ours in ((epa, found.epa), (rpa, found.rpa)):
                    printed = round(ours[app][platform], 3)
                    self.assertLessEqual(abs(paper[index] - printed), 0.001 + 1e-9, where)

    def test_table_4_within_a_hundredth(self) -> None:
        found = shipped()
        for app, (raw, normalised) in TABLE_4.items():
            for index, platform in enumerate(PLATFORMS):
                where = f"{app} on {platform}"
                printed_raw = round(found.corunner_raw[app][platform], 2)
                printed = round(found.corunner_normalised[app][platform], 2)
                self.assertLessEqual(abs(raw[index] - printed_raw), 1e-9, where)
                self.assertLessEqual(abs(normalised[index] - printed), 0.01 + 1e-9, where)

    def test_the_worked_example_of_section_4(self) -> None:
        autodock = {"gene": 480.42, "cheetah": 244.05, "darth": 347.11, "lcloud": 294.16}
        found = affinity.affinities(solo("AutoDock", autodock))
        self.assertAlmostEqual(1.532, found.epa["AutoDock"]["cheetah"], 3)
        # RPA: cheetah's mean run time over the five applications is 167.97 s.
        others = {
            app: {p: 3600.0 / t for p, t in zip(PLATFORMS, TABLE_3[app][0], strict=True)}
            for app in TABLE_3
            if app != "AutoDock"
        }
        every = solo("AutoDock", autodock) + [
            run for app, times in others.items() for run in solo(app, times)
        ]
        found = affinity.affinities(every)
        self.assertAlmostEqual(1.169, found.rpa["AutoDock"]["cheetah"], 3)


class TestAffinities(testtools.TestCase):
    def test_several_runs_of_a_pair_are_averaged(self) -> None:
        found = affinity.affinities(
            [TaskRun("A", "p", 100.0), TaskRun("A", "p", 300.0), TaskRun("A", "q", 100.0)]
        )
        self.assertEqual(18.0, found.throughput["A"]["p"])
        self.assertEqual(0.5, found.epa["A"]["p"])

    def test_corunner_affinity_is_the_mean_over_corunner_runs(self) -> None:
        found = affinity.affinities(
            [
                TaskRun("A", "p", 100.0),
                TaskRun("A", "p", 110.0, ("B",)),
                TaskRun("A", "p", 130.0, ("B", "C")),
            ]
        )
        self.assertEqual(20.0, found.corunner_raw["A"]["p"])
        self.assertEqual(20.0, found.corunner_normalised["A"]["p"])
        self.assertNotIn("B", found.corunner_raw)

    def test_a_pair_without_a_solo_run_is_neutral_and_listed(self) -> None:
        found = affinity.affinities(
            [TaskRun("A", "p", 100.0), TaskRun("A", "q", 50.0), TaskRun("B", "p", 80.0)]
        )
        self.assertEqual((("B", "q"),), found.missing)
        self.assertEqual(affinity.NEUTRAL, found.epa["B"]["q"])
        self.assertEqual(affinity.NEUTRAL, found.rpa["B"]["q"])
        self.assertEqual(affinity.NEUTRAL, found.epa["B"]["p"])  # no other platform to compare
        self.assertNotIn("q", found.throughput["B"])

    def test_corunner_runs_without_a_solo_run_are_an_error(self) -> None:
        error = self.assertRaises(
            affinity.MissingSoloRun,
            affinity.affinities,
            [TaskRun("A", "p", 100.0), TaskRun("A", "q", 50.0, ("B",), line=3)],
        )
        self.assertIn("line 3: A ran on q with co-runners but never alone", str(error))

    @given(
        st.lists(st.floats(1.0, 1e5), min_size=2, max_size=6),
        st.floats(0.1, 10.0),
    )
    def test_scaling_every_run_time_changes_no_affinity(self, times, factor) -> None:
        platforms = [f"p{i}" for i in range(len(times))]
        base = affinity.affinities(solo("A", dict(zip(platforms, times, strict=True))))
        scaled = affinity.affinities(
            solo("A", {p: t * factor for p, t in zip(platforms, times, strict=True)})
        )
        for platform in platforms:
            self.assertAlmostEqual(base.epa["A"][platform], scaled.epa["A"][platform], 9)
            self.assertAlmostEqual(1.0, scaled.rpa["A"][platform], 9)  # one application
