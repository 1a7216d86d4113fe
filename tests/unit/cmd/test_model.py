"""``hpc-nova-scheduler model list | predict | fit | evaluate``."""

from __future__ import annotations

import os
import random

import fixtures
import testtools
import yaml

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference.base import Tenant
from hpc_nova_scheduler.ivmp import model as ivmp
from tests.unit.cmd.test_cli import EXAMPLE, run


def model(*argv: str) -> tuple[int, str, str]:
    return run("--config-file", "/dev/null", "model", *argv)


class TestPredict(testtools.TestCase):
    def test_table_3_10_from_the_shipped_profiles(self) -> None:
        for apps, printed in (
            (["PTRANS.I1.P6"] * 2, "40.01%"),
            (["FFT.I1.P4"] * 3, "40.44%"),
            (["MUFITS.I1.P4"] * 3, "11.65%"),
        ):
            code, out, err = model("predict", "--model", "ivmp-base", "--profiles", EXAMPLE, *apps)
            self.assertEqual(0, code, err)
            self.assertEqual(f"predicted interference: {printed}", out.splitlines()[-1])

    def test_list_names_every_model(self) -> None:
        code, out, err = model("list")
        self.assertEqual(0, code, err)
        for name in ("cache-score", "ivmp", "ivmp-base"):
            self.assertIn(f"| {name} ", out)

    def test_errors_are_one_line(self) -> None:
        for argv, message in (
            (["--model", "nope", "A", "B"], "unknown interference model 'nope'"),
            (
                ["--model", "ivmp-base", "NOPE", "FFT.I1.P4"],
                f"no profile named 'NOPE' in {EXAMPLE}",
            ),
            (
                ["--model", "ivmp-base", "IS.B.4", "FFT.I1.P4"],
                "model ivmp-base needs sllc_score, dram_score, net_score in the profile of IS.B.4",
            ),
            (["--model", "ivmp", "--param", "max_apps=1", "A"], "--param for model ivmp:"),
        ):
            code, out, err = model("predict", "--profiles", EXAMPLE, *argv)
            self.assertEqual(1, code, out)
            self.assertIn(message, err)
            self.assertEqual(1, len(err.splitlines()), err)
        code, _, err = model("predict", "--model", "ivmp", "--param", "x=nan", "A")
        self.assertEqual(2, code)
        self.assertIn("argument --param", err)

    def test_cache_score_says_what_it_judges(self) -> None:
        code, out, err = model(
            "predict", "--model", "cache-score", "--profiles", EXAMPLE, "IS.B.4", "LU.B.4"
        )
        self.assertEqual(0, code, err)
        self.assertIn("cache score on the host: 76; within the thresholds: no", out)


class TestFitAndEvaluate(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        rng = random.Random(5)
        profiles, hosts = [], []
        names = [f"app{i}" for i in range(12)]
        for name in names:
            profiles.append(
                {
                    "name": name,
                    "sllc_score": round(rng.random() * 0.3, 3),
                    "dram_score": round(rng.random() * 0.3, 3),
                    "net_score": round(rng.random() * 0.4, 3),
                }
            )
        truth = ivmp.IvmpBase((0.5, 0.3, 0.2))
        records = {p["name"]: ProfileRecord(**p) for p in profiles}
        for _ in range(30):
            apps = rng.sample(names, rng.randint(2, 5))
            level = truth.predict([Tenant.of(records[a]) for a in apps]).worst
            hosts.append({"applications": apps, "interference": round(level, 4)})
        self.profiles = os.path.join(self.dir, "profiles.yaml")
        with open(self.profiles, "w") as stream:
            yaml.safe_dump({"profiles": profiles}, stream)
        self.dataset = os.path.join(self.dir, "hosts.yaml")
        with open(self.dataset, "w") as stream:
            yaml.safe_dump({"hosts": hosts}, stream)

    def test_fit_reports_the_fit_and_a_cross_validation(self) -> None:
        code, out, err = model(
            "fit", "--model", "ivmp-base", "--profiles", self.profiles, self.dataset
        )
        self.assertEqual(0, code, err)
        self.assertIn("R^2 1.000", out)
        self.assertIn("5-fold cross-validation: R^2 1.000", out)
        use = out.splitlines()[-1]
        self.assertTrue(use.startswith("use with: --model ivmp-base --param coefficients=0.5,"))
        # The printed coefficients predict what was measured.
        code, out, err = model(
            "evaluate",
            "--model",
            "ivmp-base",
            "--param",
            use.split("--param ")[1],
            "--profiles",
            self.profiles,
            self.dataset,
        )
        self.assertEqual(0, code, err)
        self.assertIn("R^2 1.000, mean absolute error 0.00 points", out)

    def test_evaluate_the_thesis_coefficients(self) -> None:
        code, out, err = model(
            "evaluate", "-v", "--model", "ivmp-base", "--profiles", self.profiles, self.dataset
        )
        self.assertEqual(0, code, err)
        self.assertIn("ivmp-base over 30 hosts", out)
        self.assertIn("| host ", out)

    def test_bad_datasets(self) -> None:
        bad = os.path.join(self.dir, "bad.csv")
        with open(bad, "w") as stream:
            stream.write("applications,interference\napp1+app2,12\napp1,3\napp1+app9,nan\n")
        code, _, err = model("fit", "--model", "ivmp", "--profiles", self.profiles, bad)
        self.assertEqual(1, code)
        self.assertIn("bad.csv:3: applications: expected two or more", err)
        self.assertIn("bad.csv:4: interference:", err)
        code, _, err = model("fit", "--model", "cache-score", "--profiles", self.profiles, bad)
        self.assertEqual(1, code)
        self.assertIn("cannot be refitted", err)
