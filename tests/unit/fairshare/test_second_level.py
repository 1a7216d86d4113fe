"""Seed 002's second level: AllCore, Random, MAF and CA-based RR, and the leftovers."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core.sharing import Claimant, NodeTemplate, Platform, SharingError
from hpc_nova_scheduler.fairshare import allocator, second_level
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.second_level import (
    MAF,
    AllCore,
    CARoundRobin,
    Random,
    TaskMapping,
)

POLICIES: tuple[TaskMapping, ...] = (
    AllCore(),
    Random(),
    MAF(),
    MAF("raw"),
    CARoundRobin(),
    CARoundRobin(3),
)


def table(
    solo: dict[str, float], runs: dict[tuple[str, tuple[str, ...]], float], platform: str = "p"
) -> CombinationTable:
    """A table on one platform: ``runs`` maps (application, its set) to seconds."""
    return CombinationTable(
        {(app, platform): seconds for app, seconds in solo.items()},
        {(app, platform, frozenset(apps)): seconds for (app, apps), seconds in runs.items()},
    )


def slots(*pairs: tuple[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(pairs)


def per_claimant(templates: Sequence[NodeTemplate]) -> dict[str, int]:
    cores: dict[str, int] = {}
    for template in templates:
        for name, count in template.slots:
            cores[name] = cores.get(name, 0) + count * template.nodes
    return cores


class PairsOnly:
    """Times without solo run times, and only pairs: what another system might pass."""

    def runtime(self, application: str, platform: str, applications: frozenset[str]) -> float:
        return 100.0 * len(applications)

    def combinations(self, platform: Platform, applications: Sequence[str]) -> list[frozenset[str]]:
        return [frozenset(pair) for pair in itertools.combinations(sorted(set(applications)), 2)]


class Triples(PairsOnly):
    def combinations(self, platform: Platform, applications: Sequence[str]) -> list[frozenset[str]]:
        return [frozenset(c) for c in itertools.combinations(sorted(set(applications)), 3)]


class TestMAF(testtools.TestCase):
    # 2-core nodes; solo 100 s each. X is slowed most (normalised 26.7 %
    # against Y's 12 % and Z's 3.7 %); X runs best beside Y.
    TIMES = table(
        {"X": 100.0, "Y": 100.0, "Z": 100.0},
        {
            ("X", ("X",)): 150.0,
            ("X", ("X", "Y")): 110.0,
            ("X", ("X", "Z")): 120.0,
            ("Y", ("Y",)): 105.0,
            ("Y", ("X", "Y")): 130.0,
            ("Y", ("Y", "Z")): 101.0,
            ("Z", ("Z",)): 102.0,
            ("Z", ("X", "Z")): 105.0,
            ("Z", ("Y", "Z")): 104.0,
        },
    )
    APPS = {"x": "X", "y": "Y", "z": "Z"}

    def test_the_most_affected_claimant_picks_its_best_combination(self) -> None:
        found = MAF().map(
            Platform("p", 5, 2), {"x": 4, "y": 2, "z": 4}, self.APPS, self.TIMES, random.Random(0)
        )
        self.assertEqual(
            [
                # x first, beside y (its 110 s), on every node y's share allows.
                NodeTemplate("p", slots(("x", 1), ("y", 1)), 2),
                # y is done: x's affinity over {X}, {X, Z} is still the highest.
                NodeTemplate("p", slots(("x", 1), ("z", 1)), 2),
                NodeTemplate(
                    "p",
                    slots(
                        ("z", 2),
                    ),
                    1,
                ),
            ],
            found,
        )

    def test_the_metric_decides_who_is_most_affected(self) -> None:
        # X: +75 s on average but 7.5 %; Y: +3.5 s but 35 %.
        times = table(
            {"X": 1000.0, "Y": 10.0},
            {
                ("X", ("X",)): 1050.0,
                ("X", ("X", "Y")): 1100.0,
                ("Y", ("Y",)): 15.0,
                ("Y", ("X", "Y")): 12.0,
            },
        )
        platform = Platform("p", 2, 2)
        shares = {"x": 2, "y": 2}
        apps = {"x": "X", "y": "Y"}
        raw = MAF("raw").map(platform, shares, apps, times, random.Random(0))
        self.assertEqual(
            [NodeTemplate("p", slots(("x", 2)), 1), NodeTemplate("p", slots(("y", 2)), 1)], raw
        )
        normalised = MAF().map(platform, shares, apps, times, random.Random(0))
        self.assertEqual([NodeTemplate("p", slots(("x", 1), ("y", 1)), 2)], normalised)

    def test_tied_claimants_take_turns(self) -> None:
        # x1 and x2 run X, the most affected; X's best is beside Y, then Z.
        times = table(
            {"X": 100.0, "Y": 100.0, "Z": 100.0},
            {
                ("X", ("X",)): 200.0,
                ("X", ("X", "Y")): 150.0,
                ("X", ("X", "Z")): 160.0,
                ("Y", ("Y",)): 101.0,
                ("Y", ("X", "Y")): 101.0,
                ("Y", ("Y", "Z")): 101.0,
                ("Z", ("Z",)): 101.0,
                ("Z", ("X", "Z")): 101.0,
                ("Z", ("Y", "Z")): 101.0,
            },
        )
        found = MAF().map(
            Platform("p", 6, 2),
            {"x1": 4, "x2": 4, "y": 2, "z": 2},
            {"x1": "X", "x2": "X", "y": "Y", "z": "Z"},
            times,
            random.Random(0),
        )
        self.assertEqual(
            [
                NodeTemplate("p", slots(("x1", 1), ("y", 1)), 2),
                # x2's turn, although x1 could still pair with z.
                NodeTemplate("p", slots(("x2", 1), ("z", 1)), 2),
                NodeTemplate("p", slots(("x1", 2)), 1),
                NodeTemplate("p", slots(("x2", 2)), 1),
            ],
            found,
        )

    def test_an_unknown_metric_is_refused_by_name(self) -> None:
        error = self.assertRaises(SharingError, MAF, "throughput")
        self.assertIn("'throughput'", str(error))

    def test_times_without_solo_run_times_are_refused(self) -> None:
        error = self.assertRaises(
            SharingError,
            MAF().map,
            Platform("p", 2, 2),
            {"a": 2, "b": 2},
            {"a": "A", "b": "B"},
            PairsOnly(),
            random.Random(0),
        )
        self.assertIn("maf needs solo run times: PairsOnly", str(error))

    def test_an_application_never_measured_alone_is_refused(self) -> None:
        times = table({"A": 10.0}, {}, platform="q")
        error = self.assertRaises(
            SharingError,
            MAF().map,
            Platform("p", 2, 2),
            {"a": 2, "b": 2},
            {"a": "A", "b": "B"},
            times,
            random.Random(0),
        )
        self.assertIn("no solo run time of B on any platform", str(error))

    def test_an_unmeasured_pair_takes_the_estimated_solo_time_as_s(self) -> None:
        # A ran alone on q only: on p its S is the estimate, 10 s.
        times = CombinationTable(
            {("A", "q"): 10.0, ("B", "p"): 100.0},
            {("B", "p", frozenset({"A", "B"})): 150.0, ("B", "p", frozenset({"B"})): 150.0},
        )
        self.assertEqual(
            {"A": 10.0, "B": 100.0},
            second_level._solo_runtimes(times, Platform("p", 2, 2), ["A", "B"]),
        )
        templates = MAF().map(
            Platform("p", 2, 2), {"a": 2, "b": 2}, {"a": "A", "b": "B"}, times, random.Random(0)
        )
        self.assertEqual({"a": 2, "b": 2}, per_claimant(templates))


class TestUnmeasuredPairs(testtools.TestCase):
    """Neutral affinity gives B cores on q, where it never ran alone: every policy copes."""

    SOLO = {("A", "p"): 100.0, ("A", "q"): 200.0, ("B", "p"): 50.0}
    CLAIMANTS = (Claimant("a", "A", 100), Claimant("b", "B", 100), Claimant("c", "A", 100))
    PLATFORMS = (Platform("p", 1, 2), Platform("q", 40, 2))

    def test_every_second_level_maps_the_first_levels_shares(self) -> None:
        for second in ("allcore", "random", "maf", "ca-rr"):
            plan = allocator.TwoLevel("pa-rr", second).plan(
                self.CLAIMANTS, self.PLATFORMS, CombinationTable(self.SOLO)
            )
            # The repro's point: B has cores on the platform it was never measured on.
            self.assertGreater(plan.allocation["b"]["q"], 0, second)
            for platform in self.PLATFORMS:
                shares = {
                    name: cores[platform.name]
                    for name, cores in plan.allocation.items()
                    if cores.get(platform.name)
                }
                self.assertEqual(shares, per_claimant(plan.templates[platform.name]), second)

    def test_an_application_never_measured_alone_is_still_refused(self) -> None:
        # By the policies that read run times; AllCore and Random never do.
        claimants = (*self.CLAIMANTS, Claimant("d", "D", 10))
        for second in ("maf", "ca-rr"):
            error = self.assertRaises(
                SharingError,
                allocator.TwoLevel("pa-rr", second).plan,
                claimants,
                self.PLATFORMS,
                CombinationTable(self.SOLO),
            )
            self.assertIn("no solo run time of D on any platform", str(error))


class TestCARoundRobin(testtools.TestCase):
    # Each application runs best beside the next one: A with B, B with C, C with A.
    TIMES = table(
        {"A": 100.0, "B": 100.0, "C": 100.0},
        {
            ("A", ("A", "B")): 110.0,
            ("A", ("A", "C")): 120.0,
            ("A", ("A",)): 130.0,
            ("B", ("B", "C")): 110.0,
            ("B", ("A", "B")): 120.0,
            ("B", ("B",)): 130.0,
            ("C", ("A", "C")): 110.0,
            ("C", ("B", "C")): 120.0,
            ("C", ("C",)): 130.0,
        },
    )
    SHARES = {"a": 2, "b": 2, "c": 2}
    APPS = {"a": "A", "b": "B", "c": "C"}

    def test_each_claimant_in_turn_places_its_best_on_one_node(self) -> None:
        found = CARoundRobin().map(
            Platform("p", 3, 2), self.SHARES, self.APPS, self.TIMES, random.Random(0)
        )
        self.assertEqual(
            [
                NodeTemplate("p", slots(("a", 1), ("b", 1)), 1),
                NodeTemplate("p", slots(("b", 1), ("c", 1)), 1),
                NodeTemplate("p", slots(("a", 1), ("c", 1)), 1),
            ],
            found,
        )

    def test_a_larger_unit_places_more_nodes_a_turn(self) -> None:
        found = CARoundRobin(node_unit=2).map(
            Platform("p", 3, 2), self.SHARES, self.APPS, self.TIMES, random.Random(0)
        )
        # a's turn takes all of b's share; c is left with AllCore.
        self.assertEqual(
            [
                NodeTemplate("p", slots(("a", 1), ("b", 1)), 2),
                NodeTemplate("p", slots(("c", 2)), 1),
            ],
            found,
        )

    def test_a_unit_below_one_is_refused(self) -> None:
        for bad in (0, -1, 1.5, True):
            error = self.assertRaises(SharingError, CARoundRobin, bad)
            self.assertIn(repr(bad), str(error))


class TestEveryPolicy(testtools.TestCase):
    TIMES = table({"A": 100.0, "B": 50.0}, {("A", ("A", "B")): 150.0})

    def test_a_single_claimant_gets_allcore_nodes(self) -> None:
        for policy in POLICIES:
            found = policy.map(
                Platform("p", 6, 8), {"a": 40}, {"a": "A"}, self.TIMES, random.Random(1)
            )
            self.assertEqual([NodeTemplate("p", slots(("a", 8)), 5)], found, policy.name)

    def test_no_share_no_template(self) -> None:
        for policy in POLICIES:
            found = policy.map(Platform("p", 0, 8), {"a": 0}, {}, self.TIMES, random.Random(1))
            self.assertEqual([], found, policy.name)

    def test_bad_shares_are_refused_by_name(self) -> None:
        platform = Platform("p", 2, 4)
        cases = (
            ({"a": 9}, {"a": "A"}, "shares add up to 9 cores, more than its 8"),
            ({"a": -1}, {"a": "A"}, "a: share on p must be a whole number of cores >= 0"),
            ({"a": 1.5}, {"a": "A"}, "not 1.5"),
            ({"a": 2}, {}, "a: a share on p but no application"),
        )
        for policy in POLICIES:
            for shares, apps, message in cases:
                error = self.assertRaises(
                    SharingError, policy.map, platform, shares, apps, self.TIMES, random.Random(0)
                )
                self.assertIn(message, str(error), policy.name)

    def test_a_combination_that_does_not_split_a_node_is_refused(self) -> None:
        for policy in (Random(), CARoundRobin()):
            error = self.assertRaises(
                SharingError,
                policy.map,
                Platform("p", 3, 8),
                {"a": 8, "b": 8, "c": 8},
                {"a": "A", "b": "B", "c": "C"},
                Triples(),
                random.Random(0),
            )
            self.assertIn("{A, B, C} does not split a node of 8 cores equally", str(error))

    def test_allcore_packs_the_leftovers_node_after_node(self) -> None:
        found = AllCore().map(
            Platform("p", 3, 8),
            {"a": 11, "b": 3, "c": 3},
            {"a": "A", "b": "B", "c": "C"},
            self.TIMES,
            random.Random(4),
        )
        self.assertEqual(NodeTemplate("p", slots(("a", 8)), 1), found[0])
        leftovers = found[1:]
        self.assertEqual([1, 1], [template.nodes for template in leftovers])
        # 9 cores: one node full, split unequally, and one with the last core.
        self.assertEqual([8, 1], [template.cores for template in leftovers])
        self.assertEqual({"a": 3, "b": 3, "c": 3}, per_claimant(leftovers))

    def test_pairs_without_allcore_leave_leftovers(self) -> None:
        # PairsOnly offers no AllCore set: a's last cores have nobody to pair with.
        found = CARoundRobin().combine(
            Platform("p", 4, 2),
            {"a": 5, "b": 2},
            {"a": "A", "b": "B"},
            PairsOnly(),
            random.Random(0),
        )
        self.assertEqual([NodeTemplate("p", slots(("a", 1), ("b", 1)), 2)], found.templates)
        self.assertEqual({"a": 3}, found.leftover)


@st.composite
def problems(draw: st.DrawFn) -> tuple[Platform, dict[str, int], dict[str, str], CombinationTable]:
    cores = draw(st.sampled_from([1, 2, 4, 6, 8, 12]))
    platform = Platform("p", draw(st.integers(0, 10)), cores)
    apps = [f"A{i}" for i in range(draw(st.integers(1, 5)))]
    names = [f"u{i}" for i in range(draw(st.integers(1, 7)))]
    applications = {name: draw(st.sampled_from(apps)) for name in names}
    left = platform.cores
    shares: dict[str, int] = {}
    for name in names:
        shares[name] = draw(st.integers(0, left))
        left -= shares[name]
    solo = {app: draw(st.floats(1.0, 1000.0)) for app in apps}
    runs: dict[tuple[str, tuple[str, ...]], float] = {}
    for combination in CombinationTable({(a, "p"): 1.0 for a in apps}).combinations(platform, apps):
        for app in sorted(combination):
            if draw(st.booleans()):
                runs[(app, tuple(sorted(combination)))] = solo[app] * draw(st.floats(0.8, 3.5))
    return platform, shares, applications, table(solo, runs)


class TestInvariants(testtools.TestCase):
    @settings(max_examples=150, deadline=None)
    @given(problems(), st.integers(0, 2**32))
    def test_every_policy_covers_the_shares_exactly(self, problem, seed) -> None:
        platform, shares, applications, times = problem
        for policy in POLICIES:
            found = policy.map(platform, shares, applications, times, random.Random(seed))
            where = f"{policy.name}: {found}"
            self.assertEqual(
                {name: cores for name, cores in shares.items() if cores},
                per_claimant(found),
                where,
            )
            self.assertLessEqual(sum(t.nodes for t in found), platform.nodes, where)
            for template in found:
                self.assertEqual("p", template.platform)
                self.assertGreaterEqual(template.nodes, 1, where)
                self.assertLessEqual(template.cores, platform.cores_per_node, where)
                self.assertEqual(len(set(template.claimants)), len(template.slots), where)
                for name, cores in template.slots:
                    self.assertGreater(shares.get(name, 0), 0, where)
                    self.assertGreaterEqual(cores, 1, where)
            again = policy.map(platform, shares, applications, times, random.Random(seed))
            self.assertEqual(found, again, f"{policy.name}: not deterministic")

    @settings(max_examples=150, deadline=None)
    @given(problems(), st.integers(0, 2**32))
    def test_the_first_phase_places_legal_combinations_until_none_fits(self, problem, seed) -> None:
        platform, shares, applications, times = problem
        k = platform.cores_per_node
        legal = set(times.combinations(platform, [applications[n] for n in shares if shares[n]]))
        for policy in POLICIES:
            placed = policy.combine(platform, shares, applications, times, random.Random(seed))
            where = f"{policy.name}: {placed}"
            for template in placed.templates:
                apps = {applications[name] for name in template.claimants}
                self.assertEqual(len(apps), len(template.slots), where)  # one claimant a set
                self.assertIn(frozenset(apps), legal, where)
                self.assertEqual(k, template.cores, where)
                self.assertEqual({k // len(apps)}, {c for _, c in template.slots}, where)
                if isinstance(policy, AllCore):
                    self.assertEqual(1, len(template.slots), where)
            # U_done: nothing whole fits any more (AllCore's own rule: under a node).
            most: dict[str, int] = {}
            for name, left in placed.leftover.items():
                app = applications[name]
                most[app] = max(most.get(app, 0), left)
            if isinstance(policy, AllCore):
                self.assertTrue(all(left < k for left in placed.leftover.values()), where)
                continue
            for combination in legal:
                q = k // len(combination)
                self.assertTrue(any(most.get(app, 0) < q for app in combination), where)
            # The leftovers take the fewest nodes possible.
            found = policy.map(platform, shares, applications, times, random.Random(seed))
            leftover_nodes = sum(t.nodes for t in found) - sum(t.nodes for t in placed.templates)
            self.assertEqual(math.ceil(sum(placed.leftover.values()) / k), leftover_nodes, where)

    @settings(max_examples=100, deadline=None)
    @given(problems(), st.integers(0, 2**32))
    def test_two_core_nodes_hold_allcore_or_twoapp(self, problem, seed) -> None:
        platform, shares, applications, times = problem
        platform = Platform("p", sum(shares.values()) // 2 + 1, 2)
        for policy in POLICIES:
            placed = policy.combine(platform, shares, applications, times, random.Random(seed))
            for template in placed.templates:
                self.assertIn(sorted(c for _, c in template.slots), ([2], [1, 1]), policy.name)
            for template in policy.map(platform, shares, applications, times, random.Random(seed)):
                self.assertLessEqual(len(template.slots), 2, policy.name)

    @settings(max_examples=50, deadline=None)
    @given(problems(), st.integers(0, 2**32))
    def test_only_the_leftovers_draw_on_the_rng_in_the_affinity_policies(
        self, problem, seed
    ) -> None:
        platform, shares, applications, times = problem
        for policy in (AllCore(), MAF(), CARoundRobin()):
            first = policy.combine(platform, shares, applications, times, random.Random(seed))
            other = policy.combine(platform, shares, applications, times, random.Random(seed + 1))
            self.assertEqual(first, other, policy.name)


class TestLeftovers(testtools.TestCase):
    def test_nothing_left_is_no_node(self) -> None:
        self.assertEqual(
            [], second_level.pack_leftovers(Platform("p", 1, 4), {"a": 0}, 1, random.Random(0))
        )

    def test_a_claimant_may_span_two_nodes(self) -> None:
        found = second_level.pack_leftovers(
            Platform("p", 2, 4), {"a": 3, "b": 3}, 2, random.Random(0)
        )
        self.assertEqual([4, 2], [template.cores for template in found])
        self.assertEqual({"a": 3, "b": 3}, per_claimant(found))
