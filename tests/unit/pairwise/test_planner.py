"""Seed 001's pairing as a batch planner: one pair a host."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.ivmp.model import IvmpExtended
from hpc_nova_scheduler.pairwise import planner as pairing
from hpc_nova_scheduler.planners.base import Batch, BatchApp
from hpc_nova_scheduler.planners.binpacking import NoRoom
from tests.unit.ivmp.test_ils import PROFILES as ILS_PROFILES

PROFILES = {p.name: p for p in ILS_PROFILES}
MODEL = IvmpExtended()


def batch(names, share: float = 0.25, hosts: int | None = None) -> Batch:
    apps = tuple(BatchApp(PROFILES[n], share, share) for n in names)
    return Batch(apps, hosts or len(apps))


class TestPairingPlanner(testtools.TestCase):
    def test_blossom_pairs_aggressive_applications_with_quiet_ones(self) -> None:
        b = batch(["PTRANS.I1.P4", "FFT.I1.P4", "PKTM.I1.P4", "DGEMM.I2.P4"])
        placement = pairing.BlossomPairing().place(b)
        self.assertTrue(placement.feasible(b))
        self.assertEqual(2, placement.hosts_used)
        self.assertNotEqual(placement.host_of[0], placement.host_of[1])
        # Greedy takes the cheapest pair first (the two quiet ones, 0.7 %)
        # and is left with the aggressive pair (21 %): seed 001's greedy.
        greedy = pairing.GreedyPairing().place(b)
        self.assertEqual(greedy.host_of[0], greedy.host_of[1])
        self.assertEqual(greedy.host_of[2], greedy.host_of[3])

    def test_a_pair_too_big_for_one_host_takes_two(self) -> None:
        b = batch(["PKTM.I1.P4", "DGEMM.I2.P4"], share=0.6)
        placement = pairing.BlossomPairing().place(b)
        self.assertEqual(2, placement.hosts_used)
        self.assertTrue(placement.feasible(b))

    def test_the_default_model_is_found_by_name(self) -> None:
        from hpc_nova_scheduler.planners import planner_registry

        planner = planner_registry.load("blossom", alpha=0.5, multistart=2, seed=1, time_limit=3.0)
        self.assertEqual("ivmp", planner.model.name)
        self.assertIsInstance(planner.model, IvmpExtended)
        self.assertIs(MODEL, pairing.GreedyPairing(MODEL).model)
        self.assertRaises(TypeError, planner_registry.load, "greedy", model_name="ivmp")

    def test_too_few_hosts_is_said(self) -> None:
        b = batch(["PKTM.I1.P4", "DGEMM.I2.P4", "HPL.I1.P4"], hosts=1)
        self.assertRaises(NoRoom, pairing.GreedyPairing().place, b)
        self.assertRaises(NoRoom, pairing.BlossomPairing().place, batch(["HPL.I1.P4"], share=1.5))

    @settings(max_examples=30, deadline=None)
    @given(st.lists(st.sampled_from(sorted(PROFILES)), min_size=1, max_size=12))
    def test_pairs_fit_and_blossom_is_never_worse_than_greedy(self, names) -> None:
        b = batch(names, share=0.4)
        placements = {}
        for planner in (pairing.BlossomPairing(), pairing.GreedyPairing()):
            placement = planner.place(b)
            self.assertTrue(placement.feasible(b), planner.name)
            self.assertLessEqual(max(len(a) for a in placement.groups().values()), 2)
            placements[planner.name] = placement
        # Unit run times: blossom minimises the summed pair cost that greedy approximates.
        runtimes = [1.0] * len(names)
        table = pairing.degradations(b, MODEL)
        from hpc_nova_scheduler.pairwise import matching

        self.assertLessEqual(
            matching.blossom(runtimes, table).makespan,
            matching.greedy(runtimes, table).makespan + 1e-9,
        )
