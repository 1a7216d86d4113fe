"""What ``plan`` reports of a placement, per host and in total."""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference import model_registry
from hpc_nova_scheduler.planners import summary
from hpc_nova_scheduler.planners.base import Batch, BatchApp, Placement, host_level


def app(name: str, cpu: float, mem: float, score: float) -> BatchApp:
    profile = ProfileRecord(name, sllc_score=score, dram_score=score, net_score=score)
    return BatchApp(profile, cpu, mem)


class TestSummarise(testtools.TestCase):
    def test_per_host_and_totals(self) -> None:
        model = model_registry.load("ivmp")
        batch = Batch(
            (app("a", 0.5, 0.25, 0.8), app("b", 0.25, 0.5, 0.2), app("c", 1.0, 1.0, 0.5)), 3
        )
        found = summary.summarise(Placement((0, 0, 2)), batch, model, ["n1", "n2", "n3"])
        first, second = found["hosts"]
        self.assertEqual(
            ("n1", ["a", "b"], 0.75, 0.75),
            tuple(first[k] for k in ("host", "applications", "cpu", "mem")),
        )
        self.assertEqual(("n3", ["c"]), (second["host"], second["applications"]))
        self.assertEqual(round(host_level(model, batch.apps[:2]), 4), first["interference"])
        self.assertEqual(2, found["hosts_used"])
        self.assertAlmostEqual(
            first["interference"] + second["interference"], found["interference"]
        )
        self.assertEqual(max(first["interference"], second["interference"]), found["worst_host"])
        self.assertTrue(found["feasible"])

    def test_an_overloaded_host_is_reported_infeasible(self) -> None:
        model = model_registry.load("ivmp")
        batch = Batch((app("a", 0.75, 0.5, 0.5), app("b", 0.5, 0.5, 0.5)), 1)
        found = summary.summarise(Placement((0, 0)), batch, model)
        self.assertFalse(found["feasible"])
        self.assertEqual(0, found["hosts"][0]["host"])
