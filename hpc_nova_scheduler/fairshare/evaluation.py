"""How fair and how efficient a sharing of platforms was (seed 002, sections 3 and 7).

Each user runs one many-task application: ``tasks`` one-core tasks that
took ``makespan_s`` seconds to finish under the policy being judged.

* **Fastest-OneCore** is what the user would get alone with its fair share
  k of cores (the total split equally among the users), all on the
  platform where its tasks run fastest, without co-runners: a throughput
  of k / r_min tasks a second, r_min its fastest solo run time.
* **Normalised throughput** t_u is the user's throughput under the policy,
  tasks / makespan, over its Fastest-OneCore throughput.
* **Fairness** is 1 - sigma_t / mu_t over the users (population standard
  deviation): 1 when every user is helped or hurt alike.
* **Efficiency** is the system's makespan (the last user's) over the
  makespan of the baseline, Fairness + AllCore: below 1 is better.

Jain's index, (sum t)^2 / (n sum t^2), and the spread max t / min t are
reported beside fairness, as production fair-share tools report them.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence


@dataclasses.dataclass(frozen=True)
class UserRun:
    """One user's application under a policy."""

    user: str
    tasks: int
    #: Seconds from the start until the user's last task finished.
    makespan_s: float
    #: The user's mean solo task run time on its fastest platform.
    fastest_runtime_s: float

    def __post_init__(self) -> None:
        if self.tasks < 1:
            raise ValueError(f"{self.user}: tasks must be at least 1, not {self.tasks}")
        for name in ("makespan_s", "fastest_runtime_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{self.user}: {name} must be a positive finite number")


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The judgement of one run of a policy."""

    #: Each user's normalised throughput t_u.
    normalised: dict[str, float]
    fairness: float
    jain: float
    #: max t_u / min t_u.
    spread: float
    #: The system's makespan: the last user's.
    makespan_s: float


def fair_share(total_cores: int, users: int) -> float:
    """k: the cores each user gets when the total is split equally."""
    if users < 1 or total_cores < 1:
        raise ValueError("a fair share needs at least one user and one core")
    return total_cores / users


def fastest_onecore_throughput(run: UserRun, share: float) -> float:
    """Tasks a second with ``share`` cores of the fastest platform, no co-runners."""
    return share / run.fastest_runtime_s


def normalised_throughput(run: UserRun, share: float) -> float:
    """t_u: the throughput under the policy over the Fastest-OneCore throughput."""
    return (run.tasks / run.makespan_s) / fastest_onecore_throughput(run, share)


def fairness(values: Sequence[float]) -> float:
    """1 - sigma / mu (population sigma); 1 for a single user."""
    mean = statistics.fmean(values)
    return 1.0 - statistics.pstdev(values) / mean


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index: 1 when all are equal, 1/n when one gets everything."""
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def evaluate(runs: Sequence[UserRun], total_cores: int) -> Evaluation:
    """Every metric of one run of a policy over ``total_cores`` cores."""
    if not runs:
        raise ValueError("no users to evaluate")
    share = fair_share(total_cores, len(runs))
    normalised = {run.user: normalised_throughput(run, share) for run in runs}
    values = list(normalised.values())
    return Evaluation(
        normalised=normalised,
        fairness=fairness(values),
        jain=jain(values),
        spread=max(values) / min(values),
        makespan_s=max(run.makespan_s for run in runs),
    )


def efficiency(makespan_s: float, baseline_makespan_s: float) -> float:
    """The makespan over that of Fairness + AllCore (below 1: more efficient)."""
    if not (baseline_makespan_s > 0 and makespan_s > 0):
        raise ValueError("makespans must be positive")
    return makespan_s / baseline_makespan_s


def fastest_runtimes(solo: Mapping[tuple[str, str], float]) -> dict[str, float]:
    """r_min per application from the solo run times of :func:`.affinity.solo_runtimes`."""
    fastest: dict[str, float] = {}
    for (application, _), runtime in solo.items():
        fastest[application] = min(runtime, fastest.get(application, math.inf))
    return fastest
