"""The hpc-nova-scheduler command, end to end on every database backend."""

from __future__ import annotations

import io
import json
import os

import fixtures
import testtools

from hpc_nova_scheduler import resources
from hpc_nova_scheduler.cmd import cli
from hpc_nova_scheduler.db import migration
from tests import db_backends

EXAMPLE = str(resources.example_profiles_dir() / "seed-applications.yaml")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


class CommandTests:
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        # No nova.conf from the machine may leak into the tests.
        self.conf_file = os.path.join(self.dir, "empty.conf")
        open(self.conf_file, "w").close()

    def cli(self, *argv: str) -> tuple[int, str, str]:
        return run("--config-file", self.conf_file, "--connection", self.db_url, *argv)

    def ok(self, *argv: str) -> str:
        code, out, err = self.cli(*argv)
        self.assertEqual(0, code, err)
        return out

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return path

    def test_db_sync_and_version(self) -> None:
        self.assertIn("none", self.ok("db", "version"))
        head = migration.head_revision()
        self.assertIn(f"revision {head}", self.ok("db", "sync"))
        self.assertEqual(f"{head}\n", self.ok("db", "version"))
        self.assertIn(f"revision {head}", self.ok("db", "sync"))

    def test_commands_refuse_an_unsynced_database(self) -> None:
        code, _, err = self.cli("profile", "list")
        self.assertEqual(1, code)
        self.assertIn("run 'hpc-nova-scheduler db sync'", err)

    def test_import_list_export_and_reimport(self) -> None:
        self.ok("db", "sync")
        self.assertIn(
            "34 profiles: 34 created, 0 updated, 0 unchanged", self.ok("profile", "import", EXAMPLE)
        )
        self.assertIn(
            "8 interference records: 8 created", self.ok("interference", "import", EXAMPLE)
        )
        self.assertIn(
            "34 profiles: 0 created, 0 updated, 34 unchanged", self.ok("profile", "import", EXAMPLE)
        )
        self.assertIn(
            "0 created, 0 updated, 8 unchanged", self.ok("interference", "import", EXAMPLE)
        )
        listing = self.ok("profile", "list", "--app-class", "extremehpc")
        self.assertIn("IS.B.4", listing)
        self.assertNotIn("LU.C.16", listing)
        self.assertIn("89.5", self.ok("profile", "show", "IS.B.4"))
        harmful = self.ok("interference", "list", "--app", "PTRANS.I1.P6")
        self.assertIn("yes", harmful)
        self.assertNotIn("DGEMM", harmful)
        for fmt in ("csv", "yaml"):
            profiles = os.path.join(self.dir, f"profiles.{fmt}")
            interferences = os.path.join(self.dir, f"interferences.{fmt}")
            self.ok("profile", "export", profiles)
            self.ok("interference", "export", interferences)
            self.assertIn(
                "0 created, 0 updated, 34 unchanged", self.ok("profile", "import", profiles)
            )
            self.assertIn(
                "0 created, 0 updated, 8 unchanged",
                self.ok("interference", "import", interferences),
            )
        self.assertIn("profiles:", self.ok("profile", "export", "-"))
        self.assertTrue(
            self.ok("interference", "export", "-", "--format", "csv").startswith("app_a,")
        )

    def test_bad_file_is_rejected_whole(self) -> None:
        self.ok("db", "sync")
        self.ok(
            "profile",
            "import",
            self.write("first.csv", "name,app_class,cache_score\nA,SyncHPC,1\n"),
        )
        path = self.write(
            "bad.csv", "name,app_class,cache_score\nA,SyncHPC,99\nB,AsyncHPC,2\nC,AsyncHPC,oops\n"
        )
        code, _out, err = self.cli("profile", "import", path)
        self.assertEqual(1, code)
        self.assertIn(f"{path}:4: cache_score: 'oops' is not a number", err)
        self.assertIn("nothing written", err)
        listing = self.ok("profile", "list")
        self.assertNotIn("| B ", listing)
        self.assertIn("| 1.0 ", listing)

    def test_bad_interference_file_is_rejected_whole(self) -> None:
        self.ok("db", "sync")
        path = self.write(
            "bad.yaml",
            "interferences:\n"
            "  - {app_a: A, app_b: B, slowdown_a: 1, slowdown_b: 2}\n"
            "  - {app_a: A, app_b: C, slowdown_a: 1}\n",
        )
        code, _, err = self.cli("interference", "import", path)
        self.assertEqual(1, code)
        self.assertIn(f"{path}:3: slowdown_b: missing", err)
        self.assertNotIn("| A ", self.ok("interference", "list"))

    def test_dry_run_writes_nothing(self) -> None:
        self.ok("db", "sync")
        self.assertIn("34 valid profiles", self.ok("profile", "import", "--dry-run", EXAMPLE))
        self.assertNotIn("IS.B.4", self.ok("profile", "list"))

    def test_show_unknown_profile(self) -> None:
        self.ok("db", "sync")
        code, _, err = self.cli("profile", "show", "nope")
        self.assertEqual((1, "hpc-nova-scheduler: no profile named 'nope'\n"), (code, err))


db_backends.for_each_backend(globals(), CommandTests, "TestCommands")


class TestCommandLine(testtools.TestCase):
    COMMANDS = [
        [],
        ["db"],
        ["db", "sync"],
        ["db", "version"],
        ["profile"],
        ["profile", "import"],
        ["profile", "list"],
        ["profile", "show"],
        ["profile", "export"],
        ["interference"],
        ["interference", "import"],
        ["interference", "list"],
        ["interference", "export"],
        ["demo"],
        ["trace"],
        ["trace", "stats"],
        ["simulate"],
        ["reconcile"],
    ]

    def test_help_everywhere(self) -> None:
        for command in self.COMMANDS:
            stdout = self.useFixture(fixtures.StringStream("stdout"))
            self.useFixture(fixtures.MonkeyPatch("sys.stdout", stdout.stream))
            error = self.assertRaises(SystemExit, cli.main, [*command, "--help"])
            self.assertEqual(0, error.code, command)
            self.assertIn("usage: hpc-nova-scheduler", stdout.getDetails()["stdout"].as_text())

    def test_unreachable_database_is_a_clear_error(self) -> None:
        conf = self.useFixture(fixtures.TempDir()).join("empty.conf")
        open(conf, "w").close()
        code, _, err = run(
            "--config-file",
            conf,
            "--connection",
            "postgresql+psycopg2://nobody@127.0.0.1:1/none",
            "profile",
            "list",
        )
        self.assertEqual(1, code)
        self.assertIn("cannot connect to the plugin database", err)
        self.assertNotIn("Traceback", err)

    def test_missing_connection_is_a_clear_error(self) -> None:
        conf = self.useFixture(fixtures.TempDir()).join("empty.conf")
        open(conf, "w").close()
        code, _, err = run("--config-file", conf, "db", "sync")
        self.assertEqual(1, code)
        self.assertIn("set [hpc_scheduler] connection", err)

    def test_connection_is_read_from_the_config_file(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(directory, "nova.conf")
        with open(conf, "w") as stream:
            stream.write(f"[hpc_scheduler]\nconnection = sqlite:///{directory}/from-conf.sqlite\n")
        code, _out, err = run("--config-file", conf, "db", "sync")
        self.assertEqual(0, code, err)
        self.assertTrue(os.path.exists(os.path.join(directory, "from-conf.sqlite")))

    def empty_conf(self) -> str:
        conf = self.useFixture(fixtures.TempDir()).join("empty.conf")
        open(conf, "w").close()
        return conf

    def test_a_write_refused_by_the_database_is_one_line(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "plugin.sqlite")
        conf = self.empty_conf()
        self.assertEqual(
            0, run("--config-file", conf, "--connection", f"sqlite:///{path}", "db", "sync")[0]
        )
        profiles = os.path.join(directory, "p.csv")
        with open(profiles, "w") as stream:
            stream.write("name,app_class,cache_score\nA,SyncHPC,5\n")
        # The file opened read-only: reads work, the import's write is refused.
        read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
        code, _, err = run(
            "--config-file", conf, "--connection", read_only, "profile", "import", profiles
        )
        self.assertEqual(1, code)
        self.assertEqual(
            "hpc-nova-scheduler: database error: attempt to write a readonly database\n", err
        )

    def test_a_url_without_an_installed_driver_names_the_one_to_use(self) -> None:
        code, _, err = run(
            "--config-file",
            self.empty_conf(),
            "--connection",
            "mysql://root@127.0.0.1/x",
            "profile",
            "list",
        )
        self.assertEqual(1, code)
        self.assertIn("needs the Python driver 'MySQLdb'", err)
        self.assertIn("use mysql+pymysql://", err)
        self.assertNotIn("Traceback", err)

    def test_an_interrupt_exits_130_without_a_traceback(self) -> None:
        import argparse

        from hpc_nova_scheduler.cmd import common

        def interrupted(args, out):
            raise KeyboardInterrupt

        args = argparse.Namespace(
            config_file=[self.empty_conf()], config_dir=None, connection=None, debug=False
        )
        err = io.StringIO()
        self.assertEqual(130, common.run(args, interrupted, io.StringIO(), err))
        self.assertEqual("hpc-nova-scheduler: interrupted\n", err.getvalue())

    def test_missing_config_file(self) -> None:
        code, _, err = run("--config-file", "/nonexistent/nova.conf", "db", "version")
        self.assertEqual(1, code)
        self.assertIn("nova.conf", err)


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


class TestSimulateCommand(testtools.TestCase):
    def test_simulate_compares_policies_and_writes_outputs(self) -> None:
        from tests import traces

        path = traces.trace(self, "METACENTRUM-2009-2.swf.gz")
        directory = self.useFixture(fixtures.TempDir()).path
        code, out, err = run(
            "--config-file",
            "/dev/null",
            "simulate",
            path,
            "--jobs",
            "60",
            "--cores",
            "64",
            "--policies",
            "least-free-pes,mdobp-cache",
            "--betas",
            "40,60",
            "--runtime-adjust",
            "-10",
            "--out",
            directory,
        )
        self.assertEqual(0, code, err)
        for name in ("least-free-pes", "mdobp-cache beta=40", "mdobp-cache beta=60"):
            self.assertIn(f"| {name}", out)
        for name in ("jobs.csv", "summary.json", "completed.png"):
            self.assertTrue(os.path.getsize(os.path.join(directory, name)) > 0, name)

    def small_trace(self) -> str:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "t.swf")
        with open(path, "w") as stream:
            for i in range(1, 9):
                stream.write(f"{i} 0 5 100 1 -1 512 1 3600 512 1 7 -1 -1 3 -1 -1 -1\n")
        return path

    def test_backfill_modes(self) -> None:
        path = self.small_trace()
        for mode in ([], ["--backfill"], ["--backfill", "greedy"], ["--backfill", "easy"]):
            code, out, err = run(
                "--config-file", "/dev/null", "simulate", path, "--cores", "4", *mode
            )
            self.assertEqual(0, code, (mode, err))
            self.assertIn("| mdobp ", out)

    def test_a_window_of_the_log(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "t.swf")
        with open(path, "w") as stream:
            # One job a day for ten days.
            for i in range(10):
                stream.write(
                    f"{i + 1} {i * 86400} 5 100 1 -1 512 1 3600 512 1 7 -1 -1 3 -1 -1 -1\n"
                )
        for window, jobs in (
            (["--skip-jobs", "3"], 7),
            (["--skip-days", "2.5"], 7),
            (["--skip-jobs", "3", "--jobs", "2"], 2),
            (["--skip-days", "8", "--skip-jobs", "1"], 2),
        ):
            code, out, err = run(
                "--config-file", "/dev/null", "trace", "stats", path, "--json", *window
            )
            self.assertEqual(0, code, err)
            self.assertEqual(jobs, json.loads(out)["jobs"], window)
        code, _, err = run(
            "--config-file", "/dev/null", "trace", "stats", path, "--skip-jobs", "10"
        )
        self.assertEqual(1, code)
        self.assertIn("no job left after --skip-jobs 10 --skip-days 0 (10 jobs read)", err)

    def test_cores_come_from_the_maxprocs_header(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "t.swf")
        with open(path, "w") as stream:
            stream.write("; Version: 2.2\n; MaxProcs: 30  (15 nodes)\n")
            stream.write("1 0 5 100 1 -1 512 1 3600 512 1 7 -1 -1 3 -1 -1 -1\n")
        code, out, err = run("--config-file", "/dev/null", "simulate", path, "--progress", "off")
        self.assertEqual(0, code, err)
        self.assertIn(
            "8 hosts of 4 cores and 2048 MB (cores from the log's MaxProcs header, 30, "
            "rounded up to whole hosts)",
            out,
        )
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--cores", "8", "--progress", "off"
        )
        self.assertIn("2 hosts of 4 cores", out)
        self.assertNotIn("MaxProcs", out)

    def test_interference_model_and_progress(self) -> None:
        code, out, err = run(
            "--config-file",
            "/dev/null",
            "simulate",
            self.small_trace(),
            "--cores",
            "4",
            "--policies",
            "mdobp",
            "--cache-scores",
            "25:25",
            "--interference",
            "cache-pressure",
            "--interference-param",
            "knee=40",
            "--progress",
            "on",
        )
        self.assertEqual(0, code, err)
        self.assertIn("interference: cache-pressure", out)
        # Four VMs of 25 on the one host: 1 + (25/40) * (60/40).
        self.assertIn("| 1.938", out)
        self.assertIn("mdobp: 100%", err)
        self.assertIn("8/8", err)

    def test_bad_interference_options_are_clear_errors(self) -> None:
        path = self.small_trace()
        for options, message in (
            (["--interference", "magic"], "unknown interference model 'magic'"),
            (["--interference-param", "knee"], "expected KEY=NUMBER"),
            (["--interference", "cache-pressure", "--interference-param", "knee=0"], "knee > 0"),
        ):
            code, _, err = run("--config-file", "/dev/null", "simulate", path, *options)
            self.assertEqual(1, code, options)
            self.assertIn(message, err)

    def test_whole_log_bounded_slowdown_and_jobs_without_memory(self) -> None:
        path = self.small_trace()
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--cores", "4", "--jobs", "all"
        )
        self.assertEqual(0, code, err)
        self.assertIn("8 jobs from", out)
        self.assertIn("0 jobs without a memory value, placed by cores alone", out)
        self.assertIn("| bounded slowdown |", out)
        code, _, err = run("--config-file", "/dev/null", "simulate", path, "--jobs", "some")
        self.assertEqual(2, code)
        self.assertIn("argument --jobs: 'some' is not a whole number", err)

    def test_times_take_units(self) -> None:
        path = self.small_trace()
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--cores", "4", "--times", "99s,2d,1"
        )
        self.assertEqual(0, code, err)
        # Eight 100 s jobs on four cores: none done at 99 s, all by two days.
        self.assertIn("by 99 s | by 2 d | by 1 h", out)
        self.assertIn("| 0       | 8      | 8      |", out)
        code, _, err = run("--config-file", "/dev/null", "simulate", path, "--times", "soon")
        self.assertEqual(2, code)
        self.assertIn("'soon' is not a duration", err)

    def test_host_kinds(self) -> None:
        path = self.small_trace()
        code, out, err = run(
            "--config-file", "/dev/null", "simulate", path, "--host-kinds", "1:4:2048,1:4:2048:0.5"
        )
        self.assertEqual(0, code, err)
        self.assertIn(
            "kind-0: 1 x 4 cores 2048 MB speed 1; kind-1: 1 x 4 cores 2048 MB speed 0.5", out
        )
        code, _, err = run("--config-file", "/dev/null", "simulate", path, "--host-kinds", "4:2048")
        self.assertEqual(1, code)
        self.assertIn("host kind '4:2048': expected COUNT:CORES:RAM_MB[:SPEED]", err)

    def test_unknown_policy_is_a_clear_error(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, "t.swf")
        with open(path, "w") as stream:
            stream.write("1 0 5 100 2 -1 2048 2 3600 1024 1 7 -1 -1 3 -1 -1 -1\n")
        code, _, err = run("--config-file", "/dev/null", "simulate", path, "--policies", "magic")
        self.assertEqual(2, code)
        self.assertIn("argument --policies: unknown policy 'magic'", err)

    # Each bad option of issue 10, and the one-line error that names it.
    BAD_OPTIONS = [
        (["--cores-per-host", "0"], "argument --cores-per-host: must be at least 1"),
        (["--hosts-per-rack", "0"], "argument --hosts-per-rack: must be at least 1"),
        (["--ram-per-host-mb", "0"], "argument --ram-per-host-mb: must be above 0"),
        (["--ram-per-host-mb", "-5"], "argument --ram-per-host-mb: must be above 0"),
        (["--memory-scale", "nan"], "argument --memory-scale: 'nan' is not a finite number"),
        (["--memory-scale", "1e400"], "argument --memory-scale: '1e400' is not a finite"),
        (["--backfill-depth", "-1"], "argument --backfill-depth: must be at least 1"),
        (["--cores", "0"], "argument --cores: must be at least 1"),
        (["--cores", "-64"], "argument --cores: must be at least 1"),
        (["--jobs", "0"], "argument --jobs: must be at least 1"),
        (["--jobs", "-1"], "argument --jobs: must be at least 1"),
        (["--times", "-1"], "argument --times: must be a positive duration"),
        (["--alpha", "-1"], "argument --alpha: must be 0 or more"),
        (["--betas", "-5"], "argument --betas: must be 0 or more"),
        (["--betas", "abc"], "argument --betas: 'abc' is not a number"),
        (["--runtime-adjust", "-150"], "argument --runtime-adjust: must be above -100"),
        (["--cache-scores", "30:0"], "argument --cache-scores: LOW must not exceed HIGH"),
        (["--cache-scores", "abc"], "argument --cache-scores: expected LOW:HIGH"),
        (["--policies", ""], "argument --policies: expected at least one value"),
        (["--cpu-groups", "0"], "argument --cpu-groups: must be at least 1"),
        (["--backfill", "lazy"], "argument --backfill: invalid choice: 'lazy'"),
    ]

    def test_every_bad_option_is_one_line_naming_it_before_any_work(self) -> None:
        # The trace does not exist: a check that came after reading it would
        # say so instead.
        for bad, message in self.BAD_OPTIONS:
            code, out, err = run(
                "--config-file", "/dev/null", "simulate", "/nonexistent/trace.swf", *bad
            )
            self.assertEqual(2, code, bad)
            self.assertEqual("", out, bad)
            self.assertEqual(1, len(err.splitlines()), (bad, err))
            self.assertIn(message, err, bad)

    def test_cores_must_fill_whole_hosts(self) -> None:
        for cores in ("3", "7"):
            code, _, err = run(
                "--config-file", "/dev/null", "simulate", "/nonexistent/t.swf", "--cores", cores
            )
            self.assertEqual(1, code)
            self.assertEqual(
                f"hpc-nova-scheduler: --cores {cores} is not a multiple of --cores-per-host 4\n",
                err,
            )

    def test_demo_options_are_checked(self) -> None:
        for bad, message in (
            (["--betas", "abc"], "argument --betas: 'abc' is not a number"),
            (["--betas", "-5"], "argument --betas: must be 0 or more"),
            (["--alpha", "-1"], "argument --alpha: must be 0 or more"),
        ):
            code, _, err = run("--config-file", "/dev/null", "demo", *bad)
            self.assertEqual(2, code, bad)
            self.assertIn(message, err)
