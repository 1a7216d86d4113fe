"""Seed 002's simulated workload: cluster, tasks, scenarios, run times and arrivals.

The paper (Hwang et al., section 6.1) simulates 2,400 cores of four
platforms (Table 5) running 500,000 one-core tasks of five applications
(Table 6), and varies both over 23 scenarios of five kinds (Table 8). Its
simulator replays a trace this project does not have: the paper publishes
each pair's solo throughput (Table 3) and its average co-runner slowdown
(Table 4), not the run time of each co-runner combination nor of each task.
This module makes what is missing, seeded and documented:

* :func:`generate_times`: a run time for every legal co-runner set, whose
  averages are exactly Table 4's and whose worst slowdown is exactly the
  "up to 3.28 times" of section 2.3;
* :func:`task_factors`: per-task noise of mean 1 around those means;
* :func:`arrival_times`: Poisson submissions, for the paper's "dynamic
  submission" at four unpublished mean rates (:data:`ARRIVAL_RATES`).

Every reading of the paper made here, with its reason, is listed in the
folder's README.rst ("Workload: readings").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from hpc_nova_scheduler import resources
from hpc_nova_scheduler.core.sharing import Platform
from hpc_nova_scheduler.fairshare.affinity import corunner_affinity, solo_runtimes
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.runs import TaskRun, read_runs

#: Table 5: the default cluster, 600 cores a platform.
PLATFORMS: tuple[Platform, ...] = (
    Platform("gene", 300, 2),
    Platform("cheetah", 75, 8),
    Platform("darth", 75, 8),
    Platform("lcloud", 50, 12),
)
#: Table 6: tasks of each application in the default workload (500,000).
TASKS: dict[str, int] = {
    "AutoDock": 34_600,
    "Blast": 248_800,
    "CacheBench": 31_230,
    "Montage": 72_950,
    "ThreeKaonOmega": 112_420,
}
APPLICATIONS: tuple[str, ...] = tuple(TASKS)

#: Section 2.3: "the co-runner effect can degrade ... up to 3.28 times".
WORST_SLOWDOWN = 3.28
#: Section 2.3: Montage suffers most beside Blast and ThreeKaonOmega (on cheetah).
WORST_CORUNNERS = frozenset({"Blast", "ThreeKaonOmega"})
#: Spread of a pair's slowdown over its co-runner sets: sigma of the log-normal
#: multipliers, drawn within +-COMBINATION_CLIP sigmas (see generate_times).
COMBINATION_SIGMA = 0.5
COMBINATION_CLIP = 2.0
#: Coefficient of variation of one task's run time around its set's mean.
TASK_CV = 0.1

#: Table 6's rule: with 120 cores of each platform per application and solo
#: run times, every application of the default workload ends in 6.43 h.
DEFAULT_MAKESPAN_S = 6.43 * 3600.0
#: Mean gap between submissions, seconds, by name: the paper's "four
#: different mean rates" are unpublished, so they are fractions of
#: DEFAULT_MAKESPAN_S, from nearly together (an eighth) to one a makespan.
ARRIVAL_RATES: dict[str, float] = {
    "eighth": DEFAULT_MAKESPAN_S / 8,
    "quarter": DEFAULT_MAKESPAN_S / 4,
    "half": DEFAULT_MAKESPAN_S / 2,
    "whole": DEFAULT_MAKESPAN_S,
}

#: Table 8's kinds, in its order, as the paper labels them.
KINDS: tuple[str, ...] = ("default", "w/o-plat", "s/l-plat", "w/o-app", "s/l-app")

RUNS_FILE = "seed-002-runs.csv"


class WorkloadError(ValueError):
    """A workload that cannot be built: bad counts, an unknown name, or data that
    cannot meet the generated times' constraints."""


class UnknownScenario(WorkloadError):
    """A scenario name that Table 8 does not have."""


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One of Table 8's scenarios: a cluster and, per application, its tasks."""

    name: str
    #: One of KINDS.
    kind: str
    platforms: tuple[Platform, ...]
    #: application -> tasks; only the applications submitted.
    tasks: dict[str, int]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise WorkloadError(f"scenario {self.name}: kind {self.kind!r} is not one of {KINDS}")
        names = [platform.name for platform in self.platforms]
        if len(set(names)) != len(names):
            raise WorkloadError(f"scenario {self.name}: a platform is named twice: {names}")
        for app, count in self.tasks.items():
            if not (isinstance(count, int) and count >= 1):
                raise WorkloadError(f"scenario {self.name}: {app} tasks must be >= 1, not {count}")
        # A copy: the caller's dict may change, the scenario may not.
        object.__setattr__(self, "tasks", dict(self.tasks))

    def __hash__(self) -> int:
        return hash((self.name, self.kind, self.platforms, tuple(sorted(self.tasks.items()))))

    @property
    def applications(self) -> tuple[str, ...]:
        return tuple(self.tasks)

    @property
    def cores(self) -> int:
        return sum(platform.cores for platform in self.platforms)


def _build_scenarios() -> tuple[Scenario, ...]:
    built = [Scenario("default", "default", PLATFORMS, TASKS)]
    for gone in PLATFORMS:
        kept = tuple(p for p in PLATFORMS if p is not gone)
        built.append(Scenario(f"without-{gone.name}", "w/o-plat", kept, TASKS))
    for changed in PLATFORMS:
        # Halving keeps the node's cores (the legal combinations depend on
        # them) and rounds down: cheetah's and darth's 75 nodes become 37.
        for size, nodes in (("small", changed.nodes // 2), ("large", changed.nodes * 2)):
            resized = tuple(
                dataclasses.replace(p, nodes=nodes) if p is changed else p for p in PLATFORMS
            )
            built.append(Scenario(f"{size}-{changed.name}", "s/l-plat", resized, TASKS))
    for gone_app in APPLICATIONS:
        tasks = {app: count for app, count in TASKS.items() if app != gone_app}
        built.append(Scenario(f"without-{gone_app.lower()}", "w/o-app", PLATFORMS, tasks))
    for small in APPLICATIONS:
        # Table 6's counts are even, so halving is exact.
        tasks = {app: count // 2 if app == small else count * 2 for app, count in TASKS.items()}
        built.append(Scenario(f"small-{small.lower()}", "s/l-app", PLATFORMS, tasks))
    return tuple(built)


_SCENARIOS = _build_scenarios()
_BY_NAME = {s.name: s for s in _SCENARIOS}


def scenarios() -> tuple[Scenario, ...]:
    """Table 8's 23 scenarios, in its order (default, w/o plat., s/l plat., w/o app., s/l app.)."""
    return _SCENARIOS


def scenario(name: str) -> Scenario:
    """The scenario named ``name``; UnknownScenario listing the known names otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownScenario(f"unknown scenario {name!r}; known: {', '.join(_BY_NAME)}") from None


def equal_share_makespans(
    solo: Mapping[tuple[str, str], float], workload: Scenario
) -> dict[str, float]:
    """Seconds each application takes with an equal share of every platform, OneCore.

    Table 6's rule: each platform's cores split equally among the
    applications, every task at its solo run time, tasks flowing like a
    fluid (no rounding to whole waves). For the default scenario every
    application takes about DEFAULT_MAKESPAN_S.
    """
    share = {p.name: p.cores / len(workload.tasks) for p in workload.platforms}
    found: dict[str, float] = {}
    for app, tasks in workload.tasks.items():
        rate = sum(
            cores / solo[(app, platform)]
            for platform, cores in share.items()
            if (app, platform) in solo
        )
        if rate <= 0:
            raise WorkloadError(f"{app}: no solo run time on any platform of {workload.name}")
        found[app] = tasks / rate
    return found


def shipped_runs() -> list[TaskRun]:
    """The shipped runs of seed 002: Table 3's solo times, Table 4's raw means."""
    return read_runs(str(resources.example_profiles_dir() / RUNS_FILE))


def generate_times(
    seed: int = 0,
    runs: Sequence[TaskRun] | None = None,
    platforms: Sequence[Platform] = PLATFORMS,
    sigma: float = COMBINATION_SIGMA,
    worst: float = WORST_SLOWDOWN,
) -> CombinationTable:
    """A run time for every legal co-runner set of every pair, seeded.

    ``runs`` (default: the shipped file) gives each pair's solo time S (the
    table's solo times, unchanged) and its mean raw co-runner difference D
    (Table 4: the mean of its co-runner rows minus S). A pair (K, P)'s sets
    are every AllCore, TwoApp and FourApp set of the runs' applications
    that contains K and fits a node of P (9 with five applications on
    8- and 12-core nodes; 5 on gene's 2 cores). Each set gets
    C = S + D x w, where

    * w are log-normal multipliers exp(sigma z), z standard normal clipped
      to +-COMBINATION_CLIP, drawn from ``numpy.random.default_rng(seed)``
      pair by pair (platforms, then applications, in order) and divided by
      their mean over the pair's sets. Multiplying the *difference*, not
      C, keeps C >= S and makes the mean of C - S exactly D, so the
      generated table gives back Table 4 (raw, and normalised = D / S).
      Log-normal because slowdowns are positive and skewed (a few sets
      hurt much more, as Fig. 2's max bars show); sigma 0.5 is a guess,
      since the paper prints no per-set spread; the clip bounds every
      w below n e^(2 sigma) / (e^(2 sigma) + (n - 1) e^(-2 sigma)), 4.3
      for n = 9, so no other pair can reach the worst slowdown (Blast on
      cheetah, the next highest at 33.76 %, stays below 2.5x).
    * The pair with the largest mean slowdown D / S (Montage on cheetah,
      70.78 %) takes the paper's worst case: on one set C = ``worst`` x S
      exactly. That set is the one, among those that hold K and
      WORST_CORUNNERS (section 2.3: Montage beside Blast and
      ThreeKaonOmega), with the largest drawn multiplier; among all of
      K's sets if none fits. The pair's other sets share the rest of
      n x D (their mean is what keeps the pair's mean D), spread by their
      own multipliers renormalised over them (for Montage on cheetah a
      mean of 51 % of S, and by the same bound below 3.1x).

    The sets depend on the node's cores only, so one table serves every
    scenario of Table 8 (halving or doubling a platform keeps its nodes).

    Every other set's C / S is checked to be below ``worst``; WorkloadError
    if the runs make that impossible (a pair with co-runners that speed it
    up, or a worst pair whose mean is too small to hold the worst case).
    """
    if not (math.isfinite(sigma) and sigma >= 0):
        raise WorkloadError(f"sigma must be a finite number >= 0, not {sigma}")
    if not (math.isfinite(worst) and worst > 1):
        raise WorkloadError(f"worst slowdown must be a finite number > 1, not {worst}")
    runs = shipped_runs() if runs is None else list(runs)
    solo = solo_runtimes(runs)
    raw, _ = corunner_affinity(runs, solo)
    applications = tuple(dict.fromkeys(app for app, _ in solo))
    empty = CombinationTable(solo)
    rng = np.random.default_rng(seed)

    # Every pair's sets and multipliers, drawn in a fixed order whatever the
    # worst pair is, so a seed means the same draws for every pair.
    pairs: dict[tuple[str, str], tuple[list[frozenset[str]], np.ndarray]] = {}
    for platform in platforms:
        legal = empty.combinations(platform, applications)
        for app in applications:
            difference = raw.get(app, {}).get(platform.name)
            if difference is None:
                continue
            if difference < 0:
                raise WorkloadError(
                    f"{app} on {platform.name}: co-runners speed it up ({difference:.2f} s); "
                    "generated run times keep C >= S"
                )
            sets = [s for s in legal if app in s]
            z = np.clip(rng.standard_normal(len(sets)), -COMBINATION_CLIP, COMBINATION_CLIP)
            pairs[(app, platform.name)] = (sets, np.exp(sigma * z))
    if not pairs:
        raise WorkloadError("the runs have no co-runner rows: nothing to generate")

    def slowdown(pair: tuple[str, str]) -> float:
        return raw[pair[0]][pair[1]] / solo[pair]

    worst_pair = max(pairs, key=slowdown)
    times: dict[tuple[str, str, frozenset[str]], float] = {}
    pinned: tuple[str, str, frozenset[str]] | None = None
    for pair, (sets, multipliers) in pairs.items():
        app, platform_name = pair
        s, d = solo[pair], raw[app][platform_name]
        if pair == worst_pair:
            index, differences = _pin_worst(pair, sets, multipliers, s, d, worst)
            pinned = (app, platform_name, sets[index])
        else:
            differences = d * multipliers / multipliers.mean()
        for combination, difference in zip(sets, differences, strict=True):
            times[(app, platform_name, combination)] = s + float(difference)
    assert pinned is not None
    # Exactly worst x S, not S + (worst - 1) x S: the two differ in the last bit.
    times[pinned] = worst * solo[worst_pair]
    for (app, platform_name, combination), seconds in times.items():
        ratio = seconds / solo[(app, platform_name)]
        if (app, platform_name, combination) != pinned and not ratio < worst:
            raise WorkloadError(
                f"{app} on {platform_name} beside {'+'.join(sorted(combination))}: "
                f"slowdown {ratio:.2f} reaches the worst {worst}; use a smaller sigma"
            )
    return CombinationTable(solo, times)


def _pin_worst(
    pair: tuple[str, str],
    sets: list[frozenset[str]],
    multipliers: np.ndarray,
    solo: float,
    mean_difference: float,
    worst: float,
) -> tuple[int, np.ndarray]:
    """The worst pair's pinned set and differences: ``worst`` x S on it, the rest keeping
    the pair's mean."""
    app, platform_name = pair
    candidates = [i for i, s in enumerate(sets) if WORST_CORUNNERS | {app} <= s] or list(
        range(len(sets))
    )
    pinned = max(candidates, key=lambda i: multipliers[i])
    rest = len(sets) * mean_difference - (worst - 1.0) * solo
    if len(sets) < 2 or rest < 0:
        raise WorkloadError(
            f"{app} on {platform_name}: a mean slowdown of {mean_difference / solo:.1%} over "
            f"{len(sets)} sets cannot hold a worst of {worst}x"
        )
    others = np.delete(multipliers, pinned)
    differences = np.insert(
        rest / len(others) * others / others.mean(), pinned, (worst - 1.0) * solo
    )
    return pinned, differences


def _generator(rng: np.random.Generator | int) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def task_factors(rng: np.random.Generator | int, size: int, cv: float = TASK_CV) -> np.ndarray:
    """``size`` multipliers of one task's run time around its set's mean.

    Log-normal with E = 1 exactly and coefficient of variation ``cv``:
    sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2. Positive (a task never
    takes no time) and right-skewed, as task run times are. The paper's
    Fig. 1 shows per-application spreads but prints none; 0.1 is a guess
    that keeps tasks near their means, so the generated means and Table 4
    stay what the simulator's averages reflect.
    """
    if size < 0:
        raise WorkloadError(f"size must be >= 0, not {size}")
    if not (math.isfinite(cv) and cv >= 0):
        raise WorkloadError(f"cv must be a finite number >= 0, not {cv}")
    s2 = math.log1p(cv * cv)
    return _generator(rng).lognormal(-s2 / 2.0, math.sqrt(s2), size)


def mean_interarrival(name: str) -> float:
    """Seconds between submissions for a named rate of ARRIVAL_RATES."""
    try:
        return ARRIVAL_RATES[name]
    except KeyError:
        raise WorkloadError(
            f"unknown arrival rate {name!r}; known: {', '.join(ARRIVAL_RATES)}"
        ) from None


def arrival_times(
    rng: np.random.Generator | int, applications: Sequence[str], mean_interarrival_s: float
) -> dict[str, float]:
    """Submission time of each application, seconds, in submission order.

    A Poisson process: the applications in a seeded random order (a
    permutation drawn first), the first at 0 (the simulation starts with
    work), each next one an exponential gap of mean ``mean_interarrival_s``
    after the last. A mean of 0 submits all at 0, the paper's default.
    """
    if not (math.isfinite(mean_interarrival_s) and mean_interarrival_s >= 0):
        raise WorkloadError(
            f"mean interarrival must be a finite number >= 0 seconds, not {mean_interarrival_s}"
        )
    if len(set(applications)) != len(applications):
        raise WorkloadError(f"an application is named twice: {', '.join(applications)}")
    generator = _generator(rng)
    order = [applications[i] for i in generator.permutation(len(applications))]
    gaps = generator.exponential(mean_interarrival_s, max(len(order) - 1, 0))
    times = np.concatenate(([0.0], np.cumsum(gaps)))
    return {app: float(t) for app, t in zip(order, times, strict=False)}
