"""Seed 003's rule as an interference model: cache scores within alpha and beta.

It predicts no slowdown; it admits a host while the cache scores of every
VM there (each application's score times its VMs on the host) add up to at
most alpha, and to at most beta when any of them is SyncHPC. Existing
clouds select it by default, so ``interference_model`` changes nothing
until an operator chooses a predictive model.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.interference.base import (
    InterferenceModel,
    Prediction,
    Tenant,
    involves_sync,
)


class CacheScoreModel(InterferenceModel):
    name = "cache-score"
    summary = "seed 003: total cache score on the host within alpha (beta with SyncHPC)"
    features = ("cache_score",)

    def __init__(self, alpha: float = 200.0, beta: float = 60.0) -> None:
        self.thresholds = Thresholds(alpha, beta)

    def predict(self, tenants: Sequence[Tenant]) -> Prediction:
        self.check(tenants)
        total = sum(t.profile.cache_score * t.vms for t in tenants)
        return Prediction(tuple(0.0 for _ in tenants), total)

    def judge(self, prediction: Prediction, tenants: Sequence[Tenant], tolerance: float) -> bool:
        """The thresholds decide; ``tolerance`` plays no part in seed 003's rule."""
        return self.thresholds.admits(prediction.score, involves_sync(tenants))

    def describe(self) -> str:
        t = self.thresholds
        return f"{self.summary}: alpha {t.alpha:g}, beta {t.beta:g}"
