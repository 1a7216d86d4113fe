"""Which hosts are due, and the fewest VMs that bring one back within its limit."""

from __future__ import annotations

import datetime
import itertools

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.measured import trigger

T0 = datetime.datetime(2026, 11, 29, 12, 0, 0)

residents = st.lists(
    st.builds(
        trigger.Resident,
        instance_uuid=st.uuids().map(str),
        score=st.floats(0, 80),
        movable=st.booleans(),
        suspect=st.booleans(),
    ),
    max_size=7,
    unique_by=lambda r: r.instance_uuid,
)


def at(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


class TestFewestToMove(testtools.TestCase):
    @given(residents, st.floats(0, 100))
    def test_the_fewest_movable_that_bring_the_host_within(self, found, limit) -> None:
        total = sum(r.score for r in found)
        chosen = trigger.fewest_to_move(found, total, limit)
        self.assertTrue(all(r.movable for r in chosen))
        self.assertEqual(len(chosen), len({r.instance_uuid for r in chosen}))
        movable = [r for r in found if r.movable]
        # Brute force: the smallest subset of the movable ones that suffices.
        smallest = next(
            (
                size
                for size in range(len(movable) + 1)
                for subset in itertools.combinations(movable, size)
                if total - sum(r.score for r in subset) <= limit + 1e-9 * max(1.0, total)
            ),
            None,
        )
        if total <= limit or smallest is None:
            self.assertEqual([], chosen)
        else:
            self.assertLessEqual(
                total - sum(r.score for r in chosen), limit + 1e-9 * max(1.0, total)
            )
            self.assertEqual(smallest, len(chosen))

    def test_suspects_go_first_when_that_moves_no_more(self) -> None:
        loud = trigger.Resident("a", 40.0)
        suspect = trigger.Resident("b", 30.0, suspect=True)
        quiet = trigger.Resident("c", 5.0)
        # 75 over 60: either of the two loud ones is enough; the suspect goes.
        self.assertEqual([suspect], trigger.fewest_to_move([loud, suspect, quiet], 75.0, 60.0))
        # 75 over 30: two must go either way; the suspect and the loudest.
        found = trigger.fewest_to_move([loud, suspect, quiet], 75.0, 30.0)
        self.assertEqual({"a", "b"}, {r.instance_uuid for r in found})
        # A quiet suspect that is not enough alone is not worth one more move.
        quiet_suspect = trigger.Resident("d", 5.0, suspect=True)
        self.assertEqual([loud], trigger.fewest_to_move([loud, quiet_suspect], 45.0, 10.0))

    def test_extreme_vms_never_move_and_hopeless_hosts_move_nothing(self) -> None:
        extreme = trigger.Resident("x", 90.0, movable=False)
        small = trigger.Resident("s", 10.0)
        self.assertEqual([], trigger.fewest_to_move([extreme, small], 100.0, 60.0))

    def test_limits(self) -> None:
        limits = trigger.Limits(alpha=200.0, beta=60.0)
        self.assertEqual(60.0, limits.of(runs_sync=True))
        self.assertEqual(200.0, limits.of(runs_sync=False))
        self.assertEqual(50.0, trigger.Limits(alpha=50.0, beta=60.0).of(runs_sync=True))


class TestWatch(testtools.TestCase):
    def test_due_after_sustain_then_cooldown(self) -> None:
        watch = trigger.Watch(sustain=30.0, cooldown=100.0)
        self.assertEqual([], watch.observe({"a": True, "b": False}, at(0)))
        self.assertEqual([], watch.observe({"a": True}, at(20)))
        self.assertEqual(["a"], watch.observe({"a": True}, at(30)))
        watch.acted("a", at(30))
        # Over again for longer than sustain, but cooling down.
        self.assertEqual([], watch.observe({"a": True}, at(70)))
        self.assertEqual([], watch.observe({"a": True}, at(120)))
        self.assertEqual(["a"], watch.observe({"a": True}, at(130)))

    def test_a_dip_or_a_stale_report_starts_sustain_again(self) -> None:
        watch = trigger.Watch(sustain=30.0, cooldown=0.0)
        watch.observe({"a": True}, at(0))
        watch.observe({"a": False}, at(10))
        self.assertEqual([], watch.observe({"a": True}, at(35)))
        self.assertEqual(["a"], watch.observe({"a": True}, at(65)))
        watch.acted("a", at(65))
        watch.observe({"a": True}, at(70))
        watch.observe({}, at(80))  # its report went stale
        self.assertEqual([], watch.observe({"a": True}, at(100)))

    @given(st.lists(st.tuples(st.booleans(), st.floats(0, 50)), max_size=20))
    def test_a_host_is_due_only_over_its_limit_for_sustain(self, looks) -> None:
        watch = trigger.Watch(sustain=30.0, cooldown=60.0)
        now, since, acted = 0.0, None, None
        for over, step in looks:
            now += step
            due = watch.observe({"h": over}, at(now))
            since = (since if since is not None else now) if over else None
            expected = over and now - since >= 30.0 and (acted is None or now - acted >= 60.0)
            self.assertEqual(["h"] if expected else [], due)
            if due:
                watch.acted("h", at(now))
                acted, since = now, None
