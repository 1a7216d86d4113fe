"""``rebalance`` in real Nova: servers really move, and the plugin's invariants hold.

Four identical hosts of one rack and processor group; the plugin packs
four 4-VM applications two by two, so that PTRANS and FFT (seed 004's most
aggressive pair) share a host. ``rebalance`` reads the cloud through
openstacksdk (Nova's and Placement's APIs as the harness serves them) and
the plugin database, and ILS splits the pair up: both hosts are full, so
one application waits on a spare host. Each move is a live (or cold)
migration to a named host, which nova-scheduler and the plugin check.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import json
import threading
import time

import fixtures
import openstack
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session
from nova.compute import manager

from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.agent import reconcile
from hpc_nova_scheduler.cmd import cli, common, rebalance
from hpc_nova_scheduler.demo import fake_driver
from hpc_nova_scheduler.live import migrate, view
from tests.functional.base import HpcTestCase

SEED_PROFILES = str(resources.example_profiles_dir() / "seed-applications.yaml")
HARMFUL = ("PTRANS.I1.P4", "FFT.I1.P4")
BENIGN = ("DGEMM.I1.P4", "PKTM.I1.P4")
POOL_HOSTS = ("n1", "n2", "n3", "n4")


class RebalanceScenario:
    """One ExtremeHPC server, then four 4-VM applications, on five hosts of
    one rack and processor group; openstacksdk on the harness's APIs.

    A mixin, so that only the test cases built on it are collected.
    """

    HOSTS = {
        **{name: fake_driver.Shape(vcpus=8, memory_mb=8192) for name in POOL_HOSTS},
        "x1": fake_driver.Shape(vcpus=8, memory_mb=8192),
    }
    #: Each host's vCPUs (RAM is 8 GB either way, so two applications fill a host).
    VCPUS = 8
    RACKS = {"r1": [*POOL_HOSTS, "x1"]}
    CPU_GROUPS = {"xeon": [*POOL_HOSTS, "x1"]}
    #: Whether the plugin keeps each application's VMs on one host here.
    TOGETHER = True

    def setUp(self) -> None:
        super().setUp()
        self.database.import_profiles(datafiles.read_profiles(SEED_PROFILES))
        extreme = self.hpc_flavor(vcpus=2, ram=1024, app_class="ExtremeHPC", app_name="IS.B.4")
        self.extreme = self.launch(extreme, 1)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in self.extreme})
        self.extreme_host = self.extreme[0]["OS-EXT-SRV-ATTR:host"]
        self.apps: dict[str, list[str]] = {}
        for name in (*HARMFUL, *BENIGN):
            flavor = self.hpc_flavor(vcpus=1, ram=1024, app_class="AsyncHPC", app_name=name)
            servers = self.launch(flavor, 4)
            self.assertEqual({"ACTIVE"}, {s["status"] for s in servers}, name)
            self.apps[name] = [s["id"] for s in servers]
        self.conn = self.connection()
        self.useFixture(
            fixtures.MonkeyPatch("hpc_nova_scheduler.cmd.common.connect", lambda args: self.conn)
        )

    def connection(self):
        """openstacksdk on the harness's APIs, as an admin."""
        # Reached through its client: 2025.1's harness keeps no
        # ``placement_fixture``.
        placement = self.placement.fixture
        session = ks_session.Session(
            auth=noauth.NoAuth(),
            additional_headers={
                "X-Auth-User": "admin",
                "X-User-Id": "admin",
                "X-Auth-Project-Id": self.api.project_id,
                "X-Project-Id": self.api.project_id,
                "X-Roles": "admin,member,reader",
                "X-Auth-Token": placement.token,
            },
        )
        conn = openstack.connection.Connection(
            session=session,
            compute_endpoint_override=self.api.base_url,
            placement_endpoint_override=placement.endpoint,
            compute_api_version="2.96",
        )
        self.addCleanup(conn.close)
        return conn

    def where(self) -> dict[str, str]:
        servers = self.admin_api.get_servers(detail=True, search_opts={"all_tenants": 1})
        return {s["id"]: s["OS-EXT-SRV-ATTR:host"] for s in servers}

    def rebalance(self, *options: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        status = cli.main(["--connection", self.db_url, "rebalance", *options], out, err)
        return status, out.getvalue(), err.getvalue()

    def planned_moves(self) -> list:
        """The moves ``rebalance`` proposes now, as the command plans them."""
        args = cli.build_parser().parse_args(
            ["--connection", self.db_url, "rebalance", "--multistart", "10"]
        )
        args.conf = common.load_conf(args)
        _, plans = rebalance.propose(args, self.conn, self.database)
        return [m for p in plans for m in p.moves]

    def slow_source_computes(self, seconds: float = 0.5) -> None:
        """Source computes that free a moved server's share late, as a loaded one does.

        Nova turns the server ACTIVE on its target and closes the migration
        before the source host's allocation goes; a move is over only then.
        """
        free = manager.ComputeManager._delete_allocation_after_move

        def late(compute, context, instance, migration):
            time.sleep(seconds)
            return free(compute, context, instance, migration)

        self.useFixture(
            fixtures.MonkeyPatch(
                "nova.compute.manager.ComputeManager._delete_allocation_after_move", late
            )
        )

    def apply_checking_each(self, moves: list) -> None:
        """Carry ``moves`` out; after each, its servers are on its target and
        every invariant holds."""
        seen = []

        def check(done, move) -> None:
            hosts = self.where()
            for server in move.unit.servers:
                self.assertEqual(move.target, hosts[server])
            self.assert_invariants()
            seen.append(done)

        mover = migrate.Mover(self.conn, poll=0.1)
        self.assertEqual(len(moves), migrate.carry_out(mover, moves, after_each=check))
        self.assertEqual(list(range(1, len(moves) + 1)), seen)

    def assert_invariants(
        self, refused: frozenset[str] = frozenset(), split: frozenset[str] = frozenset()
    ) -> None:
        """What must hold after every move; ``refused`` servers were never
        placed, and ``split`` applications were reported split by a failed move."""
        servers = self.admin_api.get_servers(detail=True, search_opts={"all_tenants": 1})
        for server in servers:
            if server["id"] in refused:
                self.assertEqual("ERROR", server["status"])
                self.assertIsNone(server["OS-EXT-SRV-ATTR:host"])
        servers = [s for s in servers if s["id"] not in refused]
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers})
        self.assertEqual({None}, {s["OS-EXT-STS:task_state"] for s in servers})
        hosts = {s["id"]: s["OS-EXT-SRV-ATTR:host"] for s in servers}
        # The plugin's records follow the servers.
        rows = {r.instance_uuid: r.host for r in self.database.list_running()}
        self.assertEqual(hosts, rows)
        # No host holds more than it has.
        vcpus = collections.Counter()
        for server in servers:
            vcpus[server["OS-EXT-SRV-ATTR:host"]] += server["flavor"]["vcpus"]
        self.assertLessEqual(max(vcpus.values()), self.VCPUS, vcpus)
        for host in self.HOSTS:
            usages = self.placement.get(
                f"/resource_providers/{self._get_provider_uuid_by_host(host)}/usages"
            ).body["usages"]
            self.assertLessEqual(usages.get("VCPU", 0), self.VCPUS, host)
            self.assertEqual(vcpus.get(host, 0), usages.get("VCPU", 0), host)
        # The ExtremeHPC host stays dedicated.
        on_extreme = {s["id"] for s in servers if s["OS-EXT-SRV-ATTR:host"] == self.extreme_host}
        self.assertEqual({self.extreme[0]["id"]}, on_extreme)
        # An application's VMs stay together (the unit moved is all of them).
        for name, ids in self.apps.items():
            if self.TOGETHER and name not in split:
                self.assertEqual(1, len({hosts[i] for i in ids}), name)


class TestRebalance(RebalanceScenario, HpcTestCase):
    def setUp(self) -> None:
        super().setUp()
        hosts = self.where()
        # The plugin packed the aggressive pair together: what rebalance is for.
        self.assertEqual(1, len({hosts[s] for n in HARMFUL for s in self.apps[n]}), hosts)

    def test_dry_run_proposes_and_moves_nothing(self) -> None:
        before = self.where()
        status, out, err = self.rebalance("--format", "json", "--multistart", "10")
        self.assertEqual(0, status, err)
        document = json.loads(out)
        self.assertEqual(self.where(), before)
        self.assertIn(self.extreme_host, {entry["host"] for entry in document["left_out"]})
        (pool,) = document["pools"]
        self.assertEqual(3, len(pool["moves"]))
        self.assertLess(pool["interference_after"], pool["interference_before"])
        moved = {m["application"] for m in pool["moves"]}
        self.assertTrue(moved & set(HARMFUL))
        for move in pool["moves"]:
            self.assertEqual(set(move["servers"]), set(self.apps[move["application"]]))

    def test_apply_moves_servers_one_application_at_a_time(self) -> None:
        self.slow_source_computes()
        moves = self.planned_moves()
        self.assertEqual(3, len(moves))
        self.apply_checking_each(moves)
        hosts = self.where()
        self.assertNotEqual(hosts[self.apps[HARMFUL[0]][0]], hosts[self.apps[HARMFUL[1]][0]])
        # Nothing is left to gain.
        status, out, err = self.rebalance("--multistart", "10")
        self.assertEqual(0, status, err)
        self.assertIn("0 moves", out)

    def test_the_command_applies_and_reports(self) -> None:
        status, out, err = self.rebalance("--apply", "--max-moves", "3", "--multistart", "10")
        self.assertEqual(0, status, err)
        self.assertIn("rebalance: 3 moves made", out)
        self.assertEqual(3, out.count("moved "))
        self.assert_invariants()

    def test_cold_migration_confirms_each_move(self) -> None:
        self.slow_source_computes()
        status, out, err = self.rebalance("--apply", "--migration", "cold", "--multistart", "10")
        self.assertEqual(0, status, err)
        self.assertIn("rebalance: 3 moves made", out)
        self.assert_invariants()

    def test_a_move_the_scheduler_refuses_stops_the_plan(self) -> None:
        moves = self.planned_moves()
        mover = migrate.Mover(self.conn, poll=0.1)
        # A plan that no longer matches the cloud is refused before any call.
        stale = dataclasses.replace(
            moves[0], unit=dataclasses.replace(moves[0].unit, host="elsewhere")
        )
        error = self.assertRaises(migrate.MoveFailed, migrate.carry_out, mover, [stale])
        self.assertIn("not elsewhere", str(error))
        # The first target fills up after the plan was made.
        filler = self.hpc_flavor(vcpus=8, ram=1024, app_class="AsyncHPC", app_name="DGEMM.I1.P6")
        before = self.where()
        target = moves[0].target
        self.assertNotIn(target, set(before.values()))
        blocker = self.launch(filler, 1)
        self.assertEqual(target, blocker[0]["OS-EXT-SRV-ATTR:host"])
        before = self.where()
        error = self.assertRaises(migrate.MoveFailed, migrate.carry_out, mover, moves)
        self.assertEqual(0, error.done)
        self.assertIn("No valid host", str(error))
        self.assertEqual(before, self.where())

    def test_a_migration_the_hypervisor_fails_stops_the_plan(self) -> None:
        moves = self.planned_moves()

        def fail(
            driver,
            context,
            instance,
            dest,
            post_method,
            recover_method,
            block_migration=False,
            migrate_data=None,
        ):
            # What a hypervisor that gives up does: Nova rolls the move back.
            recover_method(context, instance, dest, migrate_data)

        self.useFixture(fixtures.MonkeyPatch("nova.virt.fake.FakeDriver.live_migration", fail))
        before = self.where()
        status, out, err = self.rebalance("--apply", "--multistart", "10")
        self.assertEqual(1, status, out)
        self.assertIn("stopped after 0 of 3 moves: move 1", err)
        self.assertIn(f"server {moves[0].unit.servers[0]}: Nova left it on {moves[0].source}", err)
        self.assertIn("(its last migration is ", err)
        self.assertEqual(before, self.where())
        # The scheduler recorded the target when it chose it; the command
        # puts the record back where Nova rolled the server back to.
        self.assertIn("the plugin's records of 1 of its servers now name their hosts again", err)
        self.assert_invariants()

    def test_a_move_refused_half_way_moves_its_servers_back(self) -> None:
        moves = self.planned_moves()
        target = moves[0].target
        # Room on the target for two of the application's four VMs.
        filler = self.hpc_flavor(
            vcpus=self.VCPUS - 2, ram=1024, app_class="AsyncHPC", app_name="DGEMM.I1.P6"
        )
        blocker = self.launch(filler, 1)
        self.assertEqual(target, blocker[0]["OS-EXT-SRV-ATTR:host"])
        before = self.where()
        mover = migrate.Mover(self.conn, poll=0.1)
        error = self.assertRaises(migrate.MoveFailed, migrate.carry_out, mover, moves)
        self.assertEqual(0, error.done)
        self.assertEqual(moves[0].unit.servers[2], error.server)
        self.assertIn("No valid host", str(error))
        self.assertIn(
            f"the 2 of its servers on {target} went back to {moves[0].source}", str(error)
        )
        self.assertEqual(before, self.where())
        self.assert_invariants()

    def test_boots_while_a_plan_is_applied(self) -> None:
        """Tenants keep booting while the plan is carried out.

        A boot may take the room a move was planned into: nova-scheduler
        then refuses that move and the run stops there. Whatever the
        interleaving, nothing is lost and every invariant holds.
        """
        self.slow_source_computes(0.2)
        moves = self.planned_moves()
        flavor = self.hpc_flavor(vcpus=1, ram=1024, app_class="AsyncHPC", app_name="DGEMM.I1.P4")
        booted: list[dict] = []
        failures: list[BaseException] = []

        def tenant() -> None:
            try:
                for _ in range(4):
                    booted.extend(self.launch(flavor, 2))
            except BaseException as error:  # the test thread reports it
                failures.append(error)

        thread = threading.Thread(target=tenant)
        thread.start()
        mover = migrate.Mover(self.conn, poll=0.1)
        split: frozenset[str] = frozenset()
        try:
            done = migrate.carry_out(mover, moves)
        except migrate.MoveFailed as error:
            self.assertIn("No valid host", str(error))
            done = error.done
            # As the command does after a failed move: the scheduler recorded
            # the target it chose before Placement turned the claim down.
            rebalance.records_follow(self.conn, self.database, error.move.unit.servers)
            if "the application is split" in str(error):
                # Only when a boot also took the room its servers left.
                split = frozenset({error.move.unit.name})
        thread.join()
        self.assertEqual([], failures)
        self.assertEqual(8, len(booted))
        refused = frozenset(s["id"] for s in booted if s["status"] != "ACTIVE")
        for server in booted:
            if server["id"] in refused:
                self.assertEqual("ERROR", server["status"])
        self.assertLessEqual(done, len(moves))
        # The plugin records a VM on its planned host before Nova claims it;
        # when Placement turns that claim down (a migration took the room)
        # and Nova takes an alternate, the record follows at the plugin's
        # next look at the host or at the reconcile sweep. Only servers
        # booted here may lag so; the moved ones never do.
        changes = reconcile.plan(self.database.list_running(), reconcile.NovaView())
        self.assertEqual([], changes.stale)
        self.assertEqual([], changes.missing)
        lagging = {vm.instance_uuid for vm, _, _ in changes.moved}
        self.assertLessEqual(lagging, {s["id"] for s in booted})
        reconcile.apply(self.database, changes)
        self.assert_invariants(refused, split)
        # Each application moved is where its last move made put it.
        last = {move.unit.key: move for move in moves[:done]}
        hosts = self.where()
        for move in last.values():
            for server in move.unit.servers:
                self.assertEqual(move.target, hosts[server])

    def test_the_cloud_is_read_whole_across_pages(self) -> None:
        # nova-api pages hypervisors and servers at [api] max_limit.
        self.flags(max_limit=2, group="api")
        cloud = view.read(self.conn)
        self.assertEqual(sorted(self.HOSTS), [h.name for h in cloud.hosts])
        self.assertEqual({"xeon"}, {h.cpu_group for h in cloud.hosts})
        self.assertEqual({self.VCPUS}, {h.vcpus for h in cloud.hosts})
        # The harness's own client reads one page only: compare with the records.
        every = {vm.instance_uuid for vm in self.database.list_running()}
        self.assertEqual(17, len(every))
        self.assertEqual(every, {s.id for s in cloud.servers})

    def test_plan_on_the_live_clouds_empty_hosts(self) -> None:
        path = self.useFixture(fixtures.TempDir()).join("batch.yaml")
        with open(path, "w") as stream:
            stream.write(
                "batch:\n"
                "  - {application: PTRANS.I1.P4, count: 2, vcpus: 4, ram_mb: 4096}\n"
                "  - {application: DGEMM.I1.P4, count: 2, vcpus: 4, ram_mb: 4096}\n"
            )
        out, err = io.StringIO(), io.StringIO()
        argv = ["--connection", self.db_url, "plan", "--live", "--planner", "ils,ffd"]
        status = cli.main([*argv, "--multistart", "5", "--format", "json", path], out, err)
        self.assertEqual(0, status, err.getvalue())
        document = json.loads(out.getvalue())
        used = set(self.where().values())
        empty = sorted(set(self.HOSTS) - used)
        self.assertEqual(2, len(empty))
        self.assertEqual(
            {
                "source": "live",
                "hosts": empty,
                "cpu_group": "xeon",
                "vcpus": float(self.VCPUS),
                "ram_mb": 8192.0,
            },
            document["cloud"],
        )
        for plan in document["plans"]:
            self.assertEqual(2, plan["hosts_used"])
            self.assertLessEqual({h["host"] for h in plan["hosts"]}, set(empty))
        ils = next(p for p in document["plans"] if p["planner"] == "ils")
        # ILS keeps the two PTRANS apart, each with a DGEMM.
        for host in ils["hosts"]:
            self.assertEqual(["DGEMM.I1.P4", "PTRANS.I1.P4"], sorted(host["applications"]))
        # A file with its own cloud is refused with --live: which cloud is meant is unclear.
        with open(path, "a") as stream:
            stream.write("cloud: {hosts: 2, vcpus: 8, ram_mb: 8192}\n")
        out, err = io.StringIO(), io.StringIO()
        self.assertEqual(1, cli.main([*argv, path], out, err))
        self.assertIn("describes another cloud", err.getvalue())
        out, err = io.StringIO(), io.StringIO()
        path2 = self.useFixture(fixtures.TempDir()).join("b.yaml")
        with open(path2, "w") as stream:
            stream.write("batch:\n  - {application: PTRANS.I1.P4, vcpus: 4, ram_mb: 4096}\n")
        self.assertEqual(1, cli.main([*argv, "--cpu-group", "epyc", path2], out, err))
        self.assertIn("no empty host of processor group epyc", err.getvalue())


class TestRebalanceOnMediumFakeDriver(RebalanceScenario, HpcTestCase):
    """Nova's own ``fake.MediumFakeDriver`` (10 vCPUs, 8 GB a host)."""

    STOCK_DRIVER = "fake.MediumFakeDriver"
    HOSTS = dict.fromkeys([*POOL_HOSTS, "x1"], fake_driver.Shape())
    VCPUS = 10
    TOGETHER = False

    def test_plans_and_applies_on_novas_own_driver(self) -> None:
        # Here the plugin spreads each application over the four hosts left.
        status, out, err = self.rebalance("--format", "json", "--multistart", "10")
        self.assertEqual(0, status, err)
        document = json.loads(out)
        self.assertEqual([self.extreme_host], [entry["host"] for entry in document["left_out"]])
        (pool,) = document["pools"]
        self.assertEqual("xeon/r1/10vcpu-8192MB", pool["pool"])
        self.assertEqual(4, pool["hosts_before"])
        # ILS (alpha 0.7) frees hosts: 16 GB of VMs fit two 8 GB hosts.
        self.assertLess(pool["hosts_after"], pool["hosts_before"])
        self.slow_source_computes(0.2)
        moves = self.planned_moves()
        self.assertEqual(len(pool["moves"]), len(moves))
        self.apply_checking_each(moves)
        in_use = set(self.where().values()) - {self.extreme_host}
        self.assertEqual(pool["hosts_after"], len(in_use))
