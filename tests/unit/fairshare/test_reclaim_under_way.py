"""reclaim.plan with victims under way: their cores are already taken from their project."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.fairshare import reclaim


def pending_of(decision: reclaim.Decision) -> list[reclaim.Pending]:
    return [
        reclaim.Pending(r.victim.instance_uuid, r.beneficiary, r.victim.cores)
        for r in decision.reclaims
    ]


class TestUnderWay(testtools.TestCase):
    def test_a_later_run_never_takes_the_same_overage_twice(self) -> None:
        # b runs 30 cores of its 22: an overage of 8, in three 4-core loans.
        state = reclaim.PlatformState(
            "p", 40, {"a": 6, "b": 22, "c": 8, "d": 4}, {"a": 10, "b": 30, "c": 0, "d": 0}
        )
        loans = [reclaim.Loan(f"b{i}", "b", "p", 4, i) for i in range(3)]
        first = reclaim.plan(state, loans, [reclaim.Demand("c", 8)])
        self.assertEqual(["b2", "b1"], [r.victim.instance_uuid for r in first.reclaims])
        # The next run, both victims still running: d's need may not take b0,
        # which would leave b at 18 of its 22 once all three are gone.
        second = reclaim.plan(
            state, loans, [reclaim.Demand("c", 8), reclaim.Demand("d", 4)], pending_of(first)
        )
        self.assertEqual([], second.reclaims)
        self.assertEqual(["d"], [u.project for u in second.unserved])

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(st.integers(1, 8), min_size=1, max_size=8),
        st.integers(0, 16),
        st.lists(st.integers(0, 24), min_size=1, max_size=3),
        st.lists(st.integers(0, 24), min_size=1, max_size=3),
    )
    def test_runs_in_a_row_never_take_a_project_below_its_entitlement(
        self, sizes, entitled, first_needs, later_needs
    ) -> None:
        owned = sum(sizes)
        beneficiaries = [f"n{i}" for i in range(max(len(first_needs), len(later_needs)))]
        room = 24
        entitled_map = {"b": min(entitled, owned), **{n: room for n in beneficiaries}}
        use = {"b": owned, **{n: 0 for n in beneficiaries}}
        state = reclaim.PlatformState("p", owned, entitled_map, use)
        loans = [reclaim.Loan(f"b{i}", "b", "p", size, i) for i, size in enumerate(sizes)]
        pending: list[reclaim.Pending] = []
        for needs in (first_needs, later_needs):
            demands = [
                reclaim.Demand(n, need)
                for n, need in zip(beneficiaries, needs, strict=False)
                if need
            ]
            decision = reclaim.plan(state, loans, demands, pending)
            pending += pending_of(decision)
            taken = sum(p.cores for p in pending)
            self.assertGreaterEqual(owned - taken, entitled_map["b"])
            self.assertEqual(len(pending), len({p.instance_uuid for p in pending}))
