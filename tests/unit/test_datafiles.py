"""Profile and interference files: formats, errors with file and line."""

from __future__ import annotations

import dataclasses
import datetime
import io
import os

import fixtures
import testtools

from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord, SoloRun

PROFILES_CSV = (
    "name,app_class,cache_score,sllc_score,dram_score,net_score,solo_runtime,description,"
    "counter:cycles\n"
    """IS.B.4,ExtremeHPC,47,,,,89.5,NPB IS,
LU.C.16,synchpc,16,0.053,0.127,0.004,,"LU, class C",3.2e9
"""
)


class FileTestCase(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return path


class TestReadProfiles(FileTestCase):
    def test_csv(self) -> None:
        records = datafiles.read_profiles(self.write("p.csv", PROFILES_CSV))
        self.assertEqual(
            [
                ProfileRecord(
                    "IS.B.4", AppClass.EXTREME_HPC, 47.0, solo_runtime=89.5, description="NPB IS"
                ),
                ProfileRecord(
                    "LU.C.16",
                    AppClass.SYNC_HPC,
                    16.0,
                    0.053,
                    0.127,
                    0.004,
                    counters={"cycles": 3.2e9},
                    description="LU, class C",
                ),
            ],
            records,
        )

    def test_yaml_list_or_section(self) -> None:
        text = "- name: EP.B.4\n  app_class: AsyncHPC\n  cache_score: 2.5\n"
        expected = [ProfileRecord("EP.B.4", AppClass.ASYNC_HPC, 2.5)]
        self.assertEqual(expected, datafiles.read_profiles(self.write("a.yaml", text)))
        sectioned = "profiles:\n" + "".join("  " + line + "\n" for line in text.splitlines())
        self.assertEqual(expected, datafiles.read_profiles(self.write("b.yml", sectioned)))

    def test_every_bad_row_is_reported_with_its_line(self) -> None:
        text = (
            "name,app_class,cache_score\n"
            "good,SyncHPC,1\n"
            "bad1,Weird,1\n"
            "\n"
            "bad2,SyncHPC,-5\n"
            "good,SyncHPC,2\n"
            "short,SyncHPC\n"
        )
        path = self.write("p.csv", text)
        error = self.assertRaises(datafiles.DataFileError, datafiles.read_profiles, path)
        self.assertEqual([3, 5, 6, 7], [e.line for e in error.errors])
        message = str(error)
        self.assertIn(f"{path}:3: app_class: unknown application class 'Weird'", message)
        self.assertIn(f"{path}:5: cache_score: '-5' is negative", message)
        self.assertIn(f"{path}:6: duplicate of the entry on line 2: 'good'", message)
        self.assertIn(f"{path}:7: expected 3 cells, found 2", message)

    def test_yaml_errors_carry_lines(self) -> None:
        text = "profiles:\n  - name: a\n    cache_score: 1\n  - name: b\n    cache_score: nan\n"
        error = self.assertRaises(
            datafiles.DataFileError, datafiles.read_profiles, self.write("p.yaml", text)
        )
        self.assertEqual(4, error.errors[0].line)
        self.assertIn("cache_score", error.errors[0].reason)

    def test_malformed_yaml(self) -> None:
        error = self.assertRaises(
            datafiles.DataFileError,
            datafiles.read_profiles,
            self.write("p.yaml", "profiles:\n  - name: [unclosed\n"),
        )
        self.assertIn("not valid YAML", str(error))
        self.assertIsNotNone(error.errors[0].line)

    def test_structure_errors(self) -> None:
        for text, needle in (
            ("colours: []\n", "unknown top-level key 'colours'"),
            ("interferences: []\n", "no 'profiles' section"),
            ("profiles: 3\n", "must be a list"),
            ("profiles:\n  - just a string\n", "must be a mapping"),
        ):
            error = self.assertRaises(
                datafiles.DataFileError, datafiles.read_profiles, self.write("p.yaml", text)
            )
            self.assertIn(needle, str(error))

    def test_format_detection(self) -> None:
        self.assertEqual("csv", datafiles.detect_format("x.CSV"))
        self.assertEqual("yaml", datafiles.detect_format("x.txt", "yaml"))
        self.assertRaises(datafiles.DataFileError, datafiles.detect_format, "x.txt")
        self.assertRaises(datafiles.DataFileError, datafiles.detect_format, "x.csv", "xml")

    def test_missing_file(self) -> None:
        error = self.assertRaises(
            datafiles.DataFileError, datafiles.read_profiles, os.path.join(self.dir, "absent.csv")
        )
        self.assertIn("cannot read", str(error))

    def test_empty_files_hold_no_records(self) -> None:
        self.assertEqual([], datafiles.read_profiles(self.write("e.csv", "")))
        self.assertEqual([], datafiles.read_profiles(self.write("e.yaml", "")))


class TestRoundTrips(FileTestCase):
    def test_profiles_round_trip_in_both_formats(self) -> None:
        records = datafiles.read_profiles(self.write("p.csv", PROFILES_CSV))
        for fmt in datafiles.FORMATS:
            stream = io.StringIO()
            datafiles.write_profiles(stream, records, fmt)
            path = self.write(f"out.{fmt}", stream.getvalue())
            self.assertEqual(records, datafiles.read_profiles(path), fmt)

    def test_interferences_round_trip_in_both_formats(self) -> None:
        text = (
            "app_a,app_b,slowdown_a,slowdown_b,source,measured_at\n"
            "LU,EP,12.5,-3,measured,2011-06-01T10:00:00\n"
            "LU,EP,10,1,predicted,\n"
        )
        records = datafiles.read_interferences(self.write("i.csv", text))
        self.assertEqual(
            [
                InterferenceRecord(
                    "EP", "LU", -3.0, 12.5, "measured", datetime.datetime(2011, 6, 1, 10)
                ),
                InterferenceRecord("EP", "LU", 1.0, 10.0, "predicted"),
            ],
            records,
        )
        for fmt in datafiles.FORMATS:
            stream = io.StringIO()
            datafiles.write_interferences(stream, records, fmt)
            path = self.write(f"out.{fmt}", stream.getvalue())
            self.assertEqual(records, datafiles.read_interferences(path), fmt)

    def test_solo_runs_by_host_type_round_trip_in_both_formats(self) -> None:
        text = (
            "profiles:\n"
            "- name: LU\n"
            "  family: mpi\n"
            "  solo_runs:\n"
            "    Intel/Xeon E5 @ 2.6GHz: {runtime: 10, metrics: {cpu_user: 95, net_send: 3}}\n"
            "    T2: {runtime: 8}\n"
            "- {name: EP}\n"
        )
        records = datafiles.read_profiles(self.write("p.yaml", text))
        self.assertEqual("mpi", records[0].family)
        self.assertEqual(
            {
                "Intel/Xeon E5 @ 2.6GHz": SoloRun(10.0, {"cpu_user": 95.0, "net_send": 3.0}),
                "T2": SoloRun(8.0),
            },
            dict(records[0].solo_runs),
        )
        self.assertEqual("EP", records[1].runtime_family)
        for fmt in datafiles.FORMATS:
            stream = io.StringIO()
            datafiles.write_profiles(stream, records, fmt)
            path = self.write(f"out.{fmt}", stream.getvalue())
            self.assertEqual(records, datafiles.read_profiles(path), fmt)
        stream = io.StringIO()
        datafiles.write_profiles(stream, records, "csv")
        self.assertIn("solo_metric:cpu_user@Intel/Xeon E5 @ 2.6GHz", stream.getvalue())

    def test_bad_solo_runs_are_named(self) -> None:
        text = (
            "profiles:\n"
            "- {name: A, solo_runs: {T1: {runtime: 0}}}\n"
            "- {name: B, solo_runs: {T1: {runtime: 3, metrics: {cpu: x}}}}\n"
            "- {name: C, solo_runs: {T1: {runtime: 3, speed: 2}}}\n"
            "- {name: D, solo_runs: [1, 2]}\n"
        )
        error = self.assertRaises(
            datafiles.DataFileError, datafiles.read_profiles, self.write("p.yaml", text)
        )
        reasons = [e.reason for e in error.errors]
        self.assertIn("solo_runs.T1.runtime", reasons[0])
        self.assertIn("solo_runs.T1.metrics.cpu", reasons[1])
        self.assertIn("solo_runs.T1.speed: unknown field", reasons[2])
        self.assertIn("solo_runs: expected a mapping", reasons[3])

    def test_runs_round_trip_in_both_formats(self) -> None:
        text = (
            "runs:\n"
            "- {application: LU, host_type: T1, vms: 2, co_runners: {EP: 2, CG: 1},\n"
            "   runtime: 12.5}\n"
            "- {application: LU, host_type: T1, co_runners: 'EP:2+CG', runtime: 13}\n"
            "- {application: LU, host_type: T2, co_runners: [EP, EP], runtime: 9}\n"
            "- {application: LU, host_type: T1, runtime: 10}\n"
        )
        runs = datafiles.read_runs(self.write("r.yaml", text))
        self.assertEqual((("CG", 1), ("EP", 2)), runs[0].co_runners)
        self.assertEqual(runs[0].co_runners, runs[1].co_runners)
        self.assertEqual((("EP", 2),), runs[2].co_runners)
        self.assertEqual(((), 1), (runs[3].co_runners, runs[3].vms))
        for fmt in datafiles.FORMATS:
            stream = io.StringIO()
            datafiles.write_runs(stream, runs, fmt)
            again = datafiles.read_runs(self.write(f"out.{fmt}", stream.getvalue()))
            self.assertEqual(
                [dataclasses.replace(r, line=None) for r in runs],
                [dataclasses.replace(r, line=None) for r in again],
                fmt,
            )

    def test_bad_runs_are_reported_with_their_lines(self) -> None:
        text = (
            "application,host_type,vms,co_runners,runtime\n"
            "LU,T1,1.5,,3\n"
            "LU,,1,,3\n"
            "LU,T1,1,EP:0,3\n"
            "LU,T1,1,,-1\n"
        )
        error = self.assertRaises(
            datafiles.DataFileError, datafiles.read_runs, self.write("r.csv", text)
        )
        self.assertEqual([2, 3, 4, 5], [e.line for e in error.errors])
        self.assertIn("whole number", error.errors[0].reason)
        self.assertIn("host_type", error.errors[1].reason)
        self.assertIn("co_runners.EP", error.errors[2].reason)
        self.assertIn("runtime", error.errors[3].reason)

    def test_duplicate_interference_pair_in_either_order(self) -> None:
        text = "app_a,app_b,slowdown_a,slowdown_b\nLU,EP,1,2\nEP,LU,2,1\n"
        error = self.assertRaises(
            datafiles.DataFileError, datafiles.read_interferences, self.write("i.csv", text)
        )
        self.assertEqual([3], [e.line for e in error.errors])


class TestShippedExamples(testtools.TestCase):
    def test_example_file_is_valid_and_holds_the_seed_applications(self) -> None:
        path = str(resources.example_profiles_dir() / "seed-applications.yaml")
        profiles = {p.name: p for p in datafiles.read_profiles(path)}
        self.assertEqual(AppClass.EXTREME_HPC, profiles["IS.B.4"].app_class)
        self.assertEqual(47.0, profiles["IS.B.4"].cache_score)
        for name in ("LU.C.16", "LU.B.4", "ChaNGa.4"):
            self.assertEqual(AppClass.SYNC_HPC, profiles[name].app_class)
        self.assertEqual(AppClass.ASYNC_HPC, profiles["EP.B.4"].app_class)
        self.assertEqual(
            (0.183, 0.214, 0.322),
            (
                profiles["PTRANS.I1.P6"].sllc_score,
                profiles["PTRANS.I1.P6"].dram_score,
                profiles["PTRANS.I1.P6"].net_score,
            ),
        )
        self.assertEqual(34, len(profiles))
        interferences = datafiles.read_interferences(path)
        self.assertIn(
            InterferenceRecord("PTRANS.I1.P6", "PTRANS.I1.P6", 44.5, 44.5, "measured"),
            interferences,
        )

    def test_csv_examples_are_valid(self) -> None:
        directory = resources.example_profiles_dir()
        self.assertEqual(5, len(datafiles.read_profiles(str(directory / "seed-003-fig8.csv"))))
        self.assertTrue(datafiles.read_interferences(str(directory / "seed-004-interference.csv")))
