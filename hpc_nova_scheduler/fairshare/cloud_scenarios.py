"""Table 8's scenarios and the returning project as VM-level clouds, and their grid.

:mod:`.cloud_sim` runs one cloud under one enforcement; this module builds
the clouds (:func:`table8_cloud`, :func:`returning_project`), runs a grid
of them (:class:`Cell`, :func:`run`, picklable for a sweep) and compares
the modes (:func:`rows`, :func:`verdicts`: borrow + reclaim against
strict's fairness and borrow's utilisation, the issue's 5 %).

Table 8's scenarios as clouds (:func:`table8_cloud`)
===================================================

The scenario's platforms as they are; one project per application
(weight 1 unless given), its application's run times deciding affinity
(the generated table of the seed). Its **declared demand** is twice its
part of the cloud, its part being its Fastest-OneCore work (tasks x
fastest solo run time) over the scenario's: together they ask twice the
cloud, so about half of them asking at once fill it. Each project is
**active and idle in turns**, each period exponential with mean
``workload.DEFAULT_MAKESPAN_S`` (the 6.43 h of Table 6's rule), its first
state a fair coin; draws from ``numpy.random.default_rng`` of the seed.
VMs are of :data:`.cloud_sim.VM_CORES` cores; ``services`` is the fraction of each
project's declaration held by VMs that never end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from hpc_nova_scheduler.fairshare import workload
from hpc_nova_scheduler.fairshare.cloud_sim import (
    BORROW,
    STRICT,
    VM_CORES,
    Cloud,
    CloudSimError,
    Lifetime,
    ProjectSpec,
    Result,
    Settings,
    simulate,
)
from hpc_nova_scheduler.fairshare.combinations import CombinationTable

#: Table 8's clouds: the declared demands add up to this many clouds.
OVERCOMMIT = 2.0
#: Table 8's clouds: the mean of an active or an idle period (Table 6's 6.43 h).
ACTIVITY_MEAN_S = workload.DEFAULT_MAKESPAN_S
DEFAULT_HORIZON_S = 2 * 86_400.0
DAY_S = 86_400.0

#: How tenants declare: all the time, or only while active.
DECLARES = ("standing", "active")

#: The named scenario issue 45 exists for (see :func:`returning_project`).
RETURNING = "returning-project"

#: Table 8's clouds: a batch VM's lifetime unless told (an hour on average).
BATCH_LIFETIME = Lifetime("exp", 3600.0)
#: The returning project's batch VMs: six hours, so they all end in its idle week.
RETURNING_LIFETIME = Lifetime("fixed", 6 * 3600.0)


def _times(seed: int) -> CombinationTable:
    from hpc_nova_scheduler.fairshare import simulation

    return simulation.times_of(seed)


def _round_vms(cores: float, vm_cores: int) -> int:
    return max(vm_cores, round(cores / vm_cores) * vm_cores)


def _activity(rng: np.random.Generator, horizon_s: float) -> tuple[tuple[float, float], ...]:
    """Active and idle in turns, each period exponential; the first state a fair coin."""
    periods = []
    active = bool(rng.random() < 0.5)
    t = 0.0
    while t < horizon_s:
        length = float(rng.exponential(ACTIVITY_MEAN_S))
        if active:
            periods.append((t, t + length))
        t += length
        active = not active
    return tuple(periods)


def table8_cloud(
    name: str,
    seed: int = 0,
    horizon_s: float = DEFAULT_HORIZON_S,
    lifetime: Lifetime = BATCH_LIFETIME,
    services: float = 0.0,
    weights: Mapping[str, float] | None = None,
    declare: str = "standing",
) -> Cloud:
    """Table 8's scenario ``name`` as a cloud (the module's docstring says how)."""
    _check_declare(declare)
    if not (0.0 <= services <= 1.0):
        raise CloudSimError(f"services must be a fraction from 0 to 1, not {services}")
    try:
        scenario = workload.scenario(name)
    except workload.UnknownScenario as error:
        raise CloudSimError(str(error)) from None
    table = _times(seed)
    names = [p.name for p in scenario.platforms]
    work = {
        app: tasks * min(s for p in names if (s := table.solo_runtime(app, p)) is not None)
        for app, tasks in scenario.tasks.items()
    }
    total = sum(work.values())
    rng = np.random.default_rng([seed, 4502])
    projects = []
    for app in scenario.applications:
        declared = _round_vms(OVERCOMMIT * scenario.cores * work[app] / total, VM_CORES)
        projects.append(
            ProjectSpec(
                name=app,
                application=app,
                declared=declared,
                active=_activity(rng, horizon_s),
                lifetime=lifetime,
                weight=(weights or {}).get(app, 1.0),
                services=int(services * declared) // VM_CORES * VM_CORES,
                standing=declare == "standing",
            )
        )
    return Cloud(name, scenario.platforms, tuple(projects), horizon_s, table)


def _check_declare(declare: str) -> None:
    if declare not in DECLARES:
        raise CloudSimError(f"declare {declare!r}; known: {', '.join(DECLARES)}")


def returning_project(
    lifetime: Lifetime = RETURNING_LIFETIME, seed: int = 0, declare: str = "standing"
) -> Cloud:
    """The case issue 45 exists for: a project back after an idle week finds its cores lent.

    Table 5's platforms; two projects of equal weight. ``returning``
    (AutoDock) declares half the cloud, runs batch VMs of ``lifetime`` for
    a day, is idle for a week, and comes back for a day. ``steady``
    (Blast) declares the whole cloud in services (VMs that never end) from
    the first hour. Under ``borrow`` the steady project fills the returning
    one's idle entitlement with services; without reclaim the returning
    project never gets it back. With ``declare="active"`` the returning
    project withdraws its declaration for its idle week: the steady one's
    services then fill its cores within their own entitlement, and not even
    reclaim gives them back.
    """
    _check_declare(declare)
    platforms = workload.PLATFORMS
    cores = sum(p.cores for p in platforms)
    horizon = 9 * DAY_S
    projects = (
        ProjectSpec(
            name="returning",
            application="AutoDock",
            declared=cores // 2,
            active=((0.0, DAY_S), (8 * DAY_S, horizon)),
            lifetime=lifetime,
            standing=declare == "standing",
        ),
        ProjectSpec(
            name="steady",
            application="Blast",
            declared=cores,
            active=((3600.0, horizon),),
            lifetime=lifetime,
            services=cores,
            standing=declare == "standing",
        ),
    )
    return Cloud(RETURNING, platforms, projects, horizon, _times(seed))


#: The week the returning project comes back at (seconds from the start).
RETURN_AT_S = 8 * DAY_S


def scenario_names() -> list[str]:
    """Every cloud :func:`cloud` builds: Table 8's scenarios and the returning project."""
    return [s.name for s in workload.scenarios()] + [RETURNING]


# -- a grid of runs --------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Cell:
    """One run of the grid (picklable: what a sweep sends to a worker)."""

    scenario: str
    seed: int
    settings: Settings
    horizon_s: float = DEFAULT_HORIZON_S
    lifetime: str = BATCH_LIFETIME.label
    #: Fraction of each declaration in services; None for the returning project (its own).
    services: float | None = 0.0
    weights: tuple[tuple[str, float], ...] = ()
    declare: str = "standing"


def cloud(cell: Cell) -> Cloud:
    lifetime = Lifetime.parse(cell.lifetime)
    if cell.scenario == RETURNING:
        return returning_project(lifetime, cell.seed, cell.declare)
    return table8_cloud(
        cell.scenario,
        cell.seed,
        cell.horizon_s,
        lifetime,
        cell.services or 0.0,
        dict(cell.weights),
        cell.declare,
    )


def run(cell: Cell) -> Result:
    """:func:`simulate` one cell."""
    return simulate(cloud(cell), cell.settings, cell.seed)


def modes(enforcements: Sequence[str], reclaims: Sequence[bool]) -> list[tuple[str, bool]]:
    """The (enforcement, reclaim) pairs to run; ``strict`` with reclaim only when asked alone.

    Under ``strict`` no VM is borrowed, so reclaim takes nothing: strict +
    reclaim is strict again, run only when it is the only reclaim asked.
    """
    pairs = [(e, r) for e in enforcements for r in reclaims]
    if len(set(reclaims)) > 1:
        pairs = [(e, r) for e, r in pairs if not (e == STRICT and r)]
    return pairs


@dataclasses.dataclass(frozen=True)
class Row:
    """Means over the seeds of one scenario, services fraction and mode."""

    scenario: str
    services: float | None
    mode: str
    runs: int
    fairness: float
    worst_fairness: float
    utilisation: float
    borrowed: float
    reclaims: float
    #: The longest wait from unmet demand to freed cores over the runs (0: none).
    max_delay_s: float


def rows(cells: Sequence[Cell], results: Sequence[Result]) -> list[Row]:
    """One row per scenario, services and mode, in the grid's order."""
    groups: dict[tuple, list[Result]] = {}
    for cell, result in zip(cells, results, strict=True):
        groups.setdefault((cell.scenario, cell.services, result.mode), []).append(result)
    return [
        Row(
            scenario=scenario,
            services=services,
            mode=mode,
            runs=len(found),
            fairness=_mean(r.mean_fairness for r in found),
            worst_fairness=_mean(r.worst_fairness for r in found),
            utilisation=_mean(r.total_utilisation for r in found),
            borrowed=_mean(r.borrowed for r in found),
            reclaims=_mean(r.reclaims for r in found),
            max_delay_s=max((d for r in found for d in r.reclaim_delays), default=0.0),
        )
        for (scenario, services, mode), found in groups.items()
    ]


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Borrow + reclaim against strict's fairness and borrow's utilisation, on one scenario."""

    scenario: str
    services: float | None
    #: borrow + reclaim's fairness over strict's
    fairness_ratio: float
    #: borrow + reclaim's utilisation over borrow's
    utilisation_ratio: float

    #: The issue's bar: each within 5 %.
    BAR = 0.95

    @property
    def holds(self) -> bool:
        return self.fairness_ratio >= self.BAR and self.utilisation_ratio >= self.BAR


def verdicts(found: Sequence[Row]) -> list[Verdict]:
    """Per scenario and services fraction that ran all three modes, the issue's comparison."""
    by = {(r.scenario, r.services, r.mode): r for r in found}
    out = []
    for scenario, services in dict.fromkeys((r.scenario, r.services) for r in found):
        strict = by.get((scenario, services, STRICT))
        borrow = by.get((scenario, services, BORROW))
        both = by.get((scenario, services, f"{BORROW}+reclaim"))
        if strict and borrow and both:
            out.append(
                Verdict(
                    scenario,
                    services,
                    both.fairness / strict.fairness,
                    both.utilisation / borrow.utilisation,
                )
            )
    return out
