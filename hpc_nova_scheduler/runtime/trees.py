"""Seed 000's runtime model: bagged regression trees, one per application family.

Kim et al. predict an application's run time on a virtual-cluster
configuration next to given co-runners, from the configuration, the
application's run time and metrics measured alone on it, and the
co-runners' metrics measured alone. In Nova a request is judged host by
host, so the configuration here is what one host sees:

* the host type (its processor group), one-hot over the types trained on;
* how many VMs of the application run on the host;
* the application's solo run time and solo metrics on that host type;
* how many co-runner VMs share the host, and the sum over those VMs of
  their solo metrics on that host type.

The paper gives each co-runner of a block its own metrics; with any number
of co-runners a fixed-length input needs them folded, and the sum over VMs
is the total pressure they put on the host (the paper averages them when a
block has heterogeneous co-runners; the count beside the sum keeps that
average recoverable).

The learner is bagging (``BaggingRegressor``) of 100 regression trees, the
paper's REPTree ensemble. REPTree grows a tree with at least two samples a
leaf and no split of a node holding under 0.1 % of the training variance,
then prunes by reduced error. scikit-learn's trees have no reduced-error
pruning; the nearest is cost-complexity pruning, so each tree keeps
``min_samples_leaf=2`` and gets ``ccp_alpha`` = 0.001 x the variance of the
family's run times: a subtree stays only if it lowers the squared error by
more than REPTree's variance floor per leaf. Both are parameters
(``min_leaf``, ``prune``).

One model per application family: MPI applications each get their own, and
applications that behave alike (the paper's big-data jobs) share one by
naming the same ``family`` in their profiles.

The predicted slowdown of an application is its predicted run time next to
its co-runners over its predicted run time with the same VMs alone on the
host type, less one, in percent (never below 0): the co-runners' doing,
not the consolidation of its own VMs, which it chose.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence

import numpy as np

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference import stored, validation
from hpc_nova_scheduler.interference.base import (
    InterferenceModel,
    MissingFeatures,
    NotFitted,
    Prediction,
    Tenant,
)
from hpc_nova_scheduler.interference.ensembles import mean_of_trees

KIND = "runtime-trees"
TREES = 100
MIN_LEAF = 2
#: REPTree's minVarianceProp: the pruning strength, as a share of the variance.
PRUNE = 0.001
#: Seed 000's metrics: CPU idle and user (%), network and disk traffic (MB/s).
SEED_METRICS = ("cpu_idle", "cpu_user", "net_recv", "net_send", "disk_read", "disk_write")


@dataclasses.dataclass(frozen=True)
class RunSample:
    """One measured run: ``profile`` took ``runtime`` seconds on a host of
    ``host_type`` with ``vms`` of its VMs there, next to ``co_runners``
    (profile, VMs on the host)."""

    profile: ProfileRecord
    host_type: str
    vms: int
    co_runners: tuple[tuple[ProfileRecord, int], ...]
    runtime: float

    def tenants(self) -> list[Tenant]:
        """The host this sample measured: the target first, then its co-runners."""
        return [Tenant.of(self.profile, self.vms, self.host_type)] + [
            Tenant.of(p, vms, self.host_type) for p, vms in self.co_runners
        ]


class NoProfile(LookupError):
    """A measured run names an application without a profile."""

    def __init__(self, application: str, line: int | None) -> None:
        super().__init__(f"no profile named {application!r}")
        self.application = application
        self.line = line


def samples_from_runs(runs: Sequence, profiles: Mapping[str, ProfileRecord]) -> list[RunSample]:
    """Fitting samples from measured runs (``datafiles.RunRecord``), profiles by name."""
    samples = []
    for run in runs:
        for name in (run.application, *(name for name, _ in run.co_runners)):
            if name not in profiles:
                raise NoProfile(name, run.line)
        samples.append(
            RunSample(
                profiles[run.application],
                run.host_type,
                run.vms,
                tuple((profiles[name], vms) for name, vms in run.co_runners),
                run.runtime,
            )
        )
    return samples


class RuntimeTrees(InterferenceModel):
    name = KIND
    summary = "seed 000: bagged regression trees per application family, by host type"
    features = ("solo_runs",)
    host_typed = True

    def __init__(
        self,
        trees: int = TREES,
        min_leaf: int = MIN_LEAF,
        prune: float = PRUNE,
        seed: int = 0,
        families: Mapping[str, object] | None = None,
        metrics: Sequence[str] = (),
        host_types: Sequence[str] = (),
        versions: Mapping[str, str] | None = None,
    ) -> None:
        trees, min_leaf, prune = int(trees), int(min_leaf), float(prune)
        if trees < 1:
            raise ValueError("bagging needs at least one tree")
        if min_leaf < 1:
            raise ValueError("a leaf holds at least one sample (min_leaf >= 1)")
        if not 0.0 <= prune < 1.0:
            raise ValueError("prune is a share of the variance, from 0 up to 1")
        self.trees, self.min_leaf, self.prune, self.seed = trees, min_leaf, prune, int(seed)
        self.families = dict(families or {})
        self.metrics = tuple(metrics)
        self.host_types = tuple(host_types)
        self.versions = dict(versions or {})

    # -- the inputs ------------------------------------------------------------

    def check(self, tenants: Sequence[Tenant]) -> None:
        """Every tenant's inputs, and a fitted family for every tenant."""
        self.check_inputs(tenants)
        for tenant in tenants:
            self._check_family(tenant)

    def _check_family(self, tenant: Tenant) -> None:
        if tenant.profile.runtime_family not in self.families:
            raise MissingFeatures(
                self.name,
                tenant.name,
                [f"a fitted model of family {tenant.profile.runtime_family}"],
            )

    def check_inputs(self, tenants: Sequence[Tenant]) -> None:
        """What every tenant must have measured alone on the host type."""
        if not self.families:
            raise NotFitted(
                f"model {self.name} is not fitted: fit it with "
                f"'hpc-nova-scheduler model fit --model {self.name} RUNS --store {self.name}'"
            )
        for tenant in tenants:
            host_type = tenant.host_type
            if host_type is None:
                raise MissingFeatures(self.name, tenant.name, ["the host's type"])
            if host_type not in self.host_types:
                raise MissingFeatures(
                    self.name, tenant.name, [f"training runs on host type {host_type}"]
                )
            run = tenant.profile.solo_runs.get(host_type)
            if run is None:
                raise MissingFeatures(self.name, tenant.name, [f"solo_runs.{host_type}"])
            missing = [m for m in self.metrics if m not in run.metrics]
            if missing:
                raise MissingFeatures(
                    self.name,
                    tenant.name,
                    [f"solo_runs.{host_type}.metrics.{m}" for m in missing],
                )

    def row(self, tenants: Sequence[Tenant], target: int) -> list[float]:
        """The input of ``tenants[target]``'s run time next to the others."""
        own = tenants[target]
        host_type = own.host_type
        run = own.profile.solo_runs[host_type]
        values = [1.0 if host_type == t else 0.0 for t in self.host_types]
        values += [float(own.vms), run.runtime]
        values += [run.metrics[m] for m in self.metrics]
        pressure = [0.0] * len(self.metrics)
        co_vms = 0
        for index, tenant in enumerate(tenants):
            if index == target:
                continue
            co_vms += tenant.vms
            metrics = tenant.profile.solo_runs[host_type].metrics
            for k, metric in enumerate(self.metrics):
                pressure[k] += tenant.vms * metrics[metric]
        return [*values, float(co_vms), *pressure]

    # -- prediction -----------------------------------------------------------

    def runtimes(
        self, hosts: Sequence[Sequence[Tenant]], first_only: bool = False, alone: bool = False
    ) -> list[list[float]] | tuple[list[list[float]], list[list[float]]]:
        """Predicted run time of every tenant of every host (or of the first
        one only, next to the others), one call per family.

        With ``alone``, also each one's predicted run time with the same
        VMs and no co-runner, from the same call.
        """
        by_family: dict[str, list[tuple[int, int]]] = {}
        rows: dict[str, list[list[float]]] = {}
        for h, tenants in enumerate(hosts):
            self.check_inputs(tenants)
            for i, tenant in enumerate(tenants[:1] if first_only else tenants):
                self._check_family(tenant)
                family = tenant.profile.runtime_family
                by_family.setdefault(family, []).append((h, i))
                rows.setdefault(family, []).append(self.row(tenants, i))
                if alone:
                    rows[family].append(self.row([tenant], 0))
        shape = [[0.0] * (1 if first_only else len(tenants)) for tenants in hosts]
        found = [list(r) for r in shape]
        solo = [list(r) for r in shape]
        step = 2 if alone else 1
        for family, places in by_family.items():
            values = mean_of_trees(self.families[family], np.asarray(rows[family], dtype=float))
            values = values.tolist()
            for n, (h, i) in enumerate(places):
                found[h][i] = values[n * step]
                if alone:
                    solo[h][i] = values[n * step + 1]
        return (found, solo) if alone else found

    def predict(self, tenants: Sequence[Tenant]) -> Prediction:
        return self.predict_many([tenants])[0]

    def predict_many(self, hosts: Sequence[Sequence[Tenant]]) -> list[Prediction]:
        """Each tenant's predicted run time next to the others over its
        predicted run time alone with the same VMs: the slowdown is the
        co-runners' doing, not its own VMs' consolidation."""
        together, alone = self.runtimes(hosts, alone=True)
        predictions = []
        for shared, solo in zip(together, alone, strict=True):
            slowdowns = tuple(
                max(0.0, 100.0 * (t / max(s, 1e-9) - 1.0))
                for t, s in zip(shared, solo, strict=True)
            )
            predictions.append(Prediction(slowdowns, max(slowdowns, default=0.0)))
        return predictions

    # -- fitting --------------------------------------------------------------

    def inputs(self, samples: Sequence[RunSample]) -> tuple[list[str], list[str]]:
        """The metrics every run's applications share on its host type, and the host types."""
        shared: set[str] | None = None
        types: set[str] = set()
        for sample in samples:
            types.add(sample.host_type)
            for tenant in sample.tenants():
                run = tenant.profile.solo_runs.get(sample.host_type)
                if run is None:
                    raise MissingFeatures(self.name, tenant.name, [f"solo_runs.{sample.host_type}"])
                names = set(run.metrics)
                shared = names if shared is None else shared & names
        return sorted(shared or ()), sorted(types)

    def fit(
        self,
        samples: Sequence[RunSample],
        inputs: tuple[Sequence[str], Sequence[str]] | None = None,
    ) -> RuntimeTrees:
        """A fitted copy: one bagged ensemble per family.

        ``inputs`` (metrics, host types) default to :meth:`inputs` of the
        samples; cross-validation passes those of the whole dataset.
        """
        from sklearn.ensemble import BaggingRegressor
        from sklearn.tree import DecisionTreeRegressor

        if not samples:
            raise ValueError(f"model {self.name} needs measured runs")
        metrics, types = inputs if inputs is not None else self.inputs(samples)
        fitted = RuntimeTrees(
            self.trees,
            self.min_leaf,
            self.prune,
            self.seed,
            {},
            metrics,
            types,
            stored.library_versions(),
        )
        grouped: dict[str, list[RunSample]] = {}
        for sample in samples:
            grouped.setdefault(sample.profile.runtime_family, []).append(sample)
        for family, runs in sorted(grouped.items()):
            if len(runs) < 2:
                raise ValueError(f"family {family} has one measured run; it needs two or more")
            x = np.asarray([fitted.row(s.tenants(), 0) for s in runs], dtype=float)
            y = np.asarray([s.runtime for s in runs], dtype=float)
            if not np.isfinite(x).all() or not np.isfinite(y).all():
                raise ValueError(f"family {family}: metrics and run times must be finite")
            tree = DecisionTreeRegressor(
                min_samples_leaf=self.min_leaf, ccp_alpha=self.prune * float(np.var(y))
            )
            ensemble = BaggingRegressor(
                estimator=tree, n_estimators=self.trees, bootstrap=True, random_state=self.seed
            )
            fitted.families[family] = ensemble.fit(x, y)
        return fitted

    # -- storage ----------------------------------------------------------------

    def dumps(self) -> bytes:
        """The fitted families as skops bytes, with their inputs and library versions."""
        if not self.families:
            raise NotFitted(f"model {self.name} is not fitted")
        return stored.dumps(
            KIND,
            {
                "trees": self.trees,
                "min_leaf": self.min_leaf,
                "prune": self.prune,
                "seed": self.seed,
                "families": dict(self.families),
                "metrics": list(self.metrics),
                "host_types": list(self.host_types),
                "versions": dict(self.versions),
            },
        )

    @classmethod
    def loads(cls, data: bytes) -> RuntimeTrees:
        """The model :meth:`dumps` wrote; refuses types outside scikit-learn and numpy."""
        found = stored.loads(KIND, data)
        return cls(
            found["trees"],
            found["min_leaf"],
            found["prune"],
            found["seed"],
            found["families"],
            found["metrics"],
            found["host_types"],
            found["versions"],
        )

    def describe(self) -> str:
        if not self.families:
            return f"{self.summary} (not fitted)"
        return (
            f"{self.summary} ({len(self.families)} families, {self.trees} trees each, "
            f"host types {', '.join(self.host_types)}, {len(self.metrics)} metrics)"
        )


@dataclasses.dataclass(frozen=True)
class Validation:
    """Cross-validated error of run-time predictions, seed 000's way:
    |estimated - actual| / actual x 100, averaged per family."""

    folds: int
    errors: Mapping[str, float]
    runs: Mapping[str, int]

    @property
    def average(self) -> float:
        return statistics.fmean(self.errors.values())


def cross_validate(
    model: RuntimeTrees, samples: Sequence[RunSample], folds: int, seed: int = 0
) -> Validation:
    """Each family's mean error on its held-out runs, the family refitted without each fold.

    A family with fewer than three runs cannot be held out and still fit;
    it is left out of the errors.
    """
    inputs = model.inputs(samples)
    grouped: dict[str, list[RunSample]] = {}
    for sample in samples:
        grouped.setdefault(sample.profile.runtime_family, []).append(sample)
    errors: dict[str, float] = {}
    runs: dict[str, int] = {}
    for family, members in sorted(grouped.items()):
        k = min(folds, len(members))
        if k < 2 or len(members) < 3:
            continue
        found: list[float] = []
        for train, held in validation.folds(len(members), k, seed):
            if len(train) < 2:
                continue
            fitted = model.fit([members[i] for i in train], inputs)
            estimates = fitted.runtimes([members[i].tenants() for i in held], first_only=True)
            for i, runtimes in zip(held, estimates, strict=True):
                actual = members[i].runtime
                found.append(abs(runtimes[0] - actual) / actual * 100.0)
        if found:
            errors[family] = statistics.fmean(found)
            runs[family] = len(found)
    if not errors:
        raise ValueError("no family has three or more runs to cross-validate")
    return Validation(folds, errors, runs)
