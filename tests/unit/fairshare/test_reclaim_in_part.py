"""reclaim.plan for a need of several requests: met in part when the loans cannot cover it."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.fairshare import reclaim


class TestInPart(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        # b's overage is 10 in 4-core loans: two may go (8), a third would leave it at 18.
        self.state = reclaim.PlatformState("p", 40, {"a": 10, "b": 20}, {"a": 0, "b": 30, "c": 10})
        self.loans = [reclaim.Loan(f"b{i}", "b", "p", 4, i) for i in range(5)]

    def test_one_request_is_met_whole_or_not_at_all(self) -> None:
        decision = reclaim.plan(self.state, self.loans, [reclaim.Demand("a", 10)])
        self.assertEqual([], decision.reclaims)
        self.assertEqual([10], [u.cores for u in decision.unserved])

    def test_several_requests_are_met_as_far_as_whole_ones_go(self) -> None:
        # a waits for 12 cores of 4-core VMs, and has room for 10: two VMs' worth.
        decision = reclaim.plan(self.state, self.loans, [reclaim.Demand("a", 12, unit=4)])
        self.assertEqual(["b4", "b3"], [r.victim.instance_uuid for r in decision.reclaims])
        (left,) = decision.unserved
        self.assertEqual(("a", 2), (left.project, left.cores))
        self.assertIn("only 8 of the 10 cores can be taken back on p", left.reason)

    def test_a_need_covered_whole_is_no_different(self) -> None:
        whole = reclaim.plan(self.state, self.loans, [reclaim.Demand("a", 8)])
        parts = reclaim.plan(self.state, self.loans, [reclaim.Demand("a", 8, unit=4)])
        self.assertEqual(whole, parts)

    @settings(max_examples=200, deadline=None)
    @given(
        st.integers(0, 24),
        st.integers(1, 40),
        st.sampled_from([1, 2, 4, 8]),
        st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=10),
    )
    def test_in_part_never_below_an_entitlement_nor_beyond_the_need(
        self, overage, need, unit, sizes
    ) -> None:
        loans, cores = [], 0
        for i, size in enumerate(sizes):
            if cores + size > overage:
                break
            loans.append(reclaim.Loan(f"b{i}", "b", "p", size, i))
            cores += size
        platform = reclaim.PlatformState(
            "p", 20 + overage + 40, {"a": 40, "b": 20}, {"a": 40 - 40, "b": 20 + overage, "c": 40}
        )
        decision = reclaim.plan(platform, loans, [reclaim.Demand("a", need, unit=unit)])
        taken = reclaim.total_cores(decision.reclaims)
        self.assertLessEqual(taken, overage)  # b keeps its 20
        left = sum(u.cores for u in decision.unserved)
        if taken and left:
            # Met in part: whole requests only, the rest reported unserved.
            self.assertEqual(0, (need - left) % unit)
            self.assertLessEqual(need - left, taken)
