"""Seed 002 posed for a live cloud, without Nova: demand, applications, tables, usage."""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.core.sharing import Platform, SharingError
from hpc_nova_scheduler.fairshare import entitlements as live
from hpc_nova_scheduler.fairshare.allocator import TwoLevel

PLATFORMS = [Platform("amd", 2, 4), Platform("intel", 2, 4)]
RUNS = [
    live.Run("blast", "amd", 100.0),
    live.Run("blast", "intel", 200.0),
    live.Run("blast", "amd", 150.0, ("gene",)),
    live.Run("gene", "amd", 200.0),
    live.Run("gene", "intel", 100.0),
]


class TestProjects(testtools.TestCase):
    def test_demand_is_the_declared_total_or_what_nova_shows_whichever_is_larger(self) -> None:
        project = live.ProjectView("p", 1.0, declared=8, running={"amd": 4, "intel": 2})
        self.assertEqual(8, project.demand)
        self.assertEqual(10, live.ProjectView("p", 1.0, 8, {"amd": 6}, refused=4).demand)

    def test_the_application_is_the_one_holding_most_cores_ties_by_name(self) -> None:
        self.assertEqual("b", live.main_application([("a", 2), ("b", 3), (None, 9)]))
        self.assertEqual("a", live.main_application([("b", 2), ("a", 2)]))
        self.assertIsNone(live.main_application([(None, 4)]))
        unknown = live.ProjectView("p", 1.0)
        self.assertEqual("project:p", live.application_key(unknown))


class TestTables(testtools.TestCase):
    def test_measured_means_and_neutral_times_for_unknown_applications(self) -> None:
        table = live.combination_table(RUNS, PLATFORMS, ["blast", "mystery"])
        self.assertEqual(100.0, table.solo_runtime("blast", "amd"))
        self.assertEqual(150.0, table.runtime("blast", "amd", frozenset({"blast", "gene"})))
        self.assertEqual(live.NEUTRAL_SOLO_S, table.solo_runtime("mystery", "intel"))
        # Runs on a platform the cloud does not have are left out.
        table = live.combination_table(RUNS, PLATFORMS[:1], ["gene"])
        self.assertIsNone(table.solo_runtime("gene", "intel"))

    def test_each_project_goes_to_its_best_platform_by_rpa(self) -> None:
        projects = [
            live.ProjectView("pb", 1.0, declared=8, application="blast"),
            live.ProjectView("pg", 1.0, declared=8, application="gene"),
        ]
        table = live.table_for(projects, PLATFORMS, RUNS)
        plan = live.allocate(TwoLevel("pa-rr", "maf", "rpa"), projects, PLATFORMS, table, {})
        self.assertEqual({"amd": 8, "intel": 0}, plan.allocation["pb"])
        self.assertEqual({"amd": 0, "intel": 8}, plan.allocation["pg"])
        affinity = live.affinities("rpa", projects, PLATFORMS, table)
        self.assertGreater(affinity["pb"]["amd"], affinity["pb"]["intel"])
        self.assertEqual(
            {"pb": {"amd": 100.0, "intel": 200.0}, "pg": {"amd": 200.0, "intel": 100.0}},
            live.solo_times(projects, PLATFORMS, table),
        )
        self.assertRaises(SharingError, live.allocate, TwoLevel(), projects, [], table, {})


class TestUsage(testtools.TestCase):
    def test_usage_decays_and_charges_best_equivalent_core_seconds(self) -> None:
        solo = {"pb": {"amd": 100.0, "intel": 200.0}}
        updated = live.charge_usage(
            {("pb", "amd"): 1000.0},
            {("pb", "amd"): 100.0, ("pb", "intel"): 100.0, ("pb", "x"): 0.0},
            elapsed_s=60.0,
            half_life_s=60.0,
            solo=solo,
            how="best-equivalent",
        )
        # Half of 1000 left, plus 100 in full on amd; intel runs at half speed.
        self.assertEqual({("pb", "amd"): 600.0, ("pb", "intel"): 50.0}, updated)

    def test_the_digest_changes_with_its_inputs_only(self) -> None:
        self.assertEqual(live.digest({"a": 1}, [1, 2]), live.digest({"a": 1}, [1, 2]))
        self.assertNotEqual(live.digest({"a": 1}), live.digest({"a": 2}))
