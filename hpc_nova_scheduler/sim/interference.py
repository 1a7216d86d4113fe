"""How co-located jobs slow each other down in a simulation.

Seed 003 credits cache-aware placement by shortening every job's run time
by a fixed percentage (``Scenario.runtime_factor``); packing then has no
cost, so a looser threshold always looks at least as good. A model here
makes interference a consequence of the placement instead: each VM runs
slower while its co-runners press on the shared cache, and the simulator
recomputes every affected job's pace whenever a host's VMs change. A
tightly coupled job advances at the pace of its slowest VM.

Models are plugins (stevedore namespace ``hpc_nova_scheduler.sim.interference``)
so that a measured or learned model can replace the built-in ones. Every
model of :mod:`hpc_nova_scheduler.interference` (the namespace
``hpc_nova_scheduler.interference_models``: ``cache-pressure``, ``ivmp``,
...) serves as ground truth too; the simulator then judges each host by the
applications on it, with the profiles drawn for the jobs.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence

from hpc_nova_scheduler.interference.cache_pressure import check_parameters, pressure_factor
from hpc_nova_scheduler.plugins import Registry

NAMESPACE = "hpc_nova_scheduler.sim.interference"


class SlowdownModel(abc.ABC):
    """Slowdown of one VM from the VMs it shares a host with."""

    @abc.abstractmethod
    def slowdown(self, own_score: float, co_runner_scores: Sequence[float]) -> float:
        """Run-time factor (>= 1) of a VM with cache score ``own_score``."""


@dataclasses.dataclass(frozen=True)
class NoInterference(SlowdownModel):
    """Co-location costs nothing (seed 003's simulation)."""

    def slowdown(self, own_score: float, co_runner_scores: Sequence[float]) -> float:
        return 1.0


@dataclasses.dataclass(frozen=True)
class CachePressure(SlowdownModel):
    """Linear slowdown once a host's total cache score passes a knee.

    ``factor = 1 + gain * (own / knee) * max(0, own + sum(co-runners) - knee) / knee``

    The host's cache holds a total score of ``knee`` without contention
    (default 60, the SyncHPC threshold that seed 003's measurements settled
    on); beyond it every VM loses time in proportion to the excess and to
    how much it uses the cache itself, so a VM that barely touches the cache
    (score 0) is not slowed. A VM alone on a host runs at full speed.
    Example with the defaults: four VMs of score 25 on one host (total 100)
    each run 1 + (25/60)(40/60) = 1.28 times longer.
    """

    knee: float = 60.0
    gain: float = 1.0

    def __post_init__(self) -> None:
        check_parameters(self.knee, self.gain)

    def slowdown(self, own_score: float, co_runner_scores: Sequence[float]) -> float:
        if not co_runner_scores:
            return 1.0
        total = own_score + sum(co_runner_scores)
        return pressure_factor(own_score, total, self.knee, self.gain)


class UnknownSlowdown(ValueError):
    pass


SLOWDOWNS: Registry[SlowdownModel] = Registry(
    NAMESPACE, SlowdownModel, "interference model", UnknownSlowdown
)


def names() -> list[str]:
    return SLOWDOWNS.names()


def load(name: str, **options: float) -> SlowdownModel:
    """The model registered as ``name``, built with ``options``; ValueError if impossible."""
    model_class = SLOWDOWNS.plugin(name)
    try:
        return model_class(**options)
    except TypeError as error:
        raise ValueError(f"interference model {name!r}: {error}") from None
