"""Seed 002's fair-share data in the plugin database, on every backend."""

from __future__ import annotations

import concurrent.futures
import datetime
import threading

from sqlalchemy import func, select

from hpc_nova_scheduler.core.profile import ProfileError
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration, models
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
        for cores in (-1, 1.5, "3", True, 2**31, 10**30):
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

    # -- generations and usage ---------------------------------------------

    def _allocation_generations(self) -> list[int]:
        table = models.FairshareAllocation
        with self.database.engine.connect() as connection:
            return sorted(set(connection.execute(select(table.generation)).scalars()))

    def test_generations_are_numbered_from_one_and_the_latest_is_read_back(self) -> None:
        self.assertIsNone(self.database.latest_generation())
        templates = {"amd": [["BLAST", "Gene"], ["BLAST"]], "intel": []}
        self.assertEqual(
            1, self.database.write_generation("paf", {"A": {"amd": 8}}, {"amd": [["BLAST"]]})
        )
        number = self.database.write_generation(
            "pa-rr", {"B": {"intel": 4, "amd": 0}, "A": {"amd": 16, "arm": 2}, "C": {}}, templates
        )
        self.assertEqual(2, number)
        latest = self.database.latest_generation()
        self.assertEqual(2, latest.number)
        self.assertEqual("pa-rr", latest.policy)
        # Zero cores are not stored, so a project with none is absent.
        self.assertEqual({"A": {"amd": 16, "arm": 2}, "B": {"intel": 4}}, latest.allocation)
        self.assertEqual(templates, latest.templates)
        self.assertIsInstance(latest.created_at, datetime.datetime)
        self.assertEqual([1, 2], self._allocation_generations())

    def test_templates_of_ten_thousand_nodes_are_read_back_whole(self) -> None:
        # Megabytes of JSON: more than TEXT holds on MariaDB (64 KB).
        templates = {f"node-{i:05d}": [["BLAST", "Gene"], ["Gene"]] for i in range(10_000)}
        number = self.database.write_generation("pa-rr", {"A": {"amd": 8}}, templates)
        self.assertEqual(templates, self.database.latest_generation().templates)
        self.assertEqual(1, number)

    def test_a_bad_generation_writes_nothing(self) -> None:
        self.database.write_generation("paf", {"A": {"amd": 8}}, {})
        for policy, allocation, templates in (
            ("", {"A": {"amd": 1}}, {}),
            ("paf", {"A": {"amd": -1}}, {}),
            ("paf", {"A": {"amd": 1.5}}, {}),
            ("paf", {"A": {"": 1}}, {}),
            ("paf", {" ": {"amd": 1}}, {}),
            ("paf", {"A": 3}, {}),
            ("paf", {"A": {"amd": 1}}, {"amd": [object()]}),
            ("paf", {"A": {"amd": 1}}, {"amd": [float("nan")]}),
        ):
            self.assertRaises(
                ProfileError, self.database.write_generation, policy, allocation, templates
            )
        self.assertEqual(1, self.database.latest_generation().number)
        self.assertEqual([1], self._allocation_generations())

    def test_pruning_keeps_the_newest_generations(self) -> None:
        self.assertEqual(0, self.database.prune_generations(3))
        for cores in range(1, 6):
            self.database.write_generation("equal", {"A": {"amd": cores}}, {})
        self.assertEqual(0, self.database.prune_generations(5))
        self.assertEqual(3, self.database.prune_generations(2))
        self.assertEqual([4, 5], self._allocation_generations())
        self.assertEqual({"A": {"amd": 5}}, self.database.latest_generation().allocation)
        self.assertEqual(1, self.database.prune_generations(1))
        self.assertEqual([5], self._allocation_generations())
        # Numbers go on from the newest kept one.
        self.assertEqual(6, self.database.write_generation("equal", {}, {}))
        for keep in (0, -1, 1.0, True, "2"):
            self.assertRaises(ProfileError, self.database.prune_generations, keep)

    def test_concurrent_writers_never_share_a_generation(self) -> None:
        # Two threads, each with its own database handle as separate
        # scheduler workers would have, write 10 generations each at once.
        barrier = threading.Barrier(2)

        def write(worker: int) -> list[int]:
            database = db_api.Database(self.db_url)
            try:
                barrier.wait()
                return [
                    database.write_generation(
                        "paf", {f"p{worker}": {"amd": n + 1}}, {"amd": [[f"w{worker}"]]}
                    )
                    for n in range(10)
                ]
            finally:
                database.dispose()

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            numbers = [n for result in pool.map(write, range(2)) for n in result]
        self.assertEqual(list(range(1, 21)), sorted(numbers))
        self.assertEqual(list(range(1, 21)), self._allocation_generations())
        table = models.FairshareAllocation
        with self.database.engine.connect() as connection:
            rows = connection.execute(
                select(table.generation, func.count()).group_by(table.generation)
            ).all()
        # Each generation holds its own writer's one row, not the other's.
        self.assertEqual({1}, {count for _, count in rows})
        self.assertEqual(20, self.database.latest_generation().number)

    def test_usage_is_replaced_pair_by_pair(self) -> None:
        self.assertEqual({}, self.database.usage())
        at = datetime.datetime(2026, 1, 2, 3, 4, 5)
        self.database.set_usage({("A", "amd"): 10.5, ("A", "intel"): 0, ("B", "amd"): 3}, at)
        later = datetime.datetime(
            2026, 1, 2, 5, 4, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
        )
        self.database.set_usage({("A", "amd"): 7.25}, later)
        self.database.set_usage({}, later)
        self.assertEqual(
            {("A", "amd"): 7.25, ("A", "intel"): 0.0, ("B", "amd"): 3.0}, self.database.usage()
        )
        table = models.FairshareUsage
        with self.database.engine.connect() as connection:
            stamps = dict(
                (project + "/" + platform, updated)
                for project, platform, updated in connection.execute(
                    select(table.project, table.platform, table.updated_at)
                )
            )
        # An aware time is stored as naive UTC, like every other column.
        self.assertEqual(datetime.datetime(2026, 1, 2, 3, 4, 5), stamps["A/amd"])
        self.assertEqual(at, stamps["B/amd"])

    def test_bad_usage_is_refused_and_nothing_is_written(self) -> None:
        at = datetime.datetime(2026, 1, 2)
        self.database.set_usage({("A", "amd"): 1.0}, at)
        for bad in (-1.0, float("nan"), float("inf"), "x", None, True):
            error = self.assertRaises(
                ProfileError, self.database.set_usage, {("B", "amd"): 2.0, ("A", "amd"): bad}, at
            )
            self.assertEqual("usage", error.key)
            self.assertNotIn("\n", str(error))
        for key in (("", "amd"), ("A",), "A/amd"):
            self.assertRaises(ProfileError, self.database.set_usage, {key: 1.0}, at)
        self.assertRaises(ProfileError, self.database.set_usage, {("A", "amd"): 2.0}, "now")
        self.assertEqual({("A", "amd"): 1.0}, self.database.usage())


db_backends.for_each_backend(globals(), FairshareDataTests, "TestFairshareData")
