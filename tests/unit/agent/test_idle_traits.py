"""The idle-traits keeper against Placement itself (its own in-process fixture), without Nova.

Compute nodes are given as Nova's cell databases would give them; the
providers, their traits and allocations live in the real Placement.
"""

from __future__ import annotations

import uuid as uuid_lib

import fixtures
import testtools
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from oslo_config import fixture as config_fixture
from placement.tests.functional.fixtures import placement as placement_fixtures
from requests import adapters

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.agent import idle_traits
from hpc_nova_scheduler.core.narrowing import IDLE_TRAIT, ROOMY_TRAIT, NodeUse
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from tests import db_backends


class PlacementClient:
    """Placement's REST API as Nova's report client offers it: ``get``/``put`` with a version."""

    def __init__(self, fixture: placement_fixtures.PlacementFixture) -> None:
        self._fixture = fixture
        self._adapter = ks_adapter.Adapter(ks_session.Session(auth=None), raise_exc=False)
        #: Called before each PUT of a provider's traits: another writer.
        self.before_put = None

    def _headers(self, version: str | None) -> dict:
        headers = {"x-auth-token": self._fixture.token}
        if version:
            headers["OpenStack-API-Version"] = f"placement {version}"
        return headers

    def get(self, url: str, version: str | None = None):
        return self._adapter.get(
            url, endpoint_override=self._fixture.endpoint, headers=self._headers(version)
        )

    def put(self, url: str, data, version: str | None = None):
        if self.before_put is not None and url.endswith("/traits"):
            hook, self.before_put = self.before_put, None
            hook()
        return self._adapter.put(
            url, json=data, endpoint_override=self._fixture.endpoint, headers=self._headers(version)
        )

    def post(self, url: str, data, version: str | None = None):
        return self._adapter.post(
            url, json=data, endpoint_override=self._fixture.endpoint, headers=self._headers(version)
        )


class PlacementCase(testtools.TestCase):
    """Four providers in Placement; the compute nodes as the test says they are."""

    def setUp(self) -> None:
        super().setUp()
        # wsgi-intercept cannot take keystoneauth's TCP keep-alive options
        # (as Nova's own Placement fixture does).
        self.useFixture(
            fixtures.MonkeyPatch(
                "keystoneauth1.session.TCPKeepAliveAdapter.init_poolmanager",
                adapters.HTTPAdapter.init_poolmanager,
            )
        )
        fixture = self.useFixture(placement_fixtures.PlacementFixture())
        self.placement = PlacementClient(fixture)
        url = self.useFixture(db_backends.DatabaseURL(db_backends.SQLITE)).url
        self.database = db_api.Database(url)
        self.addCleanup(self.database.dispose)
        self.database.sync()
        self.uses: dict[str, NodeUse] = {}
        self.complete = True
        self.names: dict[str, str] = {}
        for name in ("a", "b", "c", "d"):
            self.add_node(name)

    def add_node(self, name: str, *, vms: int = 0, vcpus: int = 0) -> str:
        uuid = str(uuid_lib.uuid4())
        response = self.placement.post(
            "/resource_providers", {"name": name, "uuid": uuid}, version="1.20"
        )
        self.assertEqual(200, response.status_code, response.text)
        inventory = {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}}
        response = self.placement.put(
            f"/resource_providers/{uuid}/inventories",
            {"resource_provider_generation": 0, "inventories": inventory},
            version="1.20",
        )
        self.assertEqual(200, response.status_code, response.text)
        self.set_traits(uuid, {"COMPUTE_NODE", "CUSTOM_OPERATOR_TAG"})
        self.uses[uuid] = NodeUse(uuid, vms, vcpus)
        self.names[uuid] = name
        return uuid

    def uuid(self, name: str) -> str:
        return next(u for u, n in self.names.items() if n == name)

    def traits(self, uuid: str) -> tuple[set[str], int]:
        body = self.placement.get(f"/resource_providers/{uuid}/traits", version="1.6").json()
        return set(body["traits"]), body["resource_provider_generation"]

    def set_traits(self, uuid: str, traits: set[str]) -> None:
        _, generation = self.traits(uuid)
        for trait in traits:
            if trait.startswith("CUSTOM_"):
                self.placement.put(f"/traits/{trait}", None, version="1.6")
        response = self.placement.put(
            f"/resource_providers/{uuid}/traits",
            {"resource_provider_generation": generation, "traits": sorted(traits)},
            version="1.6",
        )
        self.assertEqual(200, response.status_code, response.text)

    def allocate(self, uuid: str, vcpus: int = 2) -> None:
        consumer = str(uuid_lib.uuid4())
        response = self.placement.put(
            f"/allocations/{consumer}",
            {
                "allocations": {uuid: {"resources": {"VCPU": vcpus}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
            },
            version="1.28",
        )
        self.assertEqual(204, response.status_code, response.text)

    def keeper(self, holder: str = "agent-a", tags=None, budget: int = 2):
        return idle_traits.IdleTraitKeeper(
            lambda: self.database,
            holder,
            nodes=lambda: (list(self.uses.values()), self.complete),
            placement=lambda: self.placement,
            tags=lambda: tags,
            budget=lambda: budget,
        )

    def tagged(self, trait: str = IDLE_TRAIT) -> set[str]:
        return {self.names[u] for u in self.names if trait in self.traits(u)[0]}


class TestIdleTraitKeeper(PlacementCase):
    def test_idle_nodes_are_tagged_and_other_traits_kept(self) -> None:
        self.uses[self.uuid("b")] = NodeUse(self.uuid("b"), 1, 2)
        run = self.keeper().run(10)
        self.assertEqual({"a", "c", "d"}, {self.names[u] for u in run.added})
        self.assertEqual({"a", "c", "d"}, self.tagged())
        for uuid in self.names:
            self.assertLessEqual({"COMPUTE_NODE", "CUSTOM_OPERATOR_TAG"}, self.traits(uuid)[0])
        # Busy again, idle again: only the two that changed are written.
        self.uses[self.uuid("a")] = NodeUse(self.uuid("a"), 2, 4)
        self.uses[self.uuid("b")] = NodeUse(self.uuid("b"), 0, 0)
        run = self.keeper().run(10)
        self.assertEqual(([self.uuid("b")], [self.uuid("a")]), (run.added, run.removed))
        self.assertEqual({"b", "c", "d"}, self.tagged())

    def test_a_node_allocated_in_placement_is_not_tagged(self) -> None:
        # Nova's compute node record lags the scheduler's claim in Placement.
        self.allocate(self.uuid("c"))
        run = self.keeper().run(10)
        self.assertEqual([self.uuid("c")], run.busy_in_placement)
        self.assertEqual({"a", "b", "d"}, self.tagged())

    def test_another_writer_in_between_costs_a_retry_and_loses_nothing(self) -> None:
        # nova-compute adds its trait between the keeper's read and write:
        # the keeper's write is refused (409), read again, and keeps it.
        uuid = self.uuid("a")
        self.uses = {uuid: self.uses[uuid]}
        self.placement.before_put = lambda: self.set_traits(
            uuid, {"COMPUTE_NODE", "CUSTOM_OPERATOR_TAG", "COMPUTE_STATUS_DISABLED"}
        )
        run = self.keeper().run(10)
        self.assertEqual(([uuid], 1), (run.added, run.conflicts))
        self.assertEqual(
            {"COMPUTE_NODE", "CUSTOM_OPERATOR_TAG", "COMPUTE_STATUS_DISABLED", IDLE_TRAIT},
            self.traits(uuid)[0],
        )

    def test_an_allocation_in_between_keeps_the_node_untagged(self) -> None:
        # The scheduler claims the node after the keeper read its usages: the
        # allocation changed the provider's generation, the write is refused.
        uuid = self.uuid("a")
        self.uses = {uuid: self.uses[uuid]}
        self.placement.before_put = lambda: self.allocate(uuid)
        run = self.keeper().run(10)
        self.assertEqual(([], [uuid], 1), (run.added, run.busy_in_placement, run.conflicts))
        self.assertEqual(set(), self.tagged())

    def test_a_silent_cell_keeps_its_tags_and_a_deleted_node_loses_its(self) -> None:
        self.keeper().run(10)
        self.assertEqual({"a", "b", "c", "d"}, self.tagged())
        # d's cell does not answer: d keeps its trait.
        d = self.uuid("d")
        del self.uses[d]
        self.complete = False
        self.assertFalse(self.keeper().run(10).removed)
        # Every cell answers, d is no compute node any more: it loses it.
        self.complete = True
        run = self.keeper().run(10)
        self.assertEqual([d], run.removed)
        self.assertEqual({"a", "b", "c"}, self.tagged())

    def test_only_the_lease_holder_writes_and_a_stopping_agent_ends_early(self) -> None:
        first = self.keeper("agent-a")
        self.assertIsNotNone(first.run(10))
        self.assertIsNone(self.keeper("agent-b").run(10))
        self.assertTrue(first.release())
        second = self.keeper("agent-b")
        for uuid in self.names:
            self.uses[uuid] = NodeUse(uuid, 1, 1)
        second._stopping.set()
        run = second.run(10)
        self.assertEqual((4, []), (run.left, run.removed))
        self.assertEqual(4, len(self.tagged()))

    def test_the_lease_outlasts_three_intervals(self) -> None:
        self.assertEqual(idle_traits.LEASE_SECONDS, idle_traits.lease_seconds(1))
        self.assertEqual(180.0, idle_traits.lease_seconds(60))


class TestRoomyRacks(PlacementCase):
    """Racks ra (a, b) and rb (c, d), 8 vCPUs a host; a budget of two hosts."""

    RACKS = {"a": "ra", "b": "ra", "c": "rb", "d": "rb"}

    def setUp(self) -> None:
        super().setUp()
        config = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        config.config(roomy_rack_trait=True, group="hpc_scheduler")
        self.tags = {name: {"hpc:rack": {rack}} for name, rack in self.RACKS.items()}
        self.set_free({"a": 2, "b": 2, "c": 6, "d": 0})

    def set_free(self, free: dict[str, int]) -> None:
        for name, vcpus in free.items():
            uuid = self.uuid(name)
            self.uses[uuid] = NodeUse(uuid, 1, 8 - vcpus, key=name, vcpus=8)

    def test_the_roomiest_rack_is_tagged_whole(self) -> None:
        run = self.keeper(tags=self.tags).run(10)
        self.assertEqual({"c", "d"}, self.tagged(ROOMY_TRAIT))
        self.assertEqual(2, run.roomy_hosts)
        # rb fills up, ra has room: the trait moves, untagging first.
        self.set_free({"c": 0})
        run = self.keeper(tags=self.tags).run(10)
        self.assertEqual({"a", "b"}, self.tagged(ROOMY_TRAIT))
        self.assertEqual(
            ({self.uuid("a"), self.uuid("b")}, {self.uuid("c"), self.uuid("d")}),
            (set(run.roomy_added), set(run.roomy_removed)),
        )
        for uuid in self.names:
            self.assertIn("CUSTOM_OPERATOR_TAG", self.traits(uuid)[0])

    def test_hosts_held_by_extremehpc_count_no_room(self) -> None:
        self.database.record_running(
            [db_api.RunningRecord("vm-1", "c", AppClass.EXTREME_HPC, 0.0, app_name="IS")]
        )
        self.keeper(tags=self.tags).run(10)
        self.assertEqual({"a", "b"}, self.tagged(ROOMY_TRAIT))

    def test_without_aggregates_or_with_a_silent_cell_the_racks_stay(self) -> None:
        self.keeper(tags=self.tags).run(10)
        self.set_free({"a": 8, "b": 8})
        self.assertEqual([], self.keeper(tags=None).run(10).roomy_added)
        self.complete = False
        self.assertEqual([], self.keeper(tags=self.tags).run(10).roomy_added)
        self.assertEqual({"c", "d"}, self.tagged(ROOMY_TRAIT))

    def test_off_by_default(self) -> None:
        hpc_conf.CONF.set_override("roomy_rack_trait", False, group="hpc_scheduler")
        self.assertIsNone(self.keeper(tags=self.tags).run(10).roomy_hosts)
        self.assertEqual(set(), self.tagged(ROOMY_TRAIT))
