"""Seed 002 for a live cloud: from projects, platforms and runs to entitlements.

hpc-scheduler-agent's allocator (``agent/allocator.py``) and the
``fairshare allocate|show|report`` commands read what Nova and the plugin
database hold and hand it here as plain values; this module poses seed
002's problem (:class:`~hpc_nova_scheduler.core.sharing.Claimant` per
project) and solves it with :class:`~.allocator.TwoLevel`. It never
imports Nova.

Choices where the paper has a batch of users and Nova has projects:

* **Demand** of a project is the larger of what it declared (``fairshare
  demand set``: a pilot factory's or autoscaler's total) and what Nova
  shows: the cores of its running VMs plus the cores refused for its
  entitlement in the last interval. A declared total includes the VMs it
  already runs, so the two are not added.
* **The application** of a project is the one that holds most of its
  running cores and refused requests (``hpc:app_name``); a project with
  none, or one whose application has no solo run on any platform, counts
  as equally fast everywhere (affinity 1.0, throughput by cores).
* **Usage** is charged per platform as the policy says
  (:func:`~.usage.charge`, best-equivalent core-seconds for seed 002's
  policies) and decays with the configured half-life.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence

from hpc_nova_scheduler.core.sharing import Claimant, Platform, SharingError
from hpc_nova_scheduler.fairshare import usage as usage_rules
from hpc_nova_scheduler.fairshare.allocator import Plan, TwoLevel, platform_affinity
from hpc_nova_scheduler.fairshare.combinations import CombinationTable

#: Solo run time given to an application nothing is known of: any value
#: works, since only ratios between platforms matter and they are all 1.
NEUTRAL_SOLO_S = 1.0


@dataclasses.dataclass(frozen=True)
class Run:
    """A measured task run: application, platform, seconds, co-runners."""

    application: str
    platform: str
    runtime_s: float
    corunners: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class ProjectView:
    """One project with a share, as the allocator sees it."""

    name: str
    weight: float
    #: Cores declared with ``fairshare demand set`` (0: none).
    declared: int = 0
    #: platform -> cores of its VMs running there now.
    running: Mapping[str, int] = dataclasses.field(default_factory=dict)
    #: Cores of its requests refused for entitlement in the last interval.
    refused: int = 0
    #: The application it runs (None: unknown).
    application: str | None = None

    @property
    def running_cores(self) -> int:
        return sum(self.running.values())

    @property
    def demand(self) -> int:
        return max(self.declared, self.running_cores + self.refused)


def main_application(weighted: Iterable[tuple[str | None, int]]) -> str | None:
    """The application holding most cores among (application, cores) pairs; ties by name."""
    totals: collections.Counter[str] = collections.Counter()
    for application, cores in weighted:
        if application:
            totals[application] += max(int(cores), 0)
    if not totals:
        return None
    return min(totals, key=lambda name: (-totals[name], name))


def application_key(project: ProjectView) -> str:
    """The application name the allocator uses: a project of its own when unknown."""
    return project.application or f"project:{project.name}"


def combination_table(
    runs: Sequence[Run], platforms: Sequence[Platform], applications: Iterable[str]
) -> CombinationTable:
    """Mean run times of the measured runs on ``platforms``; neutral for unmeasured applications.

    Runs name the co-runners beside the task; the table's sets hold the
    application too.
    """
    names = {p.name for p in platforms}
    solo_runs: dict[tuple[str, str], list[float]] = {}
    shared_runs: dict[tuple[str, str, frozenset[str]], list[float]] = {}
    for run in runs:
        if run.platform not in names:
            continue
        if run.corunners:
            key = (run.application, run.platform, frozenset({run.application, *run.corunners}))
            shared_runs.setdefault(key, []).append(run.runtime_s)
        else:
            solo_runs.setdefault((run.application, run.platform), []).append(run.runtime_s)
    solo = {pair: statistics.fmean(times) for pair, times in solo_runs.items()}
    measured = {app for app, _ in solo}
    for application in applications:
        if application not in measured:
            for name in sorted(names):
                solo[(application, name)] = NEUTRAL_SOLO_S
    combinations = {
        key: statistics.fmean(times)
        for key, times in shared_runs.items()
        if (key[0], key[1]) in solo_runs
    }
    return CombinationTable(solo, combinations)


def table_for(
    projects: Sequence[ProjectView], platforms: Sequence[Platform], runs: Sequence[Run]
) -> CombinationTable:
    """The run times of ``projects``' applications on ``platforms``, built once per run."""
    return combination_table(runs, platforms, (application_key(p) for p in projects))


def claimants(
    projects: Sequence[ProjectView], usage: Mapping[tuple[str, str], float]
) -> list[Claimant]:
    """Seed 002's claimants: one per project, with its decayed usage summed over platforms."""
    total: dict[str, float] = collections.defaultdict(float)
    for (project, _), value in usage.items():
        total[project] += value
    return [
        Claimant(
            name=project.name,
            application=application_key(project),
            demand=project.demand,
            weight=project.weight,
            usage=total.get(project.name, 0.0),
        )
        for project in sorted(projects, key=lambda p: p.name)
    ]


def allocate(
    two_level: TwoLevel,
    projects: Sequence[ProjectView],
    platforms: Sequence[Platform],
    table: CombinationTable,
    usage: Mapping[tuple[str, str], float],
    previous: Mapping[str, Mapping[str, int]] | None = None,
) -> Plan:
    """Entitlements per project and platform, and each platform's node templates.

    ``table`` is :func:`table_for` the same projects and platforms.
    """
    if not platforms:
        raise SharingError("no platform has cores: nothing to share")
    return two_level.plan(claimants(projects, usage), platforms, table, previous)


def affinities(
    metric: str,
    projects: Sequence[ProjectView],
    platforms: Sequence[Platform],
    table: CombinationTable,
) -> dict[str, dict[str, float]]:
    """project -> platform -> affinity by ``metric`` (the order requests try platforms in)."""
    if not projects or not platforms:
        return {}
    return platform_affinity(metric, claimants(projects, {}), platforms, table)


def charge_usage(
    previous: Mapping[tuple[str, str], float],
    running: Mapping[tuple[str, str], float],
    elapsed_s: float,
    half_life_s: float,
    solo: Mapping[str, Mapping[str, float]],
    how: str,
) -> dict[tuple[str, str], float]:
    """Usage after ``elapsed_s`` more seconds: the old decayed, plus what ran meanwhile.

    ``running`` is core-seconds per (project, platform) within the elapsed
    time; ``solo`` is each project's solo run times per platform (what
    ``best-equivalent`` scales by).
    """
    updated = {
        key: usage_rules.decay(value, elapsed_s, half_life_s) for key, value in previous.items()
    }
    for (project, platform), core_seconds in running.items():
        if core_seconds <= 0:
            continue
        charged = usage_rules.charge(core_seconds, solo.get(project, {}), platform, how)
        updated[(project, platform)] = updated.get((project, platform), 0.0) + charged
    return updated


def solo_times(
    projects: Sequence[ProjectView], platforms: Sequence[Platform], table: CombinationTable
) -> dict[str, dict[str, float]]:
    """project -> platform -> its application's mean solo run time (measured pairs only)."""
    return {
        project.name: {
            p.name: seconds
            for p in platforms
            if (seconds := table.solo_runtime(application_key(project), p.name)) is not None
        }
        for project in projects
    }


def digest(*parts: object) -> str:
    """A short digest of the allocator's inputs: a run is due when it changes."""
    text = json.dumps(parts, sort_keys=True, default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return str(value)


def templates_as_json(plan: Plan) -> dict[str, list[dict]]:
    """The node templates as stored with a generation: slots and node counts."""
    return {
        platform: [
            {"slots": [[name, cores] for name, cores in template.slots], "nodes": template.nodes}
            for template in templates
        ]
        for platform, templates in plan.templates.items()
    }
