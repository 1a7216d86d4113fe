"""A replay's figures in the table's order, and their means over seeds."""

from __future__ import annotations

import dataclasses
import types

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler import sweep
from hpc_nova_scheduler.sim import summary


@dataclasses.dataclass
class Replay:
    """What a replay's result answers, with figures chosen by the test."""

    jobs: int
    makespan: float = 7200.0
    shares: tuple[float | None, ...] = (0.5, None)

    def __post_init__(self) -> None:
        self.outcomes = [None] * self.jobs
        self.never_fit = [None]
        self.topology_refused = [None, None]

    def completed_by(self, t: float) -> int:
        return self.jobs if t >= self.makespan else 0

    def mean_wait(self) -> float:
        return 1800.0

    def mean_bounded_slowdown(self) -> float:
        return 2.0

    def utilisation(self) -> float:
        return 0.5

    def mean_interference(self) -> float:
        return 1.0

    def one_domain_share(self, level: str) -> float | None:
        return dict(zip(("rack", "block"), self.shares, strict=True))[level]


def swept(*replays: Replay | None, log: str | None = None, name: str = "a") -> list:
    cell = types.SimpleNamespace(log=log, name=name)
    return [sweep.CellResult(cell, name, r, None if r else "lost") for r in replays]


class TestFigures(testtools.TestCase):
    def test_in_the_tables_order_and_units(self) -> None:
        self.assertEqual(
            [10, 1, 0, 10, 2.0, 0.5, 2.0, 0.5, 1.0],
            summary.figures(Replay(10), [3600, 7200]),
        )

    def test_the_topology_figures_innermost_level_first(self) -> None:
        self.assertEqual([], summary.topology_figures(Replay(1), ()))
        self.assertEqual([2, 0.5, None], summary.topology_figures(Replay(1), ("block", "rack")))


class TestSeedMeans(testtools.TestCase):
    @given(st.lists(st.integers(0, 100), min_size=1, max_size=6))
    def test_the_mean_of_each_figure(self, jobs: list[int]) -> None:
        (found,) = summary.seed_means(swept(*(Replay(j) for j in jobs)), [7200])
        self.assertEqual(("a", len(jobs)), (found.name, found.seeds))
        self.assertAlmostEqual(sum(jobs) / len(jobs), found.figures[0])
        self.assertAlmostEqual(sum(jobs) / len(jobs), found.figures[2])
        self.assertEqual([], found.topology)

    def test_a_share_is_averaged_over_the_seeds_that_have_one(self) -> None:
        replays = [Replay(1, shares=(0.25, None)), Replay(1, shares=(0.75, 0.5))]
        (found,) = summary.seed_means(swept(*replays), [1], ("block", "rack"))
        self.assertEqual([2.0, 0.5, 0.5], found.topology)

    def test_a_failed_seed_leaves_no_means(self) -> None:
        (found,) = summary.seed_means(swept(Replay(1), None), [1])
        self.assertEqual((2, None, None), (found.seeds, found.figures, found.topology))

    def test_one_group_per_log_and_scenario_in_order(self) -> None:
        cells = [
            *swept(Replay(1), log="y", name="b"),
            *swept(Replay(2), log="x", name="b"),
            *swept(Replay(3), log="y", name="b"),
        ]
        found = summary.seed_means(cells, [1])
        self.assertEqual([("y", "b", 2), ("x", "b", 1)], [(f.log, f.name, f.seeds) for f in found])
