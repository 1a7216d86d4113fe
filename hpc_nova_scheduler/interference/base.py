"""What an interference model is: applications sharing a host in, slowdowns out.

Seed 003 judges a host by a static cache score per application; seeds 004,
001 and 000 predict interference from measured profiles. Each is an
:class:`InterferenceModel`: given the applications that would share one
host (each with its profile and its VMs there), it predicts each one's
slowdown and a score for the host. The Nova filter and the simulator both
admit a host only if :meth:`InterferenceModel.admits` says so; nothing here
knows about Nova.

Slowdowns are in percent, as ``interference_tolerance`` and the
``app_interferences`` table are: 40.0 means 40 % longer than alone.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from typing import ClassVar

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import ProfileRecord


@dataclasses.dataclass(frozen=True)
class Tenant:
    """One application on a host: its profile, how many of its VMs are there,
    and the host's type (its processor group), for models that tell host
    types apart (seed 000's); None where it is not known."""

    profile: ProfileRecord
    vms: int = 1
    host_type: str | None = None

    @property
    def name(self) -> str:
        return self.profile.name

    @classmethod
    def of(cls, profile: ProfileRecord, vms: int = 1, host_type: str | None = None) -> Tenant:
        if vms < 1:
            raise ValueError(f"{profile.name}: an application on a host has at least one VM")
        return cls(profile, vms, host_type or None)


@dataclasses.dataclass(frozen=True)
class Prediction:
    """Per tenant, in the order given, the predicted slowdown (percent); and
    the host's interference score, in the model's own unit."""

    slowdowns: tuple[float, ...]
    score: float

    @property
    def worst(self) -> float:
        return max(self.slowdowns, default=0.0)


class MissingFeatures(Exception):
    """A profile lacks what the model reads; never guessed as zero."""

    def __init__(self, model: str, application: str, features: Sequence[str]) -> None:
        self.model = model
        self.application = application
        self.features = tuple(features)
        super().__init__(
            f"model {model} needs {', '.join(self.features)} in the profile of {application}"
        )


class ModelNotReady(Exception):
    """The model cannot predict yet (for example, a learned model not fitted)."""


class NotFitted(ModelNotReady):
    """A learned model was asked to predict before it was fitted."""


class InterferenceModel(abc.ABC):
    """Predicts the slowdowns of applications that share one host."""

    #: The name operators select it by (``[hpc_scheduler] interference_model``).
    name: ClassVar[str]
    #: Profile fields every tenant must have (see :meth:`check`).
    features: ClassVar[tuple[str, ...]] = ()
    #: One line for ``model list``.
    summary: ClassVar[str] = ""
    #: Whether predictions depend on the host's type (:attr:`Tenant.host_type`).
    host_typed: ClassVar[bool] = False

    def check(self, tenants: Sequence[Tenant]) -> None:
        """Raise :class:`MissingFeatures` for the first tenant that lacks a feature."""
        for tenant in tenants:
            missing = [f for f in self.features if getattr(tenant.profile, f) is None]
            if missing:
                raise MissingFeatures(self.name, tenant.name, missing)

    @abc.abstractmethod
    def predict(self, tenants: Sequence[Tenant]) -> Prediction:
        """The slowdown of each tenant when they all share one host."""

    def predict_many(self, hosts: Sequence[Sequence[Tenant]]) -> list[Prediction]:
        """:meth:`predict` for several hosts; learned models answer in one call."""
        return [self.predict(tenants) for tenants in hosts]

    def judge(self, prediction: Prediction, tenants: Sequence[Tenant], tolerance: float) -> bool:
        """Whether a host with this prediction may be shared."""
        return prediction.worst <= tolerance + 1e-9

    def admits(self, tenants: Sequence[Tenant], tolerance: float) -> bool:
        """Whether every tenant keeps its predicted slowdown within ``tolerance`` percent."""
        return self.judge(self.predict(tenants), tenants, tolerance)

    def describe(self) -> str:
        return self.summary


def involves_sync(tenants: Sequence[Tenant]) -> bool:
    return any(t.profile.app_class is AppClass.SYNC_HPC for t in tenants)
