"""Seed 000's runtime trees fitted to measured runs, for ``model fit`` and ``model evaluate``.

A dataset is a ``runs:`` file: an application's run time on a host type,
alone or next to co-runners, with everyone's solo runs from their
profiles. The fitted families are kept (``--save``, ``--store``); the fit
and evaluation report seed 000's error, |estimated - actual| / actual,
averaged per family, beside its Table 5.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.interference import fitting
from hpc_nova_scheduler.interference.base import MissingFeatures, ModelNotReady
from hpc_nova_scheduler.runtime import trees

#: Seed 000's Table 5: mean error of its bagged REPTree models.
PAPER_ERRORS = "seed 000 reports 21.84% for MPI applications, 23.39% for big-data ones"


def run_samples(data: fitting.Measurements) -> list[trees.RunSample]:
    """Every measured run of ``data``, with its applications' profiles."""
    try:
        return trees.samples_from_runs(datafiles.read_runs(data.dataset), data.profiles())
    except trees.NoProfile as missing:
        raise fitting.FitError(
            f"{data.dataset}:{missing.line}: {missing} in {data.source}"
        ) from None


def error_table(errors: Mapping[str, float], runs: Mapping[str, int]) -> fitting.Table:
    return fitting.Table(
        ("family", "runs", "mean error (%)"),
        tuple((family, runs[family], f"{error:.2f}") for family, error in errors.items()),
    )


class TreesFitting(fitting.Fitting):
    keeps = True

    def fit(
        self, model: trees.RuntimeTrees, data: fitting.Measurements, folds: int, seed: int
    ) -> fitting.Fitted:
        samples = run_samples(data)
        try:
            fitted = model.fit(samples)
            checked = trees.cross_validate(model, samples, folds, seed)
        except (ValueError, MissingFeatures) as problem:
            raise fitting.FitError(f"{data.dataset}: {problem}") from None
        report = (
            f"{checked.folds}-fold cross-validation per family: mean error {checked.average:.2f}%"
        )
        output = (
            f"fit over {len(samples)} measured runs of {data.dataset}: "
            f"{len(fitted.families)} families, host types {', '.join(fitted.host_types)}, "
            f"metrics {', '.join(fitted.metrics) or '(none)'}, {fitted.trees} trees each",
            error_table(checked.errors, checked.runs),
            f"{report} ({PAPER_ERRORS})",
        )
        return fitting.Fitted(fitted, output, report)

    def evaluate(
        self, model: trees.RuntimeTrees, data: fitting.Measurements, verbose: bool
    ) -> tuple[fitting.Output, ...]:
        samples = run_samples(data)
        try:
            estimates = model.runtimes([s.tenants() for s in samples], first_only=True)
        except (MissingFeatures, ModelNotReady) as error:
            raise fitting.FitError(str(error)) from None
        errors: dict[str, list[float]] = {}
        rows = []
        for sample, (estimate,) in zip(samples, estimates, strict=True):
            error = abs(estimate - sample.runtime) / sample.runtime * 100.0
            errors.setdefault(sample.profile.runtime_family, []).append(error)
            rows.append(
                (
                    sample.profile.name,
                    sample.host_type,
                    " + ".join(f"{p.name}:{vms}" for p, vms in sample.co_runners) or "(alone)",
                    f"{sample.runtime:.2f}",
                    f"{estimate:.2f}",
                    f"{error:.2f}",
                )
            )
        output: list[fitting.Output] = []
        if verbose:
            output.append(
                fitting.Table(
                    (
                        "application",
                        "host type",
                        "co-runners",
                        "measured (s)",
                        "predicted (s)",
                        "error %",
                    ),
                    tuple(rows),
                )
            )
        means = {family: statistics.fmean(e) for family, e in sorted(errors.items())}
        output.append(error_table(means, {f: len(e) for f, e in errors.items()}))
        output.append(
            f"{model.name} over {len(samples)} runs of {data.dataset}: mean error "
            f"{statistics.fmean(means.values()):.2f}% over {len(means)} families "
            f"({PAPER_ERRORS})"
        )
        return tuple(output)
