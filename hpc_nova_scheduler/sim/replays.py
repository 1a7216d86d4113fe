"""Replays of logs under several scenarios and seeds, as the cells of a sweep.

``simulate`` compares scenarios (policies x parameters, each online and
with each batch planner) on one log or several, each with one seed or
several. Each replay is a cell of a :mod:`hpc_nova_scheduler.sweep` grid:
:class:`Replay` names it, the :class:`Setting` every replay of a log and a
seed shares (the log's jobs, the cloud, the models) travels once to each
worker, and :func:`replay` is the picklable top-level function a worker
runs.

Several logs or seeds share a :data:`Settings` mapping, keyed by ``(log,
seed)`` as the cells name them. Its settings of one log hold the same
jobs (and all of them the same models): pickling keeps one copy of an
object it meets twice, so a log's jobs travel once, however many seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.sim.batches import BatchArrivals
from hpc_nova_scheduler.sim.interference import SlowdownModel
from hpc_nova_scheduler.sim.phases import Measuring, PhaseDrift
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
    #: Count each job's domains per topology level (:class:`Simulator`'s ``spans``).
    spans: bool = False
    span_cost: float = 0.0
    #: Drifting phases and how measured scores lag them (see :mod:`.phases`):
    #: every scenario of the setting replays the same phases.
    drift: PhaseDrift | None = None
    measuring: Measuring | None = None


#: The settings of a grid of several logs or seeds, by ``(log, seed)``:
#: either is None when the grid has only one (see :class:`Replay`).
Settings = Mapping[tuple[str | None, int | None], Setting]


@dataclasses.dataclass(frozen=True)
class Replay:
    """One cell: scenario ``scenario`` of the setting, online (``batches``
    None) or with batch setting ``batches``, reported as ``name``.

    ``log`` and ``seed`` pick the setting from :data:`Settings`; each is
    None when the grid has only one log, or one seed, so that a cell of a
    single replay reads as it always did.
    """

    name: str
    scenario: int
    batches: int | None = None
    log: str | None = None
    seed: int | None = None

    def __str__(self) -> str:
        tags = [
            *([] if self.log is None else [f"log {self.log}"]),
            *([] if self.seed is None else [f"seed {self.seed}"]),
        ]
        return f"{self.name} ({', '.join(tags)})" if tags else self.name


def setting_of(cell: Replay, shared: Setting | Settings) -> Setting:
    """The setting the cell replays: the one there is, or the one of its log and seed."""
    return shared if isinstance(shared, Setting) else shared[cell.log, cell.seed]


def replay(
    cell: Replay, setting: Setting | Settings, progress: Callable[[int], None] | None = None
) -> Result:
    """Replay the setting's jobs under the cell's scenario.

    ``setting`` is the one setting of the grid, or the :data:`Settings`
    the cell's log and seed pick from. ``progress`` is :class:`Simulator`'s;
    only a replay in the caller's own process can have one, as it does not
    pickle.
    """
    setting = setting_of(cell, setting)
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
        spans=setting.spans,
        span_cost=setting.span_cost,
        drift=setting.drift,
        measuring=setting.measuring,
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


def grid_of(settings: Settings) -> list[Replay]:
    """Logs x scenarios (each online, then with each batch setting) x seeds.

    The seeds are innermost, so that a scenario's repetitions are rows
    side by side. Every setting has the same scenarios and batch settings.
    """
    logs = list(dict.fromkeys(log for log, _ in settings))
    seeds = list(dict.fromkeys(seed for _, seed in settings))
    return [
        dataclasses.replace(cell, log=log, seed=seed)
        for log in logs
        for cell in grid(settings[log, seeds[0]])
        for seed in seeds
    ]
