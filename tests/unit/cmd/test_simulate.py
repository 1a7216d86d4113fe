"""``hpc-nova-scheduler simulate``: options, outputs and errors."""

from __future__ import annotations

import json
import os

import fixtures
import testtools

from tests.unit.cmd.test_cli import run


class TestSimulateCommand(testtools.TestCase):
    def test_out_makes_its_folder_never_the_folders_above(self) -> None:
        from tests import traces

        path = traces.trace(self, "METACENTRUM-2009-2.swf.gz")
        root = self.useFixture(fixtures.TempDir()).path
        deep = os.path.join(root, "nosuch", "run")
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--jobs", "20", "--cores", "64",
            "--policies", "least-free-pes", "--progress", "off", "--out", deep,
        )  # fmt: skip
        self.assertEqual(1, code)
        self.assertEqual("", out)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn(f"--out {deep}: ", err)
        self.assertEqual([], os.listdir(root))
        # One level is made, as mkdir makes it.
        shallow = os.path.join(root, "run")
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--jobs", "20", "--cores", "64",
            "--policies", "least-free-pes", "--progress", "off", "--out", shallow,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("summary.json", os.listdir(shallow))

    def test_simulate_compares_policies_and_writes_outputs(self) -> None:
        from tests import traces

        path = traces.trace(self, "METACENTRUM-2009-2.swf.gz")
        directory = self.useFixture(fixtures.TempDir()).path
        code, out, err = run(
            "--config-file",
            "/dev/null",
            "simulate",
            path,
            "--jobs",
            "60",
            "--cores",
            "64",
            "--policies",
            "least-free-pes,mdobp-cache",
            "--betas",
            "40,60",
            "--runtime-adjust",
            "-10",
            "--out",
            directory,
        )
        self.assertEqual(0, code, err)
        for name in ("least-free-pes", "mdobp-cache beta=40", "mdobp-cache beta=60"):
            self.assertIn(f"| {name}", out)
        for name in ("jobs.csv", "summary.json", "completed.png"):
            self.assertTrue(os.path.getsize(os.path.join(directory, name)) > 0, name)

    def small_trace(self) -> str:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "t.swf")
        with open(path, "w") as stream:
            for i in range(1, 9):
                stream.write(f"{i} 0 5 100 1 -1 512 1 3600 512 1 7 -1 -1 3 -1 -1 -1\n")
        return path

    def test_horizons_before_the_first_end_are_zero_and_say_why(self) -> None:
        # Jobs of two days, as a short replay of a real log has: no job has
        # ended by 24 h, which is true, and the note says so.
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, "long.swf")
        with open(path, "w") as stream:
            for i in range(1, 5):
                stream.write(f"{i} {i * 60} 5 172800 1 -1 512 1 172800 512 1 7 -1 -1 3 -1 -1 -1\n")
        argv = ("--config-file", "/dev/null", "simulate", path, "--cores", "4")
        code, out, err = run(*argv, "--policies", "mdobp,least-free-pes")
        self.assertEqual(0, code, err)
        row = next(line for line in out.splitlines() if line.startswith("| mdobp "))
        self.assertEqual(["4", "0", "0", "0", "0"], [cell.strip() for cell in row.split("|")[2:7]])
        self.assertIn(
            "hpc-nova-scheduler: note: by 1 h, by 6 h, by 24 h: no job had ended yet in any "
            "replay; the first ended 2 d after the first arrival (--times sets the horizons",
            err,
        )
        code, out, err = run(*argv, "--times", "1d,3d")
        self.assertEqual(0, code, err)
        self.assertIn("note: by 1 d: no job had ended yet", err)
        row = next(line for line in out.splitlines() if line.startswith("| mdobp "))
        self.assertEqual(["0", "4"], [cell.strip() for cell in row.split("|")[4:6]])
        code, out, err = run(*argv, "--times", "3d")
        self.assertEqual(0, code, err)
        self.assertNotIn("note", err)

    def test_backfill_modes(self) -> None:
        path = self.small_trace()
        for mode in ([], ["--backfill"], ["--backfill", "greedy"], ["--backfill", "easy"]):
            code, out, err = run(
                "--config-file", "/dev/null", "simulate", path, "--cores", "4", *mode
            )
            self.assertEqual(0, code, (mode, err))
            self.assertIn("| mdobp ", out)

    def test_a_window_of_the_log(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "t.swf")
        with open(path, "w") as stream:
            # One job a day for ten days.
            for i in range(10):
                stream.write(
                    f"{i + 1} {i * 86400} 5 100 1 -1 512 1 3600 512 1 7 -1 -1 3 -1 -1 -1\n"
                )
        for window, jobs in (
            (["--skip-jobs", "3"], 7),
            (["--skip-days", "2.5"], 7),
            (["--skip-jobs", "3", "--jobs", "2"], 2),
            (["--skip-days", "8", "--skip-jobs", "1"], 2),
        ):
            code, out, err = run(
                "--config-file", "/dev/null", "trace", "stats", path, "--json", *window
            )
            self.assertEqual(0, code, err)
            self.assertEqual(jobs, json.loads(out)["jobs"], window)
        code, _, err = run(
            "--config-file", "/dev/null", "trace", "stats", path, "--skip-jobs", "10"
        )
        self.assertEqual(1, code)
        self.assertIn("no job left after --skip-jobs 10 --skip-days 0 (10 jobs read)", err)

    def test_cores_come_from_the_maxprocs_header(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "t.swf")
        with open(path, "w") as stream:
            stream.write("; Version: 2.2\n; MaxProcs: 30  (15 nodes)\n")
            stream.write("1 0 5 100 1 -1 512 1 3600 512 1 7 -1 -1 3 -1 -1 -1\n")
        code, out, err = run("--config-file", "/dev/null", "simulate", path, "--progress", "off")
        self.assertEqual(0, code, err)
        self.assertIn(
            "8 hosts of 4 cores and 2048 MB (cores from the log's MaxProcs header, 30, "
            "rounded up to whole hosts)",
            out,
        )
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--cores", "8", "--progress", "off"
        )
        self.assertIn("2 hosts of 4 cores", out)
        self.assertNotIn("MaxProcs", out)

    def test_interference_model_and_progress(self) -> None:
        code, out, err = run(
            "--config-file",
            "/dev/null",
            "simulate",
            self.small_trace(),
            "--cores",
            "4",
            "--policies",
            "mdobp",
            "--cache-scores",
            "25:25",
            "--interference",
            "cache-pressure",
            "--interference-param",
            "knee=40",
            "--progress",
            "on",
        )
        self.assertEqual(0, code, err)
        self.assertIn("interference: cache-pressure", out)
        # Four VMs of 25 on the one host: 1 + (25/40) * (60/40).
        self.assertIn("| 1.938", out)
        self.assertIn("mdobp: 100%", err)
        self.assertIn("8/8", err)

    def test_bad_interference_options_are_clear_errors(self) -> None:
        path = self.small_trace()
        for options, message in (
            (["--interference", "magic"], "unknown interference model 'magic'"),
            (["--interference-param", "knee"], "expected KEY=NUMBER"),
            (["--interference", "cache-pressure", "--interference-param", "knee=0"], "knee > 0"),
        ):
            code, _, err = run("--config-file", "/dev/null", "simulate", path, *options)
            self.assertEqual(1, code, options)
            self.assertIn(message, err)

    def test_whole_log_bounded_slowdown_and_jobs_without_memory(self) -> None:
        path = self.small_trace()
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--cores", "4", "--jobs", "all"
        )
        self.assertEqual(0, code, err)
        self.assertIn("8 jobs from", out)
        self.assertIn("0 jobs without a memory value, placed by cores alone", out)
        self.assertIn("| bounded slowdown |", out)
        code, _, err = run("--config-file", "/dev/null", "simulate", path, "--jobs", "some")
        self.assertEqual(2, code)
        self.assertIn("argument --jobs: 'some' is not a whole number", err)

    def test_times_take_units(self) -> None:
        path = self.small_trace()
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--cores", "4", "--times", "99s,2d,1"
        )
        self.assertEqual(0, code, err)
        # Eight 100 s jobs on four cores: none done at 99 s, all by two days.
        self.assertIn("by 99 s | by 2 d | by 1 h", out)
        self.assertIn("| 0       | 8      | 8      |", out)
        code, _, err = run("--config-file", "/dev/null", "simulate", path, "--times", "soon")
        self.assertEqual(2, code)
        self.assertIn("'soon' is not a duration", err)

    def test_host_kinds(self) -> None:
        path = self.small_trace()
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--host-kinds", "1:4:2048,1:4:2048:0.5"
        )
        self.assertEqual(0, code, err)
        self.assertIn(
            "kind-0: 1 x 4 cores 2048 MB speed 1; kind-1: 1 x 4 cores 2048 MB speed 0.5", out
        )
        code, _, err = run("--config-file", "/dev/null", "simulate", path, "--host-kinds", "4:2048")
        self.assertEqual(1, code)
        self.assertIn("host kind '4:2048': expected [NAME=]COUNT:CORES:RAM_MB[:SPEED]", err)

    def test_unknown_policy_is_a_clear_error(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "t.swf")
        with open(path, "w") as stream:
            stream.write("1 0 5 100 2 -1 2048 2 3600 1024 1 7 -1 -1 3 -1 -1 -1\n")
        code, _, err = run("--config-file", "/dev/null", "simulate", path, "--policies", "magic")
        self.assertEqual(2, code)
        self.assertIn("argument --policies: unknown policy 'magic'", err)

    # Each bad option of issue 10, and the one-line error that names it.
    BAD_OPTIONS = [
        (["--cores-per-host", "0"], "argument --cores-per-host: must be at least 1"),
        (["--hosts-per-rack", "0"], "argument --hosts-per-rack: must be at least 1"),
        (["--ram-per-host-mb", "0"], "argument --ram-per-host-mb: must be above 0"),
        (["--ram-per-host-mb", "-5"], "argument --ram-per-host-mb: must be above 0"),
        (["--memory-scale", "nan"], "argument --memory-scale: 'nan' is not a finite number"),
        (["--memory-scale", "1e400"], "argument --memory-scale: '1e400' is not a finite"),
        (["--backfill-depth", "-1"], "argument --backfill-depth: must be at least 1"),
        (["--cores", "0"], "argument --cores: must be at least 1"),
        (["--cores", "-64"], "argument --cores: must be at least 1"),
        (["--jobs", "0"], "argument --jobs: must be at least 1"),
        (["--jobs", "-1"], "argument --jobs: must be at least 1"),
        (["--times", "-1"], "argument --times: must be a positive duration"),
        (["--alpha", "-1"], "argument --alpha: must be 0 or more"),
        (["--betas", "-5"], "argument --betas: must be 0 or more"),
        (["--betas", "abc"], "argument --betas: 'abc' is not a number"),
        (["--runtime-adjust", "-150"], "argument --runtime-adjust: must be above -100"),
        (["--cache-scores", "30:0"], "argument --cache-scores: LOW must not exceed HIGH"),
        (["--cache-scores", "abc"], "argument --cache-scores: expected LOW:HIGH"),
        (["--policies", ""], "argument --policies: expected at least one value"),
        (["--cpu-groups", "0"], "argument --cpu-groups: must be at least 1"),
        (["--backfill", "lazy"], "argument --backfill: invalid choice: 'lazy'"),
        (["--batch-window", "0"], "argument --batch-window: must be above 0"),
        (["--batch-window", "soon"], "argument --batch-window: 'soon' is not a number"),
        (["--batch-planner", "magic"], "argument --batch-planner: unknown planner 'magic'"),
        (["--batch-planner", "ffd,magic"], "argument --batch-planner: unknown planner 'magic'"),
        (["--batch-size", "0"], "argument --batch-size: must be at least 1"),
    ]

    def test_every_bad_option_is_one_line_naming_it_before_any_work(self) -> None:
        # The trace does not exist: a check that came after reading it would
        # say so instead.
        for bad, message in self.BAD_OPTIONS:
            code, out, err = run(
                "--config-file", "/dev/null", "simulate", "/nonexistent/trace.swf", *bad
            )
            self.assertEqual(2, code, bad)
            self.assertEqual("", out, bad)
            self.assertEqual(1, len(err.splitlines()), (bad, err))
            self.assertIn(message, err, bad)

    def test_cores_must_fill_whole_hosts(self) -> None:
        for cores in ("3", "7"):
            code, _, err = run(
                "--config-file", "/dev/null", "simulate", "/nonexistent/t.swf", "--cores", cores
            )
            self.assertEqual(1, code)
            self.assertEqual(
                f"hpc-nova-scheduler: --cores {cores} is not a multiple of --cores-per-host 4\n",
                err,
            )

    def test_batch_windows_print_beside_the_online_policies(self) -> None:
        path = self.small_trace()
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--cores", "8",
            "--policies", "mdobp,least-free-pes", "--batch-window", "600",
            "--batch-planner", "ffd,wf", "--progress", "off",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("batch windows of 600 s planned by ffd, wf (up to 50 jobs a plan)", out)
        rows = [line.split("|")[1].strip() for line in out.splitlines() if line.startswith("| ")]
        self.assertEqual(
            [
                "scenario",
                "mdobp",
                "mdobp + ffd/600s",
                "mdobp + wf/600s",
                "least-free-pes",
                "least-free-pes + ffd/600s",
                "least-free-pes + wf/600s",
            ],
            rows,
        )
        # Eight one-core jobs arriving at once on two empty hosts: all planned
        # at the window's end, every one completed.
        for line in out.splitlines():
            if "600s" in line:
                self.assertEqual("8", line.split("|")[2].strip(), line)

    def test_batch_window_defaults_to_ffd_and_a_lone_planner_is_refused(self) -> None:
        path = self.small_trace()
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--cores", "8",
            "--batch-window", "60", "--policies", "mdobp", "--progress", "off",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("| mdobp + ffd/60s ", out)
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", "/nonexistent/t.swf",
            "--batch-planner", "ffd",
        )  # fmt: skip
        self.assertEqual(1, code)
        self.assertEqual("", out)
        self.assertIn("--batch-planner plans batch windows: give --batch-window SECONDS", err)

    def test_demo_options_are_checked(self) -> None:
        for bad, message in (
            (["--betas", "abc"], "argument --betas: 'abc' is not a number"),
            (["--betas", "-5"], "argument --betas: must be 0 or more"),
            (["--alpha", "-1"], "argument --alpha: must be 0 or more"),
        ):
            code, _, err = run("--config-file", "/dev/null", "demo", *bad)
            self.assertEqual(2, code, bad)
            self.assertIn(message, err)


class TestInterferenceModels(testtools.TestCase):
    """--admission-model, --tolerance, --profiles and shared models as truth."""

    def setUp(self) -> None:
        super().setUp()
        from tests import traces

        self.trace = traces.trace(self, "METACENTRUM-2009-2.swf.gz")

    def simulate(self, *argv: str) -> tuple[int, str, str]:
        return run(
            "--config-file", "/dev/null", "simulate", self.trace, "--jobs", "80", "--cores", "64",
            "--progress", "off", *argv,
        )  # fmt: skip

    def test_admission_by_a_model_against_a_truth(self) -> None:
        from tests.unit.cmd.test_cli import EXAMPLE

        code, out, err = self.simulate(
            "--policies", "hpc-aware,mdobp-cache", "--betas", "40,60",
            "--admission-model", "ivmp", "--tolerance", "5",
            "--interference", "ivmp-base", "--profiles", EXAMPLE,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        # One scenario per policy under a model, not one per beta.
        self.assertIn("| hpc-aware ivmp<=5%", out)
        self.assertIn("| mdobp-cache ivmp<=5%", out)
        self.assertNotIn("beta=", out)
        self.assertIn("admission by ivmp within 5%", out)
        self.assertIn("(those with sllc_score, dram_score, net_score)", out)

    def test_models_that_need_profiles_say_so(self) -> None:
        for argv, message in (
            (["--interference", "ivmp"], "--interference ivmp read sllc_score"),
            (["--admission-model", "nope"], "--admission-model: unknown interference model"),
            (["--interference", "nope"], "unknown interference model 'nope'"),
            (["--tolerance", "-1"], "argument --tolerance"),
        ):
            code, out, err = self.simulate(*argv)
            self.assertNotEqual(0, code, out)
            self.assertIn(message, err)
            self.assertNotIn("Traceback", err)

    def test_ils_batches_draw_profiles_and_refuse_to_run_without(self) -> None:
        from tests.unit.cmd.test_cli import EXAMPLE

        batch = ("--policies", "mdobp", "--batch-window", "3600", "--batch-planner", "ils")
        code, out, err = self.simulate(*batch)
        self.assertEqual(1, code, out)
        self.assertIn("--batch-planner ils, model ivmp read sllc_score", err)
        self.assertIn("give --profiles", err)
        self.assertNotIn("Traceback", err)
        code, out, err = self.simulate(*batch, "--profiles", EXAMPLE)
        self.assertEqual(0, code, err)
        self.assertIn("| mdobp + ils/3600s", out)
        self.assertIn("(those with sllc_score, dram_score, net_score)", out)

    def test_fitted_models_from_files_on_named_host_types(self) -> None:
        import os

        import fixtures

        from hpc_nova_scheduler import datafiles
        from hpc_nova_scheduler.runtime import trees
        from tests.unit.runtime.test_trees import dataset, samples

        folder = self.useFixture(fixtures.TempDir()).path
        saved = os.path.join(folder, "trees.skops")
        fitted = trees.RuntimeTrees(trees=10).fit(samples(dataset().training))
        with open(saved, "wb") as stream:
            stream.write(fitted.dumps())
        profiles = os.path.join(folder, "profiles.yaml")
        with open(profiles, "w") as stream:
            datafiles.write_profiles(stream, dataset().profiles, "yaml")
        model = ("--admission-model", "runtime-trees", "--interference", "runtime-trees")
        code, out, err = self.simulate(
            *model, "--policies", "mdobp-cache", "--tolerance", "20", "--profiles", profiles,
            "--host-kinds", "T1=8:8:16384,T2=8:8:16384:0.9",
            "--admission-file", saved, "--interference-file", saved,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("T1: 8 x 8 cores", out)
        self.assertIn("| mdobp-cache runtime-trees<=20%", out)
        # The synthetic workloads have no fitted family: they are not drawn.
        self.assertIn("job profiles drawn from 8 of 18", out)
        for argv, message in (
            ((), "--admission-model runtime-trees is a fitted model: give --admission-file"),
            (("--admission-file", saved), "give --interference-file FILE"),
            (
                ("--admission-file", profiles, "--interference-file", saved),
                f"--admission-file {profiles}: not a stored model",
            ),
            (
                ("--admission-file", saved, "--interference-file", saved, "--cores", "64"),
                "no profile has solo_runs on host types group-0",
            ),
        ):
            code, out, err = self.simulate(
                *model, "--profiles", profiles, "--host-kinds", "T1=8:8:16384", *argv
            )
            if "--cores" in argv:
                code, out, err = self.simulate(*model, "--profiles", profiles, *argv)
            self.assertEqual(1, code, out)
            self.assertIn(message, err)
            self.assertNotIn("Traceback", err)
