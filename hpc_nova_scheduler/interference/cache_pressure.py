"""A synthetic ground truth: linear slowdown once a host's cache score passes a knee.

``slowdown = gain * (own / knee) * max(0, host total - knee) / knee``
(as a fraction; times 100 in percent), where ``own`` is the application's
cache score per VM and the host total sums every VM's score there. The
host's cache holds ``knee`` (default 60, the SyncHPC threshold seed 003's
measurements settled on) without contention; beyond it every VM loses time
in proportion to the excess and to how much it uses the cache itself, so a
VM that barely touches the cache (score 0) is not slowed, and a VM alone
on a host runs at full speed. Example with the defaults: four VMs of score
25 on one host (total 100) each run 28 % longer.

The simulator uses it as ground truth (``simulate --interference
cache-pressure``); as an admission model it is seed 003's rule with a
tolerance instead of thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hpc_nova_scheduler.interference.base import InterferenceModel, Prediction, Tenant


def check_parameters(knee: float, gain: float) -> None:
    """ValueError unless the knee is a positive number and the gain one >= 0."""
    if not (knee > 0 and math.isfinite(knee)) or not (gain >= 0 and math.isfinite(gain)):
        raise ValueError("cache-pressure needs knee > 0 and gain >= 0")


def pressure_factor(own: float, total: float, knee: float, gain: float) -> float:
    """Run-time factor (>= 1) of a VM of cache score ``own`` on a host totalling ``total``."""
    excess = max(0.0, total - knee)
    return 1.0 + gain * (own / knee) * (excess / knee)


class CachePressureModel(InterferenceModel):
    name = "cache-pressure"
    summary = "synthetic: slowdown grows with the host's cache score past a knee"
    features = ("cache_score",)

    def __init__(self, knee: float = 60.0, gain: float = 1.0) -> None:
        check_parameters(knee, gain)
        self.knee = knee
        self.gain = gain

    def predict(self, tenants: Sequence[Tenant]) -> Prediction:
        self.check(tenants)
        total = math.fsum(t.profile.cache_score * t.vms for t in tenants)
        if sum(t.vms for t in tenants) < 2:
            return Prediction(tuple(0.0 for _ in tenants), total)
        slowdowns = tuple(
            100.0 * (pressure_factor(t.profile.cache_score, total, self.knee, self.gain) - 1.0)
            for t in tenants
        )
        return Prediction(slowdowns, total)

    def describe(self) -> str:
        return f"{self.summary} (knee {self.knee:g}, gain {self.gain:g})"
