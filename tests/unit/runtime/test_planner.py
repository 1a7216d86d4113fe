"""Seed 000's annealing as the ``annealing`` batch planner."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core.errors import CannotPlace
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.planners import planner_registry
from hpc_nova_scheduler.planners.base import Batch, BatchApp, Placement
from hpc_nova_scheduler.runtime import planner, shaped, trees
from hpc_nova_scheduler.runtime.planner import AnnealingPlanner, NoRuntimeProfiles


@functools.cache
def fitted() -> tuple[trees.RuntimeTrees, dict[str, ProfileRecord]]:
    """A small runtime model fitted on the shaped dataset, and its profiles."""
    data = shaped.dataset(seed=1)
    profiles = {p.name: p for p in data.profiles}
    model = trees.RuntimeTrees(trees=5).fit(trees.samples_from_runs(data.training, profiles))
    return model, profiles


def batch(names, hosts: int, share: float = 0.5) -> Batch:
    _, profiles = fitted()
    return Batch(tuple(BatchApp(profiles[n], share, share) for n in names), hosts)


def speedup(model, placement: Placement, found: Batch) -> float:
    """Seed 000's objective of a placement: the geometric mean speedup."""
    estimate = planner._estimator(
        model, {str(i): a.profile for i, a in enumerate(found.apps)}, "T1"
    )
    layouts = {str(i): {("T1", h): 1} for i, h in enumerate(placement.host_of)}
    alone = {name: estimate(name, {("T1", 0): 1}, {name: {("T1", 0): 1}}) for name in layouts}
    logs = [math.log(alone[n] / estimate(n, layout, layouts)) for n, layout in layouts.items()]
    return math.exp(math.fsum(logs) / len(logs))


class TestAnnealingPlanner(testtools.TestCase):
    def test_registered_by_name(self) -> None:
        self.assertIn("annealing", planner_registry.names())

    def test_no_runtime_profile_is_refused_before_the_model_is_needed(self) -> None:
        bare = Batch((BatchApp(ProfileRecord("a"), 0.5, 0.5),), 2)
        error = self.assertRaises(NoRuntimeProfiles, AnnealingPlanner().place, bare)
        self.assertIn("no application of the batch has one", str(error))
        self.assertIsInstance(error, CannotPlace)

    def test_applications_without_a_runtime_profile_are_named(self) -> None:
        mixed = batch(["CG"], 2)
        mixed = Batch((*mixed.apps, BatchApp(ProfileRecord("bare"), 0.5, 0.5)), 2)
        error = self.assertRaises(NoRuntimeProfiles, AnnealingPlanner().place, mixed)
        self.assertIn("no runtime profile (solo_runs) for bare", str(error))

    def test_without_a_fitted_model_it_says_what_to_give(self) -> None:
        error = self.assertRaises(CannotPlace, AnnealingPlanner().place, batch(["CG"], 1))
        self.assertIn("--runtime-model FILE", str(error))

    def test_a_missing_model_file_is_named(self) -> None:
        error = self.assertRaises(
            CannotPlace, AnnealingPlanner(runtime_model="/nonexistent").place, batch(["CG"], 1)
        )
        self.assertIn("/nonexistent", str(error))

    def test_a_host_type_every_application_has(self) -> None:
        found = batch(["CG", "NAMD"], 2)
        self.assertEqual("T1", planner.host_type(found))
        _, profiles = fitted()
        only_t2 = dataclasses.replace(
            profiles["CG"], solo_runs={"T2": profiles["CG"].solo_runs["T2"]}
        )
        self.assertEqual(
            "T2", planner.host_type(Batch((BatchApp(only_t2, 0.5, 0.5), *found.apps), 2))
        )

    def test_as_good_as_the_best_placement_on_a_small_batch(self) -> None:
        model, _ = fitted()
        found = batch(["CG", "LAMMPS", "NAMD", "Zeusmp2"], 2)
        placement = AnnealingPlanner(model=model, iterations=300).place(found)
        self.assertTrue(placement.feasible(found))
        best = max(
            speedup(model, Placement(hosts), found)
            for hosts in itertools.product(range(2), repeat=4)
            if Placement(hosts).feasible(found)
        )
        self.assertAlmostEqual(best, speedup(model, placement, found), places=9)

    @settings(max_examples=10, deadline=None)
    @given(
        st.lists(st.sampled_from(sorted(shaped.APPLICATIONS)), min_size=1, max_size=6),
        st.integers(1, 6),
        st.sampled_from([0.2, 0.3, 0.5, 1.0]),
        st.integers(0, 3),
    )
    def test_every_placement_fits_or_is_refused(self, names, hosts, share, seed) -> None:
        model, _ = fitted()
        found = batch(names, hosts, share)
        try:
            placement = AnnealingPlanner(model=model, iterations=50, seed=seed).place(found)
        except CannotPlace:
            # Equal shares fit wherever there is room: refused only when too many.
            self.assertGreater(len(names), hosts * math.floor(1 / share + 1e-9))
            return
        self.assertTrue(placement.feasible(found))
        self.assertEqual(
            placement, AnnealingPlanner(model=model, iterations=50, seed=seed).place(found)
        )
