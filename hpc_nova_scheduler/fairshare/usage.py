"""What production fair share adds to seed 002: weights, decayed usage, integer shares.

Seed 002 gives every user the same share and forgets the past. Production
fair-share schedulers (Slurm's multifactor, Kueue, Synergy) give projects
weights and charge them for what they used, with an exponential half-life.
Here both enter the policies as one number per claimant, its effective
weight, after Slurm's classic fair-share factor:

    w'(u) = w(u) x 2 ** (-U(u) / S(u))

with S(u) = w(u) / sum w its normalised share and U(u) = usage(u) / sum
usage its normalised decayed usage (0 when nobody has used anything). With
equal weights and no history every w' is 1: the policies then compute the
paper's algorithms exactly. More usage lowers a claimant's w' and raises
everyone else's, so, with an apportionment that is population monotone
(:func:`apportion`), it never gives a larger share under the policies that
apportion shares (Fairness, PA-based RR, the equal-cores anchors;
tested). PAF, AAF and equivalent-rr do not promise it: they serve users
greedily in an order that weights change (Algorithm 1 by need / weight,
equivalent-rr by worth / weight), and being served later can leave a
user more of a second platform than it lost on the first.

Usage is charged in best-platform-equivalent core-seconds: a core-second
on platform P counts r_best / r(K, P) for application K, so a core-hour on
a platform where K runs slowly costs less than one where it runs fastest.
The production anchors charge plain core-seconds.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence

from hpc_nova_scheduler.core.sharing import Claimant, SharingError

#: How usage is charged: the paper's speed-aware unit, or production's plain one.
BEST_EQUIVALENT = "best-equivalent"
CORE_SECONDS = "core-seconds"
CHARGES = (BEST_EQUIVALENT, CORE_SECONDS)


def effective_weights(claimants: Sequence[Claimant]) -> dict[str, float]:
    """w'(u) for every claimant: its weight lowered by its share of the decayed usage.

    Only ratios of effective weights matter, so they are computed as powers
    of two relative to the largest: a project that used everything among a
    thousand never underflows to a weight of 0 (it keeps :data:`FLOOR`).
    """
    total_weight = sum(c.weight for c in claimants)
    total_usage = sum(c.usage for c in claimants)
    if total_usage <= 0:
        return {c.name: c.weight for c in claimants}
    exponents = {
        c.name: math.log2(c.weight) - (c.usage / total_usage) / (c.weight / total_weight)
        for c in claimants
    }
    top = max(exponents.values())
    return {name: max(2.0 ** (e - top), FLOOR) for name, e in exponents.items()}


#: The least effective weight: positive, so that every division by it is defined.
FLOOR = 1e-300


def decay(usage: float, elapsed_s: float, half_life_s: float) -> float:
    """``usage`` after ``elapsed_s`` seconds of exponential decay; a half-life of 0 keeps none."""
    if half_life_s < 0:
        raise SharingError(f"half-life must be >= 0 seconds, not {half_life_s}")
    if half_life_s == 0:
        return 0.0
    return usage * 2.0 ** (-max(elapsed_s, 0.0) / half_life_s)


def charge(seconds: float, solo: Mapping[str, float], platform: str, how: str) -> float:
    """The usage of ``seconds`` of one core on ``platform`` by an application with ``solo``
    run times (platform -> seconds).

    ``best-equivalent`` scales it by r_best / r(platform): at most ``seconds``,
    less where the application runs slower than on its fastest platform. A
    platform without a solo run is charged in full.
    """
    if how == CORE_SECONDS:
        return seconds
    if how != BEST_EQUIVALENT:
        raise SharingError(f"unknown usage charge {how!r}; known: {', '.join(CHARGES)}")
    own = solo.get(platform)
    if own is None or not solo:
        return seconds
    return seconds * min(solo.values()) / own


def apportion(
    total: int, demand: Mapping[str, int], weights: Mapping[str, float]
) -> dict[str, int]:
    """Split ``total`` cores by ``weights``, nobody above its demand (Jefferson's divisor method).

    Water-filling with whole cores: the result is what the continuous
    water-fill gives, rounded so that each next core goes to the claimant
    with the smallest (cores + 1) / weight among those below their demand,
    ties to the one named first in ``demand``. Cores nobody needs stay
    unassigned. A divisor method is population monotone: lowering one
    claimant's weight never gives it more.
    """
    if total < 0:
        raise SharingError(f"cannot apportion {total} cores")
    names = [name for name, want in demand.items() if want > 0]
    shares = {name: 0 for name in demand}
    wanted = sum(demand[name] for name in names)
    if total >= wanted:
        shares.update({name: demand[name] for name in names})
        return shares
    level = _water_level(total, [(demand[n], weights[n]) for n in names])
    for name in names:
        shares[name] = min(demand[name], math.floor(level * weights[name]))
    order = {name: i for i, name in enumerate(names)}
    # Rounding of the water level may overshoot by a core or two with
    # extreme weight ratios: take back the cores least deserved, last first.
    while sum(shares.values()) > total:
        worst = max(
            (name for name in names if shares[name] > 0),
            key=lambda name: (shares[name] / weights[name], order[name]),
        )
        shares[worst] -= 1
    left = total - sum(shares.values())
    heap = [
        ((shares[name] + 1) / weights[name], order[name], name)
        for name in names
        if shares[name] < demand[name]
    ]
    heapq.heapify(heap)
    while left > 0 and heap:
        _, rank, name = heapq.heappop(heap)
        shares[name] += 1
        left -= 1
        if shares[name] < demand[name]:
            heapq.heappush(heap, ((shares[name] + 1) / weights[name], rank, name))
    return shares


def _water_level(total: int, claims: list[tuple[int, float]]) -> float:
    """lambda with sum min(demand, lambda x weight) = total (total < sum demand)."""
    claims = sorted(claims, key=lambda c: c[0] / c[1])
    left = float(total)
    weight_left = sum(w for _, w in claims)
    for want, weight in claims:
        if want / weight * weight_left <= left:
            left -= want
            weight_left -= weight
        else:
            return left / weight_left
    return left / weight_left if weight_left > 0 else 0.0
