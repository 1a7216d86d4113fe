"""Seed 004's ILS: feasible placements, and the optimum on cases small enough to enumerate."""

from __future__ import annotations

import itertools
import re

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.ivmp import ils
from hpc_nova_scheduler.ivmp.model import IvmpExtended
from hpc_nova_scheduler.planners.base import Batch, BatchApp

PROFILES = [
    p
    for p in datafiles.read_profiles(
        str(resources.example_profiles_dir() / "seed-applications.yaml")
    )
    if p.sllc_score is not None
]


def app(profile) -> BatchApp:
    # Seed 004's testbed: 12 cores and 48 GB a host, a VM of one core and 4 GB.
    vms = int(re.search(r"P(\d+)$", profile.name).group(1))
    return BatchApp(profile, vms / 12, vms / 12)


def partitions(items: list[int]):
    """Every way to split ``items`` into unordered non-empty groups."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for smaller in partitions(rest):
        for i in range(len(smaller)):
            yield [*smaller[:i], [first, *smaller[i]], *smaller[i + 1 :]]
        yield [[first], *smaller]


class TestIls(testtools.TestCase):
    def test_cost_terms(self) -> None:
        b = Batch(tuple(app(p) for p in PROFILES[:4]), 4)
        cost = ils.Cost(b, IvmpExtended(), ils.IlsParameters())
        alone = ils.State(cost, [[0], [1], [2], [3]])
        self.assertAlmostEqual(0.3 * 4 / 4, alone.value)  # no interference, every host used
        shared = ils.State(cost, [[0, 1], [2, 3], [], []])
        level = cost.level([0, 1]) + cost.level([2, 3])
        self.assertAlmostEqual(0.7 * level / (cost.omega * 4) + 0.3 * 2 / 4, shared.value)
        self.assertGreater(cost.omega, 0)

    def test_overload_is_penalised(self) -> None:
        b = Batch(tuple(app(p) for p in PROFILES[:3]), 3)
        cost = ils.Cost(b, IvmpExtended(), ils.IlsParameters())
        crammed = ils.State(cost, [[0, 1, 2], [], []])
        demand = sum(a.cpu for a in b.apps)
        self.assertFalse(crammed.feasible())
        self.assertGreater(crammed.value, 0.5 * 2 * (demand - 1) / 3)

    def test_finds_the_optimum_of_small_cases(self) -> None:
        model = IvmpExtended()
        for case in range(4):
            chosen = [PROFILES[(case * 7 + k * 5) % len(PROFILES)] for k in range(6)]
            b = Batch(tuple(app(p) for p in chosen), 6)
            parameters = ils.IlsParameters(multistart=8, seed=case)
            cost = ils.Cost(b, model, parameters)
            states = [
                ils.State(cost, groups + [[] for _ in range(6 - len(groups))])
                for groups in partitions(list(range(6)))
            ]
            best = min(s.value for s in states if s.feasible())
            for first in (False, True):
                chosen_way = ils.IlsParameters(multistart=8, seed=case, first_improvement=first)
                placement, value = ils.ils(b, model, chosen_way)
                self.assertAlmostEqual(best, value, places=9, msg=f"case {case}")
                self.assertTrue(placement.feasible(b))

    @settings(max_examples=15, deadline=None)
    @given(
        st.lists(st.sampled_from(range(len(PROFILES))), min_size=1, max_size=12), st.integers(0, 9)
    )
    def test_placements_are_feasible_and_complete(self, picks, seed) -> None:
        b = Batch(tuple(app(PROFILES[i]) for i in picks), len(picks))
        placement, value = ils.ils(
            b, IvmpExtended(), ils.IlsParameters(multistart=2, iter_max_ils=3, seed=seed)
        )
        self.assertEqual(len(picks), len(placement.host_of))
        self.assertTrue(placement.feasible(b))
        self.assertEqual(set(range(placement.hosts_used)), set(placement.host_of))
        self.assertGreater(value, 0)

    def test_a_pair_too_big_in_one_dimension_is_placed_singly(self) -> None:
        # CPU fits one host, memory does not: the pair must not share a host
        # (tuples compare lexicographically, so the check is per dimension).
        memory_bound = BatchApp(PROFILES[0], 0.25, 0.8)
        b = Batch((memory_bound, memory_bound), 2)
        placement, _ = ils.ils(b, IvmpExtended(), ils.IlsParameters(multistart=3))
        self.assertTrue(placement.feasible(b))
        self.assertEqual(2, placement.hosts_used)

    def test_parameters_are_checked(self) -> None:
        for bad in ({"alpha": 1.5}, {"beta": 0}, {"multistart": 0}, {"penalty": -1}):
            self.assertRaises(ValueError, ils.IlsParameters, **bad)

    def test_planners_take_the_shared_options_by_name(self) -> None:
        from hpc_nova_scheduler.planners import planner_registry

        # plan and rebalance give every planner every shared option.
        shared = {"alpha": 0.3, "multistart": 4, "seed": 7, "time_limit": 5.0}
        found = planner_registry.load("ils", **shared)
        self.assertEqual(ils.IlsParameters(alpha=0.3, multistart=4, seed=7), found.parameters)
        exact = planner_registry.load("milp", **shared)
        self.assertEqual(found.parameters, exact.parameters)
        self.assertEqual(5.0, exact.time_limit)
        given = ils.IteratedLocalSearch(parameters=ils.IlsParameters(beta=0.2), seed=3)
        self.assertEqual(ils.IlsParameters(beta=0.2, seed=3), given.parameters)
        self.assertEqual(ils.IlsParameters(), planner_registry.load("ils").parameters)
        error = self.assertRaises(TypeError, planner_registry.load, "ils", seeds=3)
        self.assertEqual("planner ils has no option seeds", str(error))
        self.assertRaises(ValueError, planner_registry.load, "ils", alpha=1.5)

    def test_running_sums_equal_the_model_after_any_moves(self) -> None:
        import random

        from hpc_nova_scheduler.planners.base import host_level

        model = IvmpExtended()
        b = Batch(tuple(app(p) for p in PROFILES[:10]), 10)
        cost = ils.Cost(b, model, ils.IlsParameters())
        state = ils.State(cost, [[0, 1, 2], [3, 4], [5, 6, 7, 8, 9]] + [[] for _ in range(7)])
        rng = random.Random(3)
        for _ in range(40):
            moves = [(rng.randrange(10), rng.randrange(10)) for _ in range(rng.randint(1, 2))]
            state.apply(moves)
            fresh = ils.State(cost, state.hosts)
            self.assertAlmostEqual(fresh.value, state.value, places=12)
            for held in state.hosts:
                if held:
                    expected = host_level(model, [b.apps[a] for a in held])
                    self.assertAlmostEqual(expected, cost.level(held), places=9)

    def test_neighbourhoods_take_only_improving_moves(self) -> None:
        b = Batch(tuple(app(p) for p in PROFILES[:12]), 12)
        for first, move in itertools.product((False, True), (ils.move1, ils.swap1, ils.move2)):
            cost = ils.Cost(b, IvmpExtended(), ils.IlsParameters(first_improvement=first))
            state = ils.State(cost, [[a] for a in range(12)])
            before = state.value
            while move(state):
                again = ils.State(cost, state.hosts).value
                self.assertLess(again, before)
                self.assertAlmostEqual(again, state.value, places=12)
                before = again
            self.assertTrue(state.feasible())

    def _scattered(self, seed: int, crammed: bool = False) -> tuple[ils.Cost, ils.State]:
        """A state of 10 applications after random moves (overloaded if ``crammed``)."""
        import random

        b = Batch(tuple(app(PROFILES[(seed * 3 + k * 7) % len(PROFILES)]) for k in range(10)), 10)
        cost = ils.Cost(b, IvmpExtended(), ils.IlsParameters())
        start = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]] if crammed else [[a] for a in range(10)]
        state = ils.State(cost, start + [[] for _ in range(10 - len(start))])
        rng = random.Random(seed)
        for _ in range(rng.randint(0, 6)):
            moves = [(rng.randrange(10), rng.randrange(10)) for _ in range(rng.randint(1, 3))]
            state.apply(moves)
        return cost, state

    @staticmethod
    def _moved(state: ils.State, moves) -> ils.State:
        """A fresh state (sums recounted) with ``moves`` made."""
        hosts = state.hosts
        for a, to in moves:
            for held in hosts:
                if a in held:
                    held.remove(a)
            hosts[to].append(a)
        return ils.State(state.cost, hosts)

    def test_kept_shares_equal_a_fresh_pricing(self) -> None:
        import random

        for seed in range(6):
            cost, state = self._scattered(seed, crammed=seed % 2 == 1)
            rng = random.Random(seed)
            for _ in range(3):
                ils._reprice(state)
                where = state.host_of.tolist()
                used = state.used()
                for a in range(10):
                    gone = self._moved(state, [(a, state.hosts.index([]))])
                    self.assertAlmostEqual(gone.part[where[a]], state.gone[a], places=12)
                    for m in used:
                        if m != where[a]:
                            came = self._moved(state, [(a, m)])
                            self.assertAlmostEqual(came.part[m], state.came[a, m], places=12)
                    for b in range(10):
                        if where[b] != where[a]:
                            traded = self._moved(state, [(a, where[b]), (b, where[a])])
                            self.assertAlmostEqual(
                                traded.part[where[a]], state.trade[a, b], places=12
                            )
                # A step on, only what it made stale is priced again.
                state.apply([(rng.randrange(10), rng.choice(used))])
                self.assertAlmostEqual(ils.State(cost, state.hosts).value, state.value, places=12)

    def test_move2_takes_the_best_move_of_an_exhaustive_search(self) -> None:
        from hpc_nova_scheduler.planners.base import SLACK

        outcomes = set()
        for seed in range(8):
            cost, state = self._scattered(seed, crammed=seed % 2 == 0)
            improved = True
            while improved:
                where, used = state.host_of.tolist(), state.used()
                best = 0.0
                for a, b in itertools.combinations(range(10), 2):
                    for t in used:
                        if t in (where[a], where[b]):
                            continue
                        moved = self._moved(state, [(a, t), (b, t)])
                        fits = moved.cpu[t] <= 1.0 + SLACK and moved.mem[t] <= 1.0 + SLACK
                        if state.feasible() and not fits:
                            continue
                        best = min(best, moved.value - state.value)
                before, feasible = state.value, state.feasible()
                improved = ils.move2(state)
                outcomes.add((feasible, improved))
                self.assertEqual(best < -ils.EPSILON, improved, f"seed {seed}")
                if improved:
                    self.assertAlmostEqual(before + best, state.value, places=12)
                    fresh = ils.State(cost, state.hosts)
                    self.assertAlmostEqual(fresh.value, state.value, places=12)
        # Improving and final moves, from feasible and overloaded placements.
        self.assertEqual({(False, True), (True, True), (True, False)}, outcomes - {(False, False)})

    def test_batched_moves_equal_moves_one_by_one(self) -> None:
        import random

        _, state = self._scattered(1)
        rng = random.Random(5)
        for _ in range(30):
            moves = [(rng.randrange(10), rng.randrange(10)) for _ in range(rng.randint(1, 5))]
            together, apart = state.copy(), state.copy()
            together.apply(moves)
            for move in moves:
                apart.apply([move])
            for name in ("host_of", "sums", "spread", "near"):
                self.assertTrue((getattr(together, name) == getattr(apart, name)).all(), name)
            self.assertEqual(apart.value, together.value)
            state = together


class TestExact(testtools.TestCase):
    def test_the_optimum_of_small_cases_and_ils_never_below_it(self) -> None:
        from hpc_nova_scheduler.ivmp import exact

        model = IvmpExtended()
        for case in range(3):
            chosen = [PROFILES[(case * 5 + k * 3) % len(PROFILES)] for k in range(6)]
            b = Batch(tuple(app(p) for p in chosen), 6)
            cost = ils.Cost(b, model, ils.IlsParameters())
            states = [
                ils.State(cost, groups + [[] for _ in range(6 - len(groups))])
                for groups in partitions(list(range(6)))
            ]
            best = min(s.value for s in states if s.feasible())
            found = exact.solve(b, model, time_limit=30)
            self.assertTrue(found.optimal)
            self.assertEqual(0.0, found.gap)
            self.assertAlmostEqual(best, found.value, places=9)
            self.assertTrue(found.placement.feasible(b))
            groups = [list(g) for g in found.placement.groups().values()]
            again = ils.State(cost, groups + [[] for _ in range(6 - len(groups))])
            self.assertAlmostEqual(found.value, again.value, places=9)
            _, value = ils.ils(b, model, ils.IlsParameters(multistart=2))
            self.assertGreaterEqual(value, found.value - 1e-9)

    def test_too_many_host_contents_are_refused(self) -> None:
        from hpc_nova_scheduler.ivmp import exact

        b = Batch(tuple(app(PROFILES[0]) for _ in range(30)), 30)
        self.assertRaises(exact.TooLarge, exact.solve, b, IvmpExtended(), max_columns=100)
