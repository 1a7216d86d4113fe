"""Seed 002's first level: how many cores of each platform every user gets (section 5.1).

* :class:`Fairness`, the baseline: each platform's cores split equally
  among the users, a user's unneeded cores water-filled to the others.
* :class:`ProviderAffinityFirst` (PAF) and :class:`ApplicationAffinityFirst`
  (AAF), Algorithm 1: platforms favour their top k% users by platform
  affinity (PAF), or users their top k% platforms (AAF); each favoured
  platform's cores are split equally among the users that favour it.
* :class:`AffinityRoundRobin` (PA-based RR), Algorithm 2: a fair share per
  user, then turns in which every user takes up to ``D_unit`` cores of its
  highest-affinity platform that still has cores.

Readings of the paper decided here (also in the folder's README):

* **Typos.** Algorithm 1 line 14 divides by S[j], the users assigned to
  platform j (the paper prints S[i]); Algorithm 2 line 11 caps d by
  P[r].avCores, the platform just chosen (the paper prints P[j]).
* **Top k%** of n candidates is max(1, floor(k x n / 100)), k in 1..50: a
  platform (PAF) or user (AAF) always favours someone while anyone has
  demand, so Algorithm 1's line 9 fallback never has to invent a choice.
* **Integer cores.** Algorithm 1 line 14 divides with floor; the last user
  of a platform in the pass (S[j] = 1) takes what is left, so nothing is
  lost to rounding. The Fairness baseline and PA-based RR's fair shares are
  whole cores by Jefferson's divisor method (:func:`.usage.apportion`):
  the leftovers of an uneven split go one core at a time, to the users in
  the order they are given (submission order).
* **RPA** is computed over the users that still have tasks, by the caller
  (:mod:`.allocator`), at each invocation, as line 6 says.
* **Ties** in affinity go to the platform given first (the offer order);
  ties among users to the user given first.
* **The Fairness baseline's platforms.** "Equally from each platform" with
  water-filling leaves open which platforms a user with small demand takes
  its cores from. Each user's total is its water-filled share; each
  platform, in order, is then apportioned in proportion to what every user
  still needs, none above ceil(need x platform cores / cores left). A
  small user so takes its cores evenly from every platform, and with
  demand everywhere above the fair share every platform is split equally
  (to a core, when it does not divide).

Weights and usage enter as each user's effective weight (:mod:`.usage`):
PA-based RR's and Fairness' shares are apportioned by it, and Algorithm 1
splits a platform in proportion to it (line 14: floor(avCores x w' /
sum w' of the users still assigned), users taken in increasing order of
need / w'). Every effective weight equal reproduces the paper exactly.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping

from hpc_nova_scheduler.core.sharing import Allocation, ShareRequest, SharingError
from hpc_nova_scheduler.fairshare import usage

NEUTRAL = 1.0


def top_count(percent: int, candidates: int) -> int:
    """How many of ``candidates`` are in the top ``percent``% (at least one)."""
    return max(1, (percent * candidates) // 100) if candidates else 0


def check_percent(percent: int) -> int:
    if isinstance(percent, bool) or not isinstance(percent, int) or not 1 <= percent <= 50:
        raise SharingError(f"top_percent must be an integer from 1 to 50, not {percent!r}")
    return percent


def check_unit(name: str, unit: int) -> int:
    if isinstance(unit, bool) or not isinstance(unit, int) or unit < 1:
        raise SharingError(f"{name} must be an integer >= 1, not {unit!r}")
    return unit


class FirstLevelPolicy:
    """A first-level policy: the base every registered one derives from."""

    name = ""
    usage_charge = usage.BEST_EQUIVALENT

    def __init__(self, top_percent: int = 50, core_unit: int = 1) -> None:
        self.top_percent = check_percent(top_percent)
        self.core_unit = check_unit("core_unit (D_unit)", core_unit)

    def allocate(self, request: ShareRequest) -> Allocation:
        raise NotImplementedError


def _empty(request: ShareRequest) -> Allocation:
    return {c.name: {p.name: 0 for p in request.platforms} for c in request.claimants}


def _affinity(request: ShareRequest, claimant: str, platform: str) -> float:
    return request.affinity.get(claimant, {}).get(platform, NEUTRAL)


def _ranked_platforms(request: ShareRequest, claimant: str) -> list[str]:
    """The platforms, highest affinity for ``claimant`` first, ties in offer order."""
    order = [p.name for p in request.platforms]
    return sorted(order, key=lambda p: -_affinity(request, claimant, p))


class Fairness(FirstLevelPolicy):
    """The baseline: every platform split equally, unneeded cores water-filled."""

    name = "fairness"

    def allocate(self, request: ShareRequest) -> Allocation:
        allocation = _empty(request)
        demand = {c.name: c.demand for c in request.claimants}
        total = sum(p.cores for p in request.platforms)
        need = usage.apportion(total, demand, usage.effective_weights(request.claimants))
        left = total
        for platform in request.platforms:
            # Each platform in proportion to what every user still needs, and
            # nobody above its proportional part of this platform: with equal
            # needs an equal split, and a small user's cores come evenly from
            # every platform rather than from the first ones offered.
            caps = {
                name: min(want, math.ceil(want * platform.cores / left)) if left else 0
                for name, want in need.items()
            }
            weights = {name: float(want) for name, want in need.items() if want > 0}
            got = usage.apportion(platform.cores, caps, weights)
            for name, cores in got.items():
                allocation[name][platform.name] += cores
                need[name] -= cores
            left -= platform.cores
        # The caps are ceilings of proportional parts, so their sum covers
        # every platform when demand exceeds the cloud; this only places what
        # the rounding of a light load left over.
        for platform in request.platforms:
            free = platform.cores - sum(a[platform.name] for a in allocation.values())
            if free > 0 and any(need.values()):
                weights = {name: float(want) for name, want in need.items() if want > 0}
                got = usage.apportion(free, need, weights)
                for name, cores in got.items():
                    allocation[name][platform.name] += cores
                    need[name] -= cores
        return allocation


class AffinityRoundRobin(FirstLevelPolicy):
    """PA-based RR (Algorithm 2): fair shares, taken D_unit cores at a time by affinity."""

    name = "pa-rr"

    def preference(self, request: ShareRequest, claimant: str) -> list[str]:
        """The platforms ``claimant`` takes cores from, first choice first."""
        return _ranked_platforms(request, claimant)

    def fair_shares(self, request: ShareRequest) -> dict[str, int]:
        total = sum(p.cores for p in request.platforms)
        demand = {c.name: c.demand for c in request.claimants}
        return usage.apportion(total, demand, usage.effective_weights(request.claimants))

    def allocate(self, request: ShareRequest) -> Allocation:
        allocation = _empty(request)
        available = {p.name: p.cores for p in request.platforms}
        fair = self.fair_shares(request)
        missing = {name: share for name, share in fair.items() if share > 0}
        # Platforms only ever run out, so each user's preference list is
        # walked once: the pointer skips platforms that have no core left.
        ranked = {name: self.preference(request, name) for name in missing}
        cursor = dict.fromkeys(missing, 0)
        turn = [c.name for c in request.claimants if c.name in missing]
        unit = self.core_unit
        while turn:
            # Whole rounds in which no platform runs out and nobody's share
            # ends give every user in turn exactly D_unit of the platform it
            # is on: take them all at once (the same cores, in a fraction of
            # the turns), then play the round where something changes.
            on: dict[str, str] = {}
            takers: dict[str, int] = {}
            for name in turn:
                choices, at = ranked[name], cursor[name]
                while at < len(choices) and available[choices[at]] == 0:
                    at += 1
                cursor[name] = at
                if at < len(choices):
                    on[name] = choices[at]
                    takers[choices[at]] = takers.get(choices[at], 0) + 1
            rounds = min((available[p] // (n * unit) for p, n in takers.items()), default=0)
            if on:
                rounds = min(rounds, min(missing[name] // unit for name in on))
            if rounds > 0:
                for name, platform in on.items():
                    allocation[name][platform] += rounds * unit
                    missing[name] -= rounds * unit
                for platform, n in takers.items():
                    available[platform] -= rounds * n * unit
                turn = [name for name in turn if missing[name]]
            next_turn = []
            for name in turn:
                choices = ranked[name]
                at = cursor[name]
                while at < len(choices) and available[choices[at]] == 0:
                    at += 1
                cursor[name] = at
                if at == len(choices):
                    continue  # no platform has a core left: its share cannot be met
                platform = choices[at]
                d = min(unit, missing[name], available[platform])
                allocation[name][platform] += d
                available[platform] -= d
                missing[name] -= d
                if missing[name]:
                    next_turn.append(name)
            turn = next_turn
        return allocation


class _AffinityFirst(FirstLevelPolicy):
    """Algorithm 1: favoured platforms, each split equally among its users."""

    def favoured(
        self, request: ShareRequest, users: list[str], platforms: list[str]
    ) -> set[tuple[str, str]]:
        raise NotImplementedError

    def allocate(self, request: ShareRequest) -> Allocation:
        allocation = _empty(request)
        available = {p.name: p.cores for p in request.platforms}
        need = {c.name: c.demand for c in request.claimants}
        weights = usage.effective_weights(request.claimants)
        order = {c.name: i for i, c in enumerate(request.claimants)}
        while sum(available.values()) > 0 and sum(need.values()) > 0:
            users = [c.name for c in request.claimants if need[c.name] > 0]
            platforms = [p.name for p in request.platforms if available[p.name] > 0]
            chosen = self.favoured(request, users, platforms)
            if not chosen:  # line 9: cannot happen with top_count >= 1, kept as a guard
                chosen = self._median_fallback(request, users, platforms)
            assigned = {p: [u for u in users if (u, p) in chosen] for p in platforms}
            pending = {p: set(us) for p, us in assigned.items()}
            weight = {p: math.fsum(weights[u] for u in us) for p, us in assigned.items()}
            for user in sorted(users, key=lambda u: (need[u] / weights[u], order[u])):
                for platform in _ranked_platforms(request, user):
                    if (user, platform) not in chosen:
                        continue
                    if len(pending[platform]) == 1:
                        share = available[platform]
                    else:
                        share = math.floor(
                            available[platform] * weights[user] / weight[platform] + 1e-9
                        )
                    d = min(need[user], share)
                    pending[platform].discard(user)
                    weight[platform] -= weights[user]
                    if weight[platform] <= weights[user] * 1e-6:
                        # Heavy users leave first: re-add the light ones exactly
                        # rather than trust a difference of nearly equal sums.
                        weight[platform] = math.fsum(weights[u] for u in pending[platform])
                    allocation[user][platform] += d
                    available[platform] -= d
                    need[user] -= d
        return allocation

    def _median_fallback(
        self, request: ShareRequest, users: list[str], platforms: list[str]
    ) -> set[tuple[str, str]]:
        """Line 9: a platform goes to the users whose affinity to it is at least the median."""
        chosen = set()
        for platform in platforms:
            values = [_affinity(request, u, platform) for u in users]
            middle = statistics.median(values)
            chosen.update((u, platform) for u, v in zip(users, values, strict=True) if v >= middle)
        return chosen


class ProviderAffinityFirst(_AffinityFirst):
    """PAF: every platform favours its top k% users; a user keeps last run's platforms."""

    name = "paf"

    def favoured(self, request, users, platforms):
        order = {u: i for i, u in enumerate(users)}
        chosen = set()
        for platform in platforms:
            ranked = sorted(users, key=lambda u: (-_affinity(request, u, platform), order[u]))
            chosen.update((u, platform) for u in ranked[: top_count(self.top_percent, len(users))])
            # "we make a user continuously execute its tasks on a previously
            # assigned platform": last invocation's allocation stays favoured.
            chosen.update(
                (u, platform) for u in users if request.previous.get(u, {}).get(platform, 0) > 0
            )
        return chosen


class ApplicationAffinityFirst(_AffinityFirst):
    """AAF: every user favours its top k% platforms."""

    name = "aaf"

    def favoured(self, request, users, platforms):
        chosen = set()
        for user in users:
            ranked = [p for p in _ranked_platforms(request, user) if p in platforms]
            chosen.update((user, p) for p in ranked[: top_count(self.top_percent, len(ranked))])
        return chosen


def check_allocation(request: ShareRequest, allocation: Mapping[str, Mapping[str, int]]) -> None:
    """Raise SharingError if ``allocation`` gives a core twice or beyond a claimant's demand."""
    demand = {c.name: c.demand for c in request.claimants}
    for platform in request.platforms:
        given = sum(a.get(platform.name, 0) for a in allocation.values())
        if given > platform.cores:
            raise SharingError(f"{platform.name}: {given} cores given of {platform.cores}")
    for name, per_platform in allocation.items():
        if any(cores < 0 for cores in per_platform.values()):
            raise SharingError(f"{name}: a negative allocation")
        if sum(per_platform.values()) > demand.get(name, 0):
            raise SharingError(f"{name}: more cores than its demand")
