"""How the filter walks Nova through a plan, round by round."""

from __future__ import annotations

import logging
import types
import uuid

import fixtures
import testtools
from oslo_config import fixture as config_fixture

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.algorithm import Plan
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.scheduler import placement_filter
from hpc_nova_scheduler.scheduler.request import PLAN_WEIGHER, Request, RequestState, request_state
from tests import db_backends
from tests.unit.scheduler import concurrency_harness as harness


def hs(name: str, instances: int | None = None) -> types.SimpleNamespace:
    return types.SimpleNamespace(host=name, nodename=name, num_instances=instances)


class TestRounds(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.filter = placement_filter.HpcPlacementFilter()
        plan = Plan(("a", "a", "b"), "g", ("r",))
        self.state = RequestState(
            ApplicationProfile(), "app", plan=plan, remaining=plan.vms_per_host()
        )
        self.hosts = {name: hs(name) for name in "abc"}

    def round(self, uuid: str, order: str) -> list[str]:
        spec = Request(instance_uuid=uuid)
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
        state = RequestState(ApplicationProfile(), "app", plan=plan, remaining=plan.vms_per_host())
        spec = Request(instance_uuid="only")
        kept = self.filter._select(state, [self.hosts[n] for n in "abc"], spec)
        self.assertEqual(["c"], [h.host for h in kept])
        self.assertEqual({"c": 0}, state.remaining)

    def test_requests_left_to_nova(self) -> None:
        state = RequestState(ApplicationProfile(), "app", avoid=frozenset({"b"}))
        spec = Request(instance_uuid="x")
        self.assertEqual(
            ["a", "c"],
            [h.host for h in self.filter._select(state, list(self.hosts.values()), spec)],
        )


class TestAlternatesInRounds(testtools.TestCase):
    """Spares ride along every round; the planned counts stay exact."""

    def setUp(self) -> None:
        super().setUp()
        self.filter = placement_filter.HpcPlacementFilter()
        plan = Plan(("a", "a", "b"), "g", ("r",))
        self.state = RequestState(
            ApplicationProfile(), "app", plan=plan, remaining=plan.vms_per_host(), spares=("s",)
        )
        self.hosts = {name: hs(name, 0) for name in "abs"}

    def round(self, uuid: str, order: str) -> list[str]:
        spec = Request(instance_uuid=uuid)
        kept = self.filter._select(self.state, [self.hosts[n] for n in order], spec)
        return [h.host for h in kept]

    def test_spares_are_offered_behind_the_planned_hosts(self) -> None:
        self.assertEqual(["a", "b", "s"], self.round("u1", "abs"))
        self.assertEqual(frozenset("ab"), self.state.planned_now)
        self.hosts["a"].num_instances = 1
        self.assertEqual(["a", "b", "s"], self.round("u2", "abs"))
        self.hosts["b"].num_instances = 1
        # The last planned VM goes to a; the spare stays for the alternates.
        self.assertEqual(["a", "s"], self.round("u3", "bas"))
        self.assertEqual({"a": 0, "b": 0}, self.state.remaining)
        self.assertEqual(frozenset("a"), self.state.planned_now)
        # Nova's alternates round repeats the last instance: same answer.
        self.assertEqual(["a", "s"], self.round("u3", "as"))

    def test_the_host_that_gained_an_instance_is_the_one_nova_claimed(self) -> None:
        self.round("u1", "abs")
        # Placement refused a; Nova claimed b, which gained the instance.
        self.hosts["b"].num_instances = 1
        self.round("u2", "abs")
        self.assertEqual({"a": 2, "b": 0}, self.state.remaining)

    def test_a_vm_claimed_on_a_spare_abandons_the_plan(self) -> None:
        self.round("u1", "abs")
        self.hosts["s"].num_instances = 1
        self.assertEqual([], self.round("u2", "sab"))
        self.assertEqual("off plan", self.state.refusal)


class TestThresholdCheck(testtools.TestCase):
    def test_alpha_below_beta_is_logged_once_and_not_refused(self) -> None:
        conf = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        conf.config(cache_threshold=50.0, sync_cache_threshold=61.5, group="hpc_scheduler")
        logs = self.useFixture(fixtures.FakeLogger(level=logging.ERROR))
        placement_filter.HpcPlacementFilter()
        placement_filter.HpcPlacementFilter()
        self.assertEqual(1, logs.output.count("alpha must be >= beta"), logs.output)
        self.assertIn("sync_cache_threshold has no effect", logs.output)

    def test_consistent_thresholds_say_nothing(self) -> None:
        logs = self.useFixture(fixtures.FakeLogger(level=logging.ERROR))
        placement_filter.HpcPlacementFilter()
        self.assertEqual("", logs.output)


class _Occupancy:
    """Placement's consumers per host, as a test sets them."""

    def __init__(self) -> None:
        self.by_host: dict[str, set[str]] = {}

    def foreign(self, host_states, allowed: set[str]) -> set[str]:
        return {hs.host for hs in host_states if self.by_host.get(hs.host, set()) - allowed}


class TestExtremeHostsInPlacement(db_backends.DatabaseTestCase):
    """VMs only Placement knows of (requests left to Nova) keep ExtremeHPC away."""

    def setUp(self) -> None:
        super().setUp()
        from nova import objects

        objects.register_all()
        harness.prepare_database(self.db_url)
        # These rounds take the first host as Nova would without the plan
        # weigher, which functional tests in this process may have loaded.
        if PLAN_WEIGHER.is_set():
            PLAN_WEIGHER.clear()
            self.addCleanup(PLAN_WEIGHER.set)
        conf = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        conf.config(connection=self.db_url, fallback_connection="", group="hpc_scheduler")
        self.request = harness.Request(
            0, (str(uuid.uuid4()), str(uuid.uuid4())), AppClass.EXTREME_HPC, 47.0, "IS"
        )
        self.nova = harness.FakeNova([self.request])
        self.filter = harness.new_filter(self.nova)
        self.addCleanup(harness.dispose, self.filter)
        self.occupancy = _Occupancy()
        # The filter's parts share its occupancy; what it answers is the test's.
        self.filter._occupancy.foreign = self.occupancy.foreign
        self.hosts = harness.host_states()

    def rounds(self, before_last=None) -> list[str]:
        spec = harness.request_spec(self.request)
        candidates, chosen = list(self.hosts), []
        for number, instance_uuid in enumerate(self.request.uuids):
            if number == len(self.request.uuids) - 1 and before_last:
                before_last()
            spec.instance_uuid = instance_uuid
            returned = self.filter.filter_all(candidates, spec)
            if not returned:
                return []
            chosen.append(returned[0].host)
            candidates = [returned[0], *[hs for hs in returned if hs is not returned[0]]]
        return chosen

    def test_a_host_placement_shows_busy_is_not_taken(self) -> None:
        first = self.rounds()
        self.assertEqual(2, len(first))
        # Start again with that host busy in Placement only.
        self.database.release_claims([c.claim_id for c in self.database.live_claims()])
        self.database.forget_running(list(self.request.uuids))
        self.occupancy.by_host = {first[0]: {"stranger"}}
        second = self.rounds()
        self.assertEqual(2, len(second))
        self.assertNotIn(first[0], second)

    def test_a_vm_claimed_meanwhile_fails_the_request(self) -> None:
        def stranger_arrives() -> None:
            host = self.database.live_claims()[0].host
            self.occupancy.by_host = {host: {"stranger"}}

        self.assertEqual([], self.rounds(before_last=stranger_arrives))
        self.assertEqual([], self.database.live_claims())


class TestRoundsAsNovaRunsThem(db_backends.DatabaseTestCase):
    """Nova's own filter handler asks the filter which rounds it runs."""

    def setUp(self) -> None:
        super().setUp()
        from nova import objects
        from nova.scheduler import filters as nova_filters

        objects.register_all()
        harness.prepare_database(self.db_url)
        conf = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        conf.config(connection=self.db_url, fallback_connection="", group="hpc_scheduler")
        self.hpc = harness.Request(
            0, tuple(str(uuid.uuid4()) for _ in range(3)), AppClass.SYNC_HPC, 10.0, "LU"
        )
        self.filter = harness.new_filter(harness.FakeNova([self.hpc]))
        self.addCleanup(harness.dispose, self.filter)
        self.handler = nova_filters.HostFilterHandler()
        self.calls = 0
        filter_all = self.filter.filter_all

        def counted(hosts, spec):
            self.calls += 1
            return filter_all(hosts, spec)

        self.filter.filter_all = counted

    def schedule(self, spec, uuids) -> list[str]:
        hosts = harness.host_states()
        chosen = []
        for index, instance_uuid in enumerate(uuids):
            spec.instance_uuid = instance_uuid
            hosts = self.handler.get_filtered_objects([self.filter], hosts, spec, index)
            chosen.append(hosts[0].host)
            hosts = [hosts[0], *hosts[1:]]
        return chosen

    def test_a_request_left_to_nova_is_settled_in_its_first_round(self) -> None:
        plain = harness.request_spec(self.hpc)
        plain.flavor.extra_specs = {}
        self.schedule(plain, [str(uuid.uuid4()) for _ in range(3)])
        self.assertEqual(1, self.calls)
        # The next request of the same thread is planned, every round.
        chosen = self.schedule(harness.request_spec(self.hpc), self.hpc.uuids)
        self.assertEqual(4, self.calls)
        self.assertEqual(1, len({harness.host_groups()[host] for host in chosen}))
        # And a plain one after it is settled at once again.
        self.schedule(plain, [str(uuid.uuid4()) for _ in range(2)])
        self.assertEqual(5, self.calls)


class TestPreemptibleFlavor(db_backends.DatabaseTestCase):
    """``hpc:preemptible`` alone makes a request the plugin plans (and records)."""

    def setUp(self) -> None:
        super().setUp()
        from nova import objects

        objects.register_all()
        harness.prepare_database(self.db_url)
        conf = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        conf.config(connection=self.db_url, fallback_connection="", group="hpc_scheduler")
        self.request = harness.Request(0, (str(uuid.uuid4()),), AppClass.NON_HPC, 0.0, "unused")
        self.filter = harness.new_filter(harness.FakeNova([self.request]))
        self.addCleanup(harness.dispose, self.filter)

    def spec(self, value: str):
        spec = harness.request_spec(self.request)
        spec.flavor.extra_specs = {"hpc:preemptible": value}
        return spec

    def test_a_preemptible_flavor_is_planned_as_non_hpc(self) -> None:
        spec = self.spec("true")
        self.assertTrue(self.filter.filter_all(harness.host_states(), spec))
        state = request_state(spec)
        self.assertTrue(state.preemptible)
        self.assertIs(AppClass.NON_HPC, state.profile.app_class)
        self.assertIsNotNone(state.plan)

    def test_a_bad_value_that_bypassed_nova_api_refuses_the_request(self) -> None:
        spec = self.spec("maybe")
        with self.assertLogs("hpc_nova_scheduler.scheduler.placement_filter", "ERROR") as logs:
            self.assertEqual([], self.filter.filter_all(harness.host_states(), spec))
        self.assertIn("invalid hpc:preemptible (expected true or false", logs.output[0])
        self.assertIn("hpc:preemptible", request_state(spec).refusal)
