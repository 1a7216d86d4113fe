"""How a model is fitted, cross-validated and evaluated from measured data.

``model fit`` and ``model evaluate`` reach every research system through
this one protocol, without knowing which system it is. A system registers
its :class:`Fitting` under its model's name in the entry-point namespace
``hpc_nova_scheduler.model_fitting``; each fitting reads its own kind of
dataset (measured hosts, pairs or runs), fits and cross-validates its
model, and says what it found as lines and tables for the command to
print. A model without a fitting of its own cannot be refitted, and is
evaluated over measured hosts (:class:`MeasuredHosts`).
"""

from __future__ import annotations

import abc
import dataclasses
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from hpc_nova_scheduler import datafiles, plugins
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference import validation
from hpc_nova_scheduler.interference.base import InterferenceModel, MissingFeatures, Tenant


class FitError(Exception):
    """The data cannot fit or evaluate the model; the message says where and why."""


@dataclasses.dataclass(frozen=True)
class Table:
    """Rows under headings, for the command to draw."""

    headings: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]


#: What a fitting tells the operator: a line, or a table.
Output = str | Table


@dataclasses.dataclass(frozen=True)
class Measurements:
    """What a fitting reads: the dataset file, and the profiles of the
    applications it names, read only when asked for (from ``source``)."""

    dataset: str
    source: str
    read_profiles: Callable[[], Mapping[str, ProfileRecord]]

    def profiles(self) -> Mapping[str, ProfileRecord]:
        return self.read_profiles()


@dataclasses.dataclass(frozen=True)
class Fitted:
    """A fit's outcome: the fitted model, what to tell the operator, and the
    one line kept beside a stored model."""

    model: InterferenceModel
    output: tuple[Output, ...]
    report: str


class Fitting(abc.ABC):
    """How one system's models are fitted, cross-validated and evaluated."""

    #: Whether a fit makes a model to keep (saved to a file or stored in the
    #: plugin database), as learned models do; a refit whose outcome is its
    #: printed coefficients keeps nothing.
    keeps: ClassVar[bool] = False

    @abc.abstractmethod
    def fit(self, model: InterferenceModel, data: Measurements, folds: int, seed: int) -> Fitted:
        """``model`` fitted to ``data``, with a ``folds``-fold cross-validation
        seeded by ``seed``; :class:`FitError` when the data cannot fit it."""

    @abc.abstractmethod
    def evaluate(
        self, model: InterferenceModel, data: Measurements, verbose: bool
    ) -> tuple[Output, ...]:
        """How well ``model`` predicts ``data``; with ``verbose``, one row a sample."""


def error_summary(errors: Sequence[float]) -> str:
    """Mean and median absolute error in points, and the share under 10 points."""
    within = sum(e < 10 for e in errors) / len(errors)
    return (
        f"mean absolute error {statistics.fmean(errors):.2f} points, "
        f"median {statistics.median(errors):.2f}, under 10 points in {within:.0%}"
    )


def tenants(
    names: Sequence[str],
    profiles: Mapping[str, ProfileRecord],
    where: str,
    host_type: str | None = None,
) -> list[Tenant]:
    """One VM of each application named, by its profile; FitError naming ``where`` if none."""
    found = []
    for name in names:
        profile = profiles.get(name)
        if profile is None:
            raise FitError(f"no profile named {name!r} in {where}")
        found.append(Tenant.of(profile, 1, host_type))
    return found


def measured_hosts(
    model: InterferenceModel, data: Measurements
) -> list[tuple[list[Tenant], float]]:
    """Each measured host of ``data`` (a ``hosts:`` file): its applications and
    the interference measured there, every profile checked against ``model``."""
    samples = datafiles.read_host_samples(data.dataset)
    profiles = data.profiles()
    rows = []
    for sample in samples:
        where = f"{data.source} (needed by {data.dataset}:{sample.line})"
        found = tenants(sample.applications, profiles, where)
        try:
            model.check(found)
        except MissingFeatures as error:
            raise FitError(f"{data.dataset}:{sample.line}: {error}") from None
        rows.append((found, sample.interference))
    return rows


class MeasuredHosts(Fitting):
    """Models judged by each host's interference level, against measured hosts.

    The fitting of every model that names none of its own: it evaluates
    over measured hosts and cannot refit.
    """

    def fit(self, model: InterferenceModel, data: Measurements, folds: int, seed: int) -> Fitted:
        raise FitError(f"model {model.name} cannot be refitted by this command")

    def evaluate(
        self, model: InterferenceModel, data: Measurements, verbose: bool
    ) -> tuple[Output, ...]:
        rows = measured_hosts(model, data)
        predicted = [model.predict(found).worst for found, _ in rows]
        measured = [level for _, level in rows]
        output: list[Output] = []
        if verbose:
            output.append(
                Table(
                    ("host", "measured (%)", "predicted (%)", "error"),
                    tuple(
                        (
                            " + ".join(t.name for t in found),
                            f"{m:.2f}",
                            f"{p:.2f}",
                            f"{abs(p - m):.2f}",
                        )
                        for (found, m), p in zip(rows, predicted, strict=True)
                    ),
                )
            )
        errors = [abs(p - m) for p, m in zip(predicted, measured, strict=True)]
        output.append(
            f"{model.name} over {len(rows)} hosts of {data.dataset}: "
            f"R^2 {validation.r_squared(measured, predicted):.3f}, {error_summary(errors)}"
        )
        return tuple(output)


#: Each system's fitting, under the name of the model it fits.
FITTINGS = plugins.Registry("hpc_nova_scheduler.model_fitting", Fitting, "fitting")


def of(model: InterferenceModel) -> Fitting:
    """The fitting registered under ``model``'s name, else :class:`MeasuredHosts`."""
    if model.name not in FITTINGS.names():
        return MeasuredHosts()
    return FITTINGS.load(model.name)
