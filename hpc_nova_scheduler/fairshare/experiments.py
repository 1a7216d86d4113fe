"""Seed 002's evaluation (section 6) as a grid: scenarios x policies x parameters x seeds.

A :class:`Cell` is one simulation: a Table 8 scenario, a two-level
:class:`Combination`, a seed, the engine ("discrete" pilots or the
"rate"-based evaluation), the arrivals (all at once, as in the paper, or
one of the Poisson rates of :mod:`.workload`), and the options (D_unit,
P_unit, top k%, the usage half-life).

Efficiency is each run's makespan over the makespan of Fairness + AllCore
on the same scenario, seed, engine and arrivals (section 6.1), so
:func:`judge` needs that baseline in the grid; :func:`grid` puts it there.
:func:`.simulation.run` simulates one cell: it is what a sweep sends to a
process pool or a Dask cluster.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Sequence

FIRST_LEVELS = ("fairness", "paf", "aaf", "pa-rr")
SECOND_LEVELS = ("allcore", "random", "maf", "ca-rr")
METRICS = ("throughput", "epa", "rpa")
ANCHORS = ("equal-cores", "billing-weights", "decayed-usage")
ENGINES = ("discrete", "rate")
#: What production schedulers do with the tasks of different users on a node:
#: nothing, they land wherever a core is free. The anchors run with Random.
ANCHOR_SECOND_LEVEL = "random"


@dataclasses.dataclass(frozen=True, order=True)
class Combination:
    """A first-level policy with its platform metric, and a second level with its own."""

    first: str
    metric: str
    second: str
    corunner: str = "normalised"

    @property
    def label(self) -> str:
        """``pa-rr/rpa/maf`` (Table 7's abbreviations); Fairness and the anchors
        use no platform metric, only MAF a co-runner one (``maf:raw``)."""
        parts = [self.first]
        if self.first not in ("fairness", *ANCHORS):
            parts.append(self.metric)
        parts.append(self.second if self.second != "maf" else f"maf:{self.corunner}")
        return "/".join(parts).replace("maf:normalised", "maf")

    @classmethod
    def parse(cls, label: str) -> Combination:
        """The combination a label names (the inverse of :attr:`label`)."""
        parts = label.split("/")
        first, rest = parts[0], parts[1:]
        metric = "rpa"
        if first not in ("fairness", *ANCHORS):
            if len(rest) != 2:
                raise ValueError(
                    f"policy {label!r}: expected FIRST/METRIC/SECOND, e.g. pa-rr/rpa/maf"
                )
            metric, rest = rest[0], rest[1:]
        if len(rest) != 1:
            raise ValueError(
                f"policy {label!r}: expected FIRST/SECOND for {first}, e.g. fairness/maf"
            )
        second, colon, corunner = rest[0].partition(":")
        if colon and second != "maf":
            raise ValueError(
                f"policy {label!r}: only maf takes a co-runner metric (maf:raw, maf:normalised)"
            )
        return cls(first, metric, second, corunner or "normalised")


#: The baseline of efficiency (section 6.1).
BASELINE = Combination("fairness", "rpa", "allcore")
#: The paper's best: PA-based RR with RPA, and MAF.
PAPER_BEST = Combination("pa-rr", "rpa", "maf")


def seed002_combinations() -> list[Combination]:
    """Every first level x platform metric x second level of Table 7 (MAF with both
    co-runner metrics): 4 + 3 x 3 x 4 = 40, and 10 MAF:raw twins."""
    found = []
    for first in FIRST_LEVELS:
        for metric in METRICS if first != "fairness" else ("rpa",):
            for second in SECOND_LEVELS:
                found.append(Combination(first, metric, second))
                if second == "maf":
                    found.append(Combination(first, metric, second, "raw"))
    return found


def anchor_combinations() -> list[Combination]:
    return [Combination(anchor, "rpa", ANCHOR_SECOND_LEVEL) for anchor in ANCHORS]


#: First levels of our own, not in seed 002 (:mod:`.equivalent`).
OWN_FIRST_LEVELS = ("equivalent-rr",)


def own_combinations() -> list[Combination]:
    """Our first levels beside PA-based RR: with RPA (the paper's best metric)
    and every second level, MAF on both co-runner metrics."""
    found = []
    for first in OWN_FIRST_LEVELS:
        for second in SECOND_LEVELS:
            found.append(Combination(first, "rpa", second))
            if second == "maf":
                found.append(Combination(first, "rpa", second, "raw"))
    return found


@dataclasses.dataclass(frozen=True, order=True)
class Cell:
    """One simulation of the grid."""

    scenario: str
    combination: Combination
    seed: int = 0
    engine: str = "rate"
    #: "all-at-once", or a named Poisson rate of workload.ARRIVAL_RATES.
    arrivals: str = "all-at-once"
    core_unit: int = 1
    node_unit: int = 1
    top_percent: int = 50
    half_life_s: float = 0.0
    #: Re-plan every interval (0: at submissions and queue ends only).
    interval_s: float = 0.0
    #: (application, weight) of the users not weighing 1, sorted.
    weights: tuple[tuple[str, float], ...] = ()

    @property
    def options(self) -> tuple:
        """Everything but the scenario, the seed and the policy: cells that differ
        only in those are comparable."""
        return (
            self.engine,
            self.arrivals,
            self.core_unit,
            self.node_unit,
            self.top_percent,
            self.half_life_s,
            self.interval_s,
            self.weights,
        )


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one cell's simulation measured."""

    cell: Cell
    fairness: float
    jain: float
    spread: float
    makespan_s: float
    #: user -> normalised throughput t_u
    normalised: dict[str, float]
    #: The engine that produced it ("discrete" or "rate").
    engine: str


def grid(
    scenarios: Sequence[str],
    combinations: Iterable[Combination],
    seeds: Sequence[int] = (0,),
    **options,
) -> list[Cell]:
    """Every scenario x combination x seed, with Fairness + AllCore added as the baseline."""
    wanted = list(dict.fromkeys([*combinations, BASELINE]))
    return [
        _baseline_of(cell) if combination == BASELINE else cell
        for scenario in scenarios
        for seed in seeds
        for combination in wanted
        for cell in [Cell(scenario, combination, seed, **options)]
    ]


@dataclasses.dataclass(frozen=True)
class Judged:
    """An outcome with its efficiency against the baseline of its group."""

    outcome: Outcome
    efficiency: float

    @property
    def cell(self) -> Cell:
        return self.outcome.cell

    @property
    def fairness(self) -> float:
        return self.outcome.fairness


def judge(outcomes: Iterable[Outcome]) -> list[Judged]:
    """Efficiency of every outcome; the baseline of each group must be among them."""
    outcomes = list(outcomes)
    base = {_baseline_of(o.cell): o.makespan_s for o in outcomes if o.cell.combination == BASELINE}
    judged = []
    for outcome in outcomes:
        key = _baseline_of(outcome.cell)
        if key not in base:
            raise ValueError(f"no Fairness + AllCore run to judge {outcome.cell} against")
        judged.append(Judged(outcome, outcome.makespan_s / base[key]))
    return judged


def _baseline_of(cell: Cell) -> Cell:
    """The Fairness + AllCore cell ``cell`` is judged against: same scenario, seed,
    engine, arrivals, history and re-planning; the units and k, which neither
    Fairness nor AllCore reads, do not matter."""
    return dataclasses.replace(cell, combination=BASELINE, core_unit=1, node_unit=1, top_percent=50)


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.fmean(values) if values else float("nan")
