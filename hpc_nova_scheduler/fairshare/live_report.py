"""Fair share in the live cloud now: what ``fairshare show`` and ``report`` print.

The commands read the latest generation, the shares, the cores in use and
the decayed usage from the plugin database, and hand them here as plain
values (:func:`live_view`). A project's relative throughput on a platform
is its application's solo run time on its fastest platform over the one
there; its best-equivalent cores count each core in use at that speed.
:func:`fairness_of` judges the cloud as seed 002 judges a run: Jain's index
of the projects' normalised throughput shares, and an efficiency estimate.
It never imports Nova.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from hpc_nova_scheduler.core.sharing import Platform
from hpc_nova_scheduler.fairshare import entitlements, evaluation, reclaim, reclaim_report
from hpc_nova_scheduler.fairshare.combinations import CombinationTable

if TYPE_CHECKING:
    from hpc_nova_scheduler.db import api as db_api
    from hpc_nova_scheduler.db import loans as loans_db


@dataclasses.dataclass(frozen=True)
class Live:
    """The latest generation and the cloud's use now, as show and report read them."""

    generation: db_api.Generation
    #: The generation's platforms, by name.
    platforms: tuple[str, ...]
    policy: str
    interval: int
    age_s: float
    shares: dict[str, float]
    projects: dict[str, entitlements.ProjectView]
    #: project -> platform -> cores recorded or claimed now.
    in_use: dict[str, dict[str, int]]
    #: project -> cores on hosts the generation does not know.
    elsewhere: dict[str, int]
    #: project -> platform -> solo run time (measured pairs only).
    solo: dict[str, dict[str, float]]
    usage: dict[tuple[str, str], float]
    #: project -> platform -> loan kind (borrowed, preemptible) -> cores running.
    lent: dict[str, dict[str, dict[str, int]]] = dataclasses.field(default_factory=dict)

    @property
    def stale(self) -> bool:
        return self.age_s > 2 * self.interval

    def speed(self, project: str, platform: str) -> float | None:
        """The project's throughput on ``platform`` over its best platform's; None unmeasured."""
        solo = self.solo.get(project, {})
        if platform not in solo:
            return None
        return min(solo.values()) / solo[platform]

    def best_equivalent(self, project: str) -> float:
        """Cores in use, each counted at its relative speed (unmeasured: 1, as usage is)."""
        return sum(
            cores * (self.speed(project, platform) or 1.0)
            for platform, cores in self.in_use.get(project, {}).items()
        )


def cores_by_platform(
    use: Mapping[str, Mapping[str, int]],
    shares: Mapping[str, float],
    platform_of: Mapping[str, str],
) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """The cores in use (project -> host key -> cores) of the projects with a
    share, per platform; and per project, those on hosts of no platform."""
    in_use: dict[str, dict[str, int]] = collections.defaultdict(dict)
    elsewhere: dict[str, int] = collections.Counter()
    for name, by_key in use.items():
        if name not in shares:
            continue
        for key, cores in by_key.items():
            platform = platform_of.get(key)
            if platform is None:
                elsewhere[name] += cores
            else:
                in_use[name][platform] = in_use[name].get(platform, 0) + cores
    return dict(in_use), dict(elsewhere)


def live_view(
    generation: db_api.Generation,
    platforms: Sequence[Platform],
    platform_of: Mapping[str, str],
    projects: Sequence[entitlements.ProjectView],
    table: CombinationTable,
    *,
    policy: str,
    interval: int,
    now: datetime.datetime,
    shares: dict[str, float],
    use: Mapping[str, Mapping[str, int]],
    usage: dict[tuple[str, str], float],
    loans: Sequence[loans_db.LoanRecord] = (),
) -> Live:
    """What show and report print, from what the plugin database holds now.

    ``use`` counts no preemptible VM against its project (the database
    keeps them apart): their cores come from ``loans``, with the borrowed.
    """
    in_use, elsewhere = cores_by_platform(use, shares, platform_of)
    return Live(
        generation=generation,
        platforms=tuple(p.name for p in platforms),
        policy=policy,
        interval=interval,
        age_s=max((now - generation.created_at).total_seconds(), 0.0),
        shares=shares,
        projects={p.name: p for p in projects},
        in_use=in_use,
        elsewhere=elsewhere,
        solo=entitlements.solo_times(projects, platforms, table),
        usage=usage,
        lent=reclaim_report.lent_by_platform(loans, platform_of),
    )


def project_shares(found: Live, names: Sequence[str]) -> dict[str, dict]:
    """Per project of ``names``, what Slurm's sshare shows: its weight,
    application and demand, and per platform its entitlement, cores in use,
    decayed usage, affinity and relative throughput; and its borrowed cores
    (placed beyond its entitlement under ``borrow``, counted in use) and
    preemptible cores (never counted in use) that reclaim may take back."""
    affinity = found.generation.templates.get("affinity", {})
    projects = {}
    for name in names:
        view = found.projects.get(name)
        lent = found.lent.get(name, {})
        platforms = {}
        for platform in found.platforms:
            platforms[platform] = {
                "entitled": found.generation.allocation.get(name, {}).get(platform, 0),
                "in_use": found.in_use.get(name, {}).get(platform, 0),
                "usage_core_seconds": found.usage.get((name, platform), 0.0),
                "affinity": affinity.get(name, {}).get(platform),
                "relative_throughput": found.speed(name, platform),
                "borrowed": lent.get(platform, {}).get(reclaim.BORROWED, 0),
                "preemptible": lent.get(platform, {}).get(reclaim.PREEMPTIBLE, 0),
            }
        projects[name] = {
            "weight": found.shares[name],
            "application": view.application if view else None,
            "demand": view.demand if view else 0,
            "platforms": platforms,
        }
    return projects


@dataclasses.dataclass(frozen=True)
class Fairness:
    """Live fairness over the projects with a share."""

    #: project -> weight, cores in use, best-equivalent cores, normalised share
    projects: dict[str, dict[str, float]]
    #: The projects Jain's index counts: those asking for cores.
    counted: tuple[str, ...]
    jain: float | None
    efficiency: float | None


def fairness_of(found: Live) -> Fairness:
    """Normalised throughput share per project, Jain's index, and the efficiency estimate.

    A project's share is its best-equivalent cores in use over its weight.
    Jain's index counts the projects that ask for cores (demand, or cores in
    use): one asking for nothing is not wronged by getting nothing. The
    efficiency is best-equivalent cores over cores in use, over the
    projects with a share: 1 when every core runs its project's
    application on its fastest platform.
    """
    projects: dict[str, dict[str, float]] = {}
    for name, weight in sorted(found.shares.items()):
        cores = sum(found.in_use.get(name, {}).values())
        best = found.best_equivalent(name)
        view = found.projects.get(name)
        projects[name] = {
            "weight": weight,
            "demand": view.demand if view else 0,
            "cores_in_use": cores,
            "best_equivalent_cores": best,
            "normalised_throughput_share": best / weight,
        }
    counted = tuple(
        name for name, p in projects.items() if p["demand"] > 0 or p["cores_in_use"] > 0
    )
    values = [projects[name]["normalised_throughput_share"] for name in counted]
    jain = None
    if values and any(v > 0 for v in values):
        jain = evaluation.jain(values)
    total = sum(p["cores_in_use"] for p in projects.values())
    efficiency = (
        sum(p["best_equivalent_cores"] for p in projects.values()) / total if total else None
    )
    return Fairness(projects, counted, jain, efficiency)
