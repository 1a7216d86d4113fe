"""The database layer on every backend: imports, listings, running VMs."""

from __future__ import annotations

import dataclasses
import datetime

import testtools
from oslo_db import exception as db_exc

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration
from tests import db_backends

IS = ProfileRecord(
    name="IS.B.4",
    app_class=AppClass.EXTREME_HPC,
    cache_score=47.0,
    solo_runtime=89.5,
    description="NPB IS",
)
LU = ProfileRecord(
    name="LU.C.16",
    app_class=AppClass.SYNC_HPC,
    cache_score=16.0,
    sllc_score=0.053,
    dram_score=0.127,
    net_score=0.004,
    counters={"cache_misses": 1.5e6, "cycles": 3.25e9},
)


class DatabaseTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)

    def test_profiles_round_trip_exactly(self) -> None:
        result = self.database.import_profiles([IS, LU])
        self.assertEqual((2, 0, 0), (result.created, result.updated, result.unchanged))
        self.assertEqual([IS, LU], self.database.list_profiles())
        self.assertEqual(LU, self.database.get_profile("LU.C.16"))
        self.assertIsNone(self.database.get_profile("nope"))

    def test_names_that_differ_by_case_are_two_applications(self) -> None:
        upper = ProfileRecord(name="D1", app_class=AppClass.SYNC_HPC, cache_score=1.0)
        lower = ProfileRecord(name="d1", app_class=AppClass.ASYNC_HPC, cache_score=2.0)
        result = self.database.import_profiles([upper, lower])
        self.assertEqual((2, 0, 0), (result.created, result.updated, result.unchanged))
        self.assertEqual(lower, self.database.get_profile("d1"))
        self.assertEqual(upper, self.database.get_profile("D1"))
        self.database.import_interferences(
            [InterferenceRecord("D1", "x", 50.0, 1.0), InterferenceRecord("d1", "x", 2.0, 1.0)]
        )
        self.assertEqual(
            [("D1", 50.0)],
            [(r.app_a, r.slowdown_a) for r in self.database.list_interferences(["D1"])],
        )

    def test_importing_the_same_profiles_again_changes_nothing(self) -> None:
        self.database.import_profiles([IS, LU])
        result = self.database.import_profiles([IS, LU])
        self.assertEqual((0, 0, 2), (result.created, result.updated, result.unchanged))
        self.assertEqual([IS, LU], self.database.list_profiles())

    def test_changed_profile_is_updated(self) -> None:
        self.database.import_profiles([IS, LU])
        changed = ProfileRecord(name="LU.C.16", app_class=AppClass.ASYNC_HPC, cache_score=12.0)
        result = self.database.import_profiles([IS, changed])
        self.assertEqual((0, 1, 1), (result.created, result.updated, result.unchanged))
        self.assertEqual(changed, self.database.get_profile("LU.C.16"))

    def test_failed_import_writes_nothing(self) -> None:
        self.database.import_profiles([IS])
        # A record that only the database refuses (NULL name), after good ones.
        broken = ProfileRecord(name=None)  # type: ignore[arg-type]
        updated_is = ProfileRecord(name="IS.B.4", app_class=AppClass.EXTREME_HPC, cache_score=1.0)
        self.assertRaises(db_exc.DBError, self.database.import_profiles, [updated_is, LU, broken])
        self.assertEqual([IS], self.database.list_profiles())

    def test_delete_profiles(self) -> None:
        self.database.import_profiles([IS, LU])
        self.assertEqual(1, self.database.delete_profiles(["IS.B.4", "absent"]))
        self.assertEqual([LU], self.database.list_profiles())

    def test_interference_pairs_are_stored_once_per_source(self) -> None:
        when = datetime.datetime(2011, 6, 1, 12, 30, 5)
        measured = InterferenceRecord("LU.C.16", "IS.B.4", 30.0, 5.0, "measured", when)
        predicted = InterferenceRecord("IS.B.4", "LU.C.16", 4.0, 25.0, "predicted")
        result = self.database.import_interferences([measured, predicted])
        self.assertEqual(2, result.created)
        stored = self.database.list_interferences()
        self.assertEqual([measured, predicted], stored)
        self.assertEqual(
            ("IS.B.4", "LU.C.16", 5.0, 30.0),
            (stored[0].app_a, stored[0].app_b, stored[0].slowdown_a, stored[0].slowdown_b),
        )
        self.assertEqual(when, stored[0].measured_at)
        again = self.database.import_interferences(
            [InterferenceRecord("IS.B.4", "LU.C.16", 5.0, 30.0, "measured", when), predicted]
        )
        self.assertEqual((0, 0, 2), (again.created, again.updated, again.unchanged))

    def test_interferences_filtered_by_application(self) -> None:
        records = [
            InterferenceRecord("A", "B", 1.0, 2.0),
            InterferenceRecord("B", "C", 3.0, 4.0),
            InterferenceRecord("C", "D", 5.0, 6.0),
        ]
        self.database.import_interferences(records)
        self.assertEqual(records[:2], self.database.list_interferences(["B"]))
        self.assertEqual([], self.database.list_interferences(["Z"]))

    def test_running_vms_are_keyed_by_instance(self) -> None:
        first = db_api.RunningRecord(
            "uuid-1",
            "host1",
            AppClass.SYNC_HPC,
            16.0,
            "LU.C.16",
            request_id="req-1",
            project_id="p1",
        )
        second = db_api.RunningRecord("uuid-2", "host2", AppClass.NON_HPC, 0.0)
        self.database.record_running([first, second])
        moved = db_api.RunningRecord(
            "uuid-1",
            "host3",
            AppClass.SYNC_HPC,
            16.0,
            "LU.C.16",
            request_id="req-1",
            project_id="p1",
        )
        self.database.record_running([moved])
        self.assertEqual([second, moved], self.database.list_running())
        self.assertEqual([moved], self.database.list_running(["host3"]))
        self.assertEqual(1, self.database.forget_running(["uuid-2", "uuid-9"]))
        self.assertEqual([moved], self.database.list_running())

    def test_empty_batches_are_fine(self) -> None:
        self.assertEqual(0, self.database.import_profiles([]).created)
        self.assertEqual(0, self.database.import_interferences([]).created)
        self.database.record_running([])
        self.assertEqual(0, self.database.forget_running([]))

    def test_fitted_models_are_stored_whole_and_replaced(self) -> None:
        # Larger than a MariaDB BLOB (64 KB): the column must hold a real forest.
        data = bytes(range(256)) * 1024
        versions = {"scikit-learn": "1.9.1", "skops": "0.16.0"}
        self.assertTrue(self.database.store_model("forest", "pair-forest", data, versions, "r"))
        stored = self.database.stored_model("forest")
        self.assertEqual(
            ("pair-forest", data, versions, "r"),
            (stored.kind, stored.data, stored.versions, stored.report),
        )
        self.assertEqual(("pair-forest", 1), self.database.stored_model_stamp("forest"))
        self.assertFalse(self.database.store_model("forest", "pair-forest", b"new", versions, None))
        self.assertEqual(b"new", self.database.stored_model("forest").data)
        self.assertEqual(("pair-forest", 2), self.database.stored_model_stamp("forest"))
        self.assertIsNone(self.database.stored_model_stamp("other"))
        self.assertIsNone(self.database.stored_model("Forest"))
        self.assertEqual(["forest"], [m.name for m in self.database.stored_models()])


db_backends.for_each_backend(globals(), DatabaseTests, "TestDatabase")


class TestDatabaseUnavailable(db_backends.DatabaseTestCase):
    def test_no_url_is_reported(self) -> None:
        error = self.assertRaises(db_api.DatabaseUnavailable, db_api.Database, None)
        self.assertIn("connection", str(error))

    def test_unreachable_server_raises_connection_error(self) -> None:
        database = db_api.Database("mysql+pymysql://nobody:x@127.0.0.1:1/none?connect_timeout=2")
        self.addCleanup(database.dispose)
        self.assertRaises(db_exc.DBConnectionError, database.list_profiles)


class TestColumnOrder(testtools.TestCase):
    """Rows are read positionally: the columns must follow the records' fields."""

    def test_running_columns_fill_running_record_fields_in_order(self) -> None:
        fields = [f.name for f in dataclasses.fields(db_api.RunningRecord)]
        # app_running's created_at is when the VM was placed.
        expected = ["created_at" if name == "placed_at" else name for name in fields]
        self.assertEqual(expected, [c.name for c in db_api._running_columns()])

    def test_claim_columns_fill_claim_fields_in_order(self) -> None:
        fields = [f.name for f in dataclasses.fields(db_api.Claim)]
        self.assertEqual(fields, [c.name for c in db_api._claim_columns()])
