"""``simulate --topology``, ``--topology-spec`` and ``--span-cost``."""

from __future__ import annotations

import csv
import json
import os

import fixtures
import testtools

from tests.unit.cmd.test_cli import run


def rows(out: str) -> dict[str, dict[str, str]]:
    """The table's rows by scenario, each cell by its heading."""
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    headings = [cell.strip() for cell in lines[0].strip("|").split("|")]
    found = {}
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        found[cells[0]] = dict(zip(headings, cells, strict=True))
    return found


class TestTopologyOptions(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def trace(self) -> str:
        """Jobs of 1 to 12 processors on 4-core hosts, all at once."""
        path = os.path.join(self.dir, "t.swf")
        with open(path, "w") as stream:
            for i, procs in enumerate([12, 6, 1, 8, 3, 20, 2, 9, 4, 5], start=1):
                stream.write(f"{i} {i} 5 100 {procs} -1 -1 {procs} 3600 -1 1 7 -1 -1 3 -1 -1 -1\n")
        return path

    def simulate(self, *argv: str) -> tuple[int, str, str]:
        return run(
            "--config-file", "/dev/null", "simulate", self.trace(), "--cores", "64",
            "--progress", "off", "--workers", "1", "--arrival", "zero", *argv,
        )  # fmt: skip

    BAD = [
        (["--topology", "block"], "argument --topology: 'block' is not LEVEL=N"),
        (["--topology", "block=0,rack=4"], "argument --topology: 'block=0' is not LEVEL=N"),
        (["--topology", "block=four,rack=4"], "argument --topology: 'block=four' is not"),
        (["--topology", "rack=-2"], "argument --topology: 'rack=-2' is not LEVEL=N"),
        (["--topology", ""], "argument --topology: expected LEVEL=N"),
        (["--topology", "block=2,block=4"], "argument --topology: topology level 'block' is"),
        (["--topology", "rack=4,host=1"], "argument --topology: topology level 'host' is"),
        (["--topology-spec", "required"], "argument --topology-spec: 'required': expected"),
        (["--topology-spec", "wanted=rack"], "argument --topology-spec: 'wanted=rack'"),
        (["--topology-spec", "none,none"], "argument --topology-spec: 'none' is given twice"),
        (["--span-cost", "-5"], "argument --span-cost: must be 0 or more"),
    ]

    def test_a_bad_value_is_one_line_naming_the_option_before_any_work(self) -> None:
        for bad, message in self.BAD:
            out_dir = os.path.join(self.dir, "out")
            code, out, err = run(
                "--config-file", "/dev/null", "simulate", "/nonexistent/t.swf", *bad,
                "--out", out_dir,
            )  # fmt: skip
            self.assertEqual(2, code, bad)
            self.assertEqual("", out, bad)
            self.assertEqual(1, len(err.splitlines()), (bad, err))
            self.assertIn(message, err, bad)
            self.assertFalse(os.path.exists(out_dir), bad)

    def test_configurations_that_do_not_fit_the_run_are_refused(self) -> None:
        for argv, message in (
            (
                ["--policies", "hpc-aware", "--topology-spec", "required=block"],
                "--topology-spec required=block: hpc:topology_required: unknown topology "
                "level 'block'; this cloud's levels are rack, host",
            ),
            (
                ["--topology", "block=2,rack=2", "--topology-spec", "required=rack"],
                "--topology-spec constrains the jobs of topology-aware policies: add "
                "hpc-aware to --policies",
            ),
        ):
            code, out, err = self.simulate(*argv)
            self.assertEqual(1, code, argv)
            self.assertEqual("", out, argv)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertIn(message, err)

    def test_every_configuration_is_a_row_with_its_shares(self) -> None:
        out_dir = os.path.join(self.dir, "out")
        code, out, err = self.simulate(
            "--policies", "least-free-pes,hpc-aware", "--cache-scores", "0:0",
            "--topology", "block=2,rack=2",
            "--topology-spec", "none,preferred=rack,required=rack,seed003",
            "--out", out_dir,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn(
            "16 hosts of 4 cores and 2048 MB; topology block=2,rack=2 (4 blocks, 8 racks)", out
        )
        self.assertIn(
            "under topology configurations none, preferred=rack, required=rack, seed003", out
        )
        table = rows(out)
        self.assertEqual(
            [
                "least-free-pes",
                "hpc-aware beta=60 [none]",
                "hpc-aware beta=60 [preferred=rack]",
                "hpc-aware beta=60 [required=rack]",
                "hpc-aware beta=60 [seed003]",
            ],
            list(table),
        )
        required = table["hpc-aware beta=60 [required=rack]"]
        # Racks of 2 hosts hold 8 VMs: the 9, 12 and 20-VM jobs never fit one.
        self.assertEqual(("3", "7", "100.0%", "100.0%"), (
            required["topology refused"], required["completed"],
            required["in one rack"], required["in one block"],
        ))  # fmt: skip
        self.assertEqual("0", table["hpc-aware beta=60 [none]"]["topology refused"])
        with open(os.path.join(out_dir, "summary.json")) as stream:
            summaries = {s["scenario"]: s for s in json.load(stream)}
        found = summaries["hpc-aware beta=60 [required=rack]"]
        self.assertEqual(["block", "rack"], found["topology_levels"])
        self.assertEqual((3, 6, 1.0, 1.0), (
            found["topology_refused"], found["multi_vm_completed"],
            found["one_rack_share"], found["one_block_share"],
        ))  # fmt: skip
        with open(os.path.join(out_dir, "jobs.csv"), newline="") as stream:
            written = list(csv.DictReader(stream))
        self.assertEqual(["block_domains", "rack_domains"], list(written[0])[-2:])
        shares = {}
        for line in written:
            multi = shares.setdefault(line["scenario"], [0, 0])
            if int(line["processors"]) > 1:
                multi[0] += 1
                multi[1] += line["rack_domains"] == "1"
        for scenario, (multi, one) in shares.items():
            self.assertEqual(summaries[scenario]["multi_vm_completed"], multi)
            self.assertAlmostEqual(summaries[scenario]["one_rack_share"], one / multi)

    def test_without_a_topology_option_nothing_changes(self) -> None:
        out_dir = os.path.join(self.dir, "out")
        code, out, err = self.simulate("--policies", "mdobp,hpc-aware", "--out", out_dir)
        self.assertEqual(0, code, err)
        self.assertNotIn("topology", out)
        self.assertEqual(
            ["scenario", "completed", "never fit", "by 1 h", "by 6 h", "by 24 h",
             "makespan h", "mean wait h", "bounded slowdown", "utilisation", "interference"],
            list(rows(out)["mdobp"]),
        )  # fmt: skip
        with open(os.path.join(out_dir, "jobs.csv"), newline="") as stream:
            self.assertEqual("alone_run_s", next(csv.reader(stream))[-1])
        with open(os.path.join(out_dir, "summary.json")) as stream:
            self.assertNotIn("topology_levels", json.load(stream)[0])
        # --topology rack=32 is the default cloud: the same figures.
        code, same, err = self.simulate("--policies", "mdobp,hpc-aware", "--topology", "rack=32")
        self.assertEqual(0, code, err)
        for name, row in rows(out).items():
            self.assertEqual(row, {k: v for k, v in rows(same)[name].items() if k in row})

    def test_a_single_level_reports_the_rack_alone(self) -> None:
        code, out, err = self.simulate(
            "--policies", "hpc-aware", "--cache-scores", "0:0", "--topology-spec", "none,seed003"
        )
        self.assertEqual(0, code, err)
        table = rows(out)
        self.assertNotIn("in one block", table["hpc-aware beta=60 [none]"])
        # One level: seed 003's ordering is the engine's, with or without the flag.
        self.assertEqual(
            list(table["hpc-aware beta=60 [none]"].values())[1:],
            list(table["hpc-aware beta=60 [seed003]"].values())[1:],
        )

    def test_span_cost(self) -> None:
        code, plain, err = self.simulate(
            "--policies", "least-free-pes", "--topology", "block=1,rack=2"
        )
        self.assertEqual(0, code, err)
        code, out, err = self.simulate(
            "--policies", "least-free-pes", "--topology", "block=1,rack=2", "--span-cost", "10"
        )
        self.assertEqual(0, code, err)
        self.assertIn("run time +10% per extra block a job spans (--span-cost)", out)
        before, after = rows(plain)["least-free-pes"], rows(out)["least-free-pes"]
        self.assertEqual("1.000", before["interference"])
        # Jobs across blocks run longer, which shows as interference.
        self.assertGreater(float(after["interference"]), 1.0)
        self.assertLess(float(after["in one block"].rstrip("%")), 100)
