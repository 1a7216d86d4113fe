"""Fair share as the filter applies it to one request: its scope and its tries."""

from __future__ import annotations

import datetime
import types

from oslo_config import fixture as config_fixture

from hpc_nova_scheduler import conf as hpc_conf
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
