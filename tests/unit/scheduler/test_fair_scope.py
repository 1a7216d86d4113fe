"""Fair share as the filter applies it to one request: its scope and its tries."""

from __future__ import annotations

import datetime
import types

from oslo_config import fixture as config_fixture

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.domains import TopologySpec
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration
from hpc_nova_scheduler.fairshare import platforms
from hpc_nova_scheduler.scheduler import fair_scope, fairness
from hpc_nova_scheduler.scheduler.request import Request, RequestState
from tests import db_backends


def vm(uuid: str, host: str, project: str, cores: int) -> db_api.RunningRecord:
    return db_api.RunningRecord(
        uuid, host, AppClass.ASYNC_HPC, 1.0, app_name="blast", project_id=project, cores=cores
    )


def in_force(allocation, templates=None) -> fairness.InForce:
    """A generation of ``allocation`` over three amd and three intel hosts of 4 cores."""
    nodes = [platforms.Node(host.name, host.name, 4) for host in HOSTS]
    tags = {
        host.name: {"hpc:cpu_group": frozenset({"amd" if host.name[0] == "a" else "intel"})}
        for host in HOSTS
    }
    return fairness.InForce(
        generation=1,
        created_at=datetime.datetime(2026, 11, 25, 12, 0, 0),
        allocation=allocation,
        templates=templates or {},
        affinity={},
        governed=frozenset(allocation),
        cloud=platforms.build_cloud(nodes, tags),
    )


HOSTS = [types.SimpleNamespace(name=name) for name in ("a0", "a1", "a2", "i0", "i1", "i2")]


class TestFairScope(db_backends.DatabaseTestCase):
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)
        self.config = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        self.state = RequestState(
            ApplicationProfile(app_name="blast"), "app", database=self.database
        )

    def names(self, tries) -> list[tuple[list[str], str | None]]:
        return [
            ([host.name for host in hosts], choice and choice.platform) for hosts, choice in tries
        ]

    def test_out_of_scope_without_fair_share_or_a_project(self) -> None:
        entitlements = fairness.Entitlements()
        self.config.config(fairness_policy="none", group="hpc_scheduler")
        self.assertIsNone(fair_scope.scope(entitlements, self.state, Request(project_id="p")))
        self.config.config(fairness_policy="pa-rr", group="hpc_scheduler")
        self.assertIsNone(fair_scope.scope(entitlements, self.state, Request()))
        # No generation written yet.
        self.assertIsNone(fair_scope.scope(entitlements, self.state, Request(project_id="p")))

    def test_without_fair_share_every_host_is_one_try(self) -> None:
        self.assertEqual(
            [(HOSTS, None)], fair_scope.tries(self.state, Request(project_id="p"), None, HOSTS, 4)
        )

    def test_template_following_hosts_are_tried_before_the_whole_platform(self) -> None:
        templates = {"amd": [{"slots": [["p", 4]], "nodes": 2}, {"slots": [["q", 4]], "nodes": 1}]}
        entitlements = in_force({"p": {"amd": 8}, "q": {"amd": 4}}, templates=templates)
        # q's node is a0; p's VMs go where p's template slots are.
        self.database.record_running([vm("u1", "a0", "q", 4), vm("u2", "a1", "p", 2)])
        found = fair_scope.tries(self.state, Request(project_id="p"), entitlements, HOSTS, 2)
        self.assertEqual([(["a1", "a2"], "amd"), (["a0", "a1", "a2"], "amd")], self.names(found))
        self.assertIsNone(self.state.refusal)

    def test_no_platform_left_refuses_and_records_the_refusal(self) -> None:
        self.config.config(fairness_policy="pa-rr", group="hpc_scheduler")
        entitlements = in_force({"p": {"amd": 4}, "q": {"intel": 12}})
        since = datetime.datetime(2000, 1, 1)
        self.assertEqual(
            [], fair_scope.tries(self.state, Request(project_id="p"), entitlements, HOSTS, 8)
        )
        self.assertIn("p", self.state.refusal)
        refusals = self.database.refusals(since)
        self.assertEqual(
            [("p", "blast", 8)], [(r.project, r.application, r.cores) for r in refusals]
        )

    def test_a_refusal_keeps_the_required_topology_level(self) -> None:
        self.config.config(fairness_policy="pa-rr", group="hpc_scheduler")
        self.state.topology = TopologySpec(required="rack")
        entitlements = in_force({"p": {"amd": 4}})
        fair_scope.tries(self.state, Request(project_id="p"), entitlements, HOSTS, 8)
        fair_scope.tries(
            RequestState(ApplicationProfile(), "other", database=self.database),
            Request(project_id="p"),
            entitlements,
            HOSTS,
            6,
        )
        refusals = self.database.refusals(datetime.datetime(2000, 1, 1))
        self.assertEqual([(8, "rack"), (6, None)], [(r.cores, r.topology_level) for r in refusals])


def generation(database: db_api.Database, allocation) -> None:
    """Write ``allocation`` as the generation in force, with shares for its projects."""
    for project in allocation:
        database.set_share(project, 1.0)
    cloud = in_force(allocation).cloud
    database.write_generation(
        "pa-rr",
        allocation,
        {"templates": {}, "affinity": {}, "cloud": platforms.cloud_as_json(cloud)},
    )


class TestPreemptibleScope(db_backends.DatabaseTestCase):
    """Preemptible requests take idle cores, as loans, whoever's project they are."""

    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)
        self.config = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        self.config.config(fairness_policy="pa-rr", group="hpc_scheduler")
        self.entitlements = fairness.Entitlements()

    def state(self, preemptible: bool) -> RequestState:
        return RequestState(
            ApplicationProfile(), "app", database=self.database, preemptible=preemptible
        )

    def test_preemptible_requests_of_every_project_are_in_scope_while_a_generation_is(
        self,
    ) -> None:
        request = Request(project_id="stranger")
        # Fair share on, no generation yet: hpc:preemptible changes nothing.
        self.assertIsNone(fair_scope.scope(self.entitlements, self.state(True), request))
        generation(self.database, {"p": {"amd": 4}})
        entitlements = fairness.Entitlements()
        self.assertIsNone(fair_scope.scope(entitlements, self.state(False), request))
        found = fair_scope.scope(entitlements, self.state(True), request)
        self.assertIsNotNone(found)
        self.assertNotIn("stranger", found.governed)
        # Fair share off: out of scope again.
        self.config.config(fairness_policy="none", group="hpc_scheduler")
        self.assertIsNone(fair_scope.scope(entitlements, self.state(True), request))

    def test_preemptible_tries_are_idle_platforms_as_loans_under_strict(self) -> None:
        entitlements = in_force({"p": {"amd": 4}, "q": {"intel": 12}})
        # p spent its entitlement; q's intel cores are idle but for 8.
        self.database.record_running([vm("u1", "a0", "p", 4), vm("u2", "i0", "q", 4)])
        self.database.record_running([vm("u3", "i1", "q", 4)])
        state = self.state(True)
        found = fair_scope.tries(state, Request(project_id="p"), entitlements, HOSTS, 4)
        self.assertEqual(
            [
                (["a0", "a1", "a2"], "amd", db_api.PREEMPTIBLE),
                (["i0", "i1", "i2"], "intel", db_api.PREEMPTIBLE),
            ],
            [([h.name for h in hosts], c.platform, c.loan) for hosts, c in found],
        )
        # Beyond every platform's idle cores: refused, and no refusal recorded
        # (it is no demand for an entitlement: nothing is reclaimed for it).
        self.assertEqual(
            [], fair_scope.tries(state, Request(project_id="p"), entitlements, HOSTS, 9)
        )
        self.assertIn("9 preemptible cores, more than any platform has idle", state.refusal)
        self.assertEqual([], self.database.refusals(datetime.datetime(2000, 1, 1)))

    def test_a_stranger_may_still_use_the_hosts_of_no_platform(self) -> None:
        entitlements = in_force({"p": {"amd": 12}, "q": {"intel": 12}})
        elsewhere = types.SimpleNamespace(name="x0")
        self.database.record_running(
            [vm(f"a{i}", f"a{i}", "p", 4) for i in range(3)]
            + [vm(f"i{i}", f"i{i}", "q", 4) for i in range(3)]
        )
        found = fair_scope.tries(
            self.state(True), Request(project_id="s"), entitlements, [*HOSTS, elsewhere], 1
        )
        self.assertEqual([([elsewhere], None)], found)
        # A governed project's preemptible request may not: it is refused.
        self.assertEqual(
            [],
            fair_scope.tries(
                self.state(True), Request(project_id="p"), entitlements, [*HOSTS, elsewhere], 1
            ),
        )
