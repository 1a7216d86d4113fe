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
import time

import fixtures
import openstack
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session
from nova.compute import manager

from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.cmd import cli, common, rebalance
from hpc_nova_scheduler.demo import fake_driver
from hpc_nova_scheduler.live import migrate
from tests.functional.base import HpcTestCase

SEED_PROFILES = str(resources.example_profiles_dir() / "seed-applications.yaml")
HARMFUL = ("PTRANS.I1.P4", "FFT.I1.P4")
BENIGN = ("DGEMM.I1.P4", "PKTM.I1.P4")
POOL_HOSTS = ("n1", "n2", "n3", "n4")


class TestRebalance(HpcTestCase):
    HOSTS = {
        **{name: fake_driver.Shape(vcpus=8, memory_mb=8192) for name in POOL_HOSTS},
        "x1": fake_driver.Shape(vcpus=8, memory_mb=8192),
    }
    RACKS = {"r1": [*POOL_HOSTS, "x1"]}
    CPU_GROUPS = {"xeon": [*POOL_HOSTS, "x1"]}

    def setUp(self) -> None:
        super().setUp()
        self.database.import_profiles(datafiles.read_profiles(SEED_PROFILES))
        self.apps: dict[str, list[str]] = {}
        for name in (*HARMFUL, *BENIGN):
            flavor = self.hpc_flavor(vcpus=1, ram=1024, app_class="AsyncHPC", app_name=name)
            servers = self.launch(flavor, 4)
            self.assertEqual({"ACTIVE"}, {s["status"] for s in servers}, name)
            self.apps[name] = [s["id"] for s in servers]
        extreme = self.hpc_flavor(vcpus=2, ram=1024, app_class="ExtremeHPC", app_name="IS.B.4")
        self.extreme = self.launch(extreme, 1)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in self.extreme})
        self.extreme_host = self.extreme[0]["OS-EXT-SRV-ATTR:host"]
        self.conn = self.connection()
        self.useFixture(
            fixtures.MonkeyPatch("hpc_nova_scheduler.cmd.common.connect", lambda args: self.conn)
        )
        hosts = self.where()
        # The plugin packed the aggressive pair together: what rebalance is for.
        self.assertEqual(1, len({hosts[s] for n in HARMFUL for s in self.apps[n]}), hosts)

    def connection(self):
        """openstacksdk on the harness's APIs, as an admin."""
        session = ks_session.Session(
            auth=noauth.NoAuth(),
            additional_headers={
                "X-Auth-User": "admin",
                "X-User-Id": "admin",
                "X-Auth-Project-Id": self.api.project_id,
                "X-Project-Id": self.api.project_id,
                "X-Roles": "admin,member,reader",
                "X-Auth-Token": self.placement_fixture.token,
            },
        )
        conn = openstack.connection.Connection(
            session=session,
            compute_endpoint_override=self.api.base_url,
            placement_endpoint_override=self.placement_fixture.endpoint,
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

    def assert_invariants(self) -> None:
        """What must hold after every move."""
        servers = self.admin_api.get_servers(detail=True, search_opts={"all_tenants": 1})
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
        self.assertLessEqual(max(vcpus.values()), 8, vcpus)
        for host in self.HOSTS:
            usages = self.placement.get(
                f"/resource_providers/{self._get_provider_uuid_by_host(host)}/usages"
            ).body["usages"]
            self.assertLessEqual(usages.get("VCPU", 0), 8, host)
            self.assertEqual(vcpus.get(host, 0), usages.get("VCPU", 0), host)
        # The ExtremeHPC host stays dedicated.
        on_extreme = {s["id"] for s in servers if s["OS-EXT-SRV-ATTR:host"] == self.extreme_host}
        self.assertEqual({self.extreme[0]["id"]}, on_extreme)
        # An application's VMs stay together (the unit moved is all of them).
        for name, ids in self.apps.items():
            self.assertEqual(1, len({hosts[i] for i in ids}), name)

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

    def test_apply_moves_servers_one_application_at_a_time(self) -> None:
        self.slow_source_computes()
        moves = self.planned_moves()
        self.assertEqual(3, len(moves))
        seen = []

        def check(done, move) -> None:
            hosts = self.where()
            for server in move.unit.servers:
                self.assertEqual(move.target, hosts[server])
            self.assert_invariants()
            seen.append(done)

        mover = migrate.Mover(self.conn, poll=0.1, timeout=60)
        self.assertEqual(3, migrate.carry_out(mover, moves, after_each=check))
        self.assertEqual([1, 2, 3], seen)
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
        mover = migrate.Mover(self.conn, poll=0.1, timeout=60)
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
            {"source": "live", "hosts": empty, "cpu_group": "xeon", "vcpus": 8.0, "ram_mb": 8192.0},
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
