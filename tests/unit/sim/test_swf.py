"""Reading SWF job logs."""

from __future__ import annotations

import gzip
import os

import fixtures
import testtools

from hpc_nova_scheduler.sim import swf

HEADER = "; Version: 2.2\n; MaxProcs: 64\n;\n"
GOOD = "1 0 5 100 2 -1 2048 2 3600 1024 1 7 -1 -1 3 -1 -1 -1\n"


class TestReader(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def write(self, name: str, text: str, compress: bool = False) -> str:
        path = os.path.join(self.dir, name)
        data = text.encode()
        with open(path, "wb") as stream:
            stream.write(gzip.compress(data) if compress else data)
        return path

    def test_plain_and_gzipped_files_read_the_same(self) -> None:
        for compress in (False, True):
            path = self.write(f"t{compress}.swf", HEADER + GOOD, compress)
            report = swf.ReadReport(path, swf.MemorySemantics.AUTO)
            [job] = list(swf.read_jobs(path, report))
            self.assertEqual(
                (1, 0.0, 5.0, 100.0, 2, 7, 3, 4),
                (
                    job.job_id,
                    job.submit,
                    job.wait,
                    job.run_time,
                    job.processors,
                    job.user,
                    job.queue,
                    job.line,
                ),
            )
            self.assertEqual({"Version": "2.2", "MaxProcs": "64"}, report.header)
            self.assertEqual((1, 3, 0), (report.jobs, report.comments, report.malformed))

    def test_memory_semantics(self) -> None:
        path = self.write("x.swf", GOOD)
        cases = {
            swf.MemorySemantics.USED_PER_PROCESSOR: 4.0,  # 2048 KB x 2 processors
            swf.MemorySemantics.USED_PER_JOB: 2.0,
            swf.MemorySemantics.REQUESTED_PER_PROCESSOR: 2.0,
            swf.MemorySemantics.REQUESTED_PER_JOB: 1.0,
            swf.MemorySemantics.NONE: None,
        }
        for semantics, expected in cases.items():
            [job] = list(swf.read_jobs(path, memory=semantics))
            self.assertEqual(expected, job.memory_mb, semantics)

    def test_standard_falls_back_to_requested_memory_and_counts_it(self) -> None:
        path = self.write("x.swf", "1 0 5 100 2 -1 -1 2 3600 1024 1 7 -1 -1 3 -1 -1 -1\n" + GOOD)
        report = swf.ReadReport(path, swf.MemorySemantics.AUTO)
        first, _ = list(swf.read_jobs(path, report))
        self.assertEqual(2.0, first.memory_mb)
        self.assertEqual(1, report.memory_fallbacks)

    def test_known_logs_are_recognised_by_content_not_name(self) -> None:
        import shutil

        from tests import traces

        renamed = os.path.join(self.dir, "copy.swf.gz")
        shutil.copy(traces.trace(self, "METACENTRUM-2009-2.swf.gz"), renamed)
        memory, why = swf.detect_memory(renamed, swf.MemorySemantics.AUTO)
        self.assertIs(swf.MemorySemantics.USED_PER_JOB, memory)
        self.assertIn("recognised by its content as METACENTRUM-2009-2", why)
        # A name is not a reason.
        impostor = self.write("METACENTRUM-2009-2.swf", GOOD)
        memory, why = swf.detect_memory(impostor, swf.MemorySemantics.AUTO)
        self.assertIs(swf.MemorySemantics.USED_PER_PROCESSOR, memory)
        self.assertIn("no header and no known content", why)
        headed = self.write("headed.swf", HEADER + GOOD)
        self.assertIn("an SWF header", swf.detect_memory(headed, swf.MemorySemantics.AUTO)[1])
        self.assertEqual(
            (swf.MemorySemantics.NONE, "as --memory says"),
            swf.detect_memory(renamed, swf.MemorySemantics.NONE),
        )

    def test_processors_fall_back_to_requested(self) -> None:
        path = self.write("x.swf", "1 0 5 100 -1 -1 -1 8 3600 -1 1 7 -1 -1 3 -1 -1 -1\n")
        [job] = list(swf.read_jobs(path))
        self.assertEqual((8, None), (job.processors, job.memory_mb))

    def test_malformed_lines_are_counted_with_their_numbers(self) -> None:
        text = (
            GOOD
            + "2 0 5\n"
            + "3 0 5 100 x -1 -1 2 3600 -1 1 7 -1 -1 3 -1 -1 -1\n"
            + "4 0 5 100 -1 -1 -1 -1 3600 -1 1 7 -1 -1 3 -1 -1 -1\n"
            + "5 -1 5 100 1 -1 -1 1 3600 -1 1 7 -1 -1 3 -1 -1 -1\n"
            + GOOD
        )
        path = self.write("bad.swf", text)
        report = swf.ReadReport(path, swf.MemorySemantics.AUTO)
        jobs = list(swf.read_jobs(path, report))
        self.assertEqual([1, 6], [job.line for job in jobs])
        self.assertEqual(4, report.malformed)
        self.assertEqual([2, 3, 4, 5], [example.line for example in report.examples])
        self.assertIn("expected 18 fields, found 3", report.examples[0].reason)
        self.assertIn("not a number", report.examples[1].reason)
        self.assertIn("no processor count", report.examples[2].reason)
        self.assertIn("no submit time", report.examples[3].reason)

    def test_stop_policy_names_the_line(self) -> None:
        path = self.write("bad.swf", GOOD + "2 0 5\n")
        error = self.assertRaises(
            swf.TraceError, list, swf.read_jobs(path, on_error=swf.OnError.STOP)
        )
        self.assertIn("bad.swf:2: expected 18 fields", str(error))

    def test_limit_and_missing_file(self) -> None:
        path = self.write("x.swf", GOOD * 5)
        self.assertEqual(2, len(list(swf.read_jobs(path, limit=2))))
        self.assertRaises(swf.TraceError, list, swf.read_jobs(os.path.join(self.dir, "nope")))

    def test_reading_streams(self) -> None:
        path = self.write("x.swf", GOOD * 3)
        jobs = swf.read_jobs(path)
        self.assertEqual(1, next(jobs).job_id)

    def test_non_finite_and_absurd_values_are_malformed_lines(self) -> None:
        lines = [
            GOOD.replace(" 100 ", " nan ", 1),
            GOOD.replace(" 100 ", " 1e400 ", 1),
            GOOD.replace(" 100 ", " 1e300 ", 1),
            GOOD.replace(" 2 -1 ", " 1e12 -1 ", 1),
            GOOD,
        ]
        path = self.write("odd.swf", "".join(lines))
        report = swf.ReadReport(path, swf.MemorySemantics.AUTO)
        jobs = list(swf.read_jobs(path, report))
        self.assertEqual([5], [job.line for job in jobs])
        self.assertEqual(
            [
                (1, "field 4 is not a finite number (nan)"),
                (2, "field 4 is not a finite number (1e400)"),
                (3, "field 4 is 1e300 s, more than a century"),
                (4, "field 5 is 1e12 processors, beyond any machine"),
            ],
            [(m.line, m.reason) for m in report.examples],
        )

    def test_a_truncated_gzip_is_a_clear_error(self) -> None:
        text = HEADER + "".join(GOOD.replace("1 0 5", f"{i} 0 5", 1) for i in range(1, 4000))
        whole = self.write("whole.swf.gz", text, compress=True)
        with open(whole, "rb") as stream:
            data = stream.read()
        cut = os.path.join(self.dir, "cut.swf.gz")
        with open(cut, "wb") as stream:
            stream.write(data[: len(data) // 2])
        error = self.assertRaises(swf.TraceError, list, swf.read_jobs(cut))
        self.assertIn("cut.swf.gz: the compressed file ends or breaks after line", str(error))
        self.assertIn("is it truncated?", str(error))
