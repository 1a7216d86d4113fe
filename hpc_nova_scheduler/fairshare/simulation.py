"""One cell of seed 002's evaluation: a Table 8 scenario simulated under a policy.

The run times are :func:`.workload.generate_times` of the cell's seed (so
every seed is a different draw of the unpublished per-combination times,
as well as of the tasks' noise and the arrivals); the arrivals all at 0
(the paper's default) or Poisson at a named rate. The tasks' noise and the
arrivals draw from streams of their own, spawned from the seed, so that
neither reuses the numbers behind the generated run times.
"""

from __future__ import annotations

import functools

import numpy as np

from hpc_nova_scheduler.fairshare import workload
from hpc_nova_scheduler.fairshare.allocator import TwoLevel
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.experiments import Cell, Outcome
from hpc_nova_scheduler.fairshare.simulator import simulate

ALL_AT_ONCE = "all-at-once"


@functools.lru_cache(maxsize=8)
def times_of(seed: int) -> CombinationTable:
    """The generated run times of ``seed`` (cached: a worker runs many cells of one seed)."""
    return workload.generate_times(seed)


def streams(seed: int) -> tuple[int, int]:
    """Independent seeds for the tasks' noise and the arrivals of ``seed``."""
    tasks, arrivals = np.random.SeedSequence([seed, STREAMS]).generate_state(2)
    return int(tasks), int(arrivals)


#: Salt that keeps the spawned streams apart from generate_times(seed)'s.
STREAMS = 2002


def arrivals_of(cell: Cell, applications: tuple[str, ...]) -> dict[str, float] | None:
    if cell.arrivals == ALL_AT_ONCE:
        return None
    return workload.arrival_times(
        streams(cell.seed)[1], list(applications), workload.mean_interarrival(cell.arrivals)
    )


def policy_of(cell: Cell) -> TwoLevel:
    c = cell.combination
    return TwoLevel(
        first=c.first,
        second=c.second,
        metric=c.metric,
        corunner=c.corunner,
        top_percent=cell.top_percent,
        core_unit=cell.core_unit,
        node_unit=cell.node_unit,
        seed=cell.seed,
    )


def run(cell: Cell) -> Outcome:
    """Simulate ``cell`` with its engine."""
    scenario = workload.scenario(cell.scenario)
    result = simulate(
        scenario.platforms,
        scenario.tasks,
        arrivals_of(cell, scenario.applications),
        policy_of(cell),
        times_of(cell.seed),
        seed=streams(cell.seed)[0],
        method=cell.engine,
        half_life_s=cell.half_life_s,
        interval_s=cell.interval_s,
        weights=dict(cell.weights) or None,
    )
    return Outcome(
        cell=cell,
        fairness=result.fairness,
        jain=result.jain,
        spread=result.spread,
        makespan_s=result.makespan_s,
        normalised=dict(result.normalised),
        engine=result.method,
    )
