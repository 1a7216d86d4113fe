"""Seed 002's fair-share data in the plugin database, on every backend."""

from __future__ import annotations

from hpc_nova_scheduler.core.profile import ProfileError
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration
from hpc_nova_scheduler.fairshare.runs import TaskRun
from tests import db_backends

RUNS = [
    TaskRun("BLAST", "amd", 100.0),
    TaskRun("BLAST", "amd", 100.0),
    TaskRun("BLAST", "intel", 80.25, ("Gene", "AutoDock")),
    TaskRun("Gene", "amd", 55.5),
]


class FairshareDataTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)

    def test_shares_are_set_replaced_and_listed(self) -> None:
        self.assertEqual({}, self.database.shares())
        self.database.set_share("b", 1.0)
        self.database.set_share("A", 2.5)
        self.database.set_share("b", 0.125)
        self.assertEqual({"A": 2.5, "b": 0.125}, self.database.shares())
        self.assertEqual(["A", "b"], list(self.database.shares()))

    def test_bad_shares_are_refused_and_nothing_is_written(self) -> None:
        for project, weight in (("p", 0), ("p", -1.0), ("p", float("nan")), ("", 1.0), (" ", 1)):
            error = self.assertRaises(ProfileError, self.database.set_share, project, weight)
            self.assertIn(error.key, ("weight", "project"))
        self.assertRaises(ProfileError, self.database.set_share, "p", "x")
        self.assertEqual({}, self.database.shares())

    def test_demand_is_set_listed_and_cleared(self) -> None:
        self.database.set_demand("A", 64)
        self.database.set_demand("a", 0)
        self.database.set_demand("A", 32)
        self.assertEqual({"A": 32, "a": 0}, self.database.demand())
        self.assertEqual(1, self.database.clear_demand("a"))
        self.assertEqual(0, self.database.clear_demand("a"))
        self.assertEqual({"A": 32}, self.database.demand())
        self.database.set_demand("B", 1)
        self.assertEqual(2, self.database.clear_demand())
        self.assertEqual({}, self.database.demand())

    def test_bad_demand_is_refused(self) -> None:
        for cores in (-1, 1.5, "3", True):
            self.assertRaises(ProfileError, self.database.set_demand, "p", cores)
        self.assertRaises(ProfileError, self.database.set_demand, "", 3)
        self.assertEqual({}, self.database.demand())

    def test_runs_round_trip_with_sorted_corunners(self) -> None:
        result = self.database.import_runs(RUNS, "import")
        self.assertEqual((4, 0, 0), (result.added, result.removed, result.unchanged))
        self.assertEqual(
            [
                db_api.StoredRun("BLAST", "amd", 100.0),
                db_api.StoredRun("BLAST", "amd", 100.0),
                db_api.StoredRun("BLAST", "intel", 80.25, ("AutoDock", "Gene")),
                db_api.StoredRun("Gene", "amd", 55.5),
            ],
            self.database.runs(),
        )

    def test_importing_the_same_runs_twice_changes_nothing(self) -> None:
        self.database.import_runs(RUNS, "import")
        before = self.database.runs()
        result = self.database.import_runs(list(reversed(RUNS)), "import")
        self.assertEqual((0, 0, 4), (result.added, result.removed, result.unchanged))
        self.assertEqual(before, self.database.runs())

    def test_an_import_replaces_the_imported_runs_of_the_applications_it_names(self) -> None:
        self.database.import_runs(RUNS, "import")
        self.database.import_runs([TaskRun("BLAST", "amd", 90.0)], "characterise")
        result = self.database.import_runs(
            [TaskRun("BLAST", "amd", 100.0), TaskRun("BLAST", "arm", 70.0)], "import"
        )
        self.assertEqual((1, 2, 1), (result.added, result.removed, result.unchanged))
        self.assertEqual(
            [
                db_api.StoredRun("BLAST", "amd", 90.0, (), "characterise"),
                db_api.StoredRun("BLAST", "amd", 100.0),
                db_api.StoredRun("BLAST", "arm", 70.0),
                db_api.StoredRun("Gene", "amd", 55.5),
            ],
            sorted(self.database.runs(), key=lambda r: (r.application, r.platform, r.runtime_s)),
        )
        self.assertEqual(
            [db_api.StoredRun("BLAST", "amd", 90.0, (), "characterise")],
            self.database.runs("characterise"),
        )

    def test_a_bad_run_writes_nothing(self) -> None:
        self.database.import_runs(RUNS, "import")
        before = self.database.runs()
        for bad in (
            TaskRun("BLAST", "amd", 0.0),
            TaskRun("BLAST", "", 1.0),
            TaskRun("BLAST", "amd", 1.0, ("a+b",)),
        ):
            self.assertRaises(
                ProfileError, self.database.import_runs, [TaskRun("BLAST", "x", 1.0), bad]
            )
        self.assertRaises(ProfileError, self.database.import_runs, RUNS, "guess")
        self.assertEqual(before, self.database.runs())


db_backends.for_each_backend(globals(), FairshareDataTests, "TestFairshareData")
