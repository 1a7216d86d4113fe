"""Seed 001's forest fitted to measured pairs, for ``model fit`` and ``model evaluate``.

A dataset is an interference file: pairs of applications measured side by
side, each giving a sample in both directions, with both sides' counters
from their profiles. The fitted forest is kept (``--save``, ``--store``);
the fit and evaluation report R^2 and absolute errors, as seed 001 does.
"""

from __future__ import annotations

from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.interference import fitting, validation
from hpc_nova_scheduler.interference.base import MissingFeatures, Tenant
from hpc_nova_scheduler.pairwise import forest


def pair_samples(data: fitting.Measurements) -> list[forest.Sample]:
    """Both directions of every measured pair of ``data``."""
    records = datafiles.read_interferences(data.dataset)
    try:
        return forest.samples_from_records(records, data.profiles())
    except MissingFeatures as error:
        raise fitting.FitError(f"{data.dataset}: {error.application} has no profile") from None


class ForestFitting(fitting.Fitting):
    keeps = True

    def fit(
        self, model: forest.PairForest, data: fitting.Measurements, folds: int, seed: int
    ) -> fitting.Fitted:
        samples = pair_samples(data)
        try:
            fitted = model.fit(samples)
            folds = min(folds, len(samples))
            r2, error = (
                forest.cross_validate(model, samples, folds, seed)
                if folds > 1
                else (float("nan"), float("nan"))
            )
        except ValueError as problem:
            raise fitting.FitError(f"{data.dataset}: {problem}") from None
        report = (
            f"{folds}-fold cross-validation over {len(samples)} pairs: R^2 {r2:.3f}, "
            f"mean absolute error {error:.2f} points"
        )
        output = (
            f"fit over {len(samples)} measured pairs of {data.dataset} "
            f"({len(fitted.counters)} counters each side, {fitted.trees} trees)",
            f"{report} (seed 001 reports R^2 about 0.80)",
        )
        return fitting.Fitted(fitted, output, report)

    def evaluate(
        self, model: forest.PairForest, data: fitting.Measurements, verbose: bool
    ) -> tuple[fitting.Output, ...]:
        samples = pair_samples(data)
        try:
            model.check([Tenant.of(s.primary) for s in samples])
            model.check([Tenant.of(s.interferer) for s in samples])
        except (MissingFeatures, forest.NotFitted) as error:
            raise fitting.FitError(str(error)) from None
        predicted = model.degradations([(s.primary, s.interferer) for s in samples]).tolist()
        measured = [max(0.0, s.degradation) for s in samples]
        errors = [abs(p - m) for p, m in zip(predicted, measured, strict=True)]
        return (
            f"{model.name} over {len(samples)} measured pairs of {data.dataset}: "
            f"R^2 {validation.r_squared(measured, predicted):.3f}, "
            f"{fitting.error_summary(errors)}",
        )
