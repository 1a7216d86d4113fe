"""``fairshare simulate``: seed 002's policies side by side, on one engine or the other."""

from __future__ import annotations

import json
import os

import fixtures
import testtools

from tests import clusters
from tests.unit.cmd.test_cli import run

FEW = ("--policy", "pa-rr/rpa/maf,paf/epa/random,equal-cores/random", "--workers", "1")


def simulate(*argv: str) -> tuple[int, str, str]:
    return run("--config-file", "/dev/null", "fairshare", "simulate", *argv)


class TestSimulate(testtools.TestCase):
    def test_the_table_says_its_engine_and_has_the_baseline(self) -> None:
        code, out, err = simulate("--engine", "rate", *FEW)
        self.assertEqual(0, code, err)
        self.assertIn("engine: rate (each pilot completing tasks at 1/run time)", out)
        policies = [
            line.split("|")[2].strip() for line in out.splitlines() if line.startswith("| ")
        ]
        self.assertEqual(
            ["policy", "pa-rr/rpa/maf", "paf/epa/random", "equal-cores/random", "fairness/allcore"],
            policies,
        )

    def test_json_is_unrounded_with_every_run_and_the_comparisons(self) -> None:
        code, out, err = simulate("--engine", "rate", "--runs", "2", "--format", "json", *FEW)
        self.assertEqual(0, code, err)
        found = json.loads(out)
        self.assertEqual("rate", found["engine"])
        self.assertEqual(8, len(found["runs"]))
        self.assertEqual({0, 1}, {r["seed"] for r in found["runs"]})
        baseline = [r for r in found["runs"] if r["policy"] == "fairness/allcore"]
        self.assertEqual([1.0, 1.0], [r["efficiency"] for r in baseline])
        self.assertEqual(
            {"AutoDock", "Blast", "CacheBench", "Montage", "ThreeKaonOmega"},
            set(found["runs"][0]["normalised_throughput"]),
        )
        row = found["comparisons"]["anchors"][0]
        self.assertEqual("default", row["scenario"])
        self.assertIn("fairer_than_all", row)

    def test_discrete_and_rate_agree_within_one_percent_on_the_default_scenario(self) -> None:
        found = {}
        for engine in ("discrete", "rate"):
            code, out, err = simulate(
                "--engine", engine, "--policy", "pa-rr/rpa/maf", "--format", "json",
                "--workers", "1",
            )  # fmt: skip
            self.assertEqual(0, code, err)
            (ours,) = [r for r in json.loads(out)["runs"] if r["policy"] == "pa-rr/rpa/maf"]
            self.assertEqual(engine, ours["engine"])
            found[engine] = ours
        discrete, rate = found["discrete"], found["rate"]
        self.assertLess(abs(discrete["makespan_s"] / rate["makespan_s"] - 1), 0.01)
        self.assertLess(abs(discrete["fairness"] / rate["fairness"] - 1), 0.01)
        for user, value in rate["normalised_throughput"].items():
            self.assertLess(abs(discrete["normalised_throughput"][user] / value - 1), 0.01)

    def test_csv_and_png(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        png = os.path.join(folder, "figures")
        code, out, err = simulate(
            "--engine", "rate", "--scenario", "default,without-gene",
            "--policy", "seed002,anchors", "--format", "csv", "--png", png, "--workers", "2",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        lines = out.splitlines()
        self.assertEqual(
            "scenario,policy,settings,arrivals,engine,seed,fairness,jain,max_min,efficiency,makespan_s",
            lines[0],
        )
        self.assertEqual(2 * 53, len(lines) - 1)
        self.assertEqual(
            sorted(
                [
                    "anchors.png",
                    "fig3-platform-metrics.png",
                    "fig4-rpa-vs-epa.png",
                    "fig5-first-level.png",
                    "fig6-second-level.png",
                    "fig7-level-effects.png",
                ]
            ),
            sorted(os.listdir(png)),
        )

    def test_options_are_a_grid_and_each_changes_the_run(self) -> None:
        code, out, err = simulate(
            "--engine", "rate", "--policy", "pa-rr/rpa/ca-rr", "--format", "json",
            "--arrivals", "all-at-once,quarter", "--core-unit", "1,200", "--node-unit", "1,20",
            "--weight", "Montage=3", "--workers", "1",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        runs = json.loads(out)["runs"]
        ours = {
            (r["arrivals"], r["core_unit"], r["node_unit"]): r
            for r in runs
            if r["policy"] == "pa-rr/rpa/ca-rr"
        }
        self.assertEqual(8, len(ours))
        self.assertEqual({"Montage": 3.0}, runs[0]["weights"])
        fairness = {key: r["fairness"] for key, r in ours.items()}
        # Every option moves the result: none is silently ignored.
        self.assertNotEqual(fairness[("all-at-once", 1, 1)], fairness[("quarter", 1, 1)])
        self.assertNotEqual(fairness[("all-at-once", 1, 1)], fairness[("all-at-once", 200, 1)])
        self.assertNotEqual(fairness[("all-at-once", 1, 1)], fairness[("all-at-once", 1, 20)])
        # One baseline per arrivals: the units do not touch Fairness + AllCore.
        baselines = [r for r in runs if r["policy"] == "fairness/allcore"]
        self.assertEqual(["all-at-once", "quarter"], sorted(r["arrivals"] for r in baselines))
        sensitivity = json.loads(out)["comparisons"]["sensitivity"]
        self.assertTrue(any(key.startswith("core_unit=200 (") for key in sensitivity), sensitivity)

    def test_a_weight_gives_more_cores_and_history_matters(self) -> None:
        def fairness_of(*argv):
            code, out, err = simulate(
                "--engine", "rate", "--policy", "pa-rr/rpa/allcore", "--format", "json",
                "--workers", "1", *argv,
            )  # fmt: skip
            self.assertEqual(0, code, err)
            (run,) = [r for r in json.loads(out)["runs"] if r["policy"] == "pa-rr/rpa/allcore"]
            return run

        plain = fairness_of()
        heavy = fairness_of("--weight", "Montage=4")
        self.assertGreater(
            heavy["normalised_throughput"]["Montage"], plain["normalised_throughput"]["Montage"]
        )
        history = fairness_of("--half-life", "3600", "--interval", "1800")
        self.assertNotEqual(plain["fairness"], history["fairness"])

    def test_json_has_no_nan(self) -> None:
        code, out, err = simulate(
            "--engine", "rate", "--policy", "pa-rr/rpa/maf", "--format", "json", "--workers", "1"
        )
        self.assertEqual(0, code, err)
        self.assertNotIn("NaN", out)
        json.loads(out, parse_constant=lambda c: self.fail(f"non-JSON constant {c}"))


class TestPolicyGroups(testtools.TestCase):
    def test_all_has_seed_002_the_anchors_and_equivalent_rr(self) -> None:
        from hpc_nova_scheduler.cmd import fairshare_simulate
        from hpc_nova_scheduler.fairshare import experiments

        labels = [c.label for c in fairshare_simulate._policies(["all"])]
        self.assertIn("equivalent-rr/rpa/maf", labels)
        self.assertEqual(50 + 3 + 5, len(labels))
        self.assertEqual(
            [c.label for c in experiments.own_combinations()],
            [label for label in labels if label.startswith("equivalent-rr/")],
        )
        seed002 = [c.label for c in fairshare_simulate._policies(["seed002"])]
        self.assertNotIn("equivalent-rr/rpa/maf", seed002)


class TestHelp(testtools.TestCase):
    def test_list_options_say_they_take_lists(self) -> None:
        stdout = self.useFixture(fixtures.StringStream("stdout"))
        self.useFixture(fixtures.MonkeyPatch("sys.stdout", stdout.stream))
        self.assertRaises(SystemExit, simulate, "--help")
        text = " ".join(stdout.getDetails()["stdout"].as_text().split())
        for option in ("--half-life", "--top-percent", "--core-unit", "--node-unit"):
            self.assertIn(f"{option} LIST", text)
        self.assertIn(
            "usage half-lives in seconds for policies with history, comma-separated", text
        )


class TestBadInput(testtools.TestCase):
    def assertRefused(self, message: str, *argv: str) -> None:
        code, out, err = simulate(*argv)
        self.assertNotEqual(0, code)
        self.assertEqual("", out)
        self.assertIn(message, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(1, len(err.strip().splitlines()), err)

    def test_unknown_scenario_and_policy(self) -> None:
        self.assertRefused("--scenario: unknown scenario 'tiny'", "--scenario", "tiny")
        self.assertRefused(
            "--policy: unknown first-level policy 'fifo'", "--policy", "fifo/rpa/maf"
        )
        self.assertRefused(
            "--policy: unknown platform affinity 'speed'", "--policy", "paf/speed/maf"
        )
        self.assertRefused(
            "--policy: unknown second-level policy 'best'", "--policy", "paf/rpa/best"
        )
        self.assertRefused(
            "--policy: policy 'pa-rr/maf': expected FIRST/METRIC/SECOND", "--policy", "pa-rr/maf"
        )

    def test_ranges(self) -> None:
        self.assertRefused(
            "--top-percent must be an integer from 1 to 50, not 51", "--top-percent", "51"
        )
        self.assertRefused(
            "--top-percent must be an integer from 1 to 50, not 0", "--top-percent", "0"
        )
        self.assertRefused("--top-percent: 'x' is not an integer", "--top-percent", "20,x")
        self.assertRefused("--core-unit must be an integer >= 1, not 0", "--core-unit", "0")
        self.assertRefused("--node-unit must be an integer >= 1, not -2", "--node-unit", "-2")
        self.assertRefused("--half-life must be a number of seconds >= 0", "--half-life", "-1")
        self.assertRefused("--half-life must be a number of seconds >= 0", "--half-life", "nan")
        self.assertRefused("--half-life: no value given", "--half-life", ",")
        self.assertRefused("--runs must be at least 1, not 0", "--runs", "0")
        self.assertRefused(
            "--arrivals must be all-at-once or a Poisson rate", "--arrivals", "often"
        )
        self.assertRefused(
            "--interval must be 0 or at least 60 seconds, not 0.01", "--interval", "0.01"
        )
        self.assertRefused(
            "--weight 'Blast=0': the weight must be a number > 0", "--weight", "Blast=0"
        )
        self.assertRefused("--weight 'Blast=-1'", "--weight", "Blast=-1")
        self.assertRefused("--weight 'Nope=2': expected APPLICATION=WEIGHT", "--weight", "Nope=2")

    def test_empty_lists_and_mis_suffixed_policies(self) -> None:
        self.assertRefused("--scenario: no scenario named", "--scenario", ",")
        self.assertRefused("--policy: no policy named", "--policy", ",")
        self.assertRefused(
            "--policy: policy 'pa-rr/rpa/allcore:raw': only maf takes a co-runner metric",
            "--policy",
            "pa-rr/rpa/allcore:raw",
        )

    def test_png_where_nothing_can_be_written(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        blocker = os.path.join(folder, "file")
        open(blocker, "w").close()
        self.assertRefused(
            f"--png {blocker}/sub:", "--engine", "rate", *FEW, "--png", f"{blocker}/sub"
        )

    def test_png_in_a_folder_that_does_not_exist_creates_nothing(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        missing = os.path.join(folder, "nonexistent", "dir")
        target = os.path.join(missing, "x")
        self.assertRefused(f"--png {target}: {missing} does not exist", *FEW, "--png", target)
        self.assertEqual([], os.listdir(folder))
        blocker = os.path.join(folder, "file")
        open(blocker, "w").close()
        self.assertRefused(f"--png {blocker}: not a directory", *FEW, "--png", blocker)


class TestOnDask(testtools.TestCase):
    def test_the_grid_on_a_dask_cluster_gives_the_table_of_one_process(self) -> None:
        argv = ["--engine", "rate", "--scenario", "default,without-lcloud", "--policy",
                "pa-rr/rpa/maf,pa-rr/rpa/random"]  # fmt: skip
        code, alone, err = simulate(*argv, "--workers", "1")
        self.assertEqual(0, code, err)
        address = self.useFixture(clusters.DaskCluster()).address
        code, out, err = clusters.in_clean_process(
            run, "--config-file", "/dev/null", "fairshare", "simulate", *argv, "--dask", address
        )
        self.assertEqual(0, code, err)
        self.assertEqual(alone, out)
