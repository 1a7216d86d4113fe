"""The scheduler configurations the simulator compares, by name.

Trace jobs carry no application class or cache score. The simulator draws
each job's cache score (seed 003 section VII: uniform in [0, 30]); the
cache-aware scenarios place by it, and their run times may be scaled to
credit cache-aware placement as the paper does. The HPC-aware scenario
treats a job of several processors as a SyncHPC application and a
single-processor job as AsyncHPC.
"""

from __future__ import annotations

from hpc_nova_scheduler.core.algorithm import (
    PACKING_COSINE,
    PACKING_LEAST_FREE_PES,
    PACKING_MOST_FREE_PES,
    PACKING_MOST_FREE_RAM,
    PACKING_NOVA_WEIGHERS,
    Policy,
)
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.sim.settings import UNLIMITED, Scenario

#: name -> what it is, for --help and the output.
DESCRIPTIONS = {
    "least-free-pes": "the paper's default: the host with the fewest free cores",
    "most-free-pes": "CloudSim's VmAllocationPolicySimple: the host with the most free cores",
    "nova-default": "Nova's default RAM and CPU weighers, normalised and summed",
    "nova-ram": "Nova's default RAM weigher: the host with the most free RAM",
    "mdobp": "multi-dimensional online bin packing (cosine), blind to interference",
    "mdobp-cache": "MDOBP with cache scores and the alpha/beta thresholds (IFMDOBP)",
    "hpc-aware": "the full scheduler: classes, racks, processor groups, thresholds",
}


def build(
    name: str,
    *,
    alpha: float,
    beta: float,
    runtime_factor: float,
    admission: InterferenceModel | None = None,
    tolerance: float = 10.0,
) -> Scenario:
    """The scenario called ``name``; ``runtime_factor`` applies to cache-aware ones.

    With ``admission`` the cache-aware scenarios admit hosts by that
    interference model within ``tolerance`` percent instead of alpha and beta.
    """
    if name == "least-free-pes":
        return Scenario(name, Policy.nova_like(PACKING_LEAST_FREE_PES))
    if name == "most-free-pes":
        return Scenario(name, Policy.nova_like(PACKING_MOST_FREE_PES))
    if name == "nova-default":
        return Scenario(name, Policy.nova_like(PACKING_NOVA_WEIGHERS))
    if name == "nova-ram":
        return Scenario(name, Policy.nova_like(PACKING_MOST_FREE_RAM))
    if name == "mdobp":
        return Scenario(name, Policy.nova_like(PACKING_COSINE))
    thresholds = Thresholds(alpha, beta)
    judged = {"admission": admission, "tolerance": tolerance}
    label = f"beta={beta:g}"
    if admission is not None:
        label = f"{admission.name}<={tolerance:g}%"
    if name == "mdobp-cache":
        policy = Policy(
            classes=False,
            topology=False,
            homogeneity=False,
            cache_criteria=True,
            interference_table=False,
            packing=PACKING_COSINE,
        )
        return Scenario(
            f"{name} {label}", policy, thresholds, AppClass.SYNC_HPC, runtime_factor, **judged
        )
    if name == "hpc-aware":
        return Scenario(f"{name} {label}", Policy(), thresholds, None, runtime_factor, **judged)
    raise ValueError(f"unknown scenario {name!r}; use one of {', '.join(DESCRIPTIONS)}")


__all__ = ["DESCRIPTIONS", "UNLIMITED", "build"]
