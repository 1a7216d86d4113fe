"""characterise on small real kernels, measured on this machine."""

from __future__ import annotations

import os
import shlex
import sys

import fixtures
import testtools

from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.characterise import runner
from tests.unit.cmd.test_cli import run

#: Three kernels of a fraction of a second: random reads over 64 MB (the
#: cache thrashes), a sequential sum over 64 MB (streaming), a Python loop
#: over a few registers (compute-bound).
KERNELS = {
    "thrash": "import numpy as n; a=n.ones(8<<20)\n"
    "i=n.random.default_rng(0).integers(0,8<<20,4<<20)\n"
    "for _ in range(3): a[i].sum()",
    "stream": "import numpy as n; a=n.ones(8<<20)\nfor _ in range(12): a.sum()",
    "compute": "s=0\nfor k in range(1500000): s+=k*k",
}


def applications() -> list[runner.Program]:
    return [runner.Program(name, (sys.executable, "-c", code)) for name, code in KERNELS.items()]


class TestRealKernels(testtools.TestCase):
    def test_alone_and_in_pairs(self) -> None:
        said: list[str] = []
        cores = tuple(sorted(os.sched_getaffinity(0))[:2])
        work = runner.Characteriser(cores, repetitions=2, warmup=0, say=said.append)
        alone, pairs = work.characterise(applications())
        by_name = {a.application.name: a for a in alone}
        for result in alone:
            self.assertEqual(2, len(result.runtimes))
            self.assertGreater(result.runtime, 0)
            self.assertGreater(result.counters["CPU_usage"], 0)
        # The kernels' memory is measured for real: 64 MB arrays against a loop.
        self.assertGreater(
            by_name["thrash"].counters["max_rss_kb"], by_name["compute"].counters["max_rss_kb"]
        )
        self.assertEqual(3, len(pairs))
        for pair in pairs:
            self.assertEqual(2, len(pair.runtimes_a))
            self.assertGreater(min(pair.runtimes_a + pair.runtimes_b), 0)
        # What could not be measured is said once, not silently left out.
        limits = [line for line in said if "not available" in line or "not installed" in line]
        if work.use_perf and work.unsupported:
            self.assertEqual(1, len([s for s in limits if "hardware counters" in s]))
        self.assertEqual(1, len([s for s in said if "resctrl" in s]))

    def test_a_failing_command_is_named(self) -> None:
        bad = runner.Program("bad", (sys.executable, "-c", "raise SystemExit('no input')"))
        work = runner.Characteriser((0, 1), repetitions=1, warmup=0)
        error = self.assertRaises(runner.CharacteriseError, work.alone, bad)
        self.assertIn("bad exited with status 1: no input", str(error))


class TestCommand(testtools.TestCase):
    def test_writes_what_profile_import_and_model_fit_read(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        argv = ["--config-file", "/dev/null", "characterise", "--repetitions", "1"]
        argv += ["--warmup", "0", "--out", directory]
        for app in applications()[1:]:
            argv += ["--app", f"{app.name}={shlex.join(app.command)}"]
        code, out, err = run(*argv)
        self.assertEqual(0, code, err)
        profiles = datafiles.read_profiles(os.path.join(directory, "profiles.yaml"))
        self.assertEqual(["stream", "compute"], [p.name for p in profiles])
        self.assertTrue(all(p.solo_runtime > 0 and p.counters for p in profiles))
        pairs = datafiles.read_interferences(os.path.join(directory, "interferences.yaml"))
        self.assertEqual([("compute", "stream")], [(r.app_a, r.app_b) for r in pairs])
        self.assertIn("model fit --model pair-forest", out)
        self.assertFalse(os.path.exists(os.path.join(directory, "runs.yaml")))

    def test_runs_on_a_host_type_fit_runtime_trees(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        argv = ["--config-file", "/dev/null", "characterise", "--repetitions", "2"]
        argv += ["--warmup", "0", "--out", directory, "--host-type", "this-machine"]
        for app in applications()[1:]:
            argv += ["--app", f"{app.name}={shlex.join(app.command)}"]
        code, out, err = run(*argv)
        self.assertEqual(0, code, err)
        profiles_file = os.path.join(directory, "profiles.yaml")
        runs_file = os.path.join(directory, "runs.yaml")
        for profile in datafiles.read_profiles(profiles_file):
            solo = profile.solo_runs["this-machine"]
            self.assertEqual(profile.solo_runtime, solo.runtime)
            self.assertEqual({"cpu_user", "cpu_idle", "disk_read", "disk_write"}, set(solo.metrics))
            # Shares of the run, whatever else loads the machine.
            self.assertGreater(solo.metrics["cpu_user"], 0.0)
            self.assertLessEqual(solo.metrics["cpu_user"], 100.0)
            self.assertGreaterEqual(solo.metrics["cpu_idle"], 0.0)
            self.assertLess(solo.metrics["cpu_idle"], 100.0)
        runs = datafiles.read_runs(runs_file)
        # Two alone and two next to the partner, for each of the two.
        self.assertEqual(8, len(runs))
        self.assertEqual(4, sum(1 for r in runs if r.co_runners))
        code, out, err = run(
            "--config-file", "/dev/null", "model", "fit", "--model", "runtime-trees",
            "--param", "trees=5", "--profiles", profiles_file, runs_file,
            "--save", os.path.join(directory, "trees.skops"),
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("2 families, host types this-machine", out)

    def test_bad_options(self) -> None:
        for argv, message in (
            (["--app", "x"], "expected NAME=COMMAND"),
            (["--app", "x=true", "--cores", "0,0"], "two different cores"),
            (["--app", "x=true", "--repetitions", "0"], "argument --repetitions"),
        ):
            code, _, err = run("--config-file", "/dev/null", "characterise", *argv)
            self.assertEqual(2, code)
            self.assertIn(message, err)
        code, _, err = run(
            "--config-file", "/dev/null", "characterise", "--app", "x=true", "--app", "x=true"
        )
        self.assertEqual(1, code)
        self.assertIn("each application needs a name of its own", err)
