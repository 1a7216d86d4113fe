"""Replays of one log under several scenarios, as the cells of a sweep.

``simulate`` compares scenarios (policies x parameters, each online and
with each batch planner) on one log. Each replay is a cell of a
:mod:`hpc_nova_scheduler.sweep` grid: :class:`Replay` names it, the
:class:`Setting` every replay shares (the log's jobs, the cloud, the
models) travels once to each worker, and :func:`replay` is the picklable
top-level function a worker runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.sim.batches import BatchArrivals
from hpc_nova_scheduler.sim.interference import SlowdownModel
from hpc_nova_scheduler.sim.settings import ClusterShape, Scenario
from hpc_nova_scheduler.sim.simulator import Result, Simulator
from hpc_nova_scheduler.sim.swf import Job


@dataclasses.dataclass(frozen=True)
class Setting:
    """What every replay of a sweep shares: the options of :class:`Simulator`
    besides the scenario, the jobs, and the scenarios and batch settings
    that cells pick by index."""

    shape: ClusterShape
    jobs: tuple[Job, ...]
    scenarios: tuple[Scenario, ...]
    batches: tuple[BatchArrivals, ...] = ()
    seed: int = 0
    all_at_once: bool = False
    backfill: str | None = None
    backfill_depth: int = 64
    cache_scores: tuple[float, float] | None = None
    interference: SlowdownModel | InterferenceModel | None = None
    memory_scale: float = 1.0
    profiles: tuple[ProfileRecord, ...] = ()


@dataclasses.dataclass(frozen=True)
class Replay:
    """One cell: scenario ``scenario`` of the setting, online (``batches``
    None) or with batch setting ``batches``, reported as ``name``."""

    name: str
    scenario: int
    batches: int | None = None

    def __str__(self) -> str:
        return self.name


def replay(cell: Replay, setting: Setting, progress: Callable[[int], None] | None = None) -> Result:
    """Replay the setting's jobs under the cell's scenario.

    ``progress`` is :class:`Simulator`'s; only a replay in the caller's own
    process can have one, as it does not pickle.
    """
    scenario = dataclasses.replace(setting.scenarios[cell.scenario], name=cell.name)
    batches = None if cell.batches is None else setting.batches[cell.batches]
    simulator = Simulator(
        setting.shape,
        scenario,
        seed=setting.seed,
        all_at_once=setting.all_at_once,
        backfill=setting.backfill,
        backfill_depth=setting.backfill_depth,
        cache_scores=setting.cache_scores,
        interference=setting.interference,
        memory_scale=setting.memory_scale,
        profiles=setting.profiles,
        progress=progress,
        batches=batches,
    )
    return simulator.run(setting.jobs)


def grid(setting: Setting) -> list[Replay]:
    """Each scenario online, then with each batch setting, so that rows
    compare in place."""
    return [
        Replay(
            scenario.name if batch is None else f"{scenario.name} + {setting.batches[batch].label}",
            index,
            batch,
        )
        for index, scenario in enumerate(setting.scenarios)
        for batch in [None, *range(len(setting.batches))]
    ]
