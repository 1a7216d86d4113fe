"""``fairshare simulate --engine vm``: the VM-level engine's options, output and errors."""

from __future__ import annotations

import json

import testtools

from tests.unit.cmd.test_fairshare_simulate import simulate

SHORT = ("--horizon", "21600", "--workers", "1")


class TestVMEngine(testtools.TestCase):
    def test_the_table_compares_the_three_modes(self) -> None:
        code, out, err = simulate("--engine", "vm", *SHORT)
        self.assertEqual(0, code, err)
        self.assertIn("engine: vm (VMs that stay; interval 300 s, grace 300 s", out)
        modes = [
            line.split("|")[3].strip() for line in out.splitlines() if line.startswith("| default")
        ]
        # The modes, then the verdict's row: borrow + reclaim against the other two.
        self.assertEqual(["strict", "borrow", "borrow+reclaim"], modes[:3])
        self.assertEqual(4, len(modes))
        self.assertIn("| fairness_vs_strict | utilisation_vs_borrow | within_5% |", out)
        self.assertTrue(out.rstrip().splitlines()[-2].endswith("| yes       |"), out)

    def test_any_vm_option_selects_the_engine(self) -> None:
        code, out, err = simulate("--reclaim", "on", "--enforcement", "borrow", *SHORT)
        self.assertEqual(0, code, err)
        found = [line for line in out.splitlines() if line.startswith("| default")]
        self.assertEqual(1, len(found), out)
        self.assertIn("borrow+reclaim", found[0])
        self.assertNotIn("within_5%", out)  # nothing to compare with

    def test_json_has_rows_verdicts_and_runs(self) -> None:
        code, out, err = simulate(
            "--scenario", "returning-project,small-gene", "--services", "0,0.5",
            "--lifetime", "exp:1800", "--grace", "600", "--interval", "600",
            "--format", "json", *SHORT,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        found = json.loads(out)
        self.assertEqual("vm", found["engine"])
        self.assertEqual(
            {"interval_s": 600.0, "grace_s": 600.0, "horizon_s": 21600.0,
             "lifetime": "exp:1800", "policy": "pa-rr/rpa/maf", "declare": "standing"},
            found["settings"],
        )  # fmt: skip
        self.assertEqual(
            [("returning-project", None), ("small-gene", 0.0), ("small-gene", 0.5)],
            [(v["scenario"], v["services"]) for v in found["verdicts"]],
        )
        self.assertEqual(9, len(found["runs"]))
        returning = [r for r in found["runs"] if r["scenario"] == "returning-project"]
        self.assertEqual(["strict", "borrow", "borrow+reclaim"], [r["mode"] for r in returning])
        self.assertEqual(300, returning[2]["reclaims"])
        self.assertLessEqual(returning[2]["max_wait_s"], 1200)
        self.assertEqual({"gene", "cheetah", "darth", "lcloud"}, set(returning[0]["fairness"]))

    def test_withdrawn_declarations_leave_the_returning_project_out(self) -> None:
        code, out, err = simulate(
            "--scenario", "returning-project", "--declare", "active", "--format", "json",
            "--workers", "1",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        found = json.loads(out)
        self.assertEqual("active", found["settings"]["declare"])
        strict = next(r for r in found["summary"] if r["mode"] == "strict")
        self.assertLess(strict["worst_platform_fairness"], 0.95)

    def test_csv_has_a_row_per_run_and_platform(self) -> None:
        code, out, err = simulate(
            "--scenario", "without-gene", "--runs", "2", "--format", "csv", *SHORT
        )
        self.assertEqual(0, code, err)
        lines = out.splitlines()
        self.assertEqual("scenario,services,mode,seed,platform,fairness,utilisation", lines[0])
        self.assertEqual(3 * 2 * 3, len(lines) - 1)

    def assertRefused(self, message: str, *argv: str) -> None:
        code, out, err = simulate(*argv)
        self.assertNotEqual(0, code)
        self.assertEqual("", out)
        self.assertIn(message, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(1, len(err.strip().splitlines()), err)

    def test_bad_input_is_one_line(self) -> None:
        for message, argv in (
            ("--enforcement: 'loose' is not one of strict, borrow", ("--enforcement", "loose")),
            ("--enforcement: no value given", ("--enforcement", ",")),
            ("--reclaim: 'stop' is not one of off, on", ("--reclaim", "stop")),
            ("--declare: 'never' is not one of standing, active", ("--declare", "never")),
            ("--lifetime: lifetime 'soon': expected forever, SECONDS or exp:SECONDS",
             ("--lifetime", "soon")),
            ("--lifetime: lifetime seconds must be a number > 0", ("--lifetime", "exp:0")),
            ("--services: '1.5' is not a fraction from 0 to 1", ("--services", "1.5")),
            ("--services: 'x' is not a fraction from 0 to 1", ("--services", "0,x")),
            ("--grace must be a number of seconds >= 0, not -1", ("--grace", "-1")),
            ("--grace must be a number of seconds >= 0, not nan", ("--grace", "nan")),
            ("--interval must be at least 60 seconds, not 10", ("--engine", "vm", "--interval",
                                                               "10")),
            ("--horizon must be a number of seconds >= 300, not 100", ("--horizon", "100")),
            ("--runs must be at least 1, not 0", ("--engine", "vm", "--runs", "0")),
            ("--scenario: unknown scenario 'tiny'; known: default", ("--engine", "vm",
                                                                     "--scenario", "tiny")),
            ("--policy: the VM-level engine runs one policy", ("--engine", "vm", "--policy",
                                                               "pa-rr/rpa/maf,paf/epa/maf")),
            ("--policy: unknown first-level policy 'fifo'", ("--engine", "vm", "--policy",
                                                             "fifo/rpa/maf")),
            ("--reclaim applies to the VM-level engine: drop --engine rate",
             ("--engine", "rate", "--reclaim", "on")),
            ("--arrivals applies to the many-task engines (discrete, rate), not to --engine vm",
             ("--lifetime", "forever", "--arrivals", "quarter")),
            ("--png applies to the many-task engines", ("--engine", "vm", "--png", "/tmp/x")),
        ):  # fmt: skip
            self.assertRefused(message, *argv)
