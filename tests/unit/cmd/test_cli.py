"""The hpc-nova-scheduler command, end to end on every database backend."""

from __future__ import annotations

import io
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

    def test_the_top_level_help_names_the_simulator_fair_share_and_topology(self) -> None:
        stdout = self.useFixture(fixtures.StringStream("stdout"))
        self.useFixture(fixtures.MonkeyPatch("sys.stdout", stdout.stream))
        self.assertRaises(SystemExit, cli.main, ["--help"])
        text = " ".join(stdout.getDetails()["stdout"].as_text().split())
        for words in ("simulator (simulate)", "fair share", "topology (topology)"):
            self.assertIn(words, text)

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
        # One line: the driver's hint and SQLAlchemy's link are left out.
        self.assertEqual(1, len(err.strip().splitlines()), err)

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
