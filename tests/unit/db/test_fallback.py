"""Handing the fallback copy's placements to the database, on every backend."""

from __future__ import annotations

import datetime
import os

import fixtures
from oslo_utils import timeutils
from sqlalchemy import update

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration, models
from tests import db_backends
from tests.unit.db.test_claims import claim


class FallbackTests:
    """The database under test receives; the copy is SQLite, as by default."""

    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, "copy.sqlite")
        self.copy = db_api.Database(f"sqlite:///{path}")
        self.addCleanup(self.copy.dispose)
        self.copy.sync()

    def test_rows_and_live_claims_move_over_and_leave_the_copy(self) -> None:
        newer = db_api.RunningRecord("kept", "n1", AppClass.SYNC_HPC, 5.0, request_id="main")
        self.database.record_running([newer])
        self.copy.record_running(
            [
                db_api.RunningRecord("placed", "n2", AppClass.ASYNC_HPC, 9.0, app_name="B"),
                db_api.RunningRecord("kept", "n3", AppClass.SYNC_HPC, 5.0, request_id="copy"),
            ]
        )
        self.copy.claim([claim("live", "n4", vms=2)], lambda view: None, ttl=60)
        self.copy.claim([claim("old", "n5")], lambda view: None, ttl=60)
        claims = models.AppClaim.__table__
        with self.copy.engine.begin() as connection:
            past = timeutils.utcnow() - datetime.timedelta(seconds=1)
            connection.execute(
                update(claims).where(claims.c.claim_id == "old").values(expires_at=past)
            )
        self.assertTrue(self.copy.has_placements())

        added = []
        moved = self.copy.hand_over(
            lambda rows, found: added.append(self.database.adopt(rows, found, ttl=60))
        )
        self.assertEqual([(1, 1)], added)

        self.assertEqual((2, 1), moved)
        rows = {vm.instance_uuid: vm for vm in self.database.list_running()}
        self.assertEqual({"kept", "placed"}, set(rows))
        # The database's own row is newer than the copy's.
        self.assertEqual(("n1", "main"), (rows["kept"].host, rows["kept"].request_id))
        self.assertEqual(
            ("n2", "B", 9.0),
            (rows["placed"].host, rows["placed"].app_name, rows["placed"].cache_score),
        )
        live = self.database.live_claims()
        self.assertEqual([("live", "n4", 2)], [(c.claim_id, c.host, c.vms) for c in live])
        self.assertFalse(self.copy.has_placements())
        self.assertEqual([], self.copy.list_running())
        # Handing over twice adds nothing.
        self.assertEqual((0, 0), self.copy.hand_over(self.fail))

    def test_a_failed_hand_over_keeps_everything_in_the_copy(self) -> None:
        self.copy.record_running([db_api.RunningRecord("placed", "n2", AppClass.ASYNC_HPC, 9.0)])
        self.copy.claim([claim("live")], lambda view: None, ttl=60)

        def refuse(rows, claims):
            raise db_api.DatabaseUnavailable("down")

        self.assertRaises(db_api.DatabaseUnavailable, self.copy.hand_over, refuse)
        self.assertEqual(["placed"], [vm.instance_uuid for vm in self.copy.list_running()])
        self.assertEqual(["live"], [c.claim_id for c in self.copy.live_claims()])
        self.assertEqual([], self.database.list_running())

    def test_reference_data_is_replaced_exactly(self) -> None:
        self.database.import_profiles(
            [ProfileRecord(name="old", app_class=AppClass.SYNC_HPC, cache_score=1.0)]
        )
        self.database.import_interferences([InterferenceRecord("old", "x", 50.0, 1.0)])
        profiles = [
            ProfileRecord(name="LU", app_class=AppClass.SYNC_HPC, cache_score=16.0),
            ProfileRecord(name="IS", app_class=AppClass.EXTREME_HPC, cache_score=47.0),
        ]
        table = [InterferenceRecord("IS", "LU", 40.0, 12.0)]
        self.database.replace_reference(profiles, table)
        self.assertEqual(
            sorted(p.name for p in profiles), [p.name for p in self.database.list_profiles()]
        )
        self.assertEqual(table, self.database.list_interferences())


db_backends.for_each_backend(globals(), FallbackTests, "TestFallback")
