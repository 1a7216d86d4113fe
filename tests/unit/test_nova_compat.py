"""tools/nova_compat.py: its own parts; Nova's test modules are never run here."""

from __future__ import annotations

import datetime
import importlib.util
import io
import sys
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import fixtures
import subunit
import testtools

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("nova_compat", ROOT / "tools" / "nova_compat.py")
    module = importlib.util.module_from_spec(spec)
    # Its dataclass needs the module among sys.modules while it is built.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


nova_compat = _module()


class TestArguments(testtools.TestCase):
    def test_defaults_run_the_three_modes_over_the_seven_modules(self) -> None:
        args = nova_compat.parse_args([])
        self.assertEqual(["off", "on", "full"], args.modes)
        self.assertEqual(1, args.concurrency)
        self.assertEqual(600, args.timeout)
        self.assertFalse(args.list_failures)
        self.assertEqual(7, len(args.modules))
        self.assertIn("nova.tests.functional.test_servers", args.modules)

    def test_one_mode(self) -> None:
        self.assertEqual(["on"], nova_compat.parse_args(["--mode", "on"]).modes)

    def test_short_names_are_under_nova_functional_and_dotted_names_stay(self) -> None:
        args = nova_compat.parse_args(
            ["--modules", "test_aggregates", "nova.tests.functional.compute.test_x"]
        )
        self.assertEqual(
            ["nova.tests.functional.test_aggregates", "nova.tests.functional.compute.test_x"],
            args.modules,
        )

    def test_a_module_named_twice_runs_once(self) -> None:
        args = nova_compat.parse_args(
            ["--modules", "test_aggregates", "nova.tests.functional.test_aggregates"]
        )
        self.assertEqual(["nova.tests.functional.test_aggregates"], args.modules)

    def _refused(self, argv: list[str]) -> str:
        err = io.StringIO()
        with redirect_stderr(err):
            error = self.assertRaises(SystemExit, nova_compat.parse_args, argv)
        self.assertEqual(2, error.code)
        return err.getvalue()

    def test_concurrency_must_be_a_positive_whole_number(self) -> None:
        refusal = self._refused(["--concurrency", "0"])
        self.assertIn("--concurrency: must be at least 1, got '0'", refusal)
        self.assertIn("'two' is not a whole number", self._refused(["--concurrency", "two"]))

    def test_a_filter_must_be_a_regular_expression(self) -> None:
        self.assertEqual("Moving", nova_compat.parse_args(["--filter", "Moving"]).filter)
        self.assertIn("'(' is not a regular expression", self._refused(["--filter", "("]))

    def test_an_unknown_mode_is_refused(self) -> None:
        self.assertIn("--mode", self._refused(["--mode", "half"]))


class TestComparison(testtools.TestCase):
    def test_a_test_passing_off_must_pass_in_the_mode(self) -> None:
        off = {"a": "success", "b": "success", "c": "fail", "d": "skip", "e": "xfail"}
        mode = {"a": "success", "b": "fail", "c": "fail", "d": "fail", "e": "xfail"}
        self.assertEqual(["b"], nova_compat.regressions(off, mode))

    def test_a_test_that_did_not_run_in_the_mode_is_lost(self) -> None:
        self.assertEqual(["a"], nova_compat.regressions({"a": "success"}, {}))

    def test_tests_only_the_mode_runs_or_fixes_are_no_regression(self) -> None:
        self.assertEqual([], nova_compat.regressions({"a": "fail"}, {"a": "success", "b": "fail"}))

    def test_a_part_is_compared_with_the_same_part_of_off(self) -> None:
        module = "m"
        off = {module: nova_compat.Result(module, "off", {"m.A.t": "success", "m.B.t": "success"})}
        part = {module: nova_compat.Result(module, "on", {"m.A.t": "success"})}
        with redirect_stdout(io.StringIO()):
            self.assertTrue(nova_compat.compare("on", [module], part, off, r"\.A\."))
            self.assertFalse(nova_compat.compare("on", [module], part, off))

    def test_compare_prints_the_regressions_and_says_whether_there_are_none(self) -> None:
        module = "nova.tests.functional.test_x"
        off = {module: nova_compat.Result(module, "off", {"t1": "success", "t2": "success"})}
        on = {module: nova_compat.Result(module, "on", {"t1": "success", "t2": "fail"})}
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertFalse(nova_compat.compare("on", [module], on, off))
            self.assertTrue(nova_compat.compare("on", [module], off, off))
        self.assertIn("REGRESSION t2", out.getvalue())
        self.assertIn("[on] compared with off: 0 pass", out.getvalue())


class TestResults(testtools.TestCase):
    def test_parts_of_a_module_add_up(self) -> None:
        first = nova_compat.Result("m", "on", {"a": "fail", "b": "success"}, {"a": "x"}, 10.0)
        second = nova_compat.Result("m", "on", {"a": "success", "c": "fail"}, {"c": "y"}, 5.0)
        whole = nova_compat.merged(first, second)
        self.assertEqual({"a": "success", "b": "success", "c": "fail"}, whole.outcomes)
        self.assertEqual(["c"], whole.failed)
        self.assertEqual(15.0, whole.seconds)

    def test_counts_leave_skips_out_of_run_and_failed(self) -> None:
        outcomes = {"a": "success", "b": "fail", "c": "skip", "d": "uxsuccess", "e": "xfail"}
        result = nova_compat.Result("m", "on", {**outcomes, "f": "exists"})
        self.assertEqual(4, result.run)
        self.assertEqual(["b", "d"], result.failed)
        self.assertEqual(1, result.skipped)
        self.assertEqual(["f"], result.not_run)

    def test_a_test_that_did_not_run_off_is_no_baseline(self) -> None:
        self.assertEqual([], nova_compat.regressions({"a": "exists"}, {"a": "fail"}))
        self.assertEqual(["a"], nova_compat.regressions({"a": "success"}, {"a": "exists"}))

    def test_report_prints_a_counts_line_per_module_and_in_total(self) -> None:
        results = [
            nova_compat.Result("m1", "on", {"a": "success", "b": "fail"}, {"b": "Boom: x\n"}),
            nova_compat.Result("m2", "on", {"c": "success"}),
        ]
        out = io.StringIO()
        with redirect_stdout(out):
            nova_compat.report("on", results, list_failures=True)
        lines = out.getvalue().splitlines()
        self.assertIn("[on] m1: 2 run, 1 failed", lines)
        self.assertIn("[on] m2: 1 run, 0 failed", lines)
        self.assertIn("[on] total: 3 run, 1 failed", lines)
        self.assertIn("    FAILED b", lines)
        self.assertIn("        Boom: x", lines)

    def test_signature_is_the_last_line_of_a_traceback(self) -> None:
        details = 'Traceback (most recent call last):\n  File "x"\nValueError: bad\n\n'
        self.assertEqual("ValueError: bad", nova_compat.signature(details))
        self.assertEqual("(no details)", nova_compat.signature(""))

    def test_outcomes_are_read_from_a_subunit_stream(self) -> None:
        buffer = io.BytesIO()
        out = subunit.StreamResultToBytes(buffer)
        at = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
        out.status(test_id="t.ok", test_status="exists", timestamp=at)
        for test_id, status in (("t.ok", "success"), ("t.bad", "fail"), ("t.skip", "skip")):
            out.status(test_id=test_id, test_status="inprogress", timestamp=at)
            if status == "fail":
                out.status(
                    test_id=test_id,
                    file_name="traceback",
                    file_bytes=b"Traceback...\nAssertionError: no",
                    mime_type="text/plain;charset=utf8",
                    eof=True,
                )
            out.status(test_id=test_id, test_status=status, timestamp=at)
        outcomes, details = nova_compat._outcomes(buffer.getvalue())
        self.assertEqual({"t.ok": "success", "t.bad": "fail", "t.skip": "skip"}, outcomes)
        self.assertEqual(["t.bad"], list(details))
        self.assertEqual("AssertionError: no", nova_compat.signature(details["t.bad"]))


class TestAppended(testtools.TestCase):
    def test_the_plugin_entry_goes_last_and_once(self) -> None:
        self.assertEqual(["A", "Hpc"], nova_compat._appended(["A"], "Hpc"))
        self.assertEqual(["Hpc", "A"], nova_compat._appended(["Hpc", "A"], "Hpc"))
        self.assertEqual(["Hpc"], nova_compat._appended([], "Hpc"))


class TestScratchPackage(testtools.TestCase):
    def test_its_module_hands_over_the_named_module_s_tests(self) -> None:
        directory = Path(self.useFixture(fixtures.TempDir()).path)
        nova_compat._scratch_package(directory, "off", "tests.unit.test_atomicfile")
        package = directory / nova_compat.PACKAGE
        self.assertIn("install_hooks('off')", (package / "__init__.py").read_text())
        spec = importlib.util.spec_from_file_location("scratch", package / "test_nova.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        suite = module.load_tests(unittest.TestLoader(), None, None)
        ids = [test.id() for test in testtools.iterate_tests(suite)]
        self.assertTrue(ids)
        self.assertTrue(all(test_id.startswith("tests.unit.test_atomicfile.") for test_id in ids))
