"""``demo --topology``: the hosts' levels, the stream, and its judgement.

The judgement is tried on outcomes recorded from a run of the stream on
``block=2,rack=2`` and on outcomes altered from them; one test runs the
stream in the in-process Nova, as the demo does.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os

import fixtures
import testtools

from hpc_nova_scheduler.cmd import demo
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.demo import topology

TWO_LEVELS = (("block", 2), ("rack", 2))

#: VMs per host of each application, as a run on block=2,rack=2 placed them
#: (None: refused whole).
RECORDED = {
    "mpi-rack": {"N1": 4, "N2": 2},
    "mpi-rack-too-big": None,
    "spark-block": {"N5": 4, "N6": 4, "N7": 4},
    "mpi-segments": {"N3": 4, "N4": 4, "N8": 4},
}


def replay(found, placements):
    """Judge each application of the stream on ``placements``, in order."""
    verdicts = {}
    running = []
    for app in topology.stream(found):
        expected = topology.expect(found, app, topology.free_room(found, running))
        hosts = placements[app.name]
        verdicts[app.name] = topology.judge(found, app, expected, hosts or {}, hosts is None)
        if hosts:
            running.append(hosts)
    return verdicts


class TestLayout(testtools.TestCase):
    def test_two_blocks_of_two_racks_of_two_hosts(self) -> None:
        found = topology.layout(TWO_LEVELS)
        self.assertEqual(("block", "rack"), found.levels)
        self.assertEqual((4, 2), found.sizes)
        self.assertEqual(tuple(f"N{i}" for i in range(1, 9)), found.hosts)
        self.assertEqual("b1/r2", found.domain("N3", "rack"))
        self.assertEqual("b2/r1", found.domain("N5", "rack"))
        self.assertEqual("b2", found.domain("N8", "block"))
        # Rack names repeat across blocks: a rack is known by its path.
        self.assertEqual(
            {
                "hpc:block": {"b1": ["N1", "N2", "N3", "N4"], "b2": ["N5", "N6", "N7", "N8"]},
                "hpc:rack": {"r1": ["N1", "N2", "N5", "N6"], "r2": ["N3", "N4", "N7", "N8"]},
            },
            found.tags(),
        )

    def test_three_levels_and_names_sharing_a_letter(self) -> None:
        found = topology.layout((("pod", 2), ("block", 2), ("rack", 2)))
        self.assertEqual(16, len(found.hosts))
        self.assertEqual("p2/b1/r2", found.domain("N12", "rack"))
        found = topology.layout((("row", 2), ("rack", 1)))
        self.assertEqual("row2/rack2", found.domain("N4", "rack"))

    def test_shapes_the_demo_cannot_build(self) -> None:
        for shape, reason in (
            ((("rack", 4),), "two levels or more"),
            ((("block", 1), ("rack", 4)), "2 domains or more"),
            ((("block", 4), ("rack", 4)), "makes 32 hosts"),
        ):
            error = self.assertRaises(topology.ShapeError, topology.layout, shape)
            self.assertIn(reason, str(error))

    def test_the_option_is_read_and_checked_before_nova_starts(self) -> None:
        parser = argparse.ArgumentParser()
        demo.add_parser(parser.add_subparsers())
        args = parser.parse_args(["demo", "--topology", "block=2,rack=2"])
        self.assertEqual(TWO_LEVELS, args.topology)
        self.assertIsNone(parser.parse_args(["demo"]).topology)
        for value in ("rack=4", "block=2,rack=0", "block=4,rack=4", "host=2,rack=2"):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertRaises(SystemExit, parser.parse_args, ["demo", "--topology", value])
            self.assertIn("argument --topology", err.getvalue())


class TestStream(testtools.TestCase):
    def test_sized_from_the_racks_and_blocks(self) -> None:
        apps = {app.name: app for app in topology.stream(topology.layout(TWO_LEVELS))}
        self.assertEqual(6, apps["mpi-rack"].count)
        self.assertEqual(9, apps["mpi-rack-too-big"].count)
        self.assertEqual(12, apps["spark-block"].count)
        self.assertEqual(AppClass.ASYNC_HPC, apps["spark-block"].app_class)
        self.assertEqual({"topology_preferred": "block"}, apps["spark-block"].specs)
        self.assertEqual(12, apps["mpi-segments"].count)
        self.assertEqual("segments of 4 per rack", apps["mpi-segments"].describe())


class TestExpect(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.found = topology.layout(TWO_LEVELS)
        self.apps = {app.name: app for app in topology.stream(self.found)}

    def test_required_fits_where_one_domain_has_the_room(self) -> None:
        empty = topology.free_room(self.found, [])
        self.assertTrue(topology.expect(self.found, self.apps["mpi-rack"], empty).placed)
        self.assertFalse(topology.expect(self.found, self.apps["mpi-rack-too-big"], empty).placed)

    def test_preferred_counts_the_fewest_domains_that_hold_it(self) -> None:
        spark = self.apps["spark-block"]
        room = topology.free_room(self.found, [{"N1": 4, "N2": 2}])
        self.assertEqual(topology.Expected(True, 1), topology.expect(self.found, spark, room))
        # 5 VMs on each block: no block holds 12 any more.
        room = topology.free_room(self.found, [{"N1": 4, "N3": 1, "N5": 4, "N7": 1}])
        self.assertEqual(topology.Expected(True, 2), topology.expect(self.found, spark, room))

    def test_segments_need_room_for_a_whole_segment_in_a_domain(self) -> None:
        segments = self.apps["mpi-segments"]
        # 2 VMs' room in every rack: 8 in all, no segment of 4 anywhere.
        room = topology.free_room(
            self.found, [{host: 3 for host in self.found.hosts}, {"N1": 1, "N3": 1}]
        )
        self.assertFalse(topology.expect(self.found, segments, room).placed)
        room = topology.free_room(self.found, [{"N1": 4, "N2": 2}, {"N5": 4, "N6": 4, "N7": 4}])
        self.assertTrue(topology.expect(self.found, segments, room).placed)


class TestJudge(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.found = topology.layout(TWO_LEVELS)

    def test_the_recorded_run_is_as_asked(self) -> None:
        self.assertEqual(dict.fromkeys(RECORDED), replay(self.found, RECORDED))

    def test_a_required_rack_spanning_two_racks(self) -> None:
        placements = dict(RECORDED, **{"mpi-rack": {"N1": 4, "N3": 2}})
        why = replay(self.found, placements)["mpi-rack"]
        self.assertEqual("spans 2 rack domains (b1/r1: 4, b1/r2: 2)", why)

    def test_a_split_segment(self) -> None:
        placements = dict(RECORDED, **{"mpi-segments": {"N3": 4, "N4": 2, "N8": 4, "N2": 2}})
        why = replay(self.found, placements)["mpi-segments"]
        self.assertEqual("a segment of 4 is split across rack domains (b1/r1, b1/r2)", why)

    def test_a_preferred_block_spread_though_one_holds_it(self) -> None:
        placements = dict(RECORDED, **{"spark-block": {"N5": 4, "N6": 4, "N3": 4}})
        why = replay(self.found, placements)["spark-block"]
        self.assertEqual("spans 2 block domains where 1 could hold it", why)

    def test_refused_with_room_and_placed_without(self) -> None:
        placements = dict(RECORDED, **{"mpi-rack": None})
        self.assertEqual(
            "refused, though the room left could hold it",
            replay(self.found, placements)["mpi-rack"],
        )
        placements = dict(RECORDED, **{"mpi-rack-too-big": {"N3": 4, "N4": 4, "N5": 1}})
        self.assertIn(
            "though the room left cannot hold it",
            replay(self.found, placements)["mpi-rack-too-big"],
        )

    def test_placement_by_block_and_rack(self) -> None:
        self.assertEqual(
            "b1/r2: 8, b2/r2: 4 (2 blocks)",
            topology.describe_placement(self.found, RECORDED["mpi-segments"]),
        )
        self.assertEqual("-", topology.describe_placement(self.found, {}))


class TestRun(testtools.TestCase):
    """The stream in the in-process Nova, printed as the demo prints it."""

    def test_every_application_gets_what_it_asked_for(self) -> None:
        workdir = self.useFixture(fixtures.TempDir()).path
        out, err = io.StringIO(), io.StringIO()
        args = argparse.Namespace(keep=workdir, alpha=200.0)
        found = demo._run_topology(args, out, err, TWO_LEVELS, workdir)
        report = out.getvalue() + err.getvalue()
        self.assertEqual((4, []), found, report)
        self.assertIn("topology_levels = block,rack", report)
        self.assertIn("b1/r1: N1, N2; b1/r2: N3, N4; b2/r1: N5, N6; b2/r2: N7, N8", report)
        rows = {
            line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
            for line in report.splitlines()
            if line.startswith("| ") and "application" not in line
        }
        self.assertEqual(set(RECORDED), set(rows), report)
        self.assertEqual("refused (NoValidHost)", rows["mpi-rack-too-big"][3])
        self.assertIn("(1 block)", rows["mpi-rack"][4])
        self.assertIn("(1 block)", rows["spark-block"][4])
        self.assertEqual({"yes"}, {row[-1] for row in rows.values()}, report)
        self.assertTrue(os.path.isfile(os.path.join(workdir, "nova-topology.log")))
