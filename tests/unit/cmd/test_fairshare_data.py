"""``fairshare share | demand | runs``: seed 002's data through the command, every backend."""

from __future__ import annotations

import json
import math
import os

from hpc_nova_scheduler import resources
from hpc_nova_scheduler.fairshare import runs
from tests import db_backends
from tests.unit.cmd.test_cli import CommandTests as _CommandBase

SHIPPED = str(resources.example_profiles_dir() / "seed-002-runs.csv")


def _flat(tree: dict, prefix: tuple = ()) -> dict[tuple, float]:
    """A nested JSON object's numbers, by their path of keys."""
    found: dict[tuple, float] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            found.update(_flat(value, (*prefix, key)))
        else:
            found[(*prefix, key)] = value
    return found


class FairshareDataCommandTests(_CommandBase):
    """The data commands against a synced database (the base's own tests are not re-run)."""

    def setUp(self) -> None:
        super().setUp()
        self.ok("db", "sync")

    def fails(self, *argv: str) -> str:
        code, out, err = self.cli(*argv)
        self.assertEqual((1, ""), (code, out), err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        return err

    def test_shares_are_set_and_listed(self) -> None:
        self.assertIn("p1: share weight 2", self.ok("fairshare", "share", "set", "p1", "2"))
        self.ok("fairshare", "share", "set", "P0", "0.5")
        self.ok("fairshare", "share", "set", "p1", "3")
        self.assertEqual(
            {"P0": 0.5, "p1": 3.0},
            json.loads(self.ok("fairshare", "share", "list", "--format", "json")),
        )
        self.assertIn("| p1      | 3.0    |", self.ok("fairshare", "share", "list"))

    def test_bad_shares_write_nothing(self) -> None:
        self.ok("fairshare", "share", "set", "p", "1")
        for weight in ("0", "-1", "nan", "inf", "x"):
            self.assertIn("WEIGHT:", self.fails("fairshare", "share", "set", "p", weight))
        self.assertIn("PROJECT: empty", self.fails("fairshare", "share", "set", " ", "1"))
        self.assertEqual(
            {"p": 1.0}, json.loads(self.ok("fairshare", "share", "list", "--format", "json"))
        )

    def test_demand_is_set_listed_and_cleared(self) -> None:
        self.ok("fairshare", "demand", "set", "a", "64", "--application", "Blast")
        self.ok("fairshare", "demand", "set", "b", "0")
        self.assertEqual(
            {"a": {"cores": 64, "application": "Blast"}, "b": {"cores": 0, "application": None}},
            json.loads(self.ok("fairshare", "demand", "list", "--format", "json")),
        )
        listed = self.ok("fairshare", "demand", "list")
        self.assertIn("| project | cores | application |", listed)
        self.assertIn("| a       | 64    | Blast       |", listed)
        self.assertIn("| b       | 0     | -           |", listed)
        self.assertIn("1 demand(s) cleared", self.ok("fairshare", "demand", "clear", "a"))
        self.assertIn("1 demand(s) cleared", self.ok("fairshare", "demand", "clear"))
        self.assertEqual({}, json.loads(self.ok("fairshare", "demand", "list", "--format", "json")))
        # Clearing every demand when there is none is done; one that is not there is a mistake.
        self.assertIn("0 demand(s) cleared", self.ok("fairshare", "demand", "clear"))

    def test_clearing_a_project_without_demand_is_an_error(self) -> None:
        self.ok("fairshare", "demand", "set", "a", "64")
        self.assertIn(
            "PROJECT: 'nosuch' has no demand to clear",
            self.fails("fairshare", "demand", "clear", "nosuch"),
        )
        self.assertEqual(
            {"a": {"cores": 64, "application": None}},
            json.loads(self.ok("fairshare", "demand", "list", "--format", "json")),
        )

    def test_bad_demand_writes_nothing(self) -> None:
        for cores in ("-1", "1.5", "x", ""):
            self.assertIn("CORES:", self.fails("fairshare", "demand", "set", "p", cores))
        self.assertIn("PROJECT: empty", self.fails("fairshare", "demand", "set", "", "3"))
        self.assertEqual({}, json.loads(self.ok("fairshare", "demand", "list", "--format", "json")))

    def test_a_demand_too_large_to_store_is_refused_before_the_database(self) -> None:
        huge = str(10**30)
        self.assertIn(
            f"CORES: '{huge}' is more than 2147483647",
            self.fails("fairshare", "demand", "set", "p", huge),
        )
        self.assertIn(
            "p: demand 2147483647 cores", self.ok("fairshare", "demand", "set", "p", "2147483647")
        )

    def test_runs_import_export_round_trip_and_reimport(self) -> None:
        count = len(runs.read_runs(SHIPPED))
        self.assertIn(
            f"{count} runs: {count} added, 0 removed, 0 unchanged",
            self.ok("fairshare", "runs", "import", SHIPPED),
        )
        self.assertIn(
            f"{count} runs: 0 added, 0 removed, {count} unchanged",
            self.ok("fairshare", "runs", "import", SHIPPED),
        )
        exported = os.path.join(self.dir, "exported.csv")
        self.ok("fairshare", "runs", "export", exported)
        self.assertIn(
            f"0 added, 0 removed, {count} unchanged",
            self.ok("fairshare", "runs", "import", exported),
        )
        key = lambda r: (r.application, r.platform, tuple(sorted(r.corunners)), r.runtime_s)  # noqa: E731
        self.assertEqual(
            sorted(key(r) for r in runs.read_runs(SHIPPED)),
            sorted(key(r) for r in runs.read_runs(exported)),
        )
        with open(exported, encoding="utf-8") as stream:
            self.assertEqual(stream.read(), self.ok("fairshare", "runs", "export"))
        # The exported file is what 'fairshare affinity' reads, to the same
        # affinities (rows come back in another order: sums may differ in the last bit).
        original, again = (
            _flat(json.loads(self.ok("fairshare", "affinity", path, "--format", "json")))
            for path in (SHIPPED, exported)
        )
        self.assertEqual(sorted(original), sorted(again))
        for key, value in original.items():
            self.assertTrue(math.isclose(value, again[key], rel_tol=1e-12), (key, value))

    def test_a_bad_runs_file_writes_nothing(self) -> None:
        good = self.write("good.csv", "application,platform,runtime_s\nA,amd,10\n")
        self.ok("fairshare", "runs", "import", good)
        bad = self.write(
            "bad.csv", "application,platform,runtime_s,corunners\nA,amd,20\nB,intel,oops,\n"
        )
        code, out, err = self.cli("fairshare", "runs", "import", bad)
        self.assertEqual((1, ""), (code, out), err)
        self.assertIn(f"{bad}:3: runtime_s: 'oops' is not a number", err)
        self.assertIn("nothing written", err)
        self.assertEqual(
            "application,platform,runtime_s,corunners\nA,amd,10.0,\n",
            self.ok("fairshare", "runs", "export"),
        )


# Only the data commands' tests: the base class's own run in test_cli.
for _name in [n for n in vars(_CommandBase) if n.startswith("test_")]:
    setattr(FairshareDataCommandTests, _name, None)

db_backends.for_each_backend(globals(), FairshareDataCommandTests, "TestFairshareDataCommands")
