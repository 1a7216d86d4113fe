"""``fairshare allocate | show | report``: fair share in the live cloud, every backend.

The plugin database is real (SQLite, MariaDB, PostgreSQL); only Nova's
compute nodes and aggregates are handed to ``allocate`` as a list, through
its injectable source. ``tests/functional/cmd/test_fairshare_live.py``
reads them from the in-process Nova.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import types

import testtools
from oslo_utils import timeutils

from hpc_nova_scheduler.cmd import cli, common, fairshare_live
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare import platforms
from tests import db_backends
from tests.unit.cmd.test_cli import CommandTests as _CommandBase

#: A is twice as fast on amd, B twice as fast on intel (solo runs), and one
#: co-run each, so that the second level has something to rank.
RUNS = """application,platform,runtime_s,corunners
A,amd,10,
A,intel,20,
B,amd,30,
B,intel,15,
A,amd,12,B
B,amd,33,A
"""
HOSTS = ("a1", "a2", "i1", "i2")
NODES = [platforms.Node(host, host, 16) for host in HOSTS]
TAGS = {
    host: {"hpc:cpu_group": frozenset({"amd" if host.startswith("a") else "intel"})}
    for host in HOSTS
}


def _vm(uuid: str, host: str, project: str, app: str, cores: int) -> db_api.RunningRecord:
    return db_api.RunningRecord(
        uuid, host, AppClass.ASYNC_HPC, 1.0, app_name=app, project_id=project, cores=cores
    )


class FairshareLiveCommandTests(_CommandBase):
    """The live commands against a synced database (the base's own tests are not re-run)."""

    POLICY = "pa-rr"

    def setUp(self) -> None:
        super().setUp()
        self.configure(f"fairness_policy = {self.POLICY}\nfairshare_interval = 60\n")
        self.ok("db", "sync")

    def configure(self, text: str) -> None:
        with open(self.conf_file, "w", encoding="utf-8") as stream:
            stream.write(f"[hpc_scheduler]\n{text}")

    def populate(self, weights: tuple[float, float] = (1, 1)) -> None:
        """Projects pa (application A) and pb (B), 4 cores each on intel, 16 asked each."""
        self.ok("fairshare", "share", "set", "pa", str(weights[0]))
        self.ok("fairshare", "share", "set", "pb", str(weights[1]))
        self.ok("fairshare", "demand", "set", "pa", "16")
        self.ok("fairshare", "demand", "set", "pb", "16")
        self.ok("fairshare", "runs", "import", self.write("runs.csv", RUNS))
        self.database.record_running([_vm("u1", "i1", "pa", "A", 4), _vm("u2", "i2", "pb", "B", 4)])

    def allocate(self, *argv: str, nodes=NODES, tags=TAGS) -> tuple[int, str, str]:
        """``fairshare allocate`` with ``nodes`` and ``tags`` for Nova's."""
        args = cli.build_parser().parse_args(
            [
                "--config-file",
                self.conf_file,
                "--connection",
                self.db_url,
                "fairshare",
                "allocate",
                *argv,
            ]
        )
        out, err = io.StringIO(), io.StringIO()
        args.err = err
        handler = fairshare_live.allocate_handler(lambda _: (list(nodes), tags))
        code = common.run(args, handler, out, err)
        return code, out.getvalue(), err.getvalue()

    def allocated(self, *argv: str, **source) -> str:
        code, out, err = self.allocate(*argv, **source)
        self.assertEqual(0, code, err)
        return out

    def one_line_error(self, result: tuple[int, str, str]) -> str:
        code, out, err = result
        self.assertEqual((1, ""), (code, out), err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        return err

    def fails(self, *argv: str) -> str:
        return self.one_line_error(self.cli(*argv))

    def state(self) -> tuple:
        """Everything allocate could write."""
        latest = self.database.latest_generation()
        return (
            latest and (latest.number, latest.allocation, latest.templates),
            self.database.usage(),
            self.database.lease(),
            self.database.refusals(datetime.datetime(2000, 1, 1)),
            self.database.shares(),
            self.database.demand(),
            self.database.runs(),
        )

    # -- allocate ------------------------------------------------------------

    def test_allocate_prints_and_writes_a_generation(self) -> None:
        self.populate()
        out = self.allocated()
        self.assertIn("entitlements (cores)", out)
        # Each project on its faster platform, all it asks for.
        self.assertRegex(out, r"\| pa +\| 1 +\| 16 +\| 16 +\| 0 +\| 16 +\|")
        self.assertRegex(out, r"\| pb +\| 1 +\| 16 +\| 0 +\| 16 +\| 16 +\|")
        self.assertIn("node templates", out)
        self.assertRegex(out, r"\| amd +\| pa:16 +\| 1 +\|")
        self.assertEqual("policy pa-rr: generation 1 written", out.splitlines()[-1])
        latest = self.database.latest_generation()
        self.assertEqual(
            (1, "pa-rr", {"pa": {"amd": 16}, "pb": {"intel": 16}}),
            (latest.number, latest.policy, latest.allocation),
        )
        # The stored platforms are what show and report read.
        self.assertEqual(
            {"a1": "amd", "a2": "amd", "i1": "intel", "i2": "intel"},
            latest.templates["cloud"]["hosts"],
        )
        found = json.loads(self.allocated("--format", "json"))
        self.assertEqual(2, found["generation"])
        self.assertFalse(found["dry_run"])
        self.assertEqual({"pa": {"amd": 16}, "pb": {"intel": 16}}, found["allocation"])
        self.assertEqual({"pa": 16, "pb": 16}, found["demand"])
        self.assertEqual({"nodes": 2, "cores_per_node": 16, "cores": 32}, found["platforms"]["amd"])
        self.assertGreater(found["affinity"]["pa"]["amd"], found["affinity"]["pa"]["intel"])
        self.assertEqual([["pa", 16]], found["templates"]["amd"][0]["slots"])
        # The command never charges usage: only the lease's holder does.
        self.assertEqual({}, self.database.usage())
        self.assertIsNone(self.database.lease())

    def test_dry_run_writes_nothing(self) -> None:
        self.populate()
        before = self.state()
        out = self.allocated("--dry-run")
        self.assertRegex(out, r"\| pa +\| 1 +\| 16 +\| 16 +\| 0 +\| 16 +\|")
        self.assertEqual("policy pa-rr: nothing written (--dry-run)", out.splitlines()[-1])
        found = json.loads(self.allocated("--dry-run", "--format", "json"))
        self.assertIsNone(found["generation"])
        self.assertTrue(found["dry_run"])
        self.assertEqual(before, self.state())
        self.assertIsNone(self.database.latest_generation())

    def test_policy_none_refuses_unless_policy_is_given(self) -> None:
        self.configure("fairness_policy = none\n")
        self.populate()
        before = self.state()
        err = self.one_line_error(self.allocate())
        self.assertIn("fairness_policy = none", err)
        self.assertIn("--policy", err)
        self.assertEqual(before, self.state())
        found = json.loads(self.allocated("--policy", "aaf", "--dry-run", "--format", "json"))
        self.assertEqual("aaf", found["policy"])
        self.assertEqual(before, self.state())
        self.assertIn("policy equal: generation 1 written", self.allocated("--policy", "equal"))
        self.assertEqual("equal", self.database.latest_generation().policy)

    def test_a_bad_option_is_one_line_naming_it(self) -> None:
        self.populate()
        self.configure("fairness_policy = pa-rr\nfairshare_interval = 5\n")
        err = self.one_line_error(self.allocate())
        self.assertIn("[hpc_scheduler] fairshare_interval", err)
        self.assertIn("[hpc_scheduler] fairshare_interval", self.fails("fairshare", "show"))
        code, _, err = self.cli("fairshare", "allocate", "--policy", "fast")
        self.assertEqual(2, code)
        self.assertIn("invalid choice: 'fast'", err)

    def test_a_host_in_two_platforms_writes_nothing(self) -> None:
        self.populate()
        tags = dict(TAGS, i1={"hpc:cpu_group": frozenset({"intel", "amd"})})
        before = self.state()
        err = self.one_line_error(self.allocate(tags=tags))
        self.assertIn("host i1 is in two platforms by hpc:cpu_group: amd, intel", err)
        self.assertIn("nothing written", err)
        # hpc:platform overrides hpc:cpu_group, and is checked the same way.
        tags = dict(TAGS, a1={"hpc:platform": frozenset({"x", "y"})})
        self.assertIn(
            "host a1 is in two platforms by hpc:platform",
            self.one_line_error(self.allocate(tags=tags)),
        )
        self.assertEqual(before, self.state())

    def test_a_platform_without_cores_writes_nothing(self) -> None:
        self.populate()
        nodes = [*NODES, platforms.Node("g1", "g1", 0)]
        tags = dict(TAGS, g1={"hpc:platform": frozenset({"gpu"})})
        before = self.state()
        err = self.one_line_error(self.allocate(nodes=nodes, tags=tags))
        self.assertIn("platform gpu has no cores", err)
        err = self.one_line_error(self.allocate(nodes=[], tags={}))
        self.assertIn("no platform has cores", err)
        self.assertEqual(before, self.state())

    def test_allocate_without_shares_says_so(self) -> None:
        err = self.one_line_error(self.allocate())
        self.assertIn("no project has a share", err)
        self.assertIsNone(self.database.latest_generation())

    def test_a_weight_of_zero_or_less_is_refused_before_allocate(self) -> None:
        for weight in ("0", "-2"):
            self.assertIn("WEIGHT:", self.fails("fairshare", "share", "set", "pa", weight))
        self.assertEqual({}, self.database.shares())

    # -- show ----------------------------------------------------------------

    def test_show_and_report_need_a_generation(self) -> None:
        self.populate()
        for command in ("show", "report"):
            err = self.fails("fairshare", command)
            self.assertIn("no fair-share generation yet", err)
            self.assertIn("fairshare allocate", err)

    def test_show_refuses_an_unknown_project(self) -> None:
        self.populate()
        self.allocated()
        err = self.fails("fairshare", "show", "--project", "nobody")
        self.assertIn("--project nobody: no such project has a share", err)

    def test_show_per_project_and_platform(self) -> None:
        self.populate()
        self.allocated()
        self.database.set_usage({("pa", "intel"): 7200.0}, timeutils.utcnow())
        out = self.ok("fairshare", "show")
        first = out.splitlines()[0]
        self.assertRegex(first, r"^generation 1 \(pa-rr\), written \d+ s ago at ")
        self.assertIn("in force (stale after 2 x fairshare_interval = 120 s)", first)
        # pa runs 4 cores on intel, where A runs at half its speed on amd.
        self.assertRegex(
            out,
            r"\| pa +\| 1 +\| A +\| intel +\| 0 +\| 4 +\| 0 +\| 0 +\| 2\.00 +\| [0-9.]+ +"
            r"\| 0\.50 +\|",
        )
        # No borrowed nor preemptible cores.
        self.assertRegex(
            out, r"\| pa +\| 1 +\| A +\| amd +\| 16 +\| 0 +\| 0 +\| 0 +\| 0\.00 .*\| 1\.00 +\|"
        )
        self.assertRegex(
            out, r"\| pb +\| 1 +\| B +\| intel +\| 16 +\| 4 +\| 0 +\| 0 +\| 0\.00 .*\| 1\.00 +\|"
        )
        found = json.loads(self.ok("fairshare", "show", "--project", "pa", "--format", "json"))
        self.assertEqual(["pa"], list(found["projects"]))
        self.assertEqual(
            {"number": 1, "policy": "pa-rr", "stale": False, "fairness_policy": "pa-rr"},
            {k: found["generation"][k] for k in ("number", "policy", "stale", "fairness_policy")},
        )
        pa = found["projects"]["pa"]
        self.assertEqual((1.0, "A", 16), (pa["weight"], pa["application"], pa["demand"]))
        intel = pa["platforms"]["intel"]
        self.assertEqual(
            (0, 4, 7200.0, 0.5),
            (
                intel["entitled"],
                intel["in_use"],
                intel["usage_core_seconds"],
                intel["relative_throughput"],
            ),
        )
        stored = self.database.latest_generation().templates["affinity"]["pa"]
        self.assertEqual(stored["intel"], intel["affinity"])
        self.assertEqual(1.0, pa["platforms"]["amd"]["relative_throughput"])

    def test_show_marks_a_platform_without_a_solo_run(self) -> None:
        self.populate()
        self.ok(
            "fairshare",
            "runs",
            "import",
            self.write("a.csv", "application,platform,runtime_s\nA,amd,10\n"),
        )
        self.allocated()
        found = json.loads(self.ok("fairshare", "show", "--project", "pa", "--format", "json"))
        self.assertIsNone(found["projects"]["pa"]["platforms"]["intel"]["relative_throughput"])
        self.assertRegex(self.ok("fairshare", "show"), r"\| pa .*\| intel .*\| - +\|")

    def test_a_generation_older_than_two_intervals_is_stale(self) -> None:
        self.populate()
        self.allocated()
        later = timeutils.utcnow() + datetime.timedelta(seconds=121)
        timeutils.set_time_override(later)
        self.addCleanup(timeutils.clear_time_override)
        self.assertIn("STALE, not enforced", self.ok("fairshare", "show").splitlines()[0])
        found = json.loads(self.ok("fairshare", "report", "--format", "json"))
        self.assertTrue(found["generation"]["stale"])
        self.assertGreaterEqual(found["generation"]["age_s"], 121)

    def test_show_says_when_fair_share_is_off(self) -> None:
        self.populate()
        self.allocated()
        self.configure("fairness_policy = none\n")
        self.assertIn(
            "not enforced: fairness_policy = none", self.ok("fairshare", "show").splitlines()[0]
        )

    def test_cores_on_hosts_the_generation_does_not_know_are_left_out_with_a_warning(
        self,
    ) -> None:
        self.populate()
        self.allocated()
        self.database.record_running([_vm("u3", "new1", "pa", "A", 8)])
        code, out, err = self.cli("fairshare", "show", "--format", "json")
        self.assertEqual(0, code, err)
        self.assertEqual(4, json.loads(out)["projects"]["pa"]["platforms"]["intel"]["in_use"])
        self.assertIn("warning: 8 cores in use on hosts that generation 1 does not know", err)

    # -- report --------------------------------------------------------------

    def test_report_jain_and_efficiency(self) -> None:
        self.populate()
        self.allocated()
        found = json.loads(self.ok("fairshare", "report", "--format", "json"))
        # pa: 4 cores at half speed = 2 best-equivalent; pb: 4 at full speed.
        self.assertEqual(
            {
                "weight": 1.0,
                "demand": 16,
                "cores_in_use": 4,
                "best_equivalent_cores": 2.0,
                "normalised_throughput_share": 2.0,
            },
            found["projects"]["pa"],
        )
        self.assertEqual(4.0, found["projects"]["pb"]["normalised_throughput_share"])
        self.assertEqual(["pa", "pb"], found["counted"])
        self.assertAlmostEqual(36 / 40, found["jain_index"])
        self.assertAlmostEqual(6 / 8, found["efficiency"])
        out = self.ok("fairshare", "report")
        self.assertIn("Jain's index over 2 project(s) asking for cores: 0.900", out)
        self.assertIn("efficiency (best-equivalent cores / cores in use): 0.750", out)
        self.assertRegex(out, r"\| pb +\| 1 +\| 16 +\| 4 +\| 4\.00 +\| 4\.00 +\|")

    def test_report_divides_by_weight_and_counts_projects_asking_for_cores(self) -> None:
        self.populate(weights=(1, 2))
        self.ok("fairshare", "share", "set", "idle", "5")
        self.allocated()
        found = json.loads(self.ok("fairshare", "report", "--format", "json"))
        self.assertEqual(2.0, found["projects"]["pb"]["normalised_throughput_share"])
        self.assertEqual(0.0, found["projects"]["idle"]["normalised_throughput_share"])
        # A project asking for nothing is not wronged by getting nothing.
        self.assertEqual(["pa", "pb"], found["counted"])
        self.assertAlmostEqual(1.0, found["jain_index"])

    def test_report_with_nothing_in_use(self) -> None:
        self.ok("fairshare", "share", "set", "pa", "1")
        self.allocated()
        found = json.loads(self.ok("fairshare", "report", "--format", "json"))
        self.assertEqual(
            (None, None, []), (found["jain_index"], found["efficiency"], found["counted"])
        )
        out = self.ok("fairshare", "report")
        self.assertIn("asking for cores: -", out)

    def test_report_png_is_written_whole(self) -> None:
        self.populate()
        self.allocated()
        path = os.path.join(self.dir, "fair.png")
        self.ok("fairshare", "report", "--png", path)
        with open(path, "rb") as stream:
            self.assertEqual(b"\x89PNG\r\n\x1a\n", stream.read(8))
        self.assertEqual(["fair.png"], [n for n in os.listdir(self.dir) if "png" in n])
        missing = os.path.join(self.dir, "no", "such", "fair.png")
        err = self.fails("fairshare", "report", "--png", missing)
        self.assertIn(f"--png {missing}", err)
        self.assertFalse(os.path.exists(os.path.dirname(missing)))


# Only the live commands' tests: the base class's own run in test_cli.
for _name in [n for n in vars(_CommandBase) if n.startswith("test_")]:
    setattr(FairshareLiveCommandTests, _name, None)

db_backends.for_each_backend(globals(), FairshareLiveCommandTests, "TestFairshareLiveCommands")


class TestTagsOf(testtools.TestCase):
    """Aggregates' hpc: metadata, read as the scheduler reads it."""

    def test_tags_of_aggregates(self) -> None:
        aggregates = [
            types.SimpleNamespace(metadata={"hpc:cpu_group": " amd "}, hosts=["a1", "a2"]),
            types.SimpleNamespace(metadata={"hpc:platform": "x", "other": "y"}, hosts=["a1"]),
            types.SimpleNamespace(metadata={"hpc:cpu_group": "intel"}, hosts=["a1"]),
            types.SimpleNamespace(metadata={"hpc:rack": ""}, hosts=["b1"]),
            types.SimpleNamespace(metadata=None, hosts=None),
        ]
        self.assertEqual(
            {
                "a1": {
                    "hpc:cpu_group": frozenset({"amd", "intel"}),
                    "hpc:platform": frozenset({"x"}),
                },
                "a2": {"hpc:cpu_group": frozenset({"amd"})},
            },
            fairshare_live.tags_of(aggregates),
        )
        # hpc:platform wins; two cpu groups would otherwise be refused.
        tags = fairshare_live.tags_of(aggregates)
        self.assertEqual("x", platforms.platform_of("a1", tags, None))
