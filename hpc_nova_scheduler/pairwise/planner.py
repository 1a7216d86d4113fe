"""Seed 001's pairing as a batch planner: two applications a host, chosen by matching.

Seed 001 co-schedules jobs two at a time and chooses the pairs by
matching on their predicted mutual degradation. As a placement of a
batch, each pair shares one host and a pair slower together than apart
(w_ij > T_i + T_j, see :mod:`.matching`), or too big to share one, takes
a host each; an odd application out runs alone. Run times T are the
profiles' ``solo_runtime`` where known, else 1 (then the weights compare
slowdowns alone); degradations are the interference model's predicted
slowdowns of each application next to the other (the model registered as
``ivmp`` by default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from hpc_nova_scheduler.interference import model_registry
from hpc_nova_scheduler.interference.base import InterferenceModel, Tenant
from hpc_nova_scheduler.pairwise import matching
from hpc_nova_scheduler.planners.base import SLACK, Batch, Placement, Planner
from hpc_nova_scheduler.planners.binpacking import NoRoom

#: The interference model whose predicted slowdowns weigh the pairs, unless
#: one is given: seed 004's, found by name like any other model.
DEFAULT_MODEL = "ivmp"
#: The degradation (percent) of a pair that does not fit on one host: far
#: beyond running in turn, so that the pair is never placed together.
APART = 1e6


def degradations(batch: Batch, model: InterferenceModel) -> np.ndarray:
    """d[i, j]: how much application j slows application i (percent), predicted."""
    count = len(batch.apps)
    table = np.zeros((count, count))
    known: dict[tuple[str, str], tuple[float, float]] = {}
    for i in range(count):
        for j in range(i + 1, count):
            a, b = batch.apps[i], batch.apps[j]
            if a.cpu + b.cpu > 1 + SLACK or a.mem + b.mem > 1 + SLACK:
                table[i, j] = table[j, i] = APART
                continue
            key = (a.name, b.name)
            if key not in known:
                slowdowns = model.predict([Tenant.of(a.profile), Tenant.of(b.profile)]).slowdowns
                known[key] = (slowdowns[0], slowdowns[1])
            table[i, j], table[j, i] = known[key]
    return table


class PairingPlanner(Planner):
    """Base of the two strategies: ``pair`` is blossom or greedy."""

    pair: ClassVar[Callable[[Sequence[float], np.ndarray], matching.Pairing]]

    def __init__(self, model: InterferenceModel | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.model = model if model is not None else model_registry.load(DEFAULT_MODEL)

    def place(self, batch: Batch) -> Placement:
        for app in batch.apps:
            if app.cpu > 1 + SLACK or app.mem > 1 + SLACK:
                raise NoRoom(f"{app.name} needs more than one host")
        runtimes = [app.profile.solo_runtime or 1.0 for app in batch.apps]
        pairing = type(self).pair(runtimes, degradations(batch, self.model))
        host_of = [0] * len(batch.apps)
        host = 0
        for i, j in pairing.pairs:
            host_of[i] = host
            host += 1
            if j == matching.ALONE:
                continue
            if (i, j) in pairing.serial:
                host_of[j] = host
                host += 1
            else:
                host_of[j] = host_of[i]
        if host > batch.hosts:
            raise NoRoom(f"{batch.hosts} hosts cannot hold the batch in pairs ({host} needed)")
        return Placement(tuple(host_of))


class BlossomPairing(PairingPlanner):
    name = "blossom"
    summary = "seed 001: pairs by minimum-weight perfect matching (blossom), one pair a host"
    pair = staticmethod(matching.blossom)


class GreedyPairing(PairingPlanner):
    name = "greedy"
    summary = "seed 001: pairs in increasing predicted cost (greedy), one pair a host"
    pair = staticmethod(matching.greedy)
