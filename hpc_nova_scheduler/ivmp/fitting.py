"""Seed 004's models refitted to measured hosts, for ``model fit`` and ``model evaluate``.

A dataset is a ``hosts:`` file: the applications of each host and the
interference measured there. The coefficients are refitted by least
squares (:func:`~hpc_nova_scheduler.ivmp.model.fit`) and cross-validated
over folds of hosts; the outcome is the coefficients themselves, which
``--param coefficients=...`` gives back to the model, so nothing is stored.
Evaluation is the shared one over measured hosts.
"""

from __future__ import annotations

from hpc_nova_scheduler.interference import fitting
from hpc_nova_scheduler.ivmp import model as ivmp


class IvmpFitting(fitting.MeasuredHosts):
    def fit(
        self, model: ivmp.IvmpModel, data: fitting.Measurements, folds: int, seed: int
    ) -> fitting.Fitted:
        rows = fitting.measured_hosts(model, data)
        try:
            fitted, report = ivmp.fit(model, rows)
        except ValueError as error:
            raise fitting.FitError(f"{data.dataset}: {error}") from None
        output = [f"fit over {data.dataset}: {report.report()}"]
        folds = min(folds, len(rows))
        try:
            r2, errors = ivmp.cross_validate(model, rows, folds, seed) if folds > 1 else (0, [])
        except ValueError:
            # A fold left too few hosts to fit the coefficients.
            errors = []
        if errors:
            output.append(
                f"{folds}-fold cross-validation: R^2 {r2:.3f}, {fitting.error_summary(errors)}"
            )
        else:
            output.append("too few hosts for cross-validation")
        coefficients = ",".join(f"{c:.6g}" for c in fitted.coefficients)
        output.append(f"use with: --model {model.name} --param coefficients={coefficients}")
        return fitting.Fitted(fitted, tuple(output), report.report())
