"""Re-planning running applications into moves an operator can make one at a time."""

from __future__ import annotations

import dataclasses
import math

import testtools
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.ivmp.ils import IlsParameters, IteratedLocalSearch
from hpc_nova_scheduler.ivmp.model import IvmpExtended
from hpc_nova_scheduler.pairwise.planner import BlossomPairing
from hpc_nova_scheduler.planners import binpacking, rebalance
from hpc_nova_scheduler.planners.base import Placement
from hpc_nova_scheduler.planners.binpacking import NoRoom
from hpc_nova_scheduler.planners.rebalance import Pool, Unit
from tests.unit.ivmp.test_ils import PROFILES as ILS_PROFILES

PROFILES = {p.name: p for p in ILS_PROFILES}
MODEL = IvmpExtended()


def unit(key: str, name: str, host: str, vms: int, per_host: int = 8) -> Unit:
    servers = tuple(f"{key}-vm{i}" for i in range(vms))
    return Unit(key, PROFILES[name], host, servers, vms / per_host, vms / per_host)


def harmful_pair_on_one_host(hosts=("a", "b", "c", "d")) -> Pool:
    return Pool(
        "p",
        hosts,
        (
            unit("r1", "PTRANS.I1.P4", "a", 4),
            unit("r2", "FFT.I1.P4", "a", 4),
            unit("r3", "DGEMM.I1.P4", "b", 4),
            unit("r4", "PKTM.I1.P4", "b", 4),
        ),
    )


def replay(pool: Pool, moves) -> dict[str, str]:
    """Where each unit is after ``moves``, checking each move as it is made."""
    where = {u.key: u.host for u in pool.units}
    by_key = {u.key: u for u in pool.units}
    for move in moves:
        assert where[move.unit.key] == move.source, (move, where)
        assert move.target != move.source
        where[move.unit.key] = move.target
        for host in pool.hosts:
            here = [by_key[k] for k, h in where.items() if h == host]
            assert math.fsum(u.cpu for u in here) <= 1 + 1e-9, (host, here)
            assert math.fsum(u.mem for u in here) <= 1 + 1e-9, (host, here)
    return where


def ils(multistart: int = 10) -> IteratedLocalSearch:
    return IteratedLocalSearch(parameters=IlsParameters(multistart=multistart, seed=1))


class TestPropose(testtools.TestCase):
    def test_a_swap_goes_through_a_spare_host(self) -> None:
        pool = harmful_pair_on_one_host()
        plan = rebalance.propose(pool, ils(), MODEL, max_moves=10)
        # PTRANS and FFT are split up; both hosts are full, so one waits.
        self.assertEqual(3, len(plan.moves))
        where = replay(pool, plan.moves)
        self.assertNotEqual(where["r1"], where["r2"])
        self.assertEqual(2, plan.hosts_after)
        self.assertLess(plan.after, plan.before)
        self.assertAlmostEqual(plan.after, plan.planned)
        self.assertLess(plan.cost_after, plan.cost_before)
        self.assertEqual(0, plan.left)

    def test_a_bound_too_small_for_the_detour_proposes_nothing(self) -> None:
        pool = harmful_pair_on_one_host()
        plan = rebalance.propose(pool, ils(), MODEL, max_moves=2)
        # Two moves leave a worse objective than none: the plan stops at none.
        self.assertEqual((), plan.moves)
        self.assertEqual(plan.before, plan.after)
        # Two units are not where the planner puts them.
        self.assertEqual(2, plan.left)

    def test_without_a_spare_host_the_swap_is_left(self) -> None:
        pool = harmful_pair_on_one_host(hosts=("a", "b"))
        plan = rebalance.propose(pool, ils(), MODEL, max_moves=10)
        self.assertEqual((), plan.moves)
        self.assertGreater(plan.left, 0)

    def test_consolidation_is_the_planners_call(self) -> None:
        spread = Pool(
            "p",
            ("a", "b", "c", "d"),
            tuple(
                unit(f"r{i}", name, host, 4)
                for i, (name, host) in enumerate(
                    [
                        ("PTRANS.I1.P4", "a"),
                        ("FFT.I1.P4", "b"),
                        ("DGEMM.I1.P4", "c"),
                        ("PKTM.I1.P4", "d"),
                    ]
                )
            ),
        )
        plan = rebalance.propose(spread, binpacking.FirstFitDecreasing(), MODEL, max_moves=1)
        self.assertEqual(1, len(plan.moves))
        self.assertEqual(3, plan.hosts_after)
        self.assertEqual(1, plan.left)
        self.assertLess(plan.cost_after, plan.cost_before)

    def test_an_empty_pool_needs_nothing(self) -> None:
        plan = rebalance.propose(Pool("p", ("a",), ()), ils(), MODEL, max_moves=5)
        self.assertEqual((), plan.moves)
        self.assertEqual(0, plan.hosts_before)

    def test_a_key_twice_is_refused(self) -> None:
        pool = Pool(
            "p", ("a", "b"), (unit("r", "DGEMM.I1.P4", "a", 2), unit("r", "DGEMM.I1.P4", "b", 2))
        )
        self.assertRaises(ValueError, rebalance.propose, pool, ils(), MODEL, 3)

    def test_a_unit_off_the_pool_is_refused(self) -> None:
        self.assertRaises(ValueError, Pool, "p", ("a",), (unit("r", "DGEMM.I1.P4", "z", 2),))


class TestProposeAll(testtools.TestCase):
    def test_pools_share_the_moves_and_one_unplaceable_pool_stops_nothing(self) -> None:
        first = harmful_pair_on_one_host()
        second = Pool(
            "q",
            ("e", "f", "g", "h"),
            tuple(
                dataclasses.replace(u, key=u.key + "q", host=chr(ord(u.host) + 4))
                for u in first.units
            ),
        )
        plans, unplanned = rebalance.propose_all([first, second], ils(), MODEL, max_moves=4)
        self.assertEqual([], unplanned)
        # The first pool takes three moves; one is left, too few for the second's detour.
        self.assertEqual([3, 0], [len(p.moves) for p in plans])
        # Pairs on two hosts cannot hold six applications: that pool is left as it is.
        crowded = Pool(
            "c",
            ("a", "b"),
            tuple(unit(f"u{i}", "DGEMM.I3.P1", "ab"[i % 2], 1) for i in range(6)),
        )
        plans, unplanned = rebalance.propose_all(
            [crowded, first], BlossomPairing(), MODEL, max_moves=10
        )
        self.assertEqual(["p"], [p.pool for p in plans])
        self.assertEqual("c", unplanned[0][0].label)
        self.assertIn("cannot place", unplanned[0][1])


class TestTargets(testtools.TestCase):
    def test_a_relabelled_placement_moves_nothing(self) -> None:
        pool = harmful_pair_on_one_host()
        # The same grouping under other host numbers.
        wanted = rebalance.targets(pool, Placement((3, 3, 0, 0)))
        self.assertEqual({u.key: u.host for u in pool.units}, wanted)

    def test_the_host_keeping_most_vms_stays(self) -> None:
        pool = Pool(
            "p",
            ("a", "b"),
            (unit("big", "HPL.I1.P6", "a", 6), unit("small", "DGEMM.I1.P2", "a", 2)),
        )
        wanted = rebalance.targets(pool, Placement((0, 1)))
        self.assertEqual({"big": "a", "small": "b"}, wanted)

    def test_units_of_one_kind_stay_in_place_of_each_other(self) -> None:
        # Two DGEMM units of one size on a and b; the placement names the
        # other one for each host. Swapping them would change nothing.
        pool = Pool(
            "p",
            ("a", "b"),
            (
                unit("d1", "DGEMM.I1.P4", "a", 2),
                unit("d2", "DGEMM.I1.P4", "b", 2),
                unit("f", "FFT.I1.P4", "a", 2),
                unit("p", "PTRANS.I1.P4", "b", 2),
            ),
        )
        wanted = rebalance.targets(pool, Placement((1, 0, 0, 1)))
        self.assertEqual({"d1": "a", "d2": "b", "f": "a", "p": "b"}, wanted)
        # A unit of another size is not interchangeable: the hosts must then
        # hold other contents than now, and FFT and PTRANS trade places.
        pool = dataclasses.replace(pool, units=(unit("d1", "DGEMM.I1.P4", "a", 3), *pool.units[1:]))
        wanted = rebalance.targets(pool, Placement((1, 0, 0, 1)))
        self.assertEqual({"d1": "a", "d2": "b", "f": "b", "p": "a"}, wanted)


@st.composite
def pools(draw) -> Pool:
    hosts = tuple(f"h{i}" for i in range(draw(st.integers(2, 6))))
    names = sorted(PROFILES)
    units = []
    room = {h: 8 for h in hosts}
    for i in range(draw(st.integers(0, 10))):
        host = draw(st.sampled_from(hosts))
        vms = draw(st.integers(1, 4))
        if room[host] < vms:
            continue
        room[host] -= vms
        units.append(unit(f"u{i}", draw(st.sampled_from(names)), host, vms))
    return Pool("p", hosts, tuple(units))


class TestProperties(testtools.TestCase):
    @settings(max_examples=40, deadline=None)
    @given(pools(), st.integers(0, 6), st.sampled_from(["ils", "ffd", "bfd", "blossom"]))
    def test_every_step_fits_and_the_plan_never_worsens(self, pool, max_moves, name) -> None:
        planner = {
            "ils": ils(multistart=3),
            "ffd": binpacking.FirstFitDecreasing(),
            "bfd": binpacking.BestFitDecreasing(),
            "blossom": BlossomPairing(),
        }[name]
        try:
            plan = rebalance.propose(pool, planner, MODEL, max_moves)
        except NoRoom:
            # Pairs need a host each: a pool of many small units has too few.
            self.assertEqual("blossom", name)
            assume(False)
        self.assertLessEqual(len(plan.moves), max_moves)
        where = replay(pool, plan.moves)
        self.assertLessEqual(plan.cost_after, plan.cost_before + 1e-12)
        # What the plan says it reaches is what the moves reach.
        objective = rebalance.Objective(pool, MODEL, 0.7)
        contents = {h: [u for u in pool.units if where[u.key] == h] for h in pool.hosts}
        self.assertAlmostEqual(objective.interference(contents), plan.after)
        self.assertAlmostEqual(objective.cost(contents), plan.cost_after)
        self.assertEqual(sum(1 for c in contents.values() if c), plan.hosts_after)
