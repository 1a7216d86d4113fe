"""Fair share inside Nova (seed 002, issue 22), proven by booting through Nova's API.

Two platforms of three 4-vCPU hosts each, told apart by ``hpc:cpu_group``,
and projects with their own API clients. The runs make ``blast`` twice as
fast on ``amd`` as on ``intel`` and ``gene`` the other way round, so RPA
sends each to a different platform.
"""

from __future__ import annotations

import collections
import datetime
import threading
import time

import fixtures
import sqlalchemy as sa
from nova.tests.functional.api import client

from hpc_nova_scheduler.agent.allocator import nova_nodes
from hpc_nova_scheduler.demo.fake_driver import Shape
from hpc_nova_scheduler.fairshare import live_allocation, platforms
from hpc_nova_scheduler.fairshare.runs import TaskRun
from hpc_nova_scheduler.scheduler import fairness
from hpc_nova_scheduler.scheduler.aggregate_tags import AggregateTags
from hpc_nova_scheduler.scheduler.fallback import FallbackStore
from tests.functional import base
from tests.functional.test_concurrency import BurstMixin
from tests.functional.test_fallback import UNREACHABLE
from tests.functional.workers import TwoSchedulers

AMD = ["a1", "a2", "a3"]
INTEL = ["i1", "i2", "i3"]
RUNS = [
    TaskRun("blast", "amd", 100.0),
    TaskRun("blast", "intel", 200.0),
    TaskRun("gene", "amd", 200.0),
    TaskRun("gene", "intel", 100.0),
]
#: Seconds to wait for a due allocator run or a build.
PATIENCE = 30.0


class FairshareCloud(base.HpcTestCase):
    HOSTS = {name: Shape(cpu_model="EPYC") for name in AMD} | {
        name: Shape(cpu_model="Xeon") for name in INTEL
    }
    CPU_GROUPS = {"amd": AMD, "intel": INTEL}
    FAIRNESS: dict = {"fairness_policy": "pa-rr", "fairshare_interval": 3600}
    SHARES = {"p-blast": 1.0, "p-gene": 1.0}
    DEMAND = {"p-blast": 12, "p-gene": 12}
    APPLICATIONS = {"p-blast": "blast", "p-gene": "gene", "p1": "blast", "p2": "blast"}

    def setUp(self) -> None:
        self.HPC_FLAGS = {**self.HPC_FLAGS, **self.FAIRNESS}
        # The filter reads a new generation at once, not a moment later.
        self.useFixture(fixtures.MonkeyPatch(f"{fairness.__name__}.REFRESH_SECONDS", 0.0))
        super().setUp()
        self.database.import_runs(RUNS)
        for project, weight in self.SHARES.items():
            self.database.set_share(project, weight)
        for project, cores in self.DEMAND.items():
            self.database.set_demand(project, cores, self.APPLICATIONS.get(project))
        self.apis: dict[str, client.TestOpenStackClient] = {}

    def api_of(self, project: str) -> client.TestOpenStackClient:
        if project not in self.apis:
            api = client.TestOpenStackClient(
                "fake", self.api_fixture.base_url, project_id=project, roles=["reader", "member"]
            )
            api.microversion = self.api.microversion
            self.apis[project] = api
        return self.apis[project]

    def allocate(self) -> live_allocation.Outcome:
        """Run the allocator now, as ``fairshare allocate`` does."""
        cloud = platforms.build_cloud(nova_nodes(), AggregateTags().current())
        return live_allocation.allocate(self.database, fairness.settings(), cloud)

    def boot_as(self, project: str, flavor: str, count: int = 1) -> list[dict]:
        api = self.api_of(project)
        body: dict = {"server": self._build_server(flavor_id=flavor, networks="none")}
        body["server"]["min_count"] = count
        body["server"]["return_reservation_id"] = True
        reservation = api.post_server(body)["reservation_id"]
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            servers = self.admin_api.get_servers(
                detail=True, search_opts={"reservation_id": reservation, "all_tenants": 1}
            )
            if servers and all(s["status"] != "BUILD" for s in servers):
                return servers
            time.sleep(0.1)
        self.fail(f"servers of {reservation} still building")

    def app_flavor(self, app: str, vcpus: int = 1) -> str:
        return self.hpc_flavor(vcpus=vcpus, app_class="AsyncHPC", cache_score=1, app_name=app)

    def platforms_of(self, servers: list[dict]) -> set[str]:
        hosts = set(self.hosts_of(servers))
        return {"amd" if host in AMD else "intel" for host in hosts}

    def projects_per_host(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = collections.defaultdict(set)
        for server in self.admin_api.get_servers(detail=True, search_opts={"all_tenants": 1}):
            if server["status"] == "ACTIVE":
                found[server["OS-EXT-SRV-ATTR:host"]].add(server["tenant_id"])
        return found


class TestAffinity(FairshareCloud):
    def test_each_project_lands_on_its_best_platform_by_rpa(self) -> None:
        outcome = self.allocate()
        self.assertEqual({"amd": 12}, outcome.allocation["p-blast"])
        self.assertEqual({"intel": 12}, outcome.allocation["p-gene"])
        blast = self.boot_as("p-blast", self.app_flavor("blast"), 4)
        gene = self.boot_as("p-gene", self.app_flavor("gene"), 4)
        self.assertEqual({"amd"}, self.platforms_of(blast))
        self.assertEqual({"intel"}, self.platforms_of(gene))

    def test_seed_003_rules_hold_within_an_entitlement(self) -> None:
        self.allocate()
        # ExtremeHPC still gets hosts of its own, on its project's platform.
        extreme = self.hpc_flavor(app_class="ExtremeHPC", cache_score=10, app_name="blast")
        servers = self.boot_as("p-blast", extreme, 2)
        hosts = self.hosts_of(servers)
        self.assertEqual([2], list(hosts.values()))
        later = self.boot_as("p-blast", self.app_flavor("blast"), 2)
        self.assertFalse(set(self.hosts_of(later)) & set(hosts))
        self.assertEqual({"amd"}, self.platforms_of(servers + later))

    def test_projects_without_a_share_and_plain_requests_are_not_governed(self) -> None:
        self.allocate()
        # 8 cores of blast: beyond any entitlement p-other could have.
        servers = self.boot_as("p-other", self.app_flavor("blast", vcpus=4), 2)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers})
        plain = self.boot_as("p-blast", self.hpc_flavor(vcpus=4), 2)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in plain})


class TestStrict(FairshareCloud):
    DEMAND = {"p-blast": 4, "p-gene": 12}

    def test_strict_refuses_beyond_the_entitlement_and_counts_the_refusal(self) -> None:
        outcome = self.allocate()
        self.assertEqual({"amd": 4}, outcome.allocation["p-blast"])
        flavor = self.app_flavor("blast")
        servers = self.boot_as("p-blast", flavor, 4)
        self.assertEqual({"amd"}, self.platforms_of(servers))
        self.assert_refused(self.boot_as("p-blast", flavor, 1))
        refusals = self.database.refusals(datetime.datetime(2000, 1, 1))
        self.assertEqual(
            [("p-blast", "blast", 1)], [(r.project, r.application, r.cores) for r in refusals]
        )


class TestBorrow(FairshareCloud):
    DEMAND = {"p-blast": 4, "p-gene": 12}
    FAIRNESS = {**FairshareCloud.FAIRNESS, "fairshare_enforcement": "borrow"}

    def test_borrow_uses_idle_cores_only(self) -> None:
        self.allocate()
        flavor = self.app_flavor("blast")
        first = self.boot_as("p-blast", flavor, 4)
        more = self.boot_as("p-blast", flavor, 8)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in first + more})
        self.assertEqual({"amd"}, self.platforms_of(first + more))
        # amd is full now; intel's cores are gene's, idle: borrowed too.
        gene = self.boot_as("p-blast", flavor, 4)
        self.assertEqual({"intel"}, self.platforms_of(gene))
        self.assert_refused(self.boot_as("p-blast", flavor, 9))


class TestTemplates(FairshareCloud):
    """AllCore templates: no host runs two projects' VMs."""

    FAIRNESS = {**FairshareCloud.FAIRNESS, "corunner_policy": "allcore"}
    SHARES = {"p1": 1.0, "p2": 1.0}
    DEMAND = {"p1": 8, "p2": 8}

    def test_node_templates_are_followed(self) -> None:
        outcome = self.allocate()
        flavor = self.app_flavor("blast")
        for _ in range(3):
            for project in ("p1", "p2"):
                servers = self.boot_as(project, flavor, 2)
                self.assertEqual({"ACTIVE"}, {s["status"] for s in servers})
        templates = outcome.templates
        allowed = {
            platform: [frozenset(name for name, _ in t["slots"]) for t in found]
            for platform, found in templates.items()
        }
        for host, projects in self.projects_per_host().items():
            platform = "amd" if host in AMD else "intel"
            self.assertTrue(
                any(projects <= members for members in allowed[platform]),
                f"{host} runs {sorted(projects)}; templates {allowed[platform]}",
            )


class TestReallocation(FairshareCloud):
    """Nova has no queue: refusals and deletions drive the agent's allocator."""

    FAIRNESS = {**FairshareCloud.FAIRNESS, "fairshare_interval": 10}
    DEMAND: dict = {}

    def wait_for_generation(self, after: int):
        """Look at the lease as the agent does every CHECK_SECONDS until a run was due."""
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            self.allocator_tick()
            latest = self.database.latest_generation()
            if latest is not None and latest.number > after:
                return latest
            time.sleep(0.2)
        self.fail(f"no generation after {after}")

    def entitled_amd(self, cores: int):
        """Wait for a generation that gives p-blast ``cores`` cores of amd."""
        latest = self.wait_for_generation(0)
        deadline = time.monotonic() + PATIENCE
        while latest.allocation.get("p-blast", {}).get("amd", 0) != cores:
            self.assertLess(time.monotonic(), deadline, latest.allocation)
            latest = self.wait_for_generation(latest.number)
        return latest

    def test_refusals_and_deletions_trigger_reallocation(self) -> None:
        flavor = self.app_flavor("blast", vcpus=2)
        self.allocate()
        # No demand declared and nothing running: no entitlement. The
        # refusal is demand (Nova has no queue), and the allocator runs.
        self.assert_refused(self.boot_as("p-blast", flavor, 2))
        self.entitled_amd(4)
        first = self.boot_as("p-blast", flavor, 2)
        self.assertEqual({"amd"}, self.platforms_of(first))
        # Running 4 cores, refused 4 more: demand 8.
        self.assert_refused(self.boot_as("p-blast", flavor, 2))
        self.entitled_amd(8)
        second = self.boot_as("p-blast", flavor, 2)
        self.assertEqual({"amd"}, self.platforms_of(second))
        before = self.database.latest_generation().number
        for server in first + second:
            self.admin_api.delete_server(server["id"])
        for server in first + second:
            self._wait_until_deleted(server)
        # The sweep forgets the deleted VMs; running cores changed: a new run.
        self.sweep()
        self.wait_for_generation(before)
        self.assertGreater(self.database.usage().get(("p-blast", "amd"), 0.0), 0.0)


class TestTwoWorkers(TwoSchedulers, BurstMixin, FairshareCloud):
    """Two scheduler services, each with its own filter and entitlements."""

    DEMAND = {"p-blast": 6, "p-gene": 12}

    def test_two_workers_never_exceed_an_entitlement_together(self) -> None:
        outcome = self.allocate()
        self.assertEqual({"amd": 6}, outcome.allocation["p-blast"])
        flavor = self.app_flavor("blast")
        api = self.api_of("p-blast")
        barrier = threading.Barrier(8)
        reservations: list[str] = []
        errors: list[BaseException] = []

        def post() -> None:
            body: dict = {"server": self._build_server(flavor_id=flavor, networks="none")}
            body["server"]["min_count"] = 2
            body["server"]["return_reservation_id"] = True
            try:
                barrier.wait(timeout=PATIENCE)
                reservations.append(api.post_server(body)["reservation_id"])
            except BaseException as error:  # reported by the test thread
                errors.append(error)

        threads = [threading.Thread(target=post, daemon=True) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(PATIENCE)
        self.assertEqual([], errors)
        deadline = time.monotonic() + PATIENCE
        while True:
            servers = self.admin_api.get_servers(detail=True, search_opts={"all_tenants": 1})
            if len(servers) == 16 and all(s["status"] != "BUILD" for s in servers):
                break
            self.assertLess(time.monotonic(), deadline, "burst still building")
            time.sleep(0.25)
        by_request = collections.defaultdict(list)
        for server in servers:
            by_request[server["OS-EXT-SRV-ATTR:reservation_id"]].append(server)
        outcomes = collections.Counter(self.outcome(found) for found in by_request.values())
        # 6 cores: three 2-VM requests fit the entitlement, and no more.
        self.assertEqual({"placed": 3, "refused": 5}, dict(outcomes))
        self.assertEqual({"amd"}, self.platforms_of(servers))
        # Neither filter started an allocator: only the agent writes generations.
        self.assertEqual(outcome.generation, self.database.latest_generation().number)
        self.assertIsNone(self.database.lease())


class TestFairnessOff(FairshareCloud):
    """fairness_policy = none: entitlements in the database change nothing."""

    DEMAND = {"p-blast": 4, "p-gene": 12}

    def test_none_places_as_without_fair_share(self) -> None:
        self.allocate()
        self.flags(fairness_policy="none", group="hpc_scheduler")
        servers = self.boot_as("p-blast", self.app_flavor("blast"), 8)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers})
        self.assertEqual([], self.database.refusals(datetime.datetime(2000, 1, 1)))


class TestOutage(FairshareCloud):
    """The plugin database is down: the fallback copy carries the entitlements."""

    DEMAND = {"p-blast": 4, "p-gene": 12}

    def test_the_copy_holds_requests_to_the_last_entitlements_until_they_expire(self) -> None:
        self.allocate()
        FallbackStore().refresh(self.database)  # what every sweep of the agent does
        self.flags(connection=UNREACHABLE, database_failure_policy="degrade", group="hpc_scheduler")
        flavor = self.app_flavor("blast")
        servers = self.boot_as("p-blast", flavor, 4)
        self.assertEqual({"amd"}, self.platforms_of(servers))
        self.assert_refused(self.boot_as("p-blast", flavor, 1))
        copy = FallbackStore().database()
        # Refused for the entitlement, recorded in the copy.
        refused = copy.refusals(datetime.datetime(2000, 1, 1))
        self.assertEqual([("p-blast", 1)], [(r.project, r.cores) for r in refused])
        # Two intervals later without a new generation, the entitlements are
        # stale: placement goes on without fair share.
        with copy.engine.begin() as connection:
            connection.execute(
                sa.text("UPDATE fairshare_generations SET created_at = :old"),
                {"old": datetime.datetime(2000, 1, 1)},
            )
        more = self.boot_as("p-blast", flavor, 1)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in more})
