"""``hpc-nova-scheduler fairshare affinity``: the shipped Tables 3 and 4, and its contract."""

from __future__ import annotations

import csv
import io
import json
import os

import fixtures
import testtools

from hpc_nova_scheduler import resources
from tests.unit.cmd.test_cli import run

SHIPPED = str(resources.example_profiles_dir() / "seed-002-runs.csv")


def affinity(*args: str) -> tuple[int, str, str]:
    return run("--config-file", "/dev/null", "fairshare", "affinity", *args)


class TestAffinityCommand(testtools.TestCase):
    def write(self, text: str) -> str:
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, "runs.csv")
        with open(path, "w") as stream:
            stream.write(text)
        return path

    def test_tables_of_every_metric(self) -> None:
        code, out, err = affinity(SHIPPED)
        self.assertEqual(0, code, err)
        self.assertEqual("", err)
        for title in ("throughput", "(EPA)", "(RPA)", "raw difference", "normalised difference"):
            self.assertIn(title, out)
        self.assertIn("| AutoDock       | 0.614 | 1.532   | 0.978 | 1.215  |", out)

    def test_json_is_one_object_of_unrounded_numbers(self) -> None:
        code, out, err = affinity(SHIPPED, "--format", "json")
        self.assertEqual(0, code, err)
        found = json.loads(out)
        self.assertEqual(
            ["throughput", "epa", "rpa", "corunner_raw", "corunner_normalised"], list(found)
        )
        self.assertEqual(["gene", "cheetah", "darth", "lcloud"], list(found["epa"]["Blast"]))
        self.assertAlmostEqual(1.532, found["epa"]["AutoDock"]["cheetah"], 3)
        self.assertNotEqual(
            round(found["rpa"]["Montage"]["lcloud"], 3), found["rpa"]["Montage"]["lcloud"]
        )

    def test_without_corunner_rows_json_has_no_corunner_keys(self) -> None:
        path = self.write("application,platform,runtime_s\nA,p,100\nA,q,200\nB,p,50\nB,q,50\n")
        code, out, err = affinity(path, "--format", "json")
        self.assertEqual(0, code, err)
        self.assertEqual(
            {
                "throughput": {"A": {"p": 36.0, "q": 18.0}, "B": {"p": 72.0, "q": 72.0}},
                "epa": {"A": {"p": 2.0, "q": 0.5}, "B": {"p": 1.0, "q": 1.0}},
                "rpa": {
                    "A": {"p": (200 / 125) / (100 / 75), "q": (100 / 75) / (200 / 125)},
                    "B": {"p": (50 / 125) / (50 / 75), "q": (50 / 75) / (50 / 125)},
                },
            },
            json.loads(out),
        )

    def test_json_is_strict(self) -> None:
        # Run times at the bounds: every figure finite, and only JSON's own constants.
        path = self.write("application,platform,runtime_s\nA,p,1e-6\nA,q,1e9\nB,p,1e9\nB,q,1e-6\n")
        code, out, err = affinity(path, "--format", "json")
        self.assertEqual(0, code, err)
        json.loads(out, parse_constant=lambda name: self.fail(f"not JSON: {name}"))

    def test_csv_rows_of_metric_application_platform_value(self) -> None:
        code, out, err = affinity(SHIPPED, "--format", "csv")
        self.assertEqual(0, code, err)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(5 * 5 * 4, len(rows))
        first = rows[0]
        self.assertEqual(
            ("throughput", "AutoDock", "gene"),
            (first["metric"], first["application"], first["platform"]),
        )
        self.assertAlmostEqual(7.49, float(first["value"]), 6)

    def test_a_missing_pair_is_neutral_with_a_warning(self) -> None:
        path = self.write("application,platform,runtime_s\nA,p,100\nA,q,200\nB,p,50\n")
        code, out, err = affinity(path, "--format", "json")
        self.assertEqual(0, code, err)
        self.assertIn(
            "warning: B has no solo run on q: its platform affinity there is neutral (1)", err
        )
        self.assertEqual(1.0, json.loads(out)["epa"]["B"]["q"])

    def test_bad_input_is_one_line_and_exit_1(self) -> None:
        header = "application,platform,runtime_s,corunners\n"
        for text, expected in (
            ("A,p,1\n", "the header must start with application,platform,runtime_s"),
            (header + "A,p,nan,\n", "runtime_s: 'nan' is not a positive finite number"),
            ("application,platform,runtime_s,speed\n", "unknown column 'speed'"),
            (header + "A,p,10,B\n", "A ran on p with co-runners but never alone"),
            # Finite, but the affinities overflow (fsum of the mean) or reach infinity.
            (header + "A,p,1e308,\nA,p,1e308,\n", "'1e308' is not from 1e-06 to 1e+09 seconds"),
            (header + "A,p,1e-320,\nA,q,1,\n", "'1e-320' is not from 1e-06 to 1e+09 seconds"),
        ):
            code, out, err = affinity(self.write(text))
            self.assertEqual(1, code, text)
            self.assertIn(expected, err)
            self.assertNotIn("Traceback", err)
            self.assertEqual("", out)
        code, out, err = affinity("no/such/runs.csv")
        self.assertEqual(1, code)
        self.assertIn("no/such/runs.csv: cannot read", err)
