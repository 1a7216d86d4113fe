"""``reconcile`` repairs app_running from what Nova's databases hold."""

from __future__ import annotations

import dataclasses

import sqlalchemy as sa
from nova import context as nova_context

from hpc_nova_scheduler.agent import reconcile
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from tests.functional import base


class TestReconcile(base.HpcTestCase):
    RACKS = {"r1": ["n1", "n2", "n3", "n4"]}
    CPU_GROUPS = {"g": ["n1", "n2", "n3", "n4"]}

    def rows(self) -> dict[str, db_api.RunningRecord]:
        return {vm.instance_uuid: vm for vm in self.database.list_running()}

    def test_stale_moved_and_missing_records(self) -> None:
        flavor = self.hpc_flavor(app_class="AsyncHPC", cache_score="10", app_name="EP")
        servers = self.launch(flavor, count=3)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers})
        gone, moved, lost = (s["id"] for s in servers)
        rows = self.rows()
        self.assertEqual({gone, moved, lost}, set(rows))
        # What nova-scheduler would miss if it were down: a deleted server,
        # a record pointing at the wrong host, a record that never got written.
        self.api.delete_server(gone)
        self._wait_until_deleted({"id": gone})
        right_host = rows[moved].host
        wrong_host = next(h for h in ("n1", "n2", "n3", "n4") if h != right_host)
        self.database.record_running([dataclasses.replace(rows[moved], host=wrong_host)])
        self.database.forget_running([lost])

        changes = reconcile.plan(self.database.list_running(), reconcile.NovaView())
        self.assertEqual([gone], [vm.instance_uuid for vm in changes.stale])
        self.assertEqual(
            [(moved, right_host)], [(vm.instance_uuid, h) for vm, h, _ in changes.moved]
        )
        self.assertEqual([lost], [vm.instance_uuid for vm in changes.missing])
        self.assertEqual("EP", changes.missing[0].app_name)
        self.assertEqual(10.0, changes.missing[0].cache_score)
        self.assertEqual(1, changes.missing[0].cores)

        reconcile.apply(self.database, changes)
        repaired = self.rows()
        self.assertEqual({moved, lost}, set(repaired))
        self.assertEqual(right_host, repaired[moved].host)
        self.assertFalse(reconcile.plan(self.database.list_running(), reconcile.NovaView()))

    def test_rows_written_before_cores_were_kept_get_their_flavors_vcpus(self) -> None:
        flavor = self.hpc_flavor(vcpus=2, app_class="AsyncHPC", cache_score="10", app_name="EP")
        servers = self.launch(flavor, count=2)
        self.assertEqual({2}, {vm.cores for vm in self.rows().values()})
        old = servers[0]["id"]
        with self.database.engine.begin() as connection:
            connection.execute(
                sa.text("UPDATE app_running SET cores = 0 WHERE instance_uuid = :uuid"),
                {"uuid": old},
            )
        changes = reconcile.plan(self.database.list_running(), reconcile.NovaView())
        self.assertEqual({old: 2}, changes.cores)
        self.assertEqual([f"cores: {old} has 2"], changes.describe())
        reconcile.apply(self.database, changes)
        self.assertEqual({2}, {vm.cores for vm in self.rows().values()})

    def test_a_missing_record_gets_the_name_of_the_boot_hint(self) -> None:
        flavor = self.hpc_flavor(app_class="AsyncHPC", cache_score="10")
        (server,) = self.launch(flavor, hints={"hpc_app_name": "MG"})
        self.database.forget_running([server["id"]])
        changes = reconcile.plan(self.database.list_running(), reconcile.NovaView())
        self.assertEqual(
            [(server["id"], "MG")], [(vm.instance_uuid, vm.app_name) for vm in changes.missing]
        )

    def test_a_record_of_an_instance_nova_never_had_is_stale(self) -> None:
        unknown = db_api.RunningRecord(
            "11111111-2222-3333-4444-555555555555", "n1", AppClass.SYNC_HPC, 5.0
        )
        self.database.record_running([unknown])
        changes = reconcile.plan(self.database.list_running(), reconcile.NovaView())
        self.assertEqual([unknown.instance_uuid], [vm.instance_uuid for vm in changes.stale])
        self.assertFalse(changes.moved or changes.missing)

    def test_only_instances_whose_flavor_names_an_hpc_spec_are_built(self) -> None:
        hpc = self.hpc_flavor(app_class="AsyncHPC", cache_score="10", app_name="EP")
        plain = self.hpc_flavor()
        # A value that mentions the namespace passes the textual look, and
        # the real extra specs then drop it.
        lookalike = self.hpc_flavor()
        spec = {"note:comment": '"hpc:app_class" is not set here'}
        self.admin_api.post_extra_spec(lookalike, {"extra_specs": spec})
        (mine,) = self.launch(hpc)
        (other,) = self.launch(plain)
        (alike,) = self.launch(lookalike)
        self.database.forget_running([mine["id"]])
        view = reconcile.NovaView()
        with nova_context.target_cell(nova_context.get_admin_context(), view._cells()[0]) as cctxt:
            flavored = view.nova.hpc_flavored(cctxt)
        self.assertIn(mine["id"], flavored)
        self.assertNotIn(other["id"], flavored)
        self.assertIn(alike["id"], flavored)
        self.assertEqual([mine["id"]], [found.uuid for found in view.hpc_instances()])
        changes = reconcile.plan(self.database.list_running(), view)
        self.assertEqual([mine["id"]], [vm.instance_uuid for vm in changes.missing])


class TestSweep(base.HpcTestCase):
    RACKS = {"r1": ["n1", "n2", "n3", "n4"]}
    CPU_GROUPS = {"g": ["n1", "n2", "n3", "n4"]}

    def test_a_sweep_removes_the_record_of_a_deleted_server(self) -> None:
        flavor = self.hpc_flavor(app_class="SyncHPC", cache_score="10", app_name="LU")
        kept, deleted = (s["id"] for s in self.launch(flavor, count=2))
        self.api.delete_server(deleted)
        self._wait_until_deleted({"id": deleted})
        self.assertIn(deleted, {vm.instance_uuid for vm in self.database.list_running()})
        changes = self.sweep()
        self.assertEqual([deleted], [vm.instance_uuid for vm in changes.stale])
        self.assertEqual({kept}, {vm.instance_uuid for vm in self.database.list_running()})
