"""A first level of our own: PA-based RR whose shares count best-platform-equivalent cores.

Seed 002 judges fairness by each user's throughput against what it would
get alone on its fastest platform, but PA-based RR equalises raw cores: a
user whose affinity sends it to a platform where it runs slowly gets as
many cores as one on its fastest, and less of what fairness measures.
:class:`EquivalentRoundRobin` keeps Algorithm 2's choice of platform (the
highest affinity with cores left, D_unit cores a turn) and changes what a
share counts: a core of platform P is worth r_best(K) / r(K, P) of a core
to application K, the same unit in which usage is charged
(:func:`.usage.charge`). Turns go to the user with the least worth per
effective weight (progressive filling), so cores are shared max-min fairly
in that unit: a user on slow cores gets more of them.

Being served later can leave a user more of a slower platform than it
lost of a faster one, so, unlike PA-based RR, more usage is not promised
to shrink a share (hypothesis finds counter-examples in both cores and
worth); weights and usage still order the turns.

It is not in the paper: ``fairshare simulate`` shows it beside PA-based RR
and the anchors (``--policy all``, or ``equivalent-rr/rpa/maf``).
nova-scheduler does not offer it: ``[hpc_scheduler] fairness_policy``
takes seed 002's first levels only, as the product's description says.
"""

from __future__ import annotations

import heapq

from hpc_nova_scheduler.core.sharing import Allocation, ShareRequest
from hpc_nova_scheduler.fairshare import usage
from hpc_nova_scheduler.fairshare.first_level import AffinityRoundRobin


class EquivalentRoundRobin(AffinityRoundRobin):
    """Progressive filling of best-equivalent cores, platforms by affinity."""

    name = "equivalent-rr"

    @staticmethod
    def worth(request: ShareRequest, claimant: str) -> dict[str, float]:
        """What a core of each platform is worth to ``claimant`` (1 on its fastest)."""
        solo = request.solo.get(claimant, {})
        known = {p: s for p, s in solo.items() if s and s > 0}
        if not known:
            return {p.name: 1.0 for p in request.platforms}
        best = min(known.values())
        return {
            p.name: (best / known[p.name] if p.name in known else 1.0) for p in request.platforms
        }

    def allocate(self, request: ShareRequest) -> Allocation:
        allocation = {c.name: {p.name: 0 for p in request.platforms} for c in request.claimants}
        available = {p.name: p.cores for p in request.platforms}
        weights = usage.effective_weights(request.claimants)
        need = {c.name: c.demand for c in request.claimants}
        order = {c.name: i for i, c in enumerate(request.claimants)}
        ranked = {name: self.preference(request, name) for name, want in need.items() if want}
        worth = {name: self.worth(request, name) for name in ranked}
        cursor = dict.fromkeys(ranked, 0)
        got = dict.fromkeys(ranked, 0.0)
        # Keyed like a divisor method, by the worth a user would have with one
        # more core: a heavy user's first core comes after everyone's.
        heap = [(1.0 / weights[name], order[name], name) for name in ranked]
        heapq.heapify(heap)
        while heap:
            _, rank, name = heapq.heappop(heap)
            choices, at = ranked[name], cursor[name]
            while at < len(choices) and available[choices[at]] == 0:
                at += 1
            cursor[name] = at
            if at == len(choices):
                continue  # every platform is full: nobody after it gets more either
            platform = choices[at]
            d = min(self.core_unit, need[name], available[platform])
            allocation[name][platform] += d
            available[platform] -= d
            need[name] -= d
            got[name] += d * worth[name][platform]
            if need[name]:
                heapq.heappush(heap, ((got[name] + 1.0) / weights[name], rank, name))
        return allocation
