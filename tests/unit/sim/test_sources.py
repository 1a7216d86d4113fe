"""Declared, measured and max compared: each replay's figures and gain."""

from __future__ import annotations

import dataclasses

import testtools

from hpc_nova_scheduler.sim import sources
from hpc_nova_scheduler.sim.replays import Replay
from hpc_nova_scheduler.sim.simulator import Outcome, Result
from hpc_nova_scheduler.sweep import CellResult


def result(source: str, ends: list[float]) -> Result:
    """Jobs of 100 s, all submitted at 0, ending at ``ends``."""
    outcomes = [Outcome(i, 0.0, end - 100.0, end, 1, 100.0) for i, end in enumerate(ends)]
    return Result("s", outcomes, [], 0, 4, cache_source=source)


def cell(name: str, value: Result | None, seed: int | None = None) -> CellResult:
    replay = Replay(name, 0, seed=seed)
    if value is None:
        return CellResult(replay, str(replay), None, "boom", 2)
    return CellResult(replay, str(replay), value)


class TestFigures(testtools.TestCase):
    def test_figures_of_one_replay(self) -> None:
        # Four jobs of 100 s: two without waiting, two after 100 s.
        found = sources.figures(result("declared", [100.0, 100.0, 200.0, 200.0]))
        self.assertEqual(len(sources.HEADINGS), len(found))
        jobs_per_hour, makespan, wait, bounded, p95, stretch, p95_stretch = found
        self.assertAlmostEqual(4 / (200 / 3600), jobs_per_hour)
        self.assertAlmostEqual(200 / 3600, makespan)
        self.assertAlmostEqual(50 / 3600, wait)
        self.assertAlmostEqual(1.5, bounded)
        self.assertAlmostEqual(2.0, p95)
        self.assertEqual((1.0, 1.0), (stretch, p95_stretch))

    def test_no_job_is_no_throughput(self) -> None:
        self.assertEqual(0.0, sources.figures(result("declared", []))[0])


class TestCompare(testtools.TestCase):
    def test_sources_side_by_side_with_their_gain_over_declared(self) -> None:
        swept = [
            cell("least-free-pes", result("declared", [100.0])),
            cell("hpc-aware (declared scores)", result("declared", [200.0, 200.0])),
            cell("hpc-aware (measured scores)", result("measured", [100.0, 200.0])),
            cell("hpc-aware (max scores)", None),
        ]
        rows = sources.compare(swept)
        self.assertEqual(
            [
                ("least-free-pes", "declared"),
                ("hpc-aware", "declared"),
                ("hpc-aware", "measured"),
                ("hpc-aware", "max"),
            ],
            [(row.scenario, row.source) for row in rows],
        )
        self.assertEqual([None, None, 0.0, None], [row.gain for row in rows])
        self.assertIsNone(rows[3].figures)

    def test_seed_means_gain_over_the_mean_declared(self) -> None:
        swept = [
            cell("p (declared scores)", result("declared", [100.0, 200.0]), seed=0),
            cell("p (declared scores)", result("declared", [200.0, 200.0]), seed=1),
            cell("p (measured scores)", result("measured", [100.0, 100.0]), seed=0),
            cell("p (measured scores)", result("measured", [100.0, 100.0]), seed=1),
        ]
        rows = sources.compare(swept)
        self.assertEqual([0, 0, 1, 1], [row.seed for row in rows])
        declared, measured = sources.seed_means(rows)
        self.assertEqual(("declared", "2 seeds"), (declared.source, declared.seed))
        # 36 jobs/h declared (both seeds), 72 measured: +100 %.
        self.assertAlmostEqual(100.0, measured.gain)
        failed = [dataclasses.replace(rows[0], figures=None), *rows[1:]]
        self.assertIsNone(sources.seed_means(failed)[0].figures)
