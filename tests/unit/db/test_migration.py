"""Migrations from an empty database, and models against the migrated schema."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import threading

import fixtures
import sqlalchemy as sa
import testtools
from oslo_db.sqlalchemy import test_migrations

from hpc_nova_scheduler.core.records import SoloRun
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration, models
from tests import db_backends

TABLES = {"app_profiles", "app_running", "app_interferences", "fitted_models"}
#: What migration 0007 adds: seed 002's fair-share data.
FAIRSHARE_TABLES = {
    "fairshare_shares",
    "fairshare_demand",
    "fairshare_allocations",
    "fairshare_generations",
    "fairshare_usage",
    "fairshare_runs",
}


def _profile_names(engine: sa.Engine) -> list[str]:
    """Profile names read with plain SQL: the models describe the head schema only."""
    with engine.connect() as connection:
        return sorted(connection.scalars(sa.text("SELECT name FROM app_profiles")))


class MigrationTests:
    def test_empty_database_has_no_revision(self) -> None:
        self.assertIsNone(migration.current_revision(self.database.engine))

    def test_upgrade_from_empty_reaches_head(self) -> None:
        migration.upgrade(self.database.engine)
        self.assertEqual(
            migration.head_revision(), migration.current_revision(self.database.engine)
        )
        tables = set(sa.inspect(self.database.engine).get_table_names())
        self.assertTrue(tables >= TABLES | FAIRSHARE_TABLES, tables)

    def test_upgrade_twice_is_a_no_op(self) -> None:
        migration.upgrade(self.database.engine)
        migration.upgrade(self.database.engine)
        self.assertEqual(
            migration.head_revision(), migration.current_revision(self.database.engine)
        )

    def test_upgrade_from_0003_keeps_the_data_and_tells_names_by_case(self) -> None:
        engine = self.database.engine
        migration.upgrade(engine, "0003")
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO app_profiles (name, app_class, cache_score, created_at) "
                    "VALUES ('LU', 'SyncHPC', 16.0, CURRENT_TIMESTAMP)"
                )
            )
        migration.upgrade(engine, "0004")
        self.assertEqual("0004", migration.current_revision(engine))
        self.assertEqual(["LU"], _profile_names(engine))
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO app_profiles (name, app_class, cache_score, created_at) "
                    "VALUES ('lu', 'AsyncHPC', 2.0, CURRENT_TIMESTAMP)"
                )
            )
        self.assertEqual(["LU", "lu"], _profile_names(engine))

    def test_upgrade_from_0004_keeps_the_data_and_adds_fitted_models(self) -> None:
        engine = self.database.engine
        migration.upgrade(engine, "0004")
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO app_profiles (name, app_class, cache_score, created_at) "
                    "VALUES ('LU', 'SyncHPC', 16.0, CURRENT_TIMESTAMP)"
                )
            )
            connection.execute(
                sa.text(
                    "INSERT INTO app_interferences (app_a, app_b, slowdown_a, slowdown_b, "
                    "source, created_at) VALUES ('A', 'B', 5, 6, 'measured', CURRENT_TIMESTAMP)"
                )
            )
        self.assertNotIn("fitted_models", sa.inspect(engine).get_table_names())
        migration.upgrade(engine, "0005")
        self.assertEqual("0005", migration.current_revision(engine))
        self.assertEqual(["LU"], _profile_names(engine))
        self.assertEqual(1, len(self.database.list_interferences()))
        self.database.store_model("f", "pair-forest", b"x" * 70000, {}, None)
        self.assertEqual(70000, len(self.database.stored_model("f").data))
        migration.downgrade(engine, "0004")
        self.assertNotIn("fitted_models", sa.inspect(engine).get_table_names())
        self.assertEqual(["LU"], _profile_names(engine))

    def test_upgrade_from_0005_keeps_profiles_and_adds_solo_runs(self) -> None:
        engine = self.database.engine
        migration.upgrade(engine, "0005")
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO app_profiles (name, app_class, cache_score, solo_runtime, "
                    "counters, created_at) VALUES ('LU', 'SyncHPC', 16.0, 120.5, "
                    "'{\"cycles\": 3.0}', CURRENT_TIMESTAMP)"
                )
            )
        migration.upgrade(engine, "0006")
        self.assertEqual("0006", migration.current_revision(engine))
        (profile,) = self.database.list_profiles()
        self.assertEqual(
            ("LU", 16.0, 120.5, {"cycles": 3.0}),
            (profile.name, profile.cache_score, profile.solo_runtime, dict(profile.counters)),
        )
        self.assertEqual((None, {}), (profile.family, dict(profile.solo_runs)))
        runs = {"xeon": SoloRun(100.0, {"cpu_user": 90.0}), "epyc": SoloRun(80.0)}
        self.database.import_profiles([dataclasses.replace(profile, family="mpi", solo_runs=runs)])
        (stored,) = self.database.list_profiles()
        self.assertEqual(("mpi", runs), (stored.family, dict(stored.solo_runs)))
        migration.downgrade(engine, "0005")
        self.assertEqual(["LU"], _profile_names(engine))
        columns = {c["name"] for c in sa.inspect(engine).get_columns("app_profiles")}
        self.assertNotIn("solo_runs", columns)
        self.assertIn("counters", columns)

    def test_upgrade_from_0006_keeps_the_data_and_adds_fair_share(self) -> None:
        engine = self.database.engine
        migration.upgrade(engine, "0006")
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO app_profiles (name, app_class, cache_score, created_at) "
                    "VALUES ('LU', 'SyncHPC', 16.0, CURRENT_TIMESTAMP)"
                )
            )
        before = set(sa.inspect(engine).get_table_names())
        self.assertFalse(before & FAIRSHARE_TABLES, before)
        migration.upgrade(engine, "0007")
        self.assertEqual("0007", migration.current_revision(engine))
        self.assertEqual(["LU"], _profile_names(engine))
        self.assertEqual(before | FAIRSHARE_TABLES, set(sa.inspect(engine).get_table_names()))
        # Plain SQL: the models describe the head schema, which has more columns.
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO fairshare_demand (project, cores, updated_at) "
                    "VALUES ('Proj', 64, CURRENT_TIMESTAMP)"
                )
            )
        with engine.connect() as connection:
            self.assertEqual(
                [("Proj", 64)],
                [
                    tuple(row)
                    for row in connection.execute(
                        sa.text("SELECT project, cores FROM fairshare_demand")
                    )
                ],
            )
        indexes = sa.inspect(engine).get_indexes("fairshare_runs")
        self.assertIn(["application", "platform"], [i["column_names"] for i in indexes])
        migration.downgrade(engine, "0006")
        self.assertEqual("0006", migration.current_revision(engine))
        self.assertEqual(before, set(sa.inspect(engine).get_table_names()))
        self.assertEqual(["LU"], _profile_names(engine))

    def test_upgrade_from_0007_counts_cores_and_adds_the_lease_and_refusals(self) -> None:
        engine = self.database.engine
        migration.upgrade(engine, "0007")
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO app_running (instance_uuid, host, app_class, cache_score, "
                    "created_at) VALUES ('vm-1', 'h1', 'SyncHPC', 1.0, CURRENT_TIMESTAMP)"
                )
            )
        before = set(sa.inspect(engine).get_table_names())
        migration.upgrade(engine, "0008")
        added = {"fairshare_lease", "fairshare_refusals"}
        self.assertEqual(before | added, set(sa.inspect(engine).get_table_names()))
        with engine.connect() as connection:
            self.assertEqual(
                [0], list(connection.scalars(sa.text("SELECT cores FROM app_running")))
            )
        migration.downgrade(engine, "0007")
        self.assertEqual(before, set(sa.inspect(engine).get_table_names()))
        for table in ("app_running", "app_claims"):
            columns = {c["name"] for c in sa.inspect(engine).get_columns(table)}
            self.assertNotIn("cores", columns)
        with engine.connect() as connection:
            self.assertEqual(
                ["vm-1"], list(connection.scalars(sa.text("SELECT instance_uuid FROM app_running")))
            )

    def test_upgrade_from_0009_adds_loans_and_reclaims_and_keeps_claims(self) -> None:
        engine = self.database.engine
        migration.upgrade(engine, "0009")
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO fairshare_refusals (project, cores, created_at) "
                    "VALUES ('p1', 4, CURRENT_TIMESTAMP)"
                )
            )
        before = set(sa.inspect(engine).get_table_names())
        migration.upgrade(engine, "0010")
        added = {"fairshare_loans", "fairshare_reclaims"}
        self.assertEqual(before | added, set(sa.inspect(engine).get_table_names()))
        claim_columns = {c["name"] for c in sa.inspect(engine).get_columns("app_claims")}
        self.assertLessEqual({"loan", "loan_platform", "loan_over"}, claim_columns)
        with engine.connect() as connection:
            self.assertEqual(
                [None],
                list(connection.scalars(sa.text("SELECT topology_level FROM fairshare_refusals"))),
            )
        migration.downgrade(engine, "0009")
        self.assertEqual(before, set(sa.inspect(engine).get_table_names()))
        claim_columns = {c["name"] for c in sa.inspect(engine).get_columns("app_claims")}
        self.assertNotIn("loan", claim_columns)
        with engine.connect() as connection:
            self.assertEqual(
                [4], list(connection.scalars(sa.text("SELECT cores FROM fairshare_refusals")))
            )

    def test_upgrade_from_0010_keeps_generations_and_takes_big_templates(self) -> None:
        engine = self.database.engine
        migration.upgrade(engine, "0010")
        insert = sa.text(
            "INSERT INTO fairshare_generations (generation, created_at, policy, templates) "
            "VALUES (:generation, CURRENT_TIMESTAMP, 'paf', :templates)"
        )
        with engine.begin() as connection:
            connection.execute(insert, {"generation": 1, "templates": '{"amd": []}'})
        migration.upgrade(engine, "0011")
        # 200 KB: three times what TEXT holds on MariaDB.
        big = '{"n": "' + "x" * 200_000 + '"}'
        with engine.begin() as connection:
            connection.execute(insert, {"generation": 2, "templates": big})
        read = sa.text("SELECT templates FROM fairshare_generations ORDER BY generation")
        with engine.connect() as connection:
            self.assertEqual(['{"amd": []}', big], list(connection.scalars(read)))
        with engine.begin() as connection:
            connection.execute(sa.text("DELETE FROM fairshare_generations WHERE generation = 2"))
        migration.downgrade(engine, "0010")
        with engine.connect() as connection:
            self.assertEqual(['{"amd": []}'], list(connection.scalars(read)))

    def test_unique_constraints_exist(self) -> None:
        migration.upgrade(self.database.engine)
        inspector = sa.inspect(self.database.engine)
        uniques = {
            table: {tuple(u["column_names"]) for u in inspector.get_unique_constraints(table)}
            | {tuple(i["column_names"]) for i in inspector.get_indexes(table) if i["unique"]}
            for table in TABLES
        }
        self.assertIn(("name",), uniques["app_profiles"])
        self.assertIn(("instance_uuid",), uniques["app_running"])
        self.assertIn(("app_a", "app_b", "source"), uniques["app_interferences"])


class ModelsMatchMigrations(test_migrations.ModelsMigrationsSync):
    """oslo.db's comparison of the models with what the migrations built."""

    def get_engine(self) -> sa.Engine:
        return self.database.engine

    def get_metadata(self) -> sa.MetaData:
        return models.Base.metadata

    def db_sync(self, engine: sa.Engine) -> None:
        migration.upgrade(engine)

    def include_object(self, object_, name, type_, reflected, compare_to) -> bool:
        return not (type_ == "table" and name == "alembic_version")


db_backends.for_each_backend(globals(), MigrationTests, "TestMigrations")
db_backends.for_each_backend(globals(), ModelsMatchMigrations, "TestModelsMatchMigrations")


class TestMigrationsAtOnce(testtools.TestCase):
    """Threads of one process migrating at once, as scheduler threads opening the copy."""

    def test_four_threads_each_bring_their_own_database_to_head(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        urls = [f"sqlite:///{os.path.join(folder, f'db{n}.sqlite')}" for n in range(8)]
        barrier = threading.Barrier(4)

        def sync(urls: list[str]) -> list[str | None]:
            reached = []
            barrier.wait()
            for url in urls:
                database = db_api.Database(url)
                try:
                    reached.append(database.sync())
                finally:
                    database.dispose()
            return reached

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            reached = [r for rs in pool.map(sync, [urls[n::4] for n in range(4)]) for r in rs]
        self.assertEqual([migration.head_revision()] * 8, reached)
