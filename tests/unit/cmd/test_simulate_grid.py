"""``simulate`` over several logs and ``--seeds``: one table, wherever replays run."""

from __future__ import annotations

import csv
import io
import json
import os

import fixtures
import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler import sweep
from hpc_nova_scheduler.cmd import common, simulate
from hpc_nova_scheduler.sim import replays, settings
from tests import clusters
from tests.unit.cmd.test_cli import run

# Two policies, the cache-aware one drawing cache scores from the seed.
GRID = ("--cores", "16", "--policies", "mdobp,mdobp-cache", "--progress", "off")


def write_trace(directory: str, name: str, shift: int) -> str:
    """Forty jobs of one to eight processors, arriving in bursts; ``shift``
    makes another log of the same kind."""
    path = os.path.join(directory, name)
    with open(path, "w") as stream:
        for i in range(1, 41):
            k = i + shift
            submit, run_s, cores = (i // 5) * 300 + shift * 50, 200 + (k * 37) % 900, 1 + k % 8
            stream.write(
                f"{i} {submit} 5 {run_s} {cores} -1 512 {cores} {run_s * 2} 512 1 7 "
                "-1 -1 3 -1 -1 -1\n"
            )
    return path


def rows(out: str) -> list[list[str]]:
    """The cells of every row of the first table, header first."""
    found = []
    for line in out.splitlines():
        if line.startswith("| "):
            found.append([cell.strip() for cell in line.strip("|").split("|")])
        elif found and not line.startswith("+"):
            break
    return found


class TestSeveralLogsAndSeeds(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.a = write_trace(self.dir, "a.swf", 0)
        self.b = write_trace(self.dir, "b.swf", 3)

    def simulate(self, *argv: str) -> tuple[int, str, str]:
        return run("--config-file", "/dev/null", "simulate", *argv, *GRID)

    def table(self, *argv: str) -> str:
        code, out, err = self.simulate(*argv)
        self.assertEqual(0, code, err)
        return out

    def test_a_pool_gives_the_table_of_one_process(self) -> None:
        argv = (self.a, self.b, "--seeds", "0,1")
        alone = self.table(*argv, "--workers", "1")
        self.assertEqual(alone, self.table(*argv, "--workers", "2"))
        table = rows(alone)
        self.assertEqual(["log", "scenario", "seed", "completed"], table[0][:4])
        # Logs x policies x seeds, the seeds innermost.
        self.assertEqual(
            [
                (log, policy, seed)
                for log in (self.a, self.b)
                for policy in ("mdobp", "mdobp-cache beta=60")
                for seed in ("0", "1")
            ],
            [tuple(row[:3]) for row in table[1:]],
        )
        self.assertIn("Mean over seeds 0, 1:", alone)
        self.assertEqual(
            2, sum(line.startswith(f"40 jobs from {self.dir}") for line in alone.splitlines())
        )

    def test_each_row_is_the_replay_of_its_log_and_seed_alone(self) -> None:
        table = rows(self.table(self.a, self.b, "--seeds", "0,1", "--workers", "2"))
        alone: dict[tuple[str, str], list[list[str]]] = {}
        for log, policy, seed, *figures in table[1:]:
            if (log, seed) not in alone:
                alone[log, seed] = rows(self.table(log, "--seed", seed))
            header, *single = alone[log, seed]
            self.assertEqual(header[1:], table[0][3:])
            (row,) = [r for r in single if r[0] == policy]
            self.assertEqual(row[1:], figures, (log, policy, seed))
        # The seed matters: the cache-aware policy's two draws differ somewhere.
        cache = [row[3:] for row in table[1:] if row[1].startswith("mdobp-cache")]
        self.assertNotEqual(cache[0], cache[1])

    def test_a_dask_cluster_gives_the_table_of_one_process(self) -> None:
        address = self.useFixture(clusters.DaskCluster()).address
        argv = ["--config-file", "/dev/null", "simulate", self.a, self.b, "--seeds", "0,1"]
        code, out, err = clusters.in_clean_process(run, *argv, *GRID, "--dask", address)
        self.assertEqual(0, code, err)
        self.assertEqual(self.table(self.a, self.b, "--seeds", "0,1", "--workers", "1"), out)

    def test_columns_only_for_the_dimensions_given(self) -> None:
        one = self.table(self.a, "--seed", "5")
        # One seed in --seeds is --seed: the same output, byte for byte.
        self.assertEqual(one, self.table(self.a, "--seeds", "5"))
        self.assertEqual("scenario", rows(one)[0][0])
        self.assertNotIn("Mean over", one)
        logs = rows(self.table(self.a, self.b))
        self.assertEqual(["log", "scenario", "completed"], logs[0][:3])
        seeds = self.table(self.a, "--seeds", "1,2")
        self.assertEqual(["scenario", "seed", "completed"], rows(seeds)[0][:3])
        self.assertIn("Mean over seeds 1, 2:", seeds)

    def test_the_mean_over_seeds(self) -> None:
        out = self.table(self.a, "--seeds", "0,1")
        table = rows(out)
        means = rows(out[out.index("Mean over seeds") :].split("\n", 1)[1])
        self.assertEqual(["scenario", "seeds", "completed"], means[0][:3])
        self.assertEqual(3, len(means))
        by = table[0].index("by 1 h")
        for mean in means[1:]:
            mine = [row for row in table[1:] if row[0] == mean[0]]
            self.assertEqual("2", mean[1])
            self.assertEqual(f"{sum(int(row[by]) for row in mine) / 2:.1f}", mean[by], (mean, mine))

    def test_outputs_carry_the_log_and_the_seed(self) -> None:
        out_dir = os.path.join(self.dir, "out")
        self.table(self.a, self.b, "--seeds", "0,1", "--out", out_dir)
        with open(os.path.join(out_dir, "jobs.csv")) as stream:
            jobs = list(csv.DictReader(stream))
        self.assertEqual(["log", "seed", "scenario", "job_id"], list(jobs[0])[:4])
        self.assertEqual(
            {
                (log, policy, seed)
                for log in (self.a, self.b)
                for policy in ("mdobp", "mdobp-cache beta=60")
                for seed in ("0", "1")
            },
            {(job["log"], job["scenario"], job["seed"]) for job in jobs},
        )
        with open(os.path.join(out_dir, "summary.json")) as stream:
            summary = json.load(stream)
        self.assertEqual(8, len(summary))
        self.assertEqual(
            {"log": self.a, "seed": 0, "scenario": "mdobp"},
            {k: summary[0][k] for k in ("log", "seed", "scenario")},
        )
        self.assertEqual(1, summary[1]["seed"])
        self.assertGreater(os.path.getsize(os.path.join(out_dir, "completed.png")), 0)
        # One log: no log field; one seed: no seed field.
        self.table(self.a, "--seeds", "0,1", "--out", out_dir)
        with open(os.path.join(out_dir, "summary.json")) as stream:
            self.assertEqual(["seed", "scenario"], list(json.load(stream)[0])[:2])
        self.table(self.a, "--out", out_dir)
        with open(os.path.join(out_dir, "jobs.csv")) as stream:
            self.assertEqual("scenario", next(csv.reader(stream))[0])

    def test_bad_input_is_one_line_naming_it_and_writes_nothing(self) -> None:
        out_dir = os.path.join(self.dir, "out")
        missing = os.path.join(self.dir, "missing.swf")
        empty = os.path.join(self.dir, "empty.swf")
        open(empty, "w").close()
        for argv, status, message in (
            ((self.a, missing), 1, f"{missing}: cannot read"),
            ((self.a, self.dir), 1, f"{self.dir}: cannot read"),
            ((self.a, empty), 1, f"{empty}: the file holds no job lines"),
            ((self.a, self.b, self.a), 1, f"TRACE {self.a} is given twice"),
            ((self.a, "--seeds", "1,x"), 2, "argument --seeds: 'x' is not a whole number"),
            ((self.a, "--seeds", ""), 2, "argument --seeds: expected at least one value"),
            ((self.a, "--seeds", ","), 2, "argument --seeds: expected at least one value"),
            ((self.a, "--seeds", "0,-1"), 2, "argument --seeds: must be 0 or more, got '-1'"),
            ((self.a, "--seeds", "1,2,1"), 2, "argument --seeds: seed 1 is given twice"),
            ((self.a, "--seed", "1", "--seeds", "2"), 2, "not allowed with argument --seed"),
            ((), 2, "the following arguments are required: TRACE"),
        ):
            code, out, err = self.simulate(*argv, "--out", out_dir)
            self.assertEqual(status, code, (argv, err))
            self.assertEqual("", out, argv)
            self.assertEqual(1, len(err.splitlines()), (argv, err))
            self.assertIn(message, err, argv)
            self.assertFalse(os.path.exists(out_dir), argv)

    def test_a_failed_replay_keeps_its_rows_and_fails_its_mean(self) -> None:
        shape = settings.ClusterShape.from_total_cores(4, 4, 2048)
        setting = replays.Setting(shape, (), (settings.Scenario("a"),))
        shared = {("x.swf", 0): setting, ("x.swf", 1): setting}
        cells = replays.grid_of(shared)
        done = replays.replay(cells[0], shared)
        swept = [
            sweep.CellResult(cells[0], str(cells[0]), done),
            sweep.CellResult(cells[1], str(cells[1]), None, "RuntimeError: lost", 2),
        ]
        self.assertEqual("a (log x.swf, seed 1)", swept[1].key)
        self.assertEqual(
            ["x.swf", "a", 1, "failed", "", "", ""],
            simulate._tagged(simulate._row(swept[1], [1]), cells[1])[:7],
        )
        self.assertEqual(
            ["x.swf", "a", 0, 0], simulate._tagged(simulate._row(swept[0], [1]), cells[0])[:4]
        )
        self.assertEqual(
            [["x.swf", "a", 2, "failed", "", "", "", "", "", "", ""]], simulate._means(swept, [1])
        )
        err = io.StringIO()
        self.assertRaises(common.CommandError, simulate._failures, swept, err)
        self.assertIn("replay a (log x.swf, seed 1) failed 2 times", err.getvalue())


class TestGridOf(testtools.TestCase):
    @given(
        logs=st.lists(st.sampled_from("abcd"), min_size=1, max_size=3, unique=True),
        seeds=st.lists(st.integers(0, 9), min_size=1, max_size=3, unique=True),
        scenarios=st.integers(1, 3),
    )
    def test_every_log_scenario_and_seed_once_seeds_innermost(self, logs, seeds, scenarios) -> None:
        shape = settings.ClusterShape.from_total_cores(4, 4, 2048)
        setting = replays.Setting(
            shape, (), tuple(settings.Scenario(f"s{i}") for i in range(scenarios))
        )
        cells = replays.grid_of({(log, seed): setting for log in logs for seed in seeds})
        self.assertEqual(
            [(log, i, seed) for log in logs for i in range(scenarios) for seed in seeds],
            [(cell.log, cell.scenario, cell.seed) for cell in cells],
        )
        self.assertEqual(len(cells), len({str(cell) for cell in cells}))

    def test_a_cell_of_one_log_and_seed_reads_as_before(self) -> None:
        self.assertEqual("mdobp", str(replays.Replay("mdobp", 0)))
        self.assertEqual("mdobp (seed 2)", str(replays.Replay("mdobp", 0, seed=2)))
        self.assertEqual("mdobp (log a.swf)", str(replays.Replay("mdobp", 0, log="a.swf")))
