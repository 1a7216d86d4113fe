"""Which hosts of the live cloud a rebalance may touch, and how they pool."""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.db.api import RunningRecord
from hpc_nova_scheduler.ivmp.model import IvmpExtended
from hpc_nova_scheduler.live import pools
from hpc_nova_scheduler.live.view import CloudView, ComputeNode, Server

PROFILES = {
    "A": ProfileRecord("A", sllc_score=0.1, dram_score=0.1, net_score=0.1),
    "B": ProfileRecord("B", sllc_score=0.01, dram_score=0.0, net_score=0.0),
    "BLIND": ProfileRecord("BLIND"),
}


def host(name: str, group: str = "xeon", rack: str = "r1", vcpus: float = 8, **kw) -> ComputeNode:
    return ComputeNode(name, name, vcpus, 8192, cpu_group=group, rack=rack, **kw)


def server(sid: str, on: str, vcpus: int = 2, status: str = "ACTIVE", task=None) -> Server:
    return Server(sid, sid, on, status, task, vcpus, vcpus * 1024)


def row(
    sid: str, on: str, app: str | None = "A", request: str | None = "req", cls=None
) -> RunningRecord:
    return RunningRecord(sid, on, cls or AppClass.ASYNC_HPC, 0.0, app_name=app, request_id=request)


def build(hosts, servers, rows, migration="live"):
    return pools.build(
        CloudView(tuple(hosts), tuple(servers)), rows, PROFILES, IvmpExtended(), migration
    )


class TestPools(testtools.TestCase):
    def test_identical_hosts_pool_and_units_follow_requests(self) -> None:
        found = build(
            [
                host("a"),
                host("b"),
                host("c", group="epyc"),
                host("d", rack="r2"),
                host("e", vcpus=16),
            ],
            [server("s1", "a"), server("s2", "a"), server("s3", "b")],
            [row("s1", "a"), row("s2", "a"), row("s3", "b", app="B", request="other")],
        )
        self.assertEqual((), found.left_out)
        by_hosts = {p.hosts: p for p in found.pools}
        self.assertEqual({("a", "b"), ("c",), ("d",), ("e",)}, set(by_hosts))
        units = {u.key: u for u in by_hosts[("a", "b")].units}
        self.assertEqual({"req@a", "other@b"}, set(units))
        self.assertEqual(("s1", "s2"), units["req@a"].servers)
        self.assertEqual((0.5, 0.5), (units["req@a"].cpu, units["req@a"].mem))
        self.assertEqual("b", units["other@b"].host)

    def test_a_host_with_anything_that_may_not_move_is_left_out(self) -> None:
        cases = {
            "plain": ([server("p", "h")], [], "not an HPC server"),
            "extreme": (
                [server("x", "h")],
                [row("x", "h", cls=AppClass.EXTREME_HPC)],
                "dedicated to ExtremeHPC",
            ),
            "no profile": ([server("n", "h")], [row("n", "h", app="GONE")], "no profile"),
            "unnamed": ([server("n", "h")], [row("n", "h", app=None)], "no application name"),
            "blind": ([server("b", "h")], [row("b", "h", app="BLIND")], "BLIND"),
            "busy": ([server("m", "h", task="migrating")], [row("m", "h")], "migrating"),
            "stopped": ([server("m", "h", status="SHUTOFF")], [row("m", "h")], "SHUTOFF"),
        }
        for label, (servers, rows, reason) in cases.items():
            found = build([host("h"), host("spare")], servers, rows)
            self.assertEqual([("spare",)], [p.hosts for p in found.pools], label)
            self.assertEqual(1, len(found.left_out), label)
            self.assertEqual("h", found.left_out[0][0])
            self.assertIn(reason, found.left_out[0][1], label)

    def test_cold_migration_moves_stopped_servers(self) -> None:
        found = build(
            [host("h")], [server("m", "h", status="SHUTOFF")], [row("m", "h")], migration="cold"
        )
        self.assertEqual((), found.left_out)

    def test_a_disabled_host_neither_sends_nor_receives(self) -> None:
        found = build([host("h", usable=False), host("g")], [], [])
        self.assertEqual([("g",)], [p.hosts for p in found.pools])
        self.assertIn("disabled or down", found.left_out[0][1])
