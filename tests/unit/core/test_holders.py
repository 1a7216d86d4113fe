"""The holder rule: where a recorded VM is, and which host it holds."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core import holders
from hpc_nova_scheduler.core.holders import NovaInstance, Whereabouts


def locate(instance=None, *, seen=None, scheduling=False, host="h1", node=None):
    return holders.locate(host, node, seen=seen, instance=instance, scheduling=scheduling)


class TestLocate(testtools.TestCase):
    def test_a_host_state_that_lists_it_decides(self) -> None:
        verdict = locate(NovaInstance("h2", "h2", deleted=True), seen="h3")
        self.assertEqual((Whereabouts.SEEN, "h3"), (verdict.whereabouts, verdict.key))

    def test_being_scheduled_holds_the_recorded_host(self) -> None:
        verdict = locate(None, scheduling=True)
        self.assertEqual((Whereabouts.IN_FLIGHT, "h1"), (verdict.whereabouts, verdict.key))

    def test_in_no_database_is_gone(self) -> None:
        self.assertTrue(locate(None).gone)

    def test_deleted_or_being_deleted_is_gone(self) -> None:
        self.assertTrue(locate(NovaInstance("h1", "h1", deleted=True)).gone)
        self.assertTrue(locate(NovaInstance("h1", "h1", vm_state="deleted")).gone)

    def test_building_without_a_host_holds_the_recorded_host(self) -> None:
        verdict = locate(NovaInstance(None, None, vm_state="building"))
        self.assertEqual((Whereabouts.IN_FLIGHT, "h1"), (verdict.whereabouts, verdict.key))

    def test_a_failed_build_is_gone(self) -> None:
        self.assertTrue(locate(NovaInstance(None, None, vm_state="error")).gone)

    def test_shelved_offloaded_holds_nothing_and_keeps_its_record(self) -> None:
        verdict = locate(NovaInstance(None, None, vm_state="shelved_offloaded"))
        self.assertEqual((Whereabouts.PARKED, None), (verdict.whereabouts, verdict.key))
        self.assertFalse(verdict.gone)

    def test_claimed_by_its_compute_before_the_host_state_heard_holds_it(self) -> None:
        # The window of issue 43: the compute set instance.host, no host
        # state lists the VM yet. It holds its host, whatever its vm_state.
        for state in ("building", "active", "error", "stopped"):
            verdict = locate(NovaInstance("h1", "h1", vm_state=state))
            self.assertEqual((Whereabouts.ON_COMPUTE, "h1"), (verdict.whereabouts, verdict.key))

    def test_on_another_host_holds_that_host(self) -> None:
        verdict = locate(NovaInstance("h2", "n7", vm_state="active"))
        self.assertEqual(
            (Whereabouts.MOVED, "h2/n7", "h2", "n7"),
            (verdict.whereabouts, verdict.key, verdict.host, verdict.nodename),
        )

    def test_another_node_of_the_same_host_is_a_move(self) -> None:
        verdict = locate(NovaInstance("h1", "n2", vm_state="active"), node="n1")
        self.assertEqual((Whereabouts.MOVED, "h1/n2"), (verdict.whereabouts, verdict.key))
        # A record that never knew its node is where its host is.
        verdict = locate(NovaInstance("h1", "n2", vm_state="active"))
        self.assertEqual((Whereabouts.ON_COMPUTE, "h1"), (verdict.whereabouts, verdict.key))


STATES = st.sampled_from(
    ["building", "active", "stopped", "error", "deleted", "shelved_offloaded", None]
)
INSTANCES = st.one_of(
    st.none(),
    st.builds(
        NovaInstance,
        host=st.sampled_from([None, "h1", "h2"]),
        nodename=st.sampled_from([None, "h1", "h2", "n1"]),
        deleted=st.booleans(),
        vm_state=STATES,
    ),
)


class TestRuleProperties(testtools.TestCase):
    @settings(max_examples=300, deadline=None)
    @given(
        instance=INSTANCES,
        seen=st.sampled_from([None, "h1", "h2"]),
        scheduling=st.booleans(),
    )
    def test_let_go_only_when_nova_says_gone(self, instance, seen, scheduling) -> None:
        verdict = locate(instance, seen=seen, scheduling=scheduling)
        alive = (
            seen is not None
            or scheduling
            or (
                instance is not None
                and not instance.deleted
                and instance.vm_state != "deleted"
                and not (instance.host is None and instance.vm_state == "error")
            )
        )
        self.assertEqual(not alive, verdict.gone)
        # A VM on a compute always holds that compute's host.
        if seen is None and not scheduling and alive and instance.host:
            self.assertEqual(instance.host, verdict.key.split("/")[0])
        # Holding a host and being gone exclude each other.
        self.assertFalse(verdict.gone and verdict.key is not None)
