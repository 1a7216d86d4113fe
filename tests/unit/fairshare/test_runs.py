"""The runs file: a contract read strictly, every bad row named by its line."""

from __future__ import annotations

import os
import tempfile

import testtools

from hpc_nova_scheduler.datafiles import DataFileError
from hpc_nova_scheduler.fairshare import runs
from hpc_nova_scheduler.fairshare.runs import TaskRun


class TestReadRuns(testtools.TestCase):
    def write(self, text: str) -> str:
        handle, path = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        self.addCleanup(os.unlink, path)
        return path

    def test_solo_and_corunner_rows(self) -> None:
        path = self.write(
            "application,platform,runtime_s,corunners\nA,p,10,\nA,p,12, B + C \n\nB,q,1e2,\n"
        )
        self.assertEqual(
            [
                TaskRun("A", "p", 10.0, (), 2),
                TaskRun("A", "p", 12.0, ("B", "C"), 3),
                TaskRun("B", "q", 100.0, (), 5),
            ],
            runs.read_runs(path),
        )

    def test_the_corunners_column_is_optional(self) -> None:
        path = self.write("application,platform,runtime_s\nA,p,10\n")
        self.assertEqual([TaskRun("A", "p", 10.0, (), 2)], runs.read_runs(path))

    def test_bad_files_name_the_line_and_the_problem(self) -> None:
        header = "application,platform,runtime_s,corunners\n"
        cases = [
            ("A,p,10\n", ":1: the header must start with application,platform,runtime_s"),
            ("", ":1: the header must start with application,platform,runtime_s, found nothing"),
            ("application,platform,runtime_s,node\nA,p,1,x\n", ":1: unknown column 'node'"),
            (header, "no runs"),
            (header + "A,p,nan,\n", ":2: runtime_s: 'nan' is not a positive finite number"),
            (header + "A,p,inf,\n", ":2: runtime_s: 'inf' is not a positive finite number"),
            (header + "A,p,-3,\n", ":2: runtime_s: '-3' is not a positive finite number"),
            (header + "A,p,0,\n", ":2: runtime_s: '0' is not a positive finite number"),
            (header + "A,p,soon,\n", ":2: runtime_s: 'soon' is not a number"),
            (header + "A,p,1e308,\n", ":2: runtime_s: '1e308' is not from 1e-06 to 1e+09 seconds"),
            (header + "A,p,1e-320,\n", ":2: runtime_s: '1e-320' is not from 1e-06 to 1e+09"),
            (header + ",p,1,\n", ":2: application: empty"),
            (header + "A,,1,\n", ":2: platform: empty"),
            (header + "A,p,1\n", ":2: expected 4 cells, found 3"),
            (header + "A,p,1,B++C\n", ":2: corunners: 'B++C' has an empty name"),
        ]
        for text, expected in cases:
            path = self.write(text)
            error = self.assertRaises(DataFileError, runs.read_runs, path)
            self.assertIn(expected, str(error), text)

    def test_every_bad_row_is_reported_at_once(self) -> None:
        path = self.write("application,platform,runtime_s\nA,p,0\nA,p,1\nB,q,x\n")
        error = self.assertRaises(DataFileError, runs.read_runs, path)
        self.assertEqual([2, 4], [e.line for e in error.errors])
