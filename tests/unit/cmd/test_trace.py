"""``hpc-nova-scheduler trace stats`` and the options of every command that reads a log."""

from __future__ import annotations

import json
import os

import fixtures
import testtools

from tests.unit.cmd.test_cli import run


class TestTraceCommand(testtools.TestCase):
    def test_stats_prints_table_ii(self) -> None:
        from tests import traces

        path = traces.trace(self, "METACENTRUM-2009-2.swf.gz")
        code, out, err = run("--config-file", "/dev/null", "trace", "stats", path, "--jobs", "1500")
        self.assertEqual(0, code, err)
        self.assertIn("| jobs                                           | 1500", out)
        self.assertIn("<512MB", out)

    def test_stats_json_and_errors(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "bad.swf")
        with open(path, "w") as stream:
            stream.write("1 0 5 100 2 -1 2048 2 3600 1024 1 7 -1 -1 3 -1 -1 -1\n2 0\n")
        code, out, err = run("--config-file", "/dev/null", "trace", "stats", path, "--json")
        self.assertEqual(0, code, err)
        self.assertIn('"malformed": 1', out)
        code, out, err = run(
            "--config-file", "/dev/null", "trace", "stats", path, "--on-error", "stop"
        )
        self.assertEqual(1, code)
        self.assertIn("bad.swf:2: expected 18 fields", err)

    def trace_file(self, text: str) -> str:
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, "t.swf")
        with open(path, "w") as stream:
            stream.write(text)
        return path

    def test_a_log_without_jobs_is_an_error_not_a_table_of_zeros(self) -> None:
        # An extended SWF (21 fields) read as the standard: every line refused.
        extended = "".join(
            f"{i} 0 5 100 2 -1 2048 2 3600 1024 1 7 -1 -1 3 -1 -1 -1 0 0 0\n" for i in range(1, 4)
        )
        for text, message in (
            (
                extended,
                "no job could be read: every job line is malformed (3 lines; line 1: "
                "expected 18 fields, found 21 (an extended SWF such as Alea's? say "
                "--format alea))",
            ),
            ("", "the file holds no job lines"),
            ("; Version: 2.2\n", "the file holds no job lines"),
        ):
            path = self.trace_file(text)
            for command in (["trace", "stats", path], ["simulate", path]):
                code, out, err = run("--config-file", "/dev/null", *command)
                self.assertEqual(1, code, command)
                self.assertEqual("", out, command)
                self.assertIn(f"{path}: {message}", err, command)

    def test_alea_extended_swf_is_read_when_asked(self) -> None:
        # Field 7 a placeholder, field 10 requested RAM in bytes per job, three more fields.
        path = self.trace_file(
            "".join(
                f"{i} 0 5 100 2 -1 99 2 3600 2147483648 1 7 -1 -1 3 -1 -1 -1 0 0 0\n"
                for i in range(1, 4)
            )
        )
        code, out, err = run(
            "--config-file", "/dev/null", "trace", "stats", path, "--format", "alea", "--json"
        )
        self.assertEqual(0, code, err)
        payload = json.loads(out)
        self.assertEqual((3, 0, 3), (payload["jobs"], payload["malformed"], payload["with_memory"]))
        self.assertEqual("requested-bytes-per-job", payload["memory"])
        self.assertIn("--format alea", payload["memory_reason"])
        # 2 GiB per job of 2 processors: 1 GB per core, the 1-2GB bucket.
        buckets = {row["bucket"]: row["jobs"] for row in payload["table_ii"]}
        self.assertEqual(3, sum(v for k, v in buckets.items() if k.startswith("1")), buckets)

    def test_skipped_lines_go_to_stderr_with_a_count(self) -> None:
        good = "1 0 5 100 2 -1 2048 2 3600 1024 1 7 -1 -1 3 -1 -1 -1\n"
        path = self.trace_file("x\n" * 25 + good)
        code, out, err = run("--config-file", "/dev/null", "trace", "stats", path)
        self.assertEqual(0, code, err)
        self.assertNotIn("skipped:", out)
        self.assertEqual(21, len(err.splitlines()), err)
        self.assertIn(f"{path}:1: skipped: expected 18 fields, found 1", err)
        self.assertIn(f"{path}: ... and 5 more malformed lines skipped", err)

    def test_json_is_strict(self) -> None:
        import json

        good = "1 0 5 100 2 -1 2048 2 3600 1024 1 7 -1 -1 3 -1 -1 -1\n"
        path = self.trace_file(good.replace(" 100 ", " nan ", 1) + good)
        code, out, err = run("--config-file", "/dev/null", "trace", "stats", path, "--json")
        self.assertEqual(0, code, err)
        self.assertNotIn("NaN", out)
        self.assertNotIn("Infinity", out)
        payload = json.loads(out, parse_constant=self.fail)
        self.assertEqual((1, 1), (payload["jobs"], payload["malformed"]))
