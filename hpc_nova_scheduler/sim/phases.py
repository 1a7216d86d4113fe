"""Drifting application phases, and the scores a measured cache source plans with.

A job's declared cache score (the flavor's, drawn by ``--cache-scores``)
describes it as a whole; a real application goes through phases that
press on the cache more or less than that. ``simulate --phase-drift``
models this, and ``--cache-source`` replays what the plugin's
``[hpc_scheduler] cache_pressure_source`` makes of it.

The drift model
    A seeded share of the jobs (``PhaseDrift.share``) changes phase once,
    after a fraction of its work drawn uniformly in [0, 1): its true score
    becomes its declared score times a factor drawn log-uniformly in
    ``factors`` (by default 0.5 to 3: two drifts in five go down, and an
    upward drift triples the score at most), capped at ``cap`` (100). Its
    first phase is its declared score. The point is a share of the work,
    not of the wall time: a phase is something the application computes
    through, so a job slowed by its co-runners reaches it later. Every job
    draws its three numbers whether it drifts or not, from a generator of
    its own seeded by the replay's seed: the draw is the same whatever the
    scenario, cache source or engine, so compared replays run the very
    same jobs and phases.

What the scheduler plans with (``Measuring``)
    ``declared`` plans with the declared score forever. ``measured`` and
    ``max`` count, as :func:`hpc_nova_scheduler.measured.pressure.counted_score`
    counts them, a measured score that lags the truth by ``lag`` seconds:
    nothing for the job's first ``lag`` seconds on its hosts (the product
    needs ``measured_min_samples`` samples of one ``[hpc_collector]
    interval`` each), then the true score of the phase in force ``lag``
    seconds earlier (the decayed mean takes about as long to follow a new
    phase). A measured score is occupancy: one VM saturates at the whole
    LLC, ``full_llc_score`` (``measured_full_llc_score``).

The ground truth (``--interference``) reads the true score of each VM's
current phase, whatever the scheduler plans with.
"""

from __future__ import annotations

import dataclasses
import math
import random

from hpc_nova_scheduler import conf

#: The range a drifting job's declared score is multiplied by, log-uniformly.
DEFAULT_FACTORS = (0.5, 3.0)
#: No phase presses on the cache harder than this.
SCORE_CAP = 100.0


def _option_default(options, name: str):
    """The default of option ``name`` among ``options`` (the product's, not a copy)."""
    return next(option.default for option in options if option.name == name)


@dataclasses.dataclass(frozen=True)
class PhaseDrift:
    """How jobs' true cache scores drift from their declared ones."""

    #: The share of jobs that change phase (0: none, the replay as it was).
    share: float = 0.0
    factors: tuple[float, float] = DEFAULT_FACTORS
    cap: float = SCORE_CAP

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"the drifting share must be within 0 and 1, not {self.share!r}")
        low, high = self.factors
        if not (0 < low <= high and math.isfinite(high)):
            raise ValueError(f"drift factors need 0 < LOW <= HIGH, finite, not {low!r}:{high!r}")
        if not (self.cap > 0 and math.isfinite(self.cap)):
            raise ValueError(f"the drift cap must be a positive number, not {self.cap!r}")

    @property
    def active(self) -> bool:
        return self.share > 0


@dataclasses.dataclass(frozen=True)
class Phase:
    """A job's change of phase: once ``point`` of its work is done, its true score is ``score``."""

    point: float
    score: float


class PhaseDraws:
    """Each job's phase change, drawn in job order from the replay's seed."""

    def __init__(self, drift: PhaseDrift, seed: int) -> None:
        self.drift = drift
        # A generator of its own: the cache-score and profile draws stay
        # those of a replay without drift.
        self._rng = random.Random(f"phase-drift-{seed}")
        self._log_low, self._log_high = (math.log(f) for f in drift.factors)

    def next(self, declared: float) -> Phase | None:
        """The next job's phase change (None: it keeps its declared score)."""
        rng = self._rng
        # Three draws for every job, so that a job's phase does not depend
        # on whether the jobs before it drifted.
        drifts = rng.random() < self.drift.share
        point = rng.random()
        factor = math.exp(rng.uniform(self._log_low, self._log_high))
        if not drifts:
            return None
        return Phase(point, min(self.drift.cap, declared * factor))


@dataclasses.dataclass(frozen=True)
class Measuring:
    """How the replay's scheduler comes to know a running job's cache score."""

    #: Seconds a job runs, or a phase lasts, before its measured score shows it.
    lag: float
    #: The most one VM measures: its occupancy saturates at the host's LLC.
    full_llc_score: float

    def __post_init__(self) -> None:
        if not (self.lag >= 0 and math.isfinite(self.lag)):
            raise ValueError(f"the measuring lag must be 0 or more seconds, not {self.lag!r}")
        if not (self.full_llc_score >= 0 and math.isfinite(self.full_llc_score)):
            raise ValueError(f"full_llc_score must be 0 or more, not {self.full_llc_score!r}")

    @classmethod
    def of_product(cls, lag: float | None = None) -> Measuring:
        """The product's defaults; ``lag`` in seconds instead of its own if given."""
        return cls(
            product_lag() if lag is None else lag,
            float(_option_default(conf.measured_opts, "measured_full_llc_score")),
        )

    def measured(self, true_score: float) -> float:
        """The measured score of a phase of ``true_score``."""
        return min(true_score, self.full_llc_score)


def product_lag() -> float:
    """Seconds before a new VM's measured score counts, by the product's
    defaults: ``measured_min_samples`` samples, one a collector interval."""
    samples = _option_default(conf.measured_opts, "measured_min_samples")
    interval = _option_default(conf.collector_opts, "interval")
    return float(samples * interval)


def labelled(name: str, source: str) -> str:
    """A scenario's name as replayed with cache source ``source``."""
    return f"{name} ({source} scores)"


def unlabelled(name: str, source: str) -> str:
    """The scenario's name without :func:`labelled`'s label (a batch
    setting's may follow it)."""
    return name.replace(f" ({source} scores)", "", 1)
