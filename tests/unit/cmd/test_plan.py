"""``plan``: a batch placed by several planners, side by side."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os

import fixtures
import testtools

from tests.unit.cmd.test_cli import EXAMPLE, run

BATCH = """\
cloud: {hosts: 12, vcpus: 12, ram_mb: 49152}
batch:
  - {application: PTRANS.I1.P6, count: 3, vcpus: 6, ram_mb: 24576}
  - {application: DGEMM.I1.P4, count: 3, vcpus: 4, ram_mb: 16384}
  - {application: PKTM.I2.P6, count: 2, vcpus: 6, ram_mb: 24576}
  - {application: FFT.I1.P4, count: 3, vcpus: 4, ram_mb: 16384}
"""


class TestPlan(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.batch = self.write("batch.yaml", BATCH)

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w") as stream:
            stream.write(text)
        return path

    def plan(self, *argv: str):
        return run(
            "--config-file", "/dev/null", "plan", "--profiles", EXAMPLE, "--multistart", "4",
            *argv,
        )  # fmt: skip

    def test_side_by_side_and_the_figure(self) -> None:
        figure = os.path.join(self.dir, "plan.png")
        code, out, err = self.plan("--planner", "ils,milp,ffd", "--png", figure, self.batch)
        self.assertEqual(0, code, err)
        self.assertIn("| planner | hosts used", out)
        for name in ("ils", "milp", "ffd"):
            self.assertIn(f"| {name} ", out)
        self.assertIn("PTRANS.I1.P6 + PKTM.I2.P6", out)
        self.assertGreater(os.path.getsize(figure), 1000)

    def test_a_figure_in_a_missing_folder_is_refused_before_planning(self) -> None:
        figure = os.path.join(self.dir, "nosuch", "plan.png")
        code, out, err = self.plan("--planner", "ffd", "--png", figure, self.batch)
        self.assertEqual(1, code)
        self.assertEqual("", out)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn(f"--png {figure}: ", err)
        self.assertIn("does not exist", err)
        self.assertFalse(os.path.exists(os.path.dirname(figure)))

    def test_json_and_csv(self) -> None:
        code, out, err = self.plan("--planner", "ils,milp,bfd", "--format", "json", self.batch)
        self.assertEqual(0, code, err)
        plans = {p["planner"]: p for p in json.loads(out)["plans"]}
        self.assertEqual(11, sum(len(h["applications"]) for h in plans["ils"]["hosts"]))
        self.assertTrue(all(p["feasible"] for p in plans.values()))
        # The exact optimum is never worse than ILS on the same cost; both beat BFD here.
        self.assertLessEqual(plans["milp"]["interference"], plans["bfd"]["interference"])
        self.assertLessEqual(plans["ils"]["hosts_used"], plans["bfd"]["hosts_used"])
        code, out, err = self.plan("--planner", "ff", "--format", "csv", self.batch)
        self.assertEqual(0, code, err)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual({"ff"}, {r["planner"] for r in rows})
        self.assertTrue(all(float(r["cpu"]) <= 1.0 for r in rows))

    def test_annealing_without_runtime_profiles_is_one_line(self) -> None:
        # The seed applications' profiles have no solo_runs: no runtime model can judge them.
        code, out, err = self.plan("--planner", "annealing", self.batch)
        self.assertEqual((1, ""), (code, out))
        self.assertEqual(
            "hpc-nova-scheduler: planner annealing: annealing predicts run times with seed "
            "000's runtime model, which needs each application's runtime profile (solo_runs); "
            "no application of the batch has one\n",
            err,
        )

    def test_annealing_plans_with_the_runtime_model(self) -> None:
        from hpc_nova_scheduler import datafiles
        from tests.unit.runtime.test_planner import fitted

        model, profiles = fitted()
        saved = os.path.join(self.dir, "runtime.model")
        with open(saved, "wb") as stream:
            stream.write(model.dumps())
        profile_file = os.path.join(self.dir, "profiles.yaml")
        with open(profile_file, "w") as stream:
            # plan reports each host's interference by seed 004's model: give it its scores.
            scored = [
                dataclasses.replace(p, sllc_score=0.5, dram_score=0.4, net_score=0.3)
                for p in profiles.values()
            ]
            datafiles.write_profiles(stream, scored, "yaml")
        batch = self.write(
            "shaped.yaml",
            "cloud: {hosts: 3, vcpus: 8, ram_mb: 16384}\n"
            "batch:\n"
            "  - {application: CG, vcpus: 4, ram_mb: 4096}\n"
            "  - {application: LAMMPS, vcpus: 4, ram_mb: 4096}\n"
            "  - {application: NAMD, vcpus: 4, ram_mb: 4096}\n"
            "  - {application: Zeusmp2, vcpus: 4, ram_mb: 4096}\n",
        )
        code, out, err = run(
            "--config-file", "/dev/null", "plan", "--profiles", profile_file,
            "--planner", "annealing", "--runtime-model", saved, "--format", "json", batch,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        (found,) = json.loads(out)["plans"]
        self.assertEqual("annealing", found["planner"])
        self.assertTrue(found["feasible"])
        self.assertEqual(4, sum(len(h["applications"]) for h in found["hosts"]))
        # Without the model it says what to give.
        code, out, err = run(
            "--config-file", "/dev/null", "plan", "--profiles", profile_file,
            "--planner", "annealing", batch,
        )  # fmt: skip
        self.assertEqual((1, ""), (code, out))
        self.assertIn("give --runtime-model FILE", err)
        self.assertEqual(1, len(err.splitlines()), err)

    def test_clear_errors(self) -> None:
        bad = self.write(
            "bad.yaml",
            "cloud: {hosts: 2, vcpus: 12, ram_mb: 100}\n"
            "batch:\n"
            "  - {application: PTRANS.I1.P6, count: 0, vcpus: 6, ram_mb: 10}\n"
            "  - {application: NOPE, vcpus: 6, ram_mb: 10, colour: red}\n",
        )
        code, _, err = self.plan(bad)
        self.assertEqual(1, code)
        self.assertIn("bad.yaml:3: count", err)
        self.assertIn("bad.yaml:4: colour: unknown field", err)
        unknown = self.write(
            "unknown.yaml",
            "cloud: {hosts: 2, vcpus: 12, ram_mb: 100}\n"
            "batch:\n  - {application: NOPE, vcpus: 6, ram_mb: 10}\n",
        )
        code, _, err = self.plan(unknown)
        self.assertIn("unknown.yaml:3: no profile of NOPE", err)
        code, _, err = self.plan("--planner", "nope", self.batch)
        self.assertIn("--planner: unknown planner 'nope'", err)
        small = self.write(
            "small.yaml",
            "cloud: {hosts: 1, vcpus: 12, ram_mb: 49152}\n"
            "batch:\n  - {application: PTRANS.I1.P6, count: 3, vcpus: 6, ram_mb: 100}\n",
        )
        code, _, err = self.plan("--planner", "ffd", small)
        self.assertIn("planner ffd: 1 hosts cannot hold the batch", err)
        code, _, err = self.plan("--alpha", "2", self.batch)
        self.assertIn("--alpha", err)
        for message in (err,):
            self.assertNotIn("Traceback", message)

    def test_the_cloud_comes_from_the_file_or_the_live_cloud(self) -> None:
        cloudless = self.write(
            "cloudless.yaml", "batch:\n  - {application: PTRANS.I1.P6, vcpus: 6, ram_mb: 10}\n"
        )
        code, _, err = self.plan(cloudless)
        self.assertEqual(1, code)
        self.assertIn("expected 'cloud:' and 'batch:' sections", err)
        # --live reads the cloud through its APIs: with none configured, it says so.
        self.useFixture(fixtures.EnvironmentVariable("OS_CLOUD"))
        self.useFixture(fixtures.EnvironmentVariable("OS_AUTH_URL"))
        # A clouds file with no cloud (an empty one is refused by 2025.1's openstacksdk).
        no_clouds = self.write("clouds.yaml", "clouds: {}\n")
        self.useFixture(fixtures.EnvironmentVariable("OS_CLIENT_CONFIG_FILE", no_clouds))
        self.useFixture(fixtures.EnvironmentVariable("HOME", self.dir))
        code, _, err = self.plan("--live", cloudless)
        self.assertEqual(1, code)
        self.assertIn("no cloud to talk to", err)
