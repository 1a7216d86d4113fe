"""Seed 002's discrete many-task simulator: pilots, re-plans, non-preemptive hand-overs."""

from __future__ import annotations

import collections
from collections.abc import Sequence

import numpy as np
import testtools
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core.sharing import Claimant, NodeTemplate, Platform
from hpc_nova_scheduler.fairshare import workload
from hpc_nova_scheduler.fairshare.allocator import Plan, TwoLevel
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.deployment import (
    Deployment,
    Ledger,
    SimulationError,
    Workload,
    stable_cores,
    stable_layout,
)
from hpc_nova_scheduler.fairshare.simulator import simulate

#: One node of two cores; tasks of A and B take 10 s there, alone or together.
PAIR = [Platform("p", 1, 2)]
TEN = CombinationTable({("A", "p"): 10.0, ("B", "p"): 10.0})
#: A hundred cores on ten nodes; tasks of 100 s.
HUNDRED = [Platform("p", 10, 10)]
SLOW = CombinationTable({("A", "p"): 100.0, ("B", "p"): 100.0})


def fair() -> TwoLevel:
    return TwoLevel("fairness", "allcore")


class Nobody:
    """A planner that gives no core to anyone: the run cannot finish."""

    usage_charge = "core-seconds"

    def plan(self, claimants, platforms, times, previous=None) -> Plan:
        return Plan({c.name: {p.name: 0 for p in platforms} for c in claimants}, {})


class TestByHand(testtools.TestCase):
    """Runs small enough to follow task by task (task_cv 0: every task takes its mean)."""

    def test_one_user_two_pilots(self) -> None:
        # Two pilots take two tasks each: 0-10 and 10-20.
        found = simulate(PAIR, {"A": 4}, None, fair(), TEN, task_cv=0)
        self.assertEqual("discrete", found.method)
        self.assertEqual(20.0, found.makespan_s)
        user = found.users["A"]
        self.assertEqual((0.0, 20.0, 20.0), (user.submit_s, user.finish_s, user.makespan_s))
        self.assertEqual({"p": 40.0}, user.core_seconds)
        self.assertEqual((2, 2.0), (user.peak_cores, user.mean_cores))
        # Its queue empties at 10 with nobody else waiting: one allocator run.
        self.assertEqual(1, found.invocations)
        # Fastest-OneCore: k = 2 cores, 10 s a task: 0.2 tasks/s, as here.
        self.assertEqual({"A": 1.0}, found.normalised)
        self.assertEqual((1.0, 1.0, 1.0), (found.fairness, found.jain, found.spread))

    def test_a_late_user_waits_for_the_running_task(self) -> None:
        # A takes both cores at 0; B arrives at 5 and gets one of them, which
        # still runs A's task until 10 (non-preemptive). A's queue empties
        # when its last task starts at 20: B keeps its core, the other stays
        # A's until that task ends. Preemption would end B at 25.
        found = simulate(PAIR, {"A": 4, "B": 2}, {"B": 5.0}, fair(), TEN, task_cv=0)
        self.assertEqual(30.0, found.users["A"].finish_s)
        self.assertEqual(30.0, found.users["B"].finish_s)
        self.assertEqual(25.0, found.users["B"].makespan_s)
        self.assertEqual([0.0, 5.0, 20.0], [step.time_s for step in found.steps])
        self.assertEqual({"A": {"p": 1}, "B": {"p": 1}}, found.steps[1].allocation)
        self.assertEqual(30.0, found.makespan_s)

    def test_an_empty_queue_hands_its_cores_on(self) -> None:
        # A has one task: its queue empties at 0, and the allocator gives B
        # both cores, one of them once A's task ends at 10. B's five tasks
        # start at 0, 10, 10, 20 and 20.
        found = simulate(PAIR, {"A": 1, "B": 5}, None, fair(), TEN, task_cv=0)
        self.assertEqual(10.0, found.users["A"].finish_s)
        self.assertEqual(30.0, found.users["B"].finish_s)
        self.assertEqual(
            [{"A": {"p": 1}, "B": {"p": 1}}, {"B": {"p": 2}}],
            [step.allocation for step in found.steps],
        )

    def test_system_makespan_runs_from_the_first_submission(self) -> None:
        found = simulate(PAIR, {"A": 2}, {"A": 100.0}, fair(), TEN, task_cv=0)
        self.assertEqual(10.0, found.makespan_s)
        self.assertEqual(110.0, found.users["A"].finish_s)


class TestRun(testtools.TestCase):
    def test_the_seed_draws_the_task_factors(self) -> None:
        tasks = {"A": 300, "B": 200}
        runs = [simulate(PAIR, tasks, None, fair(), TEN, seed=s) for s in (1, 1, 2)]
        self.assertEqual(runs[0], runs[1])
        self.assertNotEqual(runs[0].makespan_s, runs[2].makespan_s)

    def test_every_task_runs_its_factor_times_its_mean(self) -> None:
        # One user alone: its core-seconds are the sum of its tasks' times.
        found = simulate(PAIR, {"A": 500}, None, fair(), TEN, seed=7, task_cv=0.3)
        factors = workload.task_factors(np.random.default_rng(7), 500, 0.3)
        self.assertAlmostEqual(10.0 * factors.sum(), found.users["A"].core_seconds["p"], 6)
        # Two pilots: the makespan is at least half the work, and at most half plus a task.
        self.assertGreaterEqual(found.makespan_s, 5.0 * factors.sum() - 1e-9)
        self.assertLessEqual(found.makespan_s, 5.0 * factors.sum() + 10.0 * factors.max())

    def test_applications_and_weights(self) -> None:
        # Two users of one application; the heavier gets three cores in four.
        found = simulate(
            HUNDRED,
            {"u1": 1000, "u2": 1000},
            None,
            fair(),
            SLOW,
            weights={"u1": 3.0},
            applications={"u1": "A", "u2": "A"},
            task_cv=0,
        )
        self.assertEqual({"u1": {"p": 75}, "u2": {"p": 25}}, found.steps[0].allocation)
        self.assertEqual("A", found.users["u2"].application)
        self.assertLess(found.users["u1"].finish_s, found.users["u2"].finish_s)

    def test_periodic_runs_of_the_allocator(self) -> None:
        events = simulate(HUNDRED, {"A": 1000, "B": 500}, None, fair(), SLOW, task_cv=0)
        ticks = simulate(
            HUNDRED, {"A": 1000, "B": 500}, None, fair(), SLOW, task_cv=0, interval_s=150.0
        )
        # Events: the start and B's queue emptying (at 900 s); A's ends the run.
        self.assertEqual([0.0, 900.0], [step.time_s for step in events.steps])
        # Ticks every 150 s while tasks wait, up to A's queue emptying at 1400 s.
        self.assertEqual(
            [0.0, 150.0, 300.0, 450.0, 600.0, 750.0, 900.0, 900.0, 1050.0, 1200.0, 1350.0],
            [step.time_s for step in ticks.steps],
        )
        self.assertEqual(events.makespan_s, ticks.makespan_s)

    def test_usage_history_favours_the_late_user(self) -> None:
        # A runs alone for 1000 s; when B arrives, decayed usage gives B more
        # than half, and with no history (half-life 0) exactly half.
        for half_life, more in ((0.0, False), (3600.0, True)):
            found = simulate(
                HUNDRED,
                {"A": 2000, "B": 2000},
                {"B": 1000.0},
                TwoLevel("decayed-usage", "allcore"),
                SLOW,
                task_cv=0,
                half_life_s=half_life,
            )
            shares = found.steps[1].allocation
            self.assertEqual(1000.0, found.steps[1].time_s)
            if more:
                self.assertGreater(shares["B"]["p"], shares["A"]["p"])
            else:
                self.assertEqual(shares["B"]["p"], shares["A"]["p"])

    def test_a_plan_that_strands_tasks_is_an_error(self) -> None:
        error = self.assertRaises(
            SimulationError, simulate, PAIR, {"A": 3}, None, Nobody(), TEN, task_cv=0
        )
        self.assertIn("left A with tasks waiting", str(error))

    def test_default_scenario_runs_whole(self) -> None:
        scenario = workload.scenario("default")
        found = simulate(
            scenario.platforms,
            scenario.tasks,
            None,
            TwoLevel("pa-rr", "maf"),
            workload.generate_times(0),
        )
        self.assertEqual(set(scenario.tasks), set(found.users))
        # Every queue emptying re-plans, the last one's with nobody left waiting.
        self.assertEqual(len(scenario.tasks), found.invocations)
        self.assertTrue(0.9 < found.fairness <= 1.0, found.fairness)
        # No platform is ever over-committed.
        for step in found.steps:
            for platform in scenario.platforms:
                used = sum(cores.get(platform.name, 0) for cores in step.allocation.values())
                self.assertLessEqual(used, platform.cores)

    def test_default_scenario_runs_every_task_once(self) -> None:
        # Solo times only, no noise: each task of A on P takes exactly
        # r(A, P) beside any co-runners, and core-seconds are booked as
        # tasks end, so core-seconds / r(A, P) counts the tasks A ran on P.
        scenario = workload.scenario("default")
        solo = workload.generate_times(0).solo
        found = simulate(
            scenario.platforms,
            scenario.tasks,
            None,
            TwoLevel("pa-rr", "maf"),
            CombinationTable(solo),
            task_cv=0,
        )
        ran = {}
        for name, user in found.users.items():
            counts = {
                p: seconds / solo[(user.application, p)] for p, seconds in user.core_seconds.items()
            }
            for platform, count in counts.items():
                self.assertAlmostEqual(round(count), count, 3, (name, platform))
            ran[name] = sum(round(count) for count in counts.values())
            # It ran on several platforms, each counted with its own r(A, P).
            self.assertGreater(sum(1 for count in counts.values() if count >= 1), 1, name)
        self.assertEqual(dict(scenario.tasks), ran)
        self.assertEqual(500_000, sum(ran.values()))


class TestBadInput(testtools.TestCase):
    def check(self, message: str, *args, **kwargs) -> None:
        error = self.assertRaises(SimulationError, simulate, *args, **kwargs)
        self.assertIn(message, str(error))

    def test_bad_runs(self) -> None:
        self.check("method must be one of", PAIR, {"A": 1}, None, fair(), TEN, method="exact")
        self.check("tasks of A must be", PAIR, {"A": 0}, None, fair(), TEN)
        self.check("tasks of A must be", PAIR, {"A": 1.5}, None, fair(), TEN)
        self.check("tasks of A must be", PAIR, {"A": True}, None, fair(), TEN)
        self.check("arrival of A must be", PAIR, {"A": 1}, {"A": -1.0}, fair(), TEN)
        self.check("arrivals: unknown user C", PAIR, {"A": 1}, {"C": 1.0}, fair(), TEN)
        self.check("weights: unknown user C", PAIR, {"A": 1}, None, fair(), TEN, weights={"C": 1})
        self.check("weight of A must be > 0", PAIR, {"A": 1}, None, fair(), TEN, weights={"A": 0})
        self.check("task_cv must be", PAIR, {"A": 1}, None, fair(), TEN, task_cv=-0.1)
        self.check("interval_s must be", PAIR, {"A": 1}, None, fair(), TEN, interval_s=-1.0)
        self.check("half_life_s must be", PAIR, {"A": 1}, None, fair(), TEN, half_life_s=-1.0)
        self.check("no users", PAIR, {}, None, fair(), TEN)
        self.check("no platforms", [], {"A": 1}, None, fair(), TEN)
        self.check("no solo run time of C", PAIR, {"C": 1}, None, fair(), TEN)
        twice = [Platform("p", 1, 2), Platform("p", 1, 2)]
        self.check("a platform is named twice", twice, {"A": 1}, None, fair(), TEN)

    def test_bad_plans(self) -> None:
        built = Workload.build(PAIR, {"A": 1}, TEN)
        deployment = Deployment(PAIR, built, TEN)
        for templates, message in (
            ({"q": []}, "unknown platform q"),
            ({"p": [NodeTemplate("p", (("A", 1),), 2)]}, "2 nodes of p, which has 1"),
            ({"p": [NodeTemplate("p", (("A", 3),), 1)]}, "a template of 3 cores"),
            ({"p": [NodeTemplate("p", (("Z", 1),), 1)]}, "unknown claimant Z"),
            ({"p": [NodeTemplate("q", (("A", 1),), 1)]}, "a template of q listed under p"),
        ):
            error = self.assertRaises(SimulationError, deployment.apply, templates)
            self.assertIn(message, str(error))


keys = st.sampled_from([None, (("a", 2),), (("b", 2),), (("a", 1), ("b", 1))])


class TestLayout(testtools.TestCase):
    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(keys, min_size=0, max_size=12),
        st.lists(
            st.tuples(keys.filter(bool), st.integers(0, 4)), max_size=3, unique_by=lambda k: k[0]
        ),
    )
    def test_each_template_gets_its_nodes_keeping_those_it_has(self, old, wanted) -> None:
        assume(sum(count for _, count in wanted) <= len(old))
        new = stable_layout(old, wanted)
        counts = collections.Counter(key for key in new if key is not None)
        self.assertEqual({key: count for key, count in wanted if count}, dict(counts))
        for key, count in wanted:
            had = sum(1 for k in old if k == key)
            kept = sum(1 for o, n in zip(old, new, strict=True) if o == key and n == key)
            self.assertEqual(min(had, count), kept)
        self.assertEqual(new, stable_layout(new, [(k, c) for k, c in counts.items()]))

    def test_a_user_keeps_its_cores_on_a_node(self) -> None:
        # User 3 keeps core 3, user 1 core 1 and takes the lowest free one, 0.
        owners, runtimes = stable_cores([0, 1, 2, 3], [(3, 1, 5.0), (1, 2, 6.0)])
        self.assertEqual([1, 1, -1, 3], owners)
        self.assertEqual([6.0, 6.0, 0.0, 5.0], runtimes)

    def test_repeating_a_plan_moves_no_pilot(self) -> None:
        built = Workload.build(HUNDRED, {"A": 10, "B": 10}, SLOW)
        deployment = Deployment(HUNDRED, built, SLOW)
        templates = {
            "p": [NodeTemplate("p", (("A", 10),), 3), NodeTemplate("p", (("A", 5), ("B", 5)), 4)]
        }
        self.assertEqual(7, len(deployment.apply(templates)))
        self.assertEqual([], deployment.apply(templates))
        self.assertEqual(50, deployment.owner.count(0))
        self.assertEqual(20, deployment.owner.count(1))


class TestLedger(testtools.TestCase):
    def ledger(self, half_life: float, how: str = "core-seconds") -> Ledger:
        both = CombinationTable({("A", "p"): 10.0, ("A", "q"): 20.0})
        platforms = [Platform("p", 1, 2), Platform("q", 1, 2)]
        return Ledger(Workload.build(platforms, {"A": 5}, both), platforms, both, how, half_life)

    def test_usage_decays_and_charges_at_the_interval_midpoint(self) -> None:
        ledger = self.ledger(100.0)
        ledger.settle(0.0, [0.0, 0.0])
        ledger.settle(200.0, [300.0, 0.0])
        # 300 core-seconds charged over [0, 200]: decayed over 100 s, one half-life.
        self.assertAlmostEqual(150.0, ledger.usage[0])
        ledger.settle(300.0, [300.0, 0.0])
        self.assertAlmostEqual(75.0, ledger.usage[0])

    def test_best_equivalent_charges_slow_platforms_less(self) -> None:
        ledger = self.ledger(1e12, "best-equivalent")
        ledger.settle(0.0, [0.0, 0.0])
        ledger.settle(1.0, [10.0, 10.0])
        # A runs twice as slowly on q: its core-seconds there count half.
        self.assertAlmostEqual(15.0, ledger.usage[0], 6)

    def test_no_half_life_no_history(self) -> None:
        ledger = self.ledger(0.0)
        ledger.settle(10.0, [300.0, 0.0])
        self.assertEqual([0.0], ledger.usage)
        claimants: Sequence[Claimant] = ledger.claimants([3])
        self.assertEqual([Claimant("A", "A", 3, 1.0, 0.0)], list(claimants))
        self.assertEqual([], ledger.claimants([0]))
