"""Planners are found by name and each places a batch within capacity."""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.ivmp import ils
from hpc_nova_scheduler.planners import planner_registry
from hpc_nova_scheduler.planners.base import Batch
from tests.unit.ivmp.test_ils import PROFILES, app
from tests.unit.runtime import test_planner as runtime_planner


class TestRegistry(testtools.TestCase):
    def test_every_planner_places_a_batch(self) -> None:
        self.assertEqual(
            [
                "annealing",
                "bf",
                "bfd",
                "blossom",
                "ff",
                "ffd",
                "greedy",
                "ils",
                "milp",
                "wf",
                "wfd",
            ],
            planner_registry.names(),
        )
        seed_004 = Batch(tuple(app(p) for p in PROFILES[:9]), 9)
        # Annealing predicts run times: seed 000's shaped applications and a fitted model.
        model, _ = runtime_planner.fitted()
        seed_000 = runtime_planner.batch(["CG", "LAMMPS", "NAMD", "Zeusmp2"] * 2 + ["CG"], 9)
        for name in planner_registry.names():
            params = {
                "ils": {"parameters": ils.IlsParameters(multistart=2)},
                "annealing": {"model": model, "iterations": 100},
            }.get(name, {})
            batch = seed_000 if name == "annealing" else seed_004
            planner = planner_registry.load(name, **params)
            self.assertEqual(name, planner.name)
            placement = planner.place(batch)
            self.assertTrue(placement.feasible(batch), name)
            self.assertEqual(9, len(placement.host_of))

    def test_unknown_names_are_said(self) -> None:
        error = self.assertRaises(planner_registry.UnknownPlanner, planner_registry.load, "nope")
        self.assertIn("known: annealing, bf, bfd", str(error))
