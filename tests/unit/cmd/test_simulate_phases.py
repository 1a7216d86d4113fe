"""``simulate --cache-source``, ``--phase-drift``: options, errors and the comparison table."""

from __future__ import annotations

import os

import fixtures
import testtools

from tests.unit.cmd.test_cli import run

BASE = ("--config-file", "/dev/null", "simulate")


class TestSimulateCacheSources(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.path = self.trace()

    def trace(self) -> str:
        """Twelve jobs of one to three cores, a minute apart, on a cloud of 8 cores."""
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, "t.swf")
        with open(path, "w") as stream:
            for i in range(1, 13):
                cores = 1 + i % 3
                stream.write(
                    f"{i} {i * 60} 5 {1800 + 300 * i} {cores} -1 512 {cores} 3600 512 "
                    "1 7 -1 -1 3 -1 -1 -1\n"
                )
        return path

    def simulate(self, *options: str) -> tuple[int, str, str]:
        return run(
            *BASE, self.path, "--cores", "8", "--workers", "1", "--progress", "off", *options
        )

    def test_three_sources_are_compared_on_the_same_drifts(self) -> None:
        code, out, err = self.simulate(
            "--policies", "least-free-pes,hpc-aware", "--interference", "cache-pressure",
            "--cache-scores", "20:30", "--phase-drift", "0.5",
            "--cache-source", "declared,measured,max",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("50% of jobs drift once to their score x 0.5..3", out)
        self.assertIn("measured scores count after 60 s, at most 60", out)
        self.assertIn("replayed on plan() over every host", out)
        for name in ("declared", "measured", "max"):
            self.assertIn(f"| hpc-aware beta=60 ({name} scores)", out)
        # least-free-pes counts no cache score: it is replayed once.
        self.assertNotIn("least-free-pes (", out)
        self.assertIn("| least-free-pes ", out)
        table = out.split("Cache sources compared (same jobs, drifts and seed):\n")[1]
        rows = [line for line in table.splitlines() if line.startswith("| hpc-aware")]
        self.assertEqual(["declared", "measured", "max"], [r.split("|")[2].strip() for r in rows])
        self.assertEqual("", rows[0].split("|")[-2].strip())
        self.assertTrue(rows[1].split("|")[-2].strip().endswith("%"), rows[1])

    def test_several_seeds_add_their_means(self) -> None:
        code, out, err = self.simulate(
            "--policies", "hpc-aware", "--phase-drift", "1", "--drift-factors", "0.25:0.5",
            "--cache-source", "declared,measured", "--measure-lag", "30", "--seeds", "0,1",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("x 0.25..0.5", out)
        self.assertIn("count after 30 s", out)
        means = out.split("Cache sources compared")[1].split("Mean over seeds:\n")[1]
        self.assertEqual(2, means.count("| 2 seeds "), means)

    def test_declared_alone_without_drift_prints_what_it_always_did(self) -> None:
        argv = ("--policies", "hpc-aware", "--interference", "cache-pressure")
        code, plain, err = self.simulate(*argv)
        self.assertEqual(0, code, err)
        code, explicit, err = self.simulate(*argv, "--cache-source", "declared")
        self.assertEqual(0, code, err)
        self.assertEqual(plain, explicit)
        self.assertNotIn("Cache sources compared", plain)
        self.assertNotIn("scores)", plain)

    BAD_OPTIONS = [
        (["--cache-source", "guess"], "argument --cache-source: unknown cache source 'guess'"),
        (["--cache-source", "max,max"], "argument --cache-source: cache source max is given"),
        (["--phase-drift", "1.5"], "argument --phase-drift: must be a share within 0 and 1"),
        (["--phase-drift", "-0.1"], "argument --phase-drift: must be 0 or more"),
        (["--phase-drift", "some"], "argument --phase-drift: 'some' is not a number"),
        (["--drift-factors", "3:1"], "argument --drift-factors: LOW must not exceed HIGH"),
        (["--drift-factors", "0:2"], "argument --drift-factors: must be above 0"),
        (["--drift-factors", "2"], "argument --drift-factors: expected LOW:HIGH"),
        (["--measure-lag", "-5"], "argument --measure-lag: must be 0 or more"),
    ]

    def test_every_bad_value_is_one_line_naming_its_option(self) -> None:
        for bad, message in self.BAD_OPTIONS:
            code, out, err = run(*BASE, "/nonexistent/trace.swf", *bad)
            self.assertEqual(2, code, bad)
            self.assertEqual("", out, bad)
            self.assertEqual(1, len(err.splitlines()), (bad, err))
            self.assertIn(message, err, bad)

    def test_options_that_cannot_act_are_one_line_errors(self) -> None:
        for options, message in (
            (["--drift-factors", "1:2"], "--drift-factors scales drifting scores"),
            (["--measure-lag", "10"], "--measure-lag is how long measured scores take"),
            (
                ["--cache-source", "measured", "--policies", "mdobp,least-free-pes"],
                "--cache-source measured: none of --policies counts cache scores",
            ),
        ):
            code, out, err = run(*BASE, "/nonexistent/trace.swf", *options)
            self.assertEqual(1, code, options)
            self.assertEqual("", out, options)
            self.assertEqual(1, len(err.splitlines()), (options, err))
            self.assertIn(message, err, options)
