"""tools/cloud.py under fair-share reclaim: options, the agent's credentials, the checks."""

from __future__ import annotations

import configparser
import contextlib
import datetime
import io
import json
import time
from pathlib import Path

import fixtures
import testtools
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from paste import deploy

from devcloud import checker, cli, config, fairshare, identity, reclaims, stress
from devcloud.layout import Run
from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.agent import main as agent_main
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.db import migration
from tests import db_backends
from tests.unit.devcloud import a_run

T0 = datetime.datetime(2026, 11, 29, 2, 0, 0)


def at(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def reclaim(
    number,
    victim="v1",
    project="fair-b",
    beneficiary="fair-a",
    platform="xeon",
    requested=0.0,
    acted=None,
    state="acted",
):
    return checker.ReclaimSeen(
        number,
        victim,
        project,
        platform,
        2,
        "borrowed",
        beneficiary,
        state,
        at(requested),
        None if acted is None else at(acted),
    )


def loan(uuid="v1", project="fair-b", kind="borrowed", over_by=2):
    return checker.LoanSeen(uuid, project, "xeon", 2, kind, over_by)


class TestOptions(testtools.TestCase):
    def _parse(self, *argv: str):
        return cli.build_parser().parse_args(list(argv))

    def test_up_defaults_to_no_reclaim_with_the_trial_grace(self) -> None:
        args = self._parse("up")
        self.assertEqual(("off", config.RECLAIM_GRACE), (args.reclaim, args.reclaim_grace))
        args = self._parse("up", "--reclaim", "shelve", "--reclaim-grace", "0")
        self.assertEqual(("shelve", 0), (args.reclaim, args.reclaim_grace))

    def test_stress_keeps_the_clouds_settings_unless_told(self) -> None:
        args = self._parse("stress")
        self.assertEqual((None, None), (args.reclaim, args.reclaim_grace))
        args = self._parse("stress", "--reclaim", "stop", "--reclaim-grace", "15")
        self.assertEqual(("stop", 15), (args.reclaim, args.reclaim_grace))

    def test_the_modes_are_the_options_choices(self) -> None:
        self.assertEqual(hpc_conf.RECLAIM_MODES, config.RECLAIM_MODES)

    def test_bad_values_are_one_line_naming_the_option(self) -> None:
        for argv in (
            ["stress", "--reclaim", "kill"],
            ["up", "--reclaim-grace", "-1"],
            ["up", "--reclaim-grace", "1.5"],
            ["stress", "--reclaim-grace", str(cli.GRACE_MAX + 1)],
        ):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                raised = self.assertRaises(SystemExit, self._parse, *argv)
            self.assertEqual(2, raised.code)
            self.assertIn(f"argument {argv[1]}", err.getvalue())
            self.assertNotIn("Traceback", err.getvalue())

    def test_a_run_saved_before_reclaim_loads_with_it_off(self) -> None:
        folder = Path(self.useFixture(fixtures.TempDir()).path)
        run = a_run(folder=str(folder))
        saved = json.loads(json.dumps(run.__dict__, default=lambda o: o.__dict__))
        for key in ("reclaim", "reclaim_grace"):
            saved.pop(key)
        (folder / "cloud.json").write_text(json.dumps(saved))
        loaded = Run.load(folder)
        self.assertEqual(("off", config.RECLAIM_GRACE), (loaded.reclaim, loaded.reclaim_grace))


class TestNovaConf(testtools.TestCase):
    def _run(self, **settings) -> Run:
        root = self.useFixture(fixtures.TempDir()).path
        run = Run.new(
            Path(root),
            mysql="mysql+pymysql://root@127.0.0.1",
            rabbit="rabbit://guest:guest@127.0.0.1:5672",
            computes=2,
            scheduler_workers=2,
            plugin=True,
            **settings,
        )
        run.ports = {
            name: 8000 + i for i, name in enumerate(("placement", "glance", "neutron", "nova"))
        }
        return run

    def _read(self, path: Path) -> configparser.ConfigParser:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.read(path)
        return parser

    def test_reclaim_is_written_with_a_short_interval(self) -> None:
        run = self._run(fairness="pa-rr", enforcement="borrow", reclaim="stop", reclaim_grace=7)
        group = self._read(config.nova_conf(run))["hpc_scheduler"]
        self.assertEqual("stop", group["fairshare_reclaim"])
        self.assertEqual("7", group["fairshare_reclaim_grace"])
        self.assertEqual(str(config.RECLAIM_INTERVAL), group["fairshare_interval"])

    def test_without_reclaim_the_long_interval_stays(self) -> None:
        run = self._run(fairness="pa-rr", enforcement="borrow")
        group = self._read(config.nova_conf(run))["hpc_scheduler"]
        self.assertEqual("off", group["fairshare_reclaim"])
        self.assertEqual(str(config.FAIRSHARE_INTERVAL), group["fairshare_interval"])

    def test_the_written_options_are_valid_for_the_agent(self) -> None:
        """The agent's own parse: the options' bounds, and credentials it accepts."""
        run = self._run(fairness="pa-rr", enforcement="borrow", reclaim="stop", reclaim_grace=0)
        path = config.nova_conf(run)
        conf = cfg.ConfigOpts()
        hpc_conf.register_opts(conf)
        hpc_conf.register_agent_opts(conf)
        conf([], default_config_files=[str(path)])
        self.assertIsNone(agent_main.reclaim_problem(conf))
        settings = hpc_conf.fairness_settings(conf)
        self.assertEqual(
            ("stop", 0, config.RECLAIM_INTERVAL),
            (settings.reclaim, settings.reclaim_grace, settings.interval),
        )
        auth = ks_loading.load_auth_from_conf_options(conf, hpc_conf.AGENT_GROUP_NAME)
        self.assertEqual(f"{run.url('nova')}/v2.1", auth.get_endpoint(None))
        self.assertEqual(
            ("hpc-scheduler-agent", "service", ("admin", "member", "reader")),
            identity.parse(auth.get_token(None)),
        )

    def test_nova_paste_puts_the_token_filter_where_authtoken_was(self) -> None:
        run = self._run()
        path = config.nova_paste(run)
        text = path.read_text()
        self.assertNotIn(" authtoken ", text)
        self.assertIn(f" {config.TOKEN_FILTER} keystonecontext ", text)
        made = deploy.loadfilter(f"config:{path}", config.TOKEN_FILTER)
        self.assertIsInstance(made(lambda environ, start: []), identity.ServiceTokens)


class TestServiceTokens(testtools.TestCase):
    def _through(self, environ: dict) -> dict:
        seen = {}

        def application(env, start_response):
            seen.update(env)
            return [b""]

        identity.ServiceTokens(application)(environ, lambda *a: None)
        return seen

    def test_a_token_of_the_agreed_form_becomes_identity_headers(self) -> None:
        token = identity.token("agent", "service", ["admin", "reader"])
        seen = self._through(
            {"HTTP_X_AUTH_TOKEN": token, "HTTP_X_USER_ID": "mallory", "HTTP_X_TENANT_ID": "x"}
        )
        self.assertEqual("agent", seen["HTTP_X_USER_ID"])
        self.assertEqual("service", seen["HTTP_X_PROJECT_ID"])
        self.assertEqual("admin,reader", seen["HTTP_X_ROLES"])
        self.assertNotIn("HTTP_X_TENANT_ID", seen)

    def test_other_requests_pass_unchanged(self) -> None:
        for environ in (
            {"HTTP_X_AUTH_TOKEN": "admin", "HTTP_X_USER_ID": "admin"},
            {"HTTP_X_AUTH_TOKEN": "devcloud:a:b:", "HTTP_X_USER_ID": "u"},
            {"HTTP_X_AUTH_TOKEN": "devcloud:a:b:c:d"},
            {},
        ):
            self.assertEqual(environ, self._through(dict(environ)))

    def test_tokens_read_back_and_bad_parts_are_refused(self) -> None:
        self.assertEqual(("u", "p", ("r",)), identity.parse(identity.token("u", "p", ["r"])))
        for user, project, roles in (("", "p", ["r"]), ("u:x", "p", ["r"]), ("u", "p", ["a,b"])):
            self.assertRaises(ValueError, identity.token, user, project, roles)


class TestWrongVictims(testtools.TestCase):
    GOVERNED = ("fair-a", "fair-b")

    def test_a_loan_placed_beyond_the_entitlement_is_a_right_victim(self) -> None:
        loans = {"v1": loan(), "v2": loan("v2", kind="preemptible", over_by=0)}
        found = checker.wrong_victims(
            [reclaim(1), reclaim(2, victim="v2", state="requested")], loans, self.GOVERNED
        )
        self.assertEqual([], found)

    def test_each_kind_of_wrong_victim_is_found(self) -> None:
        loans = {
            "within": loan("within", over_by=0),
            "other": loan("other", project="fair-a"),
            "unshared": loan("unshared", project="no-share"),
        }
        found = checker.wrong_victims(
            [
                reclaim(1, victim="never"),
                reclaim(2, victim="within", state="cancelled"),
                reclaim(3, victim="other"),
                reclaim(4, victim="unshared", project="no-share"),
            ],
            loans,
            self.GOVERNED,
        )
        self.assertEqual(4, len(found), found)
        self.assertIn("never recorded as a loan", found[0])
        self.assertIn("placed within its entitlement (over_by 0)", found[1])
        self.assertIn("a loan of fair-a, reclaimed as fair-b's", found[2])
        self.assertIn("no-share has no share", found[3])


class TestUnusedRoom(testtools.TestCase):
    def test_room_is_used_by_a_placement_of_the_beneficiary_there_within_the_window(self) -> None:
        placed = [
            checker.Placed("n1", "fair-a", "xeon", at(30)),
            checker.Placed("n2", "fair-a", "epyc", at(12)),
            checker.Placed("n3", "fair-c", "xeon", at(12)),
        ]
        reclaims = [
            reclaim(1, acted=10),  # fair-a placed on xeon 20 s later: used
            reclaim(2, acted=5),  # only on epyc, or other projects, within 20 s: unused
            reclaim(3, acted=100, platform="epyc"),  # too close to the end: not judged
            reclaim(4, state="requested"),  # never acted
        ]
        found, judged = checker.unused_reclaims(reclaims, placed[:1] + placed[1:], 20.0, at(110))
        self.assertEqual(2, judged)
        self.assertEqual(1, len(found), found)
        self.assertTrue(found[0].startswith("reclaim 2: 2 cores of fair-b freed on xeon"))


class TestTimeToFreedCores(testtools.TestCase):
    def _placed(self, *vms):
        return [checker.Placed(f"p{i}", p, "xeon", at(t), c) for i, (p, t, c) in enumerate(vms)]

    def test_from_the_oldest_refusal_still_unmet(self) -> None:
        placed = self._placed(("fair-a", 0, 2), ("fair-a", 15, 2), ("fair-a", 25, 4))
        refused = [
            checker.Refused("fair-a", 4, at(10)),
            checker.Refused("fair-a", 4, at(20)),
            checker.Refused("fair-b", 4, at(1)),
        ]
        # At 18: the placement at 15 met 2 of the 4 cores refused at 10.
        self.assertEqual(at(10), checker.unmet_since("fair-a", at(18), placed, refused, 30))
        # At 28: 2 more met at 25 the rest of 10, and 2 of 20.
        self.assertEqual(at(20), checker.unmet_since("fair-a", at(28), placed, refused, 30))
        # Refusals older than the interval are no longer unmet demand.
        self.assertIsNone(checker.unmet_since("fair-a", at(60), placed, refused, 30))
        self.assertIsNone(checker.unmet_since("fair-c", at(28), placed, refused, 30))

    def test_a_placement_in_the_refusals_second_meets_it(self) -> None:
        placed = self._placed(("fair-a", 10, 4))
        refused = [checker.Refused("fair-a", 4, at(10))]
        self.assertIsNone(checker.unmet_since("fair-a", at(12), placed, refused, 30))

    def test_figures_over_the_acted_reclaims(self) -> None:
        refused = [checker.Refused("fair-a", 4, at(10))]
        reclaims = [
            reclaim(1, requested=12, acted=30),
            reclaim(2, requested=15, acted=60),
            reclaim(3, requested=15),  # not acted: not timed
            reclaim(4, beneficiary="fair-c", requested=15, acted=20),  # nothing unmet
        ]
        freed = checker.time_to_freed_cores(reclaims, [], refused, 30, bound=40.0)
        self.assertEqual((20.0, 50.0), freed.seconds)
        self.assertEqual((1, 1), (freed.untimed, freed.within))
        self.assertEqual(
            (
                "reclaim 2 for fair-a: unmet since 02:00:10, requested 02:00:15, "
                "acted 02:01:00 (50 s)",
            ),
            freed.late,
        )


class TestReclaimTrial(testtools.TestCase):
    def test_the_trial_has_a_project_idle_first_and_borrowers(self) -> None:
        self.assertIs(fairshare.PROJECTS, fairshare.trial("off"))
        projects = fairshare.trial("stop")
        self.assertEqual([p.name for p in fairshare.PROJECTS], [p.name for p in projects])
        idle = [p for p in projects if p.idle_share > 0]
        self.assertEqual(["fair-a"], [p.name for p in idle])
        self.assertEqual(0, idle[0].demand)
        self.assertTrue(any(p.keep_alive for p in projects if p.weight is not None))

    def test_an_idle_project_starts_late_and_a_borrower_keeps_more_alive(self) -> None:
        projects = fairshare.trial("stop")
        clients = [
            stress.Client(i, None, 100.0, i, [], "s0000", projects=projects, started=0.0)
            for i in range(4)
        ]
        self.assertEqual([40.0, 0.0, 0.0, 0.0], [c.begin for c in clients])
        self.assertEqual(
            [stress.KEEP_ALIVE, 12, 12, stress.KEEP_ALIVE], [c.keep_alive for c in clients]
        )


class WatchTests:
    """What the watch keeps of the plugin database, on each database."""

    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)

    def _vm(self, uuid: str, project: str, host: str = "x1") -> db_api.RunningRecord:
        return db_api.RunningRecord(
            uuid, host, AppClass.ASYNC_HPC, 10.0, "LU", project_id=project, cores=2
        )

    def test_loans_are_kept_after_they_are_gone_and_reclaims_in_their_last_state(self) -> None:
        self.database.record_running([self._vm("v1", "fair-b"), self._vm("n1", "fair-a")])
        self.database.add_loan(
            loans_db.LoanRecord("v1", "fair-b", "xeon", 2, "borrowed", T0, 3, False, "x1", None)
        )
        self.database.record_refusal("fair-a", "LU", 4)
        cloud = {"cloud": {"platforms": [["xeon", 1, 10]], "hosts": {"x1": "xeon"}}}
        self.database.write_generation("pa-rr", {"fair-b": {"xeon": 1}}, cloud)
        # A reclaim of an earlier load is not this load's to judge.
        self.database.request_reclaims(
            [loans_db.NewReclaim("old", "fair-b", "xeon", 2, "borrowed", "fair-a", "test")],
            "stop",
            10,
            T0,
        )
        watch = reclaims.Watch(self.db_url, poll=0.01)
        (requested,) = self.database.request_reclaims(
            [loans_db.NewReclaim("v1", "fair-b", "xeon", 2, "borrowed", "fair-a", "test")],
            "stop",
            10,
            T0,
        )
        watch.start()
        self.assertTrue(wait_for(lambda: watch.looks > 0))
        self.database.update_reclaim(requested.id, state="acted", acted_at=at(12))
        self.database.forget_running(["v1"])
        self.database.prune_loans()
        watch.stop()
        self.assertEqual(
            {"v1": checker.LoanSeen("v1", "fair-b", "xeon", 2, "borrowed", 3)}, watch.loans
        )
        self.assertEqual([requested.id], list(watch.reclaims))
        seen = watch.reclaims[requested.id]
        self.assertEqual(("acted", at(12), "fair-a"), (seen.state, seen.acted_at, seen.beneficiary))
        placed = watch.placed({"x1": "xeon"})
        self.assertEqual(
            [("fair-a", "xeon", 2), ("fair-b", "xeon", 2)],
            [(p.project, p.platform, p.cores) for p in placed],
        )
        self.assertEqual(["fair-a"], [r.project for r in watch.refusals.values()])
        self.assertEqual(0, watch.failed_looks)
        (generation,) = watch.generations.values()
        self.assertEqual(
            ({"fair-b": {"xeon": 1}}, {"x1": "xeon"}),
            (generation.allocation, generation.platform_of),
        )
        self.assertEqual({("fair-a", "xeon"): 2, ("fair-b", "xeon"): 2}, watch.uses[0].use)
        self.assertEqual({("fair-a", "xeon"): 2}, watch.uses[-1].use)


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


db_backends.for_each_backend(globals(), WatchTests, "TestWatch")


class TestVictimsLeftBelow(testtools.TestCase):
    GENERATIONS = [
        checker.GenerationSeen(1, at(0), {"fair-b": {"xeon": 10}}, {}),
        checker.GenerationSeen(2, at(50), {"fair-b": {"xeon": 4}}, {}),
    ]

    def test_a_victim_the_project_could_spare(self) -> None:
        uses = [checker.UseSeen(at(9), {("fair-b", "xeon"): 12})]
        found, judged = checker.victims_left_below([reclaim(1, acted=10)], uses, self.GENERATIONS)
        self.assertEqual(([], 1), (found, judged))

    def test_victims_taken_together_are_counted_together(self) -> None:
        uses = [checker.UseSeen(at(9), {("fair-b", "xeon"): 13})]
        found, judged = checker.victims_left_below(
            [reclaim(1, acted=10), reclaim(2, victim="v2", acted=10)], uses, self.GENERATIONS
        )
        self.assertEqual(2, judged)
        self.assertEqual(1, len(found), found)
        self.assertTrue(found[0].startswith("reclaim 2: fair-b used 13 cores on xeon"), found)

    def test_the_generation_and_look_before_the_act_are_the_ones_judged(self) -> None:
        uses = [
            checker.UseSeen(at(9), {("fair-b", "xeon"): 20}),
            checker.UseSeen(at(59), {("fair-b", "xeon"): 6}),
            # After the act: the victim no longer counts.
            checker.UseSeen(at(61), {("fair-b", "xeon"): 4}),
        ]
        reclaims = [
            reclaim(1, acted=60),
            reclaim(2, acted=5),  # no look before it: not judged
            checker.ReclaimSeen(
                3, "p", "fair-b", "xeon", 2, "preemptible", "fair-a", "acted", at(0), at(60)
            ),
        ]
        found, judged = checker.victims_left_below(reclaims, uses, self.GENERATIONS)
        self.assertEqual(([], 1), (found, judged))
