"""The trial cloud under fair share: the entitlement check, the projects' data, the options."""

from __future__ import annotations

import configparser
import random
from pathlib import Path

import fixtures
import testtools

from devcloud import checker, config, fairshare, stress, workload
from devcloud.layout import Run
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import migration
from hpc_nova_scheduler.fairshare import runs as runs_file
from tests import db_backends

PLATFORM_OF = {"x1": "xeon", "x2": "xeon", "e1": "epyc"}
CAPACITY = {"xeon": 20, "epyc": 10}
GOVERNED = ("a", "b")


def server(uuid, host, project, vcpus=2, count=1, app_class=AppClass.ASYNC_HPC, tag=None):
    asked = checker.Asked(
        tag or f"r{uuid}", app_class, 10.0, "LU" if app_class else None, count, project, vcpus
    )
    return checker.Server(str(uuid), host, asked)


def check(servers, most, enforcement):
    return checker.entitlement_violations(
        servers,
        governed=GOVERNED,
        most=most,
        platform_of=PLATFORM_OF,
        capacity=CAPACITY,
        enforcement=enforcement,
    )


class TestStrict(testtools.TestCase):
    def test_within_the_largest_entitlement_is_no_violation(self) -> None:
        servers = [server(1, "x1", "a"), server(2, "x2", "a", vcpus=1), server(3, "e1", "b")]
        self.assertEqual([], check(servers, {"a": {"xeon": 3}, "b": {"epyc": 2}}, "strict"))

    def test_cores_beyond_it_are_one_violation_per_project_and_platform(self) -> None:
        servers = [server(1, "x1", "a"), server(2, "x2", "a"), server(3, "e1", "a")]
        found = check(servers, {"a": {"xeon": 3}}, "strict")
        self.assertEqual(2, len(found), found)
        self.assertIn("a holds 2 cores on epyc, entitled to at most 0 [r3]", found)
        self.assertIn("a holds 4 cores on xeon, entitled to at most 3 [r1, r2]", found)

    def test_projects_without_a_share_and_plain_servers_are_not_held(self) -> None:
        servers = [
            server(1, "x1", "nobody", vcpus=2),
            server(2, "x1", "a", app_class=None),
            server(3, "x1", None),
        ]
        self.assertEqual([], check(servers, {}, "strict"))

    def test_a_host_of_no_platform_is_beyond_any_entitlement(self) -> None:
        found = check([server(1, "elsewhere", "a")], {"a": {"xeon": 10}}, "strict")
        self.assertEqual(["a holds 2 cores on ?elsewhere, entitled to at most 0 [r1]"], found)


class TestBorrow(testtools.TestCase):
    def test_borrowed_cores_within_the_platform_are_no_violation(self) -> None:
        # a holds 6 cores of xeon, entitled to 2: 4 borrowed, and b's 14 were
        # placed within its entitlement later; 20 cores in all.
        servers = [server(i, "x1", "a") for i in range(3)] + [
            server(10 + i, "x2", "b") for i in range(7)
        ]
        self.assertEqual([], check(servers, {"a": {"xeon": 2}, "b": {"xeon": 18}}, "borrow"))

    def test_entitled_cores_beside_borrowed_ones_may_exceed_the_platform(self) -> None:
        # b borrowed 16 cores while a used none; a then placed its 10
        # entitled ones: 26 on 20 cores, and no rule broken.
        servers = [server(i, "x1", "b", vcpus=4) for i in range(4)] + [
            server(10 + i, "x2", "a", vcpus=5) for i in range(2)
        ]
        self.assertEqual([], check(servers, {"a": {"xeon": 10}, "b": {"xeon": 10}}, "borrow"))
        self.assertEqual(
            ["b holds 16 cores on xeon, entitled to at most 10 [r0, r1, r2, r3]"],
            check(servers, {"a": {"xeon": 10}, "b": {"xeon": 10}}, "strict"),
        )

    def test_projects_beyond_their_entitlement_holding_more_than_the_platform(self) -> None:
        servers = [server(i, "e1", "a", vcpus=4) for i in range(2)] + [
            server(10 + i, "e1", "b", vcpus=2) for i in range(2)
        ]
        found = check(servers, {"a": {"epyc": 4}, "b": {"epyc": 2}}, "borrow")
        self.assertEqual(
            [
                "epyc: projects beyond their entitlement hold 12 cores, more than its 10 "
                "cores could lend (held/entitled: a 8/4, b 4/2)"
            ],
            found,
        )


class TestTrialData(testtools.TestCase):
    def test_the_runs_file_reads_back_with_every_governed_application(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        found = runs_file.read_runs(str(fairshare.write_runs(Path(folder) / "runs.csv")))
        solo = {(r.application, r.platform): r.runtime_s for r in found if r.solo}
        self.assertEqual(
            {(a, p): t for a, times in fairshare.RUN_TIMES.items() for p, t in times.items()},
            solo,
        )
        for run in found:
            if not run.solo:
                self.assertGreaterEqual(run.runtime_s, solo[(run.application, run.platform)])
        applications = {p.application for p in fairshare.governed().values()}
        self.assertEqual(set(fairshare.RUN_TIMES), applications)
        self.assertLessEqual(applications, set(workload.APPLICATIONS))

    def test_three_projects_have_a_share_and_one_has_none(self) -> None:
        self.assertEqual(3, len(fairshare.governed()))
        self.assertEqual(4, len(fairshare.PROJECTS))

    def test_a_governed_client_asks_for_its_application_from_its_project(self) -> None:
        rng = random.Random(1)
        for number in range(50):
            asked, flavor = stress.random_request(
                rng, f"t{number}", project="fair-b", applications=("CG",)
            )
            self.assertEqual("fair-b", asked.project)
            expected = workload.PLAIN_FLAVORS if asked.app_class is None else workload.SIZES
            size = flavor if asked.app_class is None else flavor.rsplit(".", 1)[1]
            self.assertEqual(expected[size][0], asked.vcpus)
            if asked.app_class is not None:
                self.assertEqual("CG", asked.app_name)

    def test_the_clients_come_from_the_trial_projects_in_turn(self) -> None:
        clients = [
            stress.Client(i, None, 0.0, i, [], "s0000", projects=fairshare.PROJECTS)
            for i in range(5)
        ]
        self.assertEqual(
            ["fair-a", "fair-b", "fair-c", "no-share", "fair-a"], [c.project.name for c in clients]
        )
        plain = stress.Client(3, None, 0.0, 3, [], "s0000")
        self.assertEqual(("stress-1", None), (plain.project.name, plain.project.weight))

    def test_the_stored_cloud_gives_hosts_and_cores_per_platform(self) -> None:
        templates = {
            "cloud": {
                "platforms": [["epyc", 2, 10], ["xeon", 1, 16]],
                "hosts": {"e1": "epyc", "e2/node-2": "epyc", "x1": "xeon"},
            }
        }
        self.assertEqual(
            ({"e1": "epyc", "e2": "epyc", "x1": "xeon"}, {"epyc": 20, "xeon": 16}),
            fairshare.stored_cloud(templates),
        )
        self.assertEqual(({}, {}), fairshare.stored_cloud({}))


class TestNovaConf(testtools.TestCase):
    def _written(self, **settings) -> configparser.ConfigParser:
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
        run.ports = {name: 1 for name in ("placement", "glance", "neutron", "nova")}
        # Multi-valued options (available_filters) repeat their key.
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.read(config.nova_conf(run))
        return parser

    def test_fairness_options_are_written_while_fair_share_is_on(self) -> None:
        group = self._written(fairness="pa-rr", enforcement="borrow")["hpc_scheduler"]
        self.assertEqual("pa-rr", group["fairness_policy"])
        self.assertEqual("borrow", group["fairshare_enforcement"])
        self.assertEqual(str(config.FAIRSHARE_INTERVAL), group["fairshare_interval"])

    def test_nothing_of_fair_share_is_written_while_it_is_off(self) -> None:
        group = self._written()["hpc_scheduler"]
        self.assertNotIn("fairness_policy", group)
        self.assertNotIn("fairshare_enforcement", group)


class GenerationTests:
    """What the checker reads of the generations, on each database."""

    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)

    def test_the_largest_entitlement_of_the_generations_in_range(self) -> None:
        cloud = {"cloud": {"platforms": [["xeon", 2, 10]], "hosts": {"x1": "xeon", "x2": "xeon"}}}
        write = self.database.write_generation
        write("pa-rr", {"a": {"xeon": 30}}, cloud)
        write("pa-rr", {"a": {"xeon": 4}, "b": {"xeon": 6}}, cloud)
        write("pa-rr", {"a": {"xeon": 8}, "b": {"xeon": 2}}, cloud)
        write("pa-rr", {"a": {"xeon": 50}}, cloud)
        self.assertEqual(4, fairshare.latest(self.db_url))
        found = fairshare.generations(self.db_url, 2, 3)
        self.assertEqual((2, 3), found.numbers)
        self.assertEqual({"a": {"xeon": 8}, "b": {"xeon": 6}}, found.most)
        self.assertEqual({"x1": "xeon", "x2": "xeon"}, found.platform_of)
        self.assertEqual({"xeon": 20}, found.capacity)

    def test_no_generation(self) -> None:
        self.assertEqual(0, fairshare.latest(self.db_url))
        found = fairshare.generations(self.db_url, 1, 0)
        self.assertEqual(
            ((), {}, {}, {}), (found.numbers, found.most, found.platform_of, found.capacity)
        )


db_backends.for_each_backend(globals(), GenerationTests, "TestGenerations")
