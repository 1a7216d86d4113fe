"""``fairshare reclaim list | plan`` and the loans of ``fairshare show``, every backend.

The plugin database is real (SQLite, MariaDB, PostgreSQL); Nova's
aggregates are handed to ``plan`` as a mapping, through its injectable
source, which must be read only when a need requires a topology domain.
"""

from __future__ import annotations

import datetime
import io
import json

import fixtures
import testtools

from hpc_nova_scheduler.cmd import cli, common, fairshare_reclaim
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.fairshare import platforms
from tests import db_backends
from tests.unit.cmd.test_cli import CommandTests as _CommandBase

#: Two platforms of two 8-core hosts each; racks r1 (a0, i0) and r2 (a1, i1).
HOSTS = ("a0", "a1", "i0", "i1")
NODES = [platforms.Node(host, host, 8) for host in HOSTS]
TAGS = {
    host: {
        "hpc:cpu_group": frozenset({"amd" if host.startswith("a") else "intel"}),
        "hpc:rack": frozenset({"r1" if host.endswith("0") else "r2"}),
    }
    for host in HOSTS
}
T0 = datetime.datetime(2026, 11, 29, 0, 0, 0)


def _no_nova(args) -> dict:
    raise AssertionError("Nova was read, though no need has a required level")


class FairshareReclaimCommandTests(_CommandBase):
    """The reclaim commands against a synced database (the base's own tests are not re-run)."""

    def setUp(self) -> None:
        super().setUp()
        self.configure("fairshare_reclaim = stop\n")
        self.ok("db", "sync")
        self.cloud = platforms.build_cloud(NODES, TAGS)
        for project in ("pa", "pb"):
            self.database.set_share(project, 1.0)

    def configure(self, text: str) -> None:
        with open(self.conf_file, "w", encoding="utf-8") as stream:
            stream.write(
                "[hpc_scheduler]\nfairness_policy = pa-rr\nfairshare_interval = 60\n"
                f"fairshare_enforcement = borrow\n{text}"
            )

    def generation(self) -> db_api.Generation:
        """pa entitled to amd, pb to intel."""
        self.database.write_generation(
            "pa-rr",
            {"pa": {"amd": 8}, "pb": {"intel": 16}},
            {
                "templates": {},
                "affinity": {"pa": {"amd": 2.0, "intel": 1.0}, "pb": {"amd": 1.0, "intel": 2.0}},
                "cloud": platforms.cloud_as_json(self.cloud),
            },
        )
        return self.database.latest_generation()

    def place(self, uuid: str, project: str, host: str, cores: int, kind: str | None) -> None:
        """A recorded VM, a loan of ``kind`` (None: none), placed ``uuid``'s minute after T0."""
        self.database.record_running(
            [
                db_api.RunningRecord(
                    uuid,
                    host,
                    AppClass.ASYNC_HPC,
                    1.0,
                    nodename=host,
                    project_id=project,
                    cores=cores,
                )
            ]
        )
        if kind is not None:
            self.database.add_loan(
                loans_db.LoanRecord(
                    uuid,
                    project,
                    self.cloud.platform_of[host],
                    cores,
                    kind,
                    T0 + datetime.timedelta(minutes=int(uuid[1:])),
                    cores,
                    False,
                    host,
                    host,
                )
            )

    def fill_amd_with_pb(self) -> None:
        """pb is entitled to nothing on amd and borrowed all of it, 4 cores a VM."""
        for n, host in enumerate(("a0", "a0", "a1", "a1")):
            self.place(f"b{n}", "pb", host, 4, db_api.BORROWED)

    def plan(self, *argv: str, tags=_no_nova) -> tuple[int, str, str]:
        """``fairshare reclaim plan`` with ``tags`` (a source) for Nova's aggregates."""
        args = cli.build_parser().parse_args(
            [
                "--config-file",
                self.conf_file,
                "--connection",
                self.db_url,
                "fairshare",
                "reclaim",
                "plan",
                *argv,
            ]
        )
        out, err = io.StringIO(), io.StringIO()
        args.err = err
        code = common.run(args, fairshare_reclaim.plan_handler(tags), out, err)
        return code, out.getvalue(), err.getvalue()

    def planned(self, *argv: str, **source) -> str:
        code, out, err = self.plan(*argv, **source)
        self.assertEqual(0, code, err)
        return out

    def one_line_error(self, result: tuple[int, str, str], code: int = 1) -> str:
        status, out, err = result
        self.assertEqual((code, ""), (status, out), err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        return err

    def written(self) -> tuple:
        """Everything a dry run could write."""
        return (self.database.reclaims(), self.database.loans(), self.database.list_running())

    # -- list ----------------------------------------------------------------

    def test_list_without_reclaims(self) -> None:
        self.assertEqual("no reclaims\n", self.ok("fairshare", "reclaim", "list"))
        self.assertEqual(
            "no failed reclaims\n",
            self.ok("fairshare", "reclaim", "list", "--state", "failed"),
        )
        self.assertEqual(
            {"reclaims": []},
            json.loads(self.ok("fairshare", "reclaim", "list", "--format", "json")),
        )

    def test_list_every_reclaim_pending_and_done(self) -> None:
        self.fill_amd_with_pb()
        new = [
            loans_db.NewReclaim(f"b{n}", "pb", "amd", 4, db_api.BORROWED, "pa", f"reason {n}")
            for n in range(3)
        ]
        first, second, third = self.database.request_reclaims(new, "stop", 300, T0)
        self.database.update_reclaim(
            first.id,
            state=loans_db.ACTED,
            acted_at=T0 + datetime.timedelta(seconds=301),
            attempts=1,
        )
        self.database.update_reclaim(
            second.id, state=loans_db.FAILED, attempts=3, error="HttpException: 409 Conflict"
        )
        out = self.ok("fairshare", "reclaim", "list")
        self.assertRegex(
            out,
            rf"\| {first.id} +\| acted +\| stop +\| b0 +\| pb +\| amd +\| 4 +\| borrowed +\| pa +"
            r"\| 2026-11-29 00:00:00 +\| 2026-11-29 00:05:00 +\| 2026-11-29 00:05:01 +\| 1 +\|",
        )
        self.assertRegex(out, rf"\| {third.id} +\| requested .*\| - +\| 0 +\|")
        self.assertIn(f"reclaim {first.id}: reason 0\n", out)
        self.assertIn(f"reclaim {second.id} failed: HttpException: 409 Conflict\n", out)
        self.assertEqual("3 reclaim(s): 1 requested, 1 acted, 1 failed", out.splitlines()[-1])
        found = json.loads(
            self.ok("fairshare", "reclaim", "list", "--state", "failed", "--format", "json")
        )
        (only,) = found["reclaims"]
        self.assertEqual(
            (second.id, "failed", "b1", 3, "HttpException: 409 Conflict", None, "reason 1"),
            (
                only["id"],
                only["state"],
                only["instance_uuid"],
                only["attempts"],
                only["error"],
                only["acted_at"],
                only["reason"],
            ),
        )
        self.assertEqual("2026-11-29T00:05:00", only["act_after"])

    def test_list_refuses_an_unknown_state(self) -> None:
        err = self.one_line_error(
            self.cli("fairshare", "reclaim", "list", "--state", "done"), code=2
        )
        self.assertIn("argument --state: invalid choice: 'done'", err)

    # -- plan ----------------------------------------------------------------

    def test_plan_takes_back_borrowed_cores_and_writes_nothing(self) -> None:
        self.fill_amd_with_pb()
        self.generation()
        self.database.set_demand("pa", 8, "A")
        before = self.written()
        out = self.planned()
        self.assertEqual(before, self.written())
        self.assertEqual(
            "generation 1, fairshare_reclaim = stop: dry run, nothing written", out.splitlines()[0]
        )
        # The youngest first: b3, then b2.
        self.assertRegex(
            out, r"\| amd +\| b3 +\| pb +\| borrowed +\| 4 +\| 2026-11-29 00:03:00 +\| pa +\|"
        )
        self.assertRegex(out, r"\| amd +\| b2 +\| pb +\| borrowed +\| 4 +\|")
        self.assertIn("b3: pa has 0 of its 8 cores on amd and asks 8 more; b3 (4 cores of pb)", out)
        self.assertRegex(
            out,
            r"\| amd +\| pa +\| 8 +\| - +\| 8 +\| 0 +\| 0 +\| 8 +\| 0 +\| "
            r"2 victim\(s\) free 8 cores",
        )
        self.assertEqual("2 victim(s), 8 cores; 0 cores of need unserved", out.splitlines()[-1])
        found = json.loads(self.planned("--format", "json"))
        self.assertEqual(
            ("pa-rr", "stop", 1, 2, 8),
            (
                found["fairness_policy"],
                found["fairshare_reclaim"],
                found["generation"],
                found["reclaims"],
                found["cores"],
            ),
        )
        self.assertEqual(
            ["b3", "b2"], [r["instance_uuid"] for r in found["platforms"]["amd"]["reclaims"]]
        )
        self.assertEqual([], found["platforms"]["intel"]["reclaims"])

    def test_plan_of_one_platform(self) -> None:
        self.fill_amd_with_pb()
        self.generation()
        self.database.set_demand("pa", 8, "A")
        found = json.loads(self.planned("--platform", "intel", "--format", "json"))
        self.assertEqual((["intel"], 0), (list(found["platforms"]), found["reclaims"]))
        out = self.planned("--platform", "intel")
        self.assertIn("victims: none\n", out)
        self.assertIn("unmet demand of projects below their entitlement: none\n", out)

    def test_plan_refuses_an_unknown_platform(self) -> None:
        self.generation()
        err = self.one_line_error(self.plan("--platform", "arm"))
        self.assertIn(
            "--platform arm: no such platform in generation 1 (its platforms: amd, intel)", err
        )

    def test_plan_needs_a_generation(self) -> None:
        err = self.one_line_error(self.plan())
        self.assertIn("no fair-share generation yet", err)
        self.assertEqual([], self.database.reclaims())

    def test_plan_says_that_reclaim_is_off(self) -> None:
        self.configure("")
        self.generation()
        self.assertIn("fairshare_reclaim = off: the agent takes nothing back", self.planned())
        self.configure("fairshare_reclaim = sometimes\n")
        err = self.one_line_error(self.plan())
        self.assertIn("[hpc_scheduler] fairshare_reclaim", err)

    def test_plan_counts_reclaims_under_way_and_says_what_is_unserved(self) -> None:
        self.fill_amd_with_pb()
        self.generation()
        self.database.set_demand("pa", 8, "A")
        self.database.request_reclaims(
            [loans_db.NewReclaim("b3", "pb", "amd", 4, db_api.BORROWED, "pa", "earlier")],
            "stop",
            300,
        )
        found = json.loads(self.planned("--format", "json"))
        amd = found["platforms"]["amd"]
        self.assertEqual(["b2"], [r["instance_uuid"] for r in amd["reclaims"]])
        (need,) = amd["needs"]
        self.assertEqual((4, 4), (need["under_way"], need["taken"]))
        self.assertEqual(
            [{"instance_uuid": "b3", "beneficiary": "pa", "cores": 4}], amd["under_way"]
        )

    def test_a_required_rack_reads_nova_and_frees_one_rack(self) -> None:
        self.fill_amd_with_pb()
        self.generation()
        self.database.record_refusal("pa", "A", 8, topology_level="rack")
        reads = []

        def tags(args) -> dict:
            reads.append(args)
            return TAGS

        found = json.loads(self.planned("--format", "json", tags=tags))
        self.assertEqual(1, len(reads))
        victims = {r["instance_uuid"] for r in found["platforms"]["amd"]["reclaims"]}
        self.assertIn(victims, ({"b0", "b1"}, {"b2", "b3"}))
        (need,) = found["platforms"]["amd"]["needs"]
        self.assertEqual(["rack"], need["levels"])
        self.assertIn("in rack r", found["platforms"]["amd"]["reclaims"][0]["reason"])

    def test_a_wrong_topology_levels_option_is_one_line(self) -> None:
        self.configure("fairshare_reclaim = stop\ntopology_levels = rack,,pod\n")
        self.fill_amd_with_pb()
        self.generation()
        self.database.record_refusal("pa", "A", 8, topology_level="rack")
        err = self.one_line_error(self.plan(tags=lambda args: TAGS))
        self.assertIn("[hpc_scheduler] topology_levels", err)

    # -- show ----------------------------------------------------------------

    def test_show_counts_borrowed_and_preemptible_cores(self) -> None:
        self.fill_amd_with_pb()
        self.place("p5", "pb", "i0", 2, db_api.PREEMPTIBLE)
        self.place("p6", "pa", "i1", 1, db_api.PREEMPTIBLE)
        self.place("u7", "pb", "i1", 4, None)
        self.generation()
        stopped = self.database.request_reclaims(
            [loans_db.NewReclaim("b0", "pb", "amd", 4, db_api.BORROWED, "pa", "r")], "stop", 0
        )
        self.assertEqual(1, len(stopped))
        self.database.set_stopped("b0", True)
        found = json.loads(self.ok("fairshare", "show", "--format", "json"))["projects"]
        pb = found["pb"]["platforms"]
        # A stopped victim counts nowhere; a preemptible VM not in use.
        self.assertEqual(
            {"amd": (12, 12, 0), "intel": (4, 0, 2)},
            {p: (v["in_use"], v["borrowed"], v["preemptible"]) for p, v in pb.items()},
        )
        self.assertEqual(
            (0, 0, 1),
            tuple(
                found["pa"]["platforms"]["intel"][k] for k in ("in_use", "borrowed", "preemptible")
            ),
        )
        out = self.ok("fairshare", "show")
        self.assertRegex(out, r"\| pb +\| 1 +\| - +\| amd +\| 0 +\| 12 +\| 12 +\| 0 +\|")
        self.assertRegex(out, r"\| pb +\| 1 +\| - +\| intel +\| 16 +\| 4 +\| 0 +\| 2 +\|")


# Only the reclaim commands' tests: the base class's own run in test_cli.
for _name in [n for n in vars(_CommandBase) if n.startswith("test_")]:
    setattr(FairshareReclaimCommandTests, _name, None)

db_backends.for_each_backend(
    globals(), FairshareReclaimCommandTests, "TestFairshareReclaimCommands"
)


class UnreachableDatabaseTests(testtools.TestCase):
    """No database to read: one line, exit 1, for each command."""

    def test_each_command_says_so_in_one_line(self) -> None:
        conf = self.useFixture(fixtures.TempDir()).join("empty.conf")
        open(conf, "w").close()
        # Nobody listens on port 1 of this host: refused at once.
        url = "postgresql+psycopg2://nobody@127.0.0.1:1/none"
        for argv in (
            ("reclaim", "list"),
            ("reclaim", "plan"),
            ("reclaim", "plan", "--platform", "amd"),
            ("show",),
        ):
            out, err = io.StringIO(), io.StringIO()
            code = cli.main(
                ["--config-file", conf, "--connection", url, "fairshare", *argv], out, err
            )
            self.assertEqual((1, ""), (code, out.getvalue()), err.getvalue())
            self.assertEqual(1, len(err.getvalue().strip().splitlines()), err.getvalue())
            self.assertIn("cannot connect to the plugin database", err.getvalue())
