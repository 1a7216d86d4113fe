"""How the filter walks Nova through a plan, round by round."""

from __future__ import annotations

import types

import testtools

from hpc_nova_scheduler.core.algorithm import Plan
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.scheduler import placement_filter


def hs(name: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(host=name, nodename=name)


class TestRounds(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.filter = placement_filter.HpcPlacementFilter()
        plan = Plan(("a", "a", "b"), "g", ("r",))
        self.state = placement_filter._RequestState(
            ApplicationProfile(), "app", plan=plan, remaining=plan.vms_per_host()
        )
        self.hosts = {name: hs(name) for name in "abc"}

    def round(self, uuid: str, order: str) -> list[str]:
        spec = types.SimpleNamespace(instance_uuid=uuid)
        kept = self.filter._select(self.state, [self.hosts[n] for n in order], spec)
        return [h.host for h in kept]

    def test_nova_chooses_the_order_the_plan_fixes_the_counts(self) -> None:
        self.assertEqual(["a", "b"], self.round("u1", "abc"))
        # Nova put b first: u1 went to b, so only a keeps planned VMs.
        self.assertEqual(["a"], self.round("u2", "bac"))
        self.assertEqual(["a"], self.round("u3", "ab"))
        self.assertEqual({"a": 0, "b": 0}, self.state.remaining)
        self.assertIsNone(self.state.pending)

    def test_a_repeated_round_gets_the_same_answer(self) -> None:
        self.round("u1", "abc")
        self.round("u2", "abc")
        self.assertEqual(["b"], self.round("u3", "ab"))
        # Nova filters the last instance again when it looks for alternates.
        self.assertEqual(["b"], self.round("u3", "ab"))
        self.assertEqual({"a": 0, "b": 0}, self.state.remaining)

    def test_a_choice_off_the_plan_refuses_the_rest(self) -> None:
        self.round("u1", "abc")
        self.assertEqual([], self.round("u2", "cab"))
        self.assertEqual("off plan", self.state.refusal)

    def test_single_vm_requests_are_decided_at_once(self) -> None:
        plan = Plan(("c",), "g", ("r",))
        state = placement_filter._RequestState(
            ApplicationProfile(), "app", plan=plan, remaining=plan.vms_per_host()
        )
        spec = types.SimpleNamespace(instance_uuid="only")
        kept = self.filter._select(state, [self.hosts[n] for n in "abc"], spec)
        self.assertEqual(["c"], [h.host for h in kept])
        self.assertEqual({"c": 0}, state.remaining)

    def test_requests_left_to_nova(self) -> None:
        state = placement_filter._RequestState(ApplicationProfile(), "app", avoid=frozenset({"b"}))
        spec = types.SimpleNamespace(instance_uuid="x")
        self.assertEqual(
            ["a", "c"],
            [h.host for h in self.filter._select(state, list(self.hosts.values()), spec)],
        )
