"""Seed 001's pairwise degradation model: a random forest over counters.

Deg_ij is how much longer application i runs next to application j than
alone, in percent (negative measurements count as 0). The forest predicts
it from i's counters measured alone, followed by j's (the seed's generic
set is cycles, instructions, branch_instructions, branch_misses,
page_faults, context_switches, cpu_migrations, cache_references,
cache_misses and CPU_usage; any counters the profiles share will do). The
forest is scikit-learn's ``RandomForestRegressor`` with the paper's
hyper-parameters: ``max_features='sqrt'``, ``min_samples_split=2``,
bootstrap, 22 trees, or 6 for the reduced model.

More than two applications on a host: the paper measures pairs only. The
model adds the pairwise degradations, so that application i next to j and
k is predicted Deg_ij + Deg_ik. Contention for a shared cache or memory
bus grows with every co-runner, and an admission rule should err towards
refusing: the sum is the conservative reading, and it equals the paper's
model on two applications.

A fitted forest is stored with skops, never with pickle: loading trusts
only scikit-learn's and numpy's own types, and the file records the
library versions that made it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord
from hpc_nova_scheduler.interference import stored, validation
from hpc_nova_scheduler.interference.base import (
    InterferenceModel,
    MissingFeatures,
    NotFitted,
    Prediction,
    Tenant,
)
from hpc_nova_scheduler.interference.ensembles import mean_of_trees

#: Seed 001's generic counters, measurable on any Linux machine with perf.
GENERIC_COUNTERS = (
    "cycles",
    "instructions",
    "branch_instructions",
    "branch_misses",
    "page_faults",
    "context_switches",
    "cpu_migrations",
    "cache_references",
    "cache_misses",
    "CPU_usage",
)
#: The paper's forest, and its reduced model.
TREES = 22
REDUCED_TREES = 6
KIND = "pair-forest"


@dataclasses.dataclass(frozen=True)
class Sample:
    """One measured pair: ``primary`` ran ``degradation`` percent slower next to ``interferer``."""

    primary: ProfileRecord
    interferer: ProfileRecord
    degradation: float


def samples_from_records(
    records: Sequence[InterferenceRecord], profiles: dict[str, ProfileRecord]
) -> list[Sample]:
    """Both directions of each measured pair whose two profiles are known."""
    found = []
    for record in records:
        a, b = profiles.get(record.app_a), profiles.get(record.app_b)
        if a is None or b is None:
            missing = record.app_a if a is None else record.app_b
            raise MissingFeatures(KIND, missing, ["a profile"])
        found.append(Sample(a, b, record.slowdown_a))
        found.append(Sample(b, a, record.slowdown_b))
    return found


class PairForest(InterferenceModel):
    name = KIND
    summary = "seed 001: random forest over two applications' counters, pairs added"
    features = ("counters",)

    def __init__(
        self,
        trees: int = TREES,
        seed: int = 0,
        forest=None,
        counters: Sequence[str] = (),
        versions: dict[str, str] | None = None,
    ) -> None:
        trees = int(trees)
        if trees < 1:
            raise ValueError("a forest needs at least one tree")
        self.trees = trees
        self.seed = int(seed)
        self.forest = forest
        self.counters = tuple(counters)
        self.versions = dict(versions or {})

    # -- the inputs ------------------------------------------------------------

    def check(self, tenants: Sequence[Tenant]) -> None:
        if self.forest is None:
            raise NotFitted(
                f"model {self.name} is not fitted: fit it with "
                f"'hpc-nova-scheduler model fit --model {self.name} ... --save FILE'"
            )
        for tenant in tenants:
            have = tenant.profile.counters
            missing = [c for c in self.counters if c not in have]
            if missing:
                raise MissingFeatures(self.name, tenant.name, [f"counters.{c}" for c in missing])

    def _vector(self, profile: ProfileRecord) -> list[float]:
        return [float(profile.counters[c]) for c in self.counters]

    def rows(self, pairs: Sequence[tuple[ProfileRecord, ProfileRecord]]) -> np.ndarray:
        """Feature rows: the primary's counters, then the interferer's."""
        return np.asarray([self._vector(a) + self._vector(b) for a, b in pairs], dtype=float)

    # -- prediction -----------------------------------------------------------

    def degradations(self, pairs: Sequence[tuple[ProfileRecord, ProfileRecord]]) -> np.ndarray:
        """Deg_ij (percent, >= 0) of each (primary, interferer) pair, in one call."""
        if not pairs:
            return np.zeros(0)
        return np.maximum(mean_of_trees(self.forest, self.rows(pairs)), 0.0)

    def predict(self, tenants: Sequence[Tenant]) -> Prediction:
        return self.predict_many([tenants])[0]

    def predict_many(self, hosts: Sequence[Sequence[Tenant]]) -> list[Prediction]:
        """Every host's pairs in one forest call: a call costs far more than a row."""
        pairs: list[tuple[int, int, int]] = []
        for h, tenants in enumerate(hosts):
            self.check(tenants)
            count = len(tenants)
            pairs += [(h, i, j) for i in range(count) for j in range(count) if i != j]
        values = self.degradations(
            [(hosts[h][i].profile, hosts[h][j].profile) for h, i, j in pairs]
        ).tolist()
        slowdowns = [[0.0] * len(tenants) for tenants in hosts]
        for (h, i, _), value in zip(pairs, values, strict=True):
            slowdowns[h][i] += value
        return [Prediction(tuple(s), max(s, default=0.0)) for s in slowdowns]

    # -- fitting --------------------------------------------------------------

    def fit(self, samples: Sequence[Sample]) -> PairForest:
        """A fitted copy, on the counters every sample's two profiles share."""
        from sklearn.ensemble import RandomForestRegressor

        if len(samples) < 2:
            raise ValueError(f"model {self.name} needs at least two measured pairs")
        shared = None
        for sample in samples:
            for profile in (sample.primary, sample.interferer):
                names = set(profile.counters)
                shared = names if shared is None else shared & names
        if not shared:
            raise ValueError("the profiles share no counter: measure them with characterise")
        forest = RandomForestRegressor(
            n_estimators=self.trees,
            max_features="sqrt",
            min_samples_split=2,
            bootstrap=True,
            random_state=self.seed,
        )
        fitted = PairForest(self.trees, self.seed, None, sorted(shared), stored.library_versions())
        x = fitted.rows([(s.primary, s.interferer) for s in samples])
        y = np.asarray([max(0.0, s.degradation) for s in samples], dtype=float)
        if not np.isfinite(x).all() or not np.isfinite(y).all():
            raise ValueError("counters and degradations must be finite numbers")
        forest.fit(x, y)
        fitted.forest = forest
        return fitted

    # -- storage ----------------------------------------------------------------

    def dumps(self) -> bytes:
        """The fitted model as skops bytes, with its counters and library versions."""
        if self.forest is None:
            raise NotFitted(f"model {self.name} is not fitted")
        return stored.dumps(
            KIND,
            {
                "trees": self.trees,
                "seed": self.seed,
                "counters": list(self.counters),
                "versions": self.versions,
                "forest": self.forest,
            },
        )

    @classmethod
    def loads(cls, data: bytes) -> PairForest:
        """The model :meth:`dumps` wrote; refuses types outside scikit-learn and numpy."""
        found = stored.loads(KIND, data)
        return cls(
            found["trees"], found["seed"], found["forest"], found["counters"], found["versions"]
        )

    def describe(self) -> str:
        state = (
            f"fitted on {len(self.counters)} counters, {self.trees} trees"
            if self.forest is not None
            else "not fitted"
        )
        return f"{self.summary} ({state})"


def cross_validate(model: PairForest, samples: Sequence[Sample], folds: int, seed: int = 0):
    """(R^2, mean absolute error in points) of predictions by forests fitted without each fold."""
    predicted = np.zeros(len(samples))
    for train, held in validation.folds(len(samples), folds, seed):
        fitted = model.fit([samples[i] for i in train])
        predicted[held] = fitted.degradations(
            [(samples[i].primary, samples[i].interferer) for i in held]
        )
    measured = np.asarray([max(0.0, s.degradation) for s in samples])
    return validation.r_squared(measured, predicted), float(np.abs(measured - predicted).mean())
