"""The stress checker finds each kind of violation, and only those."""

from __future__ import annotations

import os

import fixtures
import testtools

from devcloud import checker
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api

GROUPS = {"h1": "xeon", "h2": "xeon", "h3": "epyc"}
HARMFUL = frozenset({("CG", "MG")})


def asked(tag, app_class, score=10.0, name=None, count=1):
    return checker.Asked(tag, app_class, score, name, count)


def check(*servers):
    return checker.host_violations(servers, alpha=100.0, beta=60.0, harmful=HARMFUL, groups=GROUPS)


class TestHostViolations(testtools.TestCase):
    def test_a_good_placement_has_none(self) -> None:
        sync = asked("a", AppClass.SYNC_HPC, 30.0, "LU", 2)
        plain = asked("b", None, 0.0)
        self.assertEqual(
            [],
            check(
                checker.Server("1", "h1", sync),
                checker.Server("2", "h2", sync),
                checker.Server("3", "h1", plain),
            ),
        )

    def test_each_kind_is_found(self) -> None:
        heavy = asked("a", AppClass.ASYNC_HPC, 70.0, "CG")
        more = asked("b", AppClass.ASYNC_HPC, 40.0, "MG")
        found = check(checker.Server("1", "h1", heavy), checker.Server("2", "h1", more))
        self.assertTrue(any("> alpha" in f for f in found), found)
        self.assertTrue(any("harmful pair CG+MG" in f for f in found), found)

        sync = asked("c", AppClass.SYNC_HPC, 40.0)
        other = asked("d", AppClass.ASYNC_HPC, 25.0)
        found = check(checker.Server("3", "h2", sync), checker.Server("4", "h2", other))
        self.assertEqual(1, len(found))
        self.assertIn("> beta", found[0])

        extreme = asked("e", AppClass.EXTREME_HPC, 5.0)
        plain = asked("f", None, 0.0)
        found = check(checker.Server("5", "h3", extreme), checker.Server("6", "h3", plain))
        self.assertEqual(1, len(found))
        self.assertIn("ExtremeHPC host shared", found[0])

        spread = asked("g", AppClass.SYNC_HPC, 5.0, count=2)
        found = check(checker.Server("7", "h1", spread), checker.Server("8", "h3", spread))
        self.assertEqual(1, len(found))
        self.assertIn("spans processor groups", found[0])


class TestRecords(testtools.TestCase):
    def test_lost_misplaced_and_stale_rows(self) -> None:
        hpc = asked("a", AppClass.SYNC_HPC, 10.0)
        plain = asked("b", None)
        servers = [
            checker.Server("1", "h1", hpc),
            checker.Server("2", "h2", hpc),
            checker.Server("3", "h1", plain),
        ]
        rows = [
            db_api.RunningRecord("2", "h3", AppClass.SYNC_HPC, 10.0),
            db_api.RunningRecord("9", "h1", AppClass.ASYNC_HPC, 10.0),
        ]
        found = checker.record_mismatches(servers, {"1", "2", "3"}, rows)
        self.assertEqual(
            ["lost", "misplaced", "stale"], sorted(line.split(":")[0] for line in found)
        )


#: Two blocks of two racks of two hosts, as ``up --topology block=2,rack=2``
#: tags eight computes.
DOMAINS = {
    f"h{i}": {"block": f"block-{i // 4}", "rack": f"block-{i // 4}/rack-{i // 2}"} for i in range(8)
}


def required(tag, level, count, app_class=AppClass.SYNC_HPC):
    return checker.Asked(tag, app_class, 10.0, "LU", count, required=level)


class TestTopologyViolations(testtools.TestCase):
    def test_requests_within_one_domain_of_their_level_have_none(self) -> None:
        rack = required("a", "rack", 3)
        block = required("b", "block", 3, AppClass.ASYNC_HPC)
        host = required("c", "host", 2)
        free = asked("d", AppClass.SYNC_HPC, count=2)
        servers = [
            checker.Server("1", "h0", rack),
            checker.Server("2", "h1", rack),
            checker.Server("3", "h1", rack),
            checker.Server("4", "h4", block),
            checker.Server("5", "h6", block),
            checker.Server("6", "h7", block),
            checker.Server("7", "h3", host),
            checker.Server("8", "h3", host),
            # No constraint: may span blocks.
            checker.Server("9", "h0", free),
            checker.Server("10", "h7", free),
        ]
        self.assertEqual([], checker.topology_violations(servers, DOMAINS))

    def test_a_request_spanning_domains_of_its_level_is_one_violation(self) -> None:
        rack = required("a", "rack", 3)
        block = required("b", "block", 2, AppClass.EXTREME_HPC)
        host = required("c", "host", 2)
        servers = [
            # Two racks of one block: a rack violation, though one block.
            checker.Server("1", "h0", rack),
            checker.Server("2", "h2", rack),
            checker.Server("3", "h2", rack),
            checker.Server("4", "h3", block),
            checker.Server("5", "h4", block),
            checker.Server("6", "h5", host),
            checker.Server("7", "h6", host),
        ]
        found = checker.topology_violations(servers, DOMAINS)
        self.assertEqual(3, len(found), found)
        self.assertEqual(
            "a(SyncHPC LU 3x10 in one rack) spans 2 rack domains "
            "[block-0/rack-0: 1, block-0/rack-1: 2]: ['h0', 'h2', 'h2']",
            found[0],
        )
        self.assertIn("spans 2 block domains [block-0: 1, block-1: 1]", found[1])
        self.assertIn("spans 2 host domains [h5: 1, h6: 1]", found[2])

    def test_racks_are_known_by_their_path(self) -> None:
        # Rack r1 of block b1 and rack r1 of block b2 are two racks.
        domains = {"x": {"rack": "b1/r1"}, "y": {"rack": "b2/r1"}, "z": {}}
        rack = required("a", "rack", 2)
        found = checker.topology_violations(
            [checker.Server("1", "x", rack), checker.Server("2", "y", rack)], domains
        )
        self.assertEqual(1, len(found))
        # A host without a rack is a rack of its own.
        found = checker.topology_violations(
            [checker.Server("1", "z", rack), checker.Server("2", "z", rack)], domains
        )
        self.assertEqual([], found)
        found = checker.topology_violations(
            [checker.Server("1", "x", rack), checker.Server("2", "z", rack)], domains
        )
        self.assertIn("host:z: 1", found[0])


class TestRecord(testtools.TestCase):
    def test_a_record_reads_back_as_written(self) -> None:
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, "placed.json")
        rack = checker.Asked("a", AppClass.SYNC_HPC, 25.0, "LU", 2, "p1", 2, "rack")
        plain = checker.Asked("b", None, 0.0, None, 1, "p2", 1)
        servers = [
            checker.Server("1", "h0", rack),
            checker.Server("2", "h1", rack),
            checker.Server("3", "h5", plain),
        ]
        groups = {host: "xeon" for host in DOMAINS}
        checker.write_record(
            path, levels=("block", "rack"), domains=DOMAINS, groups=groups, servers=servers
        )
        record = checker.read_record(path)
        self.assertEqual(("block", "rack"), record.levels)
        self.assertEqual(DOMAINS, record.domains)
        self.assertEqual(groups, record.groups)
        self.assertEqual(sorted(servers, key=lambda s: s.uuid), record.servers)


#: ``stress --seconds 60 --record`` on ``up --scheduler-workers 2 --topology
#: block=2,rack=2``: every request the load placed and where its VMs landed.
RECORDED = os.path.join(os.path.dirname(__file__), "data", "stress-block-rack.json")


class TestRecordedStress(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.record = checker.read_record(RECORDED)

    def moved(self, tag: str, index: int, host: str) -> list[checker.Server]:
        """The recorded servers, the ``index``-th VM of request ``tag`` on ``host``."""
        mine = sorted((s for s in self.record.servers if s.asked.tag == tag), key=lambda s: s.uuid)
        self.assertGreater(len(mine), index, tag)
        target = mine[index].uuid
        return [
            checker.Server(s.uuid, host, s.asked) if s.uuid == target else s
            for s in self.record.servers
        ]

    def test_the_recorded_load_kept_every_required_level(self) -> None:
        self.assertEqual(("block", "rack"), self.record.levels)
        required = {s.asked.tag: s.asked.required for s in self.record.servers if s.asked.required}
        self.assertEqual({"block", "rack"}, set(required.values()))
        self.assertEqual([], checker.topology_violations(self.record.servers, self.record.domains))

    def test_a_vm_moved_to_another_rack_of_the_block(self) -> None:
        # s63ddc1r13: 3 NonHPC VMs (cache 40) required in one rack, on compute-04 and -05.
        servers = self.moved("s63ddc1r13", 0, "compute-06")
        found = checker.topology_violations(servers, self.record.domains)
        self.assertEqual(1, len(found), found)
        self.assertIn("s63ddc1r13(NonHPC LU 3x40 in one rack) spans 2 rack domains", found[0])
        self.assertIn("block-1/rack-2: 2, block-1/rack-3: 1", found[0])

    def test_a_vm_moved_to_the_other_block(self) -> None:
        # s63ddc1r2: 3 AsyncHPC VMs required in one block, all on compute-01.
        servers = self.moved("s63ddc1r2", 2, "compute-07")
        found = checker.topology_violations(servers, self.record.domains)
        self.assertEqual(1, len(found), found)
        self.assertIn("spans 2 block domains [block-0: 2, block-1: 1]", found[0])
        # Within its block, another rack is no violation of a block.
        servers = self.moved("s63ddc1r2", 2, "compute-03")
        self.assertEqual([], checker.topology_violations(servers, self.record.domains))

    def test_requests_without_a_level_are_not_judged(self) -> None:
        free = next(s for s in self.record.servers if s.asked.required is None)
        servers = self.moved(free.asked.tag, 0, "compute-07")
        self.assertEqual([], checker.topology_violations(servers, self.record.domains))
