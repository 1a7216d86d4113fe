"""What production fair-share schedulers do, as first-level policies of the same simulator.

None of them knows that one application runs 2.9x faster on one platform
while another barely cares; each is reduced here to what it does with
queues of one-core tasks on several platforms:

* :class:`EqualCores` ("equal-cores"): every user the same number of cores
  (its weight's part, water-filled), taken one core at a time from the
  platforms in the order they are offered. This is what DRF (YARN),
  Volcano's proportion and drf plugins, and Kueue's fair sharing reduce to
  when every task asks for one core: one resource, so the dominant share is
  the core count, and a flavor (platform) is tried in its listed order.
* :class:`BillingWeights` ("billing-weights"): Slurm's
  ``TRESBillingWeights``: a core of each platform is billed by one static
  factor (here the platform's mean speed over the applications, relative to
  the others: what an operator would set from benchmarks), users get equal
  billed shares, and each user sends its tasks to the platform where it
  runs fastest (users pick their partition) while it has cores.
* :class:`DecayedUsage` ("decayed-usage"): Slurm's multifactor fair-share
  factor with a usage half-life, Kueue's admission fair sharing and
  Synergy: equal cores weighted by 2 ** (-U/S), usage charged in plain
  core-seconds, platforms in offer order.
"""

from __future__ import annotations

import statistics

from hpc_nova_scheduler.core.sharing import Allocation, ShareRequest
from hpc_nova_scheduler.fairshare import usage
from hpc_nova_scheduler.fairshare.first_level import AffinityRoundRobin


class EqualCores(AffinityRoundRobin):
    """Equal cores per user, platforms in offer order, usage ignored."""

    name = "equal-cores"
    usage_charge = usage.CORE_SECONDS

    def __init__(self, top_percent: int = 50, core_unit: int = 1) -> None:
        # One core at a time, whatever D_unit the operator set for seed 002.
        super().__init__(top_percent=top_percent, core_unit=1)

    def preference(self, request: ShareRequest, claimant: str) -> list[str]:
        return [p.name for p in request.platforms]

    def fair_shares(self, request: ShareRequest) -> dict[str, int]:
        total = sum(p.cores for p in request.platforms)
        demand = {c.name: c.demand for c in request.claimants}
        return usage.apportion(total, demand, {c.name: c.weight for c in request.claimants})


class DecayedUsage(EqualCores):
    """Equal cores lowered by decayed core-seconds of usage (Slurm's half-life)."""

    name = "decayed-usage"

    def fair_shares(self, request: ShareRequest) -> dict[str, int]:
        return AffinityRoundRobin.fair_shares(self, request)


class BillingWeights(AffinityRoundRobin):
    """Equal billed shares, one static billing factor per platform, users on their fastest."""

    name = "billing-weights"
    usage_charge = usage.CORE_SECONDS

    def __init__(self, top_percent: int = 50, core_unit: int = 1) -> None:
        super().__init__(top_percent=top_percent, core_unit=1)

    @staticmethod
    def billing(request: ShareRequest) -> dict[str, float]:
        """Each platform's billing factor: its mean speed (1 / run time) over the users,
        relative to the mean over platforms; 1 where nothing ran."""
        speed = {}
        for platform in request.platforms:
            rates = [
                1.0 / times[platform.name]
                for times in request.solo.values()
                if times.get(platform.name)
            ]
            speed[platform.name] = statistics.fmean(rates) if rates else None
        known = [s for s in speed.values() if s]
        mean = statistics.fmean(known) if known else 1.0
        return {name: (s / mean if s else 1.0) for name, s in speed.items()}

    def preference(self, request: ShareRequest, claimant: str) -> list[str]:
        times = request.solo.get(claimant, {})
        order = [p.name for p in request.platforms]
        return sorted(order, key=lambda p: times.get(p, float("inf")))

    def allocate(self, request: ShareRequest) -> Allocation:
        bill = self.billing(request)
        allocation = {c.name: {p.name: 0 for p in request.platforms} for c in request.claimants}
        available = {p.name: p.cores for p in request.platforms}
        need = {c.name: c.demand for c in request.claimants}
        weights = {c.name: c.weight for c in request.claimants}
        budget_total = sum(p.cores * bill[p.name] for p in request.platforms)
        # Equal billed shares, water-filled over the users with demand: a
        # user that needs less leaves its budget to the others.
        billed = dict.fromkeys(need, 0.0)
        active = [c.name for c in request.claimants if need[c.name] > 0]
        ranked = {name: self.preference(request, name) for name in active}
        while active and any(available.values()):
            weight_left = sum(weights[n] for n in active)
            spent = sum(billed[n] for n in active)
            budget_left = budget_total - sum(billed.values())
            level = {n: (budget_left + spent) * weights[n] / weight_left for n in active}
            progressed = False
            still = []
            for name in active:
                platform = next((p for p in ranked[name] if available[p] > 0), None)
                if platform is None:
                    continue
                if billed[name] + bill[platform] > level[name] + 1e-9:
                    still.append(name)
                    continue
                allocation[name][platform] += 1
                available[platform] -= 1
                billed[name] += bill[platform]
                need[name] -= 1
                progressed = True
                if need[name] > 0:
                    still.append(name)
            active = still
            if not progressed:
                break
        # Slurm lets idle cores run whoever has work: the rest go round robin.
        active = [c.name for c in request.claimants if need[c.name] > 0]
        while active and any(available.values()):
            still = []
            for name in active:
                platform = next((p for p in ranked[name] if available[p] > 0), None)
                if platform is None:
                    continue
                allocation[name][platform] += 1
                available[platform] -= 1
                need[name] -= 1
                if need[name] > 0:
                    still.append(name)
            active = still
        return allocation
