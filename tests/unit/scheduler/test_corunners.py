"""Co-runner knowledge: records, host states and Nova's answers combined."""

from __future__ import annotations

import types

import fixtures
import testtools

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import corunners, flavor_records


class RecordedNova:
    """Nova's answers for the instances a test knows about (Nova's database
    cannot show an instance between placement and its compute claim in the
    functional harness, where builds complete synchronously)."""

    def __init__(self, instances: dict[str, types.SimpleNamespace]) -> None:
        self.instances = instances
        self.asked: list[set[str]] = []

    def get(self, uuids_by_cell):
        wanted = {u for uuids in uuids_by_cell.values() for u in uuids}
        self.asked.append(wanted)
        return {u: self.instances[u] for u in wanted if u in self.instances}

    def scheduling(self, uuids):
        return set(uuids) & self.building

    building: set[str] = set()


def host_state(name: str, *uuids: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        host=name, nodename=name, cell_uuid=None, instances=dict.fromkeys(uuids)
    )


def instance(
    uuid: str,
    *,
    host: str | None,
    vm_state: str = "active",
    deleted: bool = False,
    specs: dict | None = None,
) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        uuid=uuid,
        host=host,
        vm_state=vm_state,
        deleted=deleted,
        project_id="p",
        flavor=types.SimpleNamespace(extra_specs=specs or {}),
    )


class TestCollect(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        path = self.useFixture(fixtures.TempDir()).join("hpc.sqlite")
        self.database = db_api.Database(f"sqlite:///{path}")
        self.addCleanup(self.database.dispose)
        self.database.sync()

    def record(
        self,
        uuid: str,
        host: str,
        app_class: AppClass = AppClass.SYNC_HPC,
        request_id: str | None = "app",
    ) -> None:
        self.database.record_running(
            [db_api.RunningRecord(uuid, host, app_class, 10.0, "LU", request_id=request_id)]
        )

    def test_vm_placed_by_another_scheduler_counts_before_its_compute_reports(self) -> None:
        self.record("in-flight", "n1")
        nova = RecordedNova({"in-flight": instance("in-flight", host=None, vm_state="building")})
        knowledge = corunners.CoRunnerSource(nova).collect([host_state("n1")], self.database)
        self.assertEqual(["in-flight"], [vm.uuid for vm in knowledge.vms["n1"]])
        self.assertEqual(10.0, knowledge.vms["n1"][0].cache_score)
        self.assertEqual([], knowledge.stale)

    def test_deleted_and_failed_vms_are_stale_moved_ones_follow(self) -> None:
        for uuid in ("deleted", "failed", "moved", "vanished"):
            self.record(uuid, "n1")
        moved = instance("moved", host="n2")
        moved.node = "n2"
        nova = RecordedNova(
            {
                "deleted": instance("deleted", host="n1", deleted=True),
                "failed": instance("failed", host=None, vm_state="error"),
                "moved": moved,
            }
        )
        knowledge = corunners.CoRunnerSource(nova).collect([host_state("n1")], self.database)
        self.assertEqual([], knowledge.vms["n1"])
        self.assertEqual({"deleted", "failed", "vanished"}, set(knowledge.stale))
        # Rebuilt elsewhere (an alternate host): the record keeps its application.
        self.assertEqual(
            [("moved", "n2", "n2", "app")],
            [(vm.instance_uuid, vm.host, vm.nodename, vm.request_id) for vm in knowledge.moved],
        )

    def test_vm_on_its_compute_counts_before_the_host_state_hears(self) -> None:
        # The compute has claimed both; neither host state lists them yet.
        self.record("here", "n1")
        self.record("rebuilt", "n1")
        rebuilt = instance("rebuilt", host="n2")
        rebuilt.node = "n2"
        nova = RecordedNova({"here": instance("here", host="n1"), "rebuilt": rebuilt})
        knowledge = corunners.CoRunnerSource(nova).collect(
            [host_state("n1"), host_state("n2")], self.database
        )
        self.assertEqual(
            {"n1": ["here"], "n2": ["rebuilt"]},
            {key: [vm.uuid for vm in vms] for key, vms in knowledge.vms.items()},
        )
        self.assertEqual([], knowledge.stale)
        self.assertEqual(["rebuilt"], [vm.instance_uuid for vm in knowledge.moved])
        # Neither host state counts their cores yet.
        self.assertEqual({"n1": 0, "n2": 0}, knowledge.taken_cores)

    def test_vm_recorded_while_nova_still_schedules_it_counts(self) -> None:
        # Until the conductor has hosts for the whole request, Nova's cells
        # have no instance, only a build request.
        self.record("scheduling", "n1")
        nova = RecordedNova({})
        nova.building = {"scheduling"}
        knowledge = corunners.CoRunnerSource(nova).collect([host_state("n1")], self.database)
        self.assertEqual(["scheduling"], [vm.uuid for vm in knowledge.vms["n1"]])
        self.assertEqual([], knowledge.stale)

    def test_live_claims_count_as_their_applications_vms(self) -> None:
        self.database.claim(
            [
                db_api.Claim(
                    claim_id="c1",
                    instance_uuid="first",
                    application_id="other",
                    host="n1",
                    nodename="n1",
                    app_class=AppClass.SYNC_HPC,
                    cache_score=20.0,
                    vms=2,
                    spare=0,
                ),
                db_api.Claim(
                    claim_id="c1",
                    instance_uuid="first",
                    application_id="other",
                    host="n2",
                    nodename="n2",
                    app_class=AppClass.SYNC_HPC,
                    cache_score=20.0,
                    spare=1,
                ),
            ],
            lambda view: None,
            ttl=60,
        )
        knowledge = corunners.CoRunnerSource(RecordedNova({})).collect(
            [host_state("n1"), host_state("n2")], self.database
        )
        self.assertEqual(
            {"n1": [(20.0, "other")] * 2, "n2": [(20.0, "other")]},
            {
                key: [(vm.cache_score, vm.application_id) for vm in vms]
                for key, vms in knowledge.vms.items()
            },
        )

    def test_old_vms_are_read_from_flavors_once(self) -> None:
        nova = RecordedNova(
            {"old": instance("old", host="n1", specs={"hpc:app_class": "ExtremeHPC"})}
        )
        source = corunners.CoRunnerSource(nova)
        first = source.collect([host_state("n1", "old")], self.database)
        self.assertIs(AppClass.EXTREME_HPC, first.vms["n1"][0].app_class)
        self.assertEqual(["old"], [vm.instance_uuid for vm in first.backfill])
        source.collect([host_state("n1", "old")], self.database)
        self.assertEqual([{"old"}], nova.asked)

    def test_own_and_excluded_instances(self) -> None:
        self.record("member", "n1", request_id=None)
        self.record("moving", "n1")
        nova = RecordedNova({})
        knowledge = corunners.CoRunnerSource(nova).collect(
            [host_state("n1", "member", "moving")],
            self.database,
            exclude={"moving"},
            own={"member"},
            application_id="group-1",
        )
        self.assertEqual(
            [("member", "group-1")], [(vm.uuid, vm.application_id) for vm in knowledge.vms["n1"]]
        )

    def test_without_database_nova_alone_answers(self) -> None:
        nova = RecordedNova(
            {
                "old": instance(
                    "old", host="n1", specs={"hpc:cache_score": "oops", "hpc:app_class": "SyncHPC"}
                )
            }
        )
        knowledge = corunners.CoRunnerSource(nova).collect([host_state("n1", "old")], None)
        vm = knowledge.vms["n1"][0]
        self.assertEqual((AppClass.SYNC_HPC, 0.0), (vm.app_class, vm.cache_score))
        self.assertEqual([], knowledge.backfill)


class TestLenientProfile(testtools.TestCase):
    def test_invalid_values_fall_back_one_by_one(self) -> None:
        found = flavor_records.lenient_profile(
            {"hpc:app_class": "Weird", "hpc:cache_score": "5", "hpc:app_name": "x"}
        )
        self.assertEqual(
            (AppClass.NON_HPC, 5.0, "x"), (found.app_class, found.cache_score, found.app_name)
        )


class TestDedicatedHosts(TestCollect):
    """The cheap path for requests left to Nova."""

    def test_finds_extreme_hosts_recorded_unknown_and_in_flight(self) -> None:
        self.record("x-here", "n1", AppClass.EXTREME_HPC, request_id="other")
        self.record("x-flight", "n2", AppClass.EXTREME_HPC, request_id="other")
        self.record("x-gone", "n3", AppClass.EXTREME_HPC, request_id="other")
        self.record("sync", "n4", AppClass.SYNC_HPC)
        nova = RecordedNova(
            {
                "x-flight": instance("x-flight", host=None, vm_state="building"),
                "old": instance("old", host="n5", specs={"hpc:app_class": "extremehpc"}),
            }
        )
        states = [
            host_state("n1", "x-here"),
            host_state("n2"),
            host_state("n3"),
            host_state("n4", "sync"),
            host_state("n5", "old"),
        ]
        source = corunners.CoRunnerSource(nova)
        knowledge = source.dedicated_hosts(states, self.database, application_id="mine")
        self.assertEqual({"n1", "n2", "n5"}, set(knowledge.vms))
        self.assertEqual(["x-gone"], knowledge.stale)
        self.assertEqual(["old"], [vm.instance_uuid for vm in knowledge.backfill])
        # Known instances are not read again.
        nova.asked.clear()
        source.dedicated_hosts(states, self.database, application_id="mine")
        # x-gone is looked for again after the build requests: still gone.
        self.assertEqual([{"x-flight", "x-gone"}, {"x-gone"}], nova.asked)

    def test_own_application_is_not_avoided(self) -> None:
        self.record("x", "n1", AppClass.EXTREME_HPC, request_id="group-1")
        knowledge = corunners.CoRunnerSource(RecordedNova({})).dedicated_hosts(
            [host_state("n1", "x")], self.database, application_id="group-1"
        )
        self.assertEqual({}, knowledge.vms)


class Listed:
    """An instance as a host state lists it: whole, as the computes send it
    (``node`` set), or as Nova reads it back by uuid (nothing set)."""

    def __init__(self, node: str | None = None) -> None:
        self._node = node

    def obj_attr_is_set(self, name: str) -> bool:
        return name == "node" and self._node is not None

    @property
    def node(self) -> str | None:
        return self._node


def service_nodes(host: str, listed: dict[str, Listed | None], *nodes: str) -> list:
    """The host states of one compute service's ``nodes``, each listing every
    instance of the service, as Nova's host manager lists them (by host)."""
    return [
        types.SimpleNamespace(host=host, nodename=node, cell_uuid=None, instances=dict(listed))
        for node in nodes
    ]


class TestNodesOfOneService(TestCollect):
    """Nova lists a service's instances on each of its nodes; each VM counts on its own."""

    def record_on(self, uuid: str, node: str, app_class: AppClass, request_id: str) -> None:
        self.database.record_running(
            [db_api.RunningRecord(uuid, "c1", app_class, 10.0, "LU", node, request_id)]
        )

    def vms_of(self, knowledge) -> dict[str, list[str]]:
        return {key: sorted(vm.uuid for vm in vms) for key, vms in knowledge.vms.items()}

    def test_recorded_vms_count_on_their_own_nodes(self) -> None:
        self.record_on("on-a", "c1-a", AppClass.SYNC_HPC, "app-a")
        self.record_on("on-c", "c1-c", AppClass.SYNC_HPC, "app-c")
        states = service_nodes("c1", {"on-a": Listed(), "on-c": None}, "c1-a", "c1-b", "c1-c")
        knowledge = corunners.CoRunnerSource(RecordedNova({})).collect(states, self.database)
        self.assertEqual(
            {"c1/c1-a": ["on-a"], "c1/c1-b": [], "c1/c1-c": ["on-c"]}, self.vms_of(knowledge)
        )

    def test_the_node_a_host_state_names_wins_and_off_candidate_nodes_do_not_count(self) -> None:
        # The record says c1-a; the compute's copy of the instance says c1-b
        # (rebuilt on another node of the service).
        self.record_on("moved", "c1-a", AppClass.SYNC_HPC, "app")
        self.record_on("elsewhere", "c1-c", AppClass.SYNC_HPC, "app")
        listed = {"moved": Listed("c1-b"), "elsewhere": Listed()}
        # c1-c is no candidate (full, or filtered out by Placement).
        states = service_nodes("c1", listed, "c1-a", "c1-b")
        knowledge = corunners.CoRunnerSource(RecordedNova({})).collect(states, self.database)
        self.assertEqual({"c1/c1-a": [], "c1/c1-b": ["moved"]}, self.vms_of(knowledge))

    def test_unrecorded_vms_take_their_node_from_nova(self) -> None:
        old = instance("old", host="c1", specs={"hpc:app_class": "ExtremeHPC"})
        old.node = "c1-a"
        states = service_nodes("c1", {"old": Listed()}, "c1-a", "c1-b")
        knowledge = corunners.CoRunnerSource(RecordedNova({"old": old})).collect(
            states, self.database
        )
        self.assertEqual({"c1/c1-a": ["old"], "c1/c1-b": []}, self.vms_of(knowledge))
        self.assertEqual(
            [("old", "c1", "c1-a")],
            [(vm.instance_uuid, vm.host, vm.nodename) for vm in knowledge.backfill],
        )

    def test_dedicated_nodes_are_the_extreme_vms_own(self) -> None:
        self.record_on("x", "c1-a", AppClass.EXTREME_HPC, "other")
        old = instance("old", host="c1", specs={"hpc:app_class": "ExtremeHPC"})
        old.node = "c1-c"
        states = service_nodes("c1", {"x": Listed(), "old": Listed()}, "c1-a", "c1-b", "c1-c")
        knowledge = corunners.CoRunnerSource(RecordedNova({"old": old})).dedicated_hosts(
            states, self.database, application_id="mine"
        )
        self.assertEqual({"c1/c1-a": ["x"], "c1/c1-c": ["old"]}, self.vms_of(knowledge))

    def test_without_database_nova_names_the_nodes(self) -> None:
        first = instance("first", host="c1", specs={"hpc:app_class": "SyncHPC"})
        first.node = "c1-a"
        states = service_nodes("c1", {"first": Listed()}, "c1-a", "c1-b")
        knowledge = corunners.CoRunnerSource(RecordedNova({"first": first})).collect(states, None)
        self.assertEqual({"c1/c1-a": ["first"], "c1/c1-b": []}, self.vms_of(knowledge))
