"""Borrowed capacity taken back (issue 45), through Nova's API in Nova's harness.

Two platforms of three 4-vCPU hosts (``amd``, ``intel``). ``p-blast`` has
demand for 12 cores and borrows the idle ``intel`` platform under
``borrow``; then ``p-gene`` comes back and asks for its entitlement
there. The agent's tasks run as in ``hpc-scheduler-agent``: its allocator
tick requests the reclaims, its reclaim task acts on them through
openstacksdk on the harness's Nova API (the agent's own connection), in
each mode.
"""

from __future__ import annotations

import time

import openstack
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session

from hpc_nova_scheduler.agent import reclaim as reclaim_mod
from hpc_nova_scheduler.agent.tasks import Agent
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.scheduler import fairness
from tests.functional.test_fairshare import INTEL, PATIENCE, FairshareCloud


class ReclaimCloud(FairshareCloud):
    MODE = "stop"
    DEMAND = {"p-blast": 12, "p-gene": 0}
    #: A stopped server keeps its Placement allocation: the cores ``stop``
    #: frees serve others only where Placement overcommits. Fair share
    #: still counts physical cores (12 a platform). Overcommit also lets
    #: Placement offer hosts of a full platform, so that the placement
    #: filter sees, and records, the requests fair share refuses.
    CPU_RATIO = 2.0

    def setUp(self) -> None:
        self.FAIRNESS = {
            **FairshareCloud.FAIRNESS,
            "fairshare_interval": 60,
            "fairshare_enforcement": "borrow",
            "fairshare_reclaim": self.MODE,
            "fairshare_reclaim_grace": 0,
        }
        super().setUp()
        self.conn = self.agent_connection()

    def agent(self) -> Agent:
        if getattr(self, "_agent", None) is None:
            self._agent = Agent(name="functional-test:0", connection=lambda: self.conn)
            self.addCleanup(self._agent.close)
        return self._agent

    def allocate_now(self):
        """The agent's allocator, ticked until its run is due (a change of inputs)."""
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            outcome = self.allocator_tick()
            if outcome is not None:
                return outcome
            time.sleep(0.2)
        self.fail("no allocator run came")

    def borrow_intel(self) -> tuple[list[dict], list[dict]]:
        """p-blast's 12 entitled cores on amd, then 12 borrowed on intel."""
        outcome = self.allocate_now()
        self.assertEqual({"amd": 12}, outcome.allocation["p-blast"])
        flavor = self.app_flavor("blast", vcpus=4)
        entitled = self.boot_as("p-blast", flavor, 3)
        borrowed = self.boot_as("p-blast", flavor, 3)
        self.assertEqual({"amd"}, self.platforms_of(entitled))
        self.assertEqual({"intel"}, self.platforms_of(borrowed))
        loans = {loan.instance_uuid: loan for loan in self.database.loans()}
        self.assertEqual({s["id"] for s in borrowed}, set(loans))
        self.assertEqual({db_api.BORROWED}, {loan.kind for loan in loans.values()})
        return entitled, borrowed

    def gene_comes_back(self) -> list[loans_db.ReclaimRecord]:
        """p-gene asks for 12 cores: the next allocator run requests the reclaims."""
        self.database.set_demand("p-gene", 12, "gene")
        outcome = self.allocate_now()
        self.assertEqual({"intel": 12}, outcome.allocation["p-gene"])
        return self.database.reclaims()

    def settings(self):
        return fairness.settings()

    def act(self) -> list[tuple[int, str]]:
        return self.agent().reclaim()

    def server(self, uuid: str) -> dict:
        return self.admin_api.get_server(uuid)

    def wait_for_status(self, uuids, statuses) -> None:
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            found = {self.server(u)["status"] for u in uuids}
            if found <= set(statuses):
                return
            time.sleep(0.1)
        self.fail(f"servers {uuids} are {found}, not {statuses}")


class TestStop(ReclaimCloud):
    def test_borrowed_cores_are_taken_back_for_a_project_below_its_entitlement(self) -> None:
        entitled, borrowed = self.borrow_intel()
        requested = self.gene_comes_back()
        victims = {r.instance_uuid for r in requested}
        self.assertEqual({s["id"] for s in borrowed}, victims)
        self.assertEqual({loans_db.REQUESTED}, {r.state for r in requested})
        self.assertEqual({"p-gene"}, {r.beneficiary for r in requested})
        # The tenant sees why, on each victim.
        for uuid in victims:
            value = self.server(uuid)["metadata"][reclaim_mod.METADATA_KEY]
            self.assertIn("; stop; p-gene has 0 of its 12 cores on intel", value)
        self.assertEqual(3, len([s for _, s in self.act() if s == loans_db.ACTED]))
        self.wait_for_status(victims, {"SHUTOFF"})
        # Nova records the agent's stop as an instance action.
        actions = self.admin_api.get_instance_actions(next(iter(victims)))
        self.assertIn("stop", {a["action"] for a in actions})
        # p-blast keeps its entitlement; p-gene gets its own.
        self.wait_for_status([s["id"] for s in entitled], {"ACTIVE"})
        gene = self.boot_as("p-gene", self.app_flavor("gene", vcpus=4), 3)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in gene})
        self.assertEqual({"intel"}, self.platforms_of(gene))
        # No second victim for the same demand.
        self.assertEqual([], self.agent().reclaimer.request(self.settings()))
        self.assertEqual(3, len(self.database.reclaims()))

    def test_nothing_is_taken_back_while_idle_cores_serve_the_demand(self) -> None:
        self.borrow_intel()
        for server in self.admin_api.get_servers(
            detail=True, search_opts={"all_tenants": 1, "host": INTEL[0]}
        ):
            self.admin_api.delete_server(server["id"])
        self.sweep()
        # 4 idle cores on intel serve a demand of 4.
        self.database.set_demand("p-gene", 4, "gene")
        self.allocate_now()
        self.assertEqual([], self.database.reclaims())


class TestShelve(ReclaimCloud):
    MODE = "shelve"

    def test_victims_are_shelved_and_offloaded(self) -> None:
        _, borrowed = self.borrow_intel()
        requested = self.gene_comes_back()
        self.assertEqual({"shelve"}, {r.mode for r in requested})
        self.act()
        victims = [s["id"] for s in borrowed]
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            if {self.server(u)["status"] for u in victims} == {"SHELVED_OFFLOADED"}:
                break
            self.act()  # a shelved victim is offloaded at the next look
            time.sleep(0.2)
        self.assertEqual({"SHELVED_OFFLOADED"}, {self.server(u)["status"] for u in victims})
        gene = self.boot_as("p-gene", self.app_flavor("gene", vcpus=4), 3)
        self.assertEqual({"intel"}, self.platforms_of(gene))


class TestDelete(ReclaimCloud):
    MODE = "delete"

    def test_victims_are_deleted(self) -> None:
        _, borrowed = self.borrow_intel()
        self.gene_comes_back()
        self.act()
        victims = {s["id"] for s in borrowed}
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            left = {
                s["id"]
                for s in self.admin_api.get_servers(search_opts={"all_tenants": 1})
                if s["id"] in victims
            }
            if not left:
                break
            time.sleep(0.1)
        self.assertEqual(set(), left)
        gene = self.boot_as("p-gene", self.app_flavor("gene", vcpus=4), 3)
        self.assertEqual({"intel"}, self.platforms_of(gene))
        self.assertEqual({loans_db.ACTED}, {r.state for r in self.database.reclaims()})


class TestUnreachableNova(ReclaimCloud):
    def test_a_failing_api_is_retried_then_reported(self) -> None:
        self.flags(fairshare_reclaim_attempts=2, group="hpc_scheduler")
        _, borrowed = self.borrow_intel()
        self.gene_comes_back()
        # The agent's connection points nowhere: every call fails.
        self.conn = openstack.connection.Connection(
            session=ks_session.Session(auth=noauth.NoAuth()),
            compute_endpoint_override="http://127.0.0.1:9/v2.1",
        )
        self.agent().reclaimer._connection = None
        self.act()
        changed = self.act()
        self.assertEqual({loans_db.FAILED}, {s for _, s in changed})
        self.assertEqual({"ACTIVE"}, {self.server(s["id"])["status"] for s in borrowed})
        self.assertEqual([], self.agent().reclaimer.request(self.settings()))


class TestTopologyRequired(ReclaimCloud):
    """A need for one rack is freed inside one rack."""

    RACKS = {"r1": ["i1", "i2"], "r2": ["i3"], "r3": ["a1", "a2", "a3"]}

    def test_the_freed_cores_share_the_rack_the_request_requires(self) -> None:
        self.borrow_intel()
        flavor = self.hpc_flavor(
            vcpus=4, app_class="AsyncHPC", cache_score=1, app_name="gene", topology_required="rack"
        )
        # p-gene has no entitlement yet: refused, its demand recorded with its level.
        self.assert_refused(self.boot_as("p-gene", flavor, 2))
        refusals = self.database.refusals(self.database.latest_generation().created_at)
        self.assertEqual(
            [("p-gene", 8, "rack")], [(r.project, r.cores, r.topology_level) for r in refusals]
        )
        outcome = self.allocate_now()
        self.assertEqual({"intel": 8}, outcome.allocation["p-gene"])
        victims = {r.instance_uuid for r in self.database.reclaims()}
        hosts = {self.server(uuid)["OS-EXT-SRV-ATTR:host"] for uuid in victims}
        self.assertEqual(2, len(victims))
        self.assertEqual({"i1", "i2"}, hosts)
        self.act()
        self.wait_for_status(victims, {"SHUTOFF"})
        gene = self.boot_as("p-gene", flavor, 2)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in gene})
        racks = {
            rack for rack, members in self.RACKS.items() if set(self.hosts_of(gene)) <= set(members)
        }
        self.assertEqual(1, len(racks))


class TestPreemptible(ReclaimCloud):
    """A preemptible VM is taken back first, for a project within its entitlement."""

    def test_a_preemptible_vm_makes_way_for_an_entitled_request(self) -> None:
        self.allocate_now()
        preemptible = self.hpc_flavor(
            vcpus=4, app_class="AsyncHPC", cache_score=1, app_name="gene", preemptible="true"
        )
        spot = self.boot_as("p-gene", preemptible, 3)
        self.assertEqual({"intel"}, self.platforms_of(spot))
        self.assertEqual({db_api.PREEMPTIBLE}, {loan.kind for loan in self.database.loans()})
        # p-blast now asks for both platforms: intel is its entitlement, full of spot VMs.
        self.database.set_demand("p-blast", 24, "blast")
        outcome = self.allocate_now()
        self.assertEqual({"amd": 12, "intel": 12}, outcome.allocation["p-blast"])
        flavor = self.app_flavor("blast", vcpus=4)
        self.boot_as("p-blast", flavor, 3)
        self.assert_refused(self.boot_as("p-blast", flavor, 3))
        victims = {r.instance_uuid for r in self.database.reclaims()}
        if not victims:
            # The refusal (unmet demand within the entitlement) triggers the next run.
            self.allocate_now()
            victims = {r.instance_uuid for r in self.database.reclaims()}
        self.assertEqual({s["id"] for s in spot}, victims)
        self.assertEqual({"p-blast"}, {r.beneficiary for r in self.database.reclaims()})
        self.act()
        self.wait_for_status(victims, {"SHUTOFF"})
        later = self.boot_as("p-blast", flavor, 3)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in later})
        self.assertEqual({"intel"}, self.platforms_of(later))
