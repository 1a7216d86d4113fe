"""``simulate --workers N`` and ``--dask ADDRESS``: one table, wherever replays run."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

import fixtures
import testtools

from hpc_nova_scheduler import sweep
from hpc_nova_scheduler.cmd import common, simulate
from tests import clusters
from tests.processes import GENEROUS, children, end_group
from tests.unit.cmd.test_cli import run

# Three policies (one cache-aware at two betas), each online and with two
# batch planners: twelve replays.
GRID = (
    "--cores", "16", "--policies", "mdobp,least-free-pes,mdobp-cache", "--betas", "20,60",
    "--batch-window", "600", "--batch-planner", "ffd,wf", "--progress", "off",
)  # fmt: skip


#: The command as its console script runs it.
COMMAND = "import sys; from hpc_nova_scheduler.cmd import cli; sys.exit(cli.main())"


class TestSimulateSweeps(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.trace = self.write_trace()

    def write_trace(self) -> str:
        """Forty jobs of one to eight processors, arriving in bursts."""
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, "t.swf")
        with open(path, "w") as stream:
            for i in range(1, 41):
                submit, run_s, cores = (i // 5) * 300, 200 + (i * 37) % 900, 1 + (i * 3) % 8
                stream.write(
                    f"{i} {submit} 5 {run_s} {cores} -1 512 {cores} {run_s * 2} 512 1 7 "
                    "-1 -1 3 -1 -1 -1\n"
                )
        return path

    def simulate(self, *argv: str) -> tuple[int, str, str]:
        return run("--config-file", "/dev/null", "simulate", self.trace, *GRID, *argv)

    def table(self, *argv: str) -> str:
        code, out, err = self.simulate(*argv)
        self.assertEqual(0, code, err)
        return out

    def test_a_pool_gives_the_table_of_one_process(self) -> None:
        alone = self.table("--workers", "1")
        self.assertEqual(alone, self.table("--workers", "2"))
        rows = [line.split("|")[1].strip() for line in alone.splitlines() if line.startswith("| ")]
        self.assertEqual(13, len(rows))
        self.assertEqual("mdobp-cache beta=60 + wf/600s", rows[-1])

    def test_a_dask_cluster_gives_the_table_of_one_process(self) -> None:
        address = self.useFixture(clusters.DaskCluster()).address
        argv = ["--config-file", "/dev/null", "simulate", self.trace, *GRID, "--dask", address]
        code, out, err = clusters.in_clean_process(run, *argv)
        self.assertEqual(0, code, err)
        self.assertEqual(self.table("--workers", "1"), out)

    def test_progress_counts_replays_on_a_pool(self) -> None:
        code, _, err = self.simulate("--workers", "2", "--progress", "on")
        self.assertEqual(0, code, err)
        self.assertIn("replays: 100%", err)
        self.assertIn("12/12", err)

    def test_a_bad_dask_address_is_one_line_naming_it(self) -> None:
        for address in ("tcp://127.0.0.1:1", "nowhere"):
            code, out, err = self.simulate("--dask", address)
            self.assertEqual(1, code, out)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertIn(f"hpc-nova-scheduler: --dask: no Dask scheduler at '{address}'", err)

    def test_bad_sweep_options(self) -> None:
        for argv, message in (
            (("--workers", "0"), "argument --workers: must be at least 1"),
            (("--workers", "2", "--dask", "tcp://x:1"), "not allowed with argument --workers"),
        ):
            code, out, err = self.simulate(*argv)
            self.assertEqual(2, code, out)
            self.assertEqual("", out)
            self.assertIn(message, err)

    def test_ctrl_c_on_the_default_pool_is_one_line_and_130(self) -> None:
        # Replays of seconds each, so that Ctrl-C finds them running.
        trace = os.path.join(self.useFixture(fixtures.TempDir()).path, "long.swf")
        with open(trace, "w") as stream:
            for i in range(1, 20001):
                submit, run_s, cores = (i // 5) * 30, 200 + (i * 37) % 9000, 1 + (i * 3) % 8
                stream.write(
                    f"{i} {submit} 5 {run_s} {cores} -1 512 {cores} {run_s * 2} 512 1 7 "
                    "-1 -1 3 -1 -1 -1\n"
                )
        argv = ["--config-file", "/dev/null", "simulate", trace, "--jobs", "all"]
        argv += ["--cores", "64", "--policies", "mdobp,least-free-pes,most-free-pes,mdobp-cache"]
        process = subprocess.Popen(
            [sys.executable, "-c", COMMAND, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # As a shell runs a command: Ctrl-C goes to the group.
            start_new_session=True,
        )
        self.addCleanup(end_group, process)
        deadline = time.monotonic() + GENEROUS
        while not children(process.pid) and process.poll() is None:
            self.assertLess(time.monotonic(), deadline, "the pool did not start")
            time.sleep(0.1)
        self.assertIsNone(process.poll(), "the replays ended before Ctrl-C")
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=GENEROUS)
        self.assertEqual(130, process.returncode, err)
        self.assertEqual("hpc-nova-scheduler: interrupted\n", err)

    def test_a_failed_replay_is_a_row_and_an_error(self) -> None:
        from hpc_nova_scheduler.sim import replays, settings

        setting = replays.Setting(
            settings.ClusterShape.from_total_cores(4, 4, 2048), (), (settings.Scenario("a"),)
        )
        done = replays.replay(replays.Replay("a", 0), setting)
        swept = [
            sweep.CellResult("a", "a", done),
            sweep.CellResult("b", "b", None, "RuntimeError: lost", 2),
        ]
        self.assertEqual(["b", "failed", "", "", "", "", "", "", ""], simulate._row(swept[1], [1]))
        self.assertEqual("a", simulate._row(swept[0], [1])[0])
        err = io.StringIO()
        error = self.assertRaises(common.CommandError, simulate._failures, swept, err)
        self.assertEqual("1 of 2 replays failed; their rows say 'failed'", str(error))
        self.assertEqual(
            "hpc-nova-scheduler: replay b failed 2 times, last: RuntimeError: lost\n",
            err.getvalue(),
        )
        self.assertEqual(0, simulate._failures(swept[:1], err))
