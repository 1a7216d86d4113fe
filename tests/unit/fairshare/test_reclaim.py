"""The reclaim decision: worked cases, and its invariants as properties.

The properties are the issue's: only loans are ever victims; no project
that owned a victim ends below its entitlement; as few victims as cover a
need; a reclaim never causes a second one (no cycles), and a reclaim under
way covers its demand (no second victim for it).
"""

from __future__ import annotations

import collections
import dataclasses

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.fairshare import reclaim
from hpc_nova_scheduler.fairshare.reclaim import Demand, Loan, Pending, PlatformState


def _loan(uuid, project, cores, at, kind=reclaim.BORROWED, **domains) -> Loan:
    return Loan(uuid, project, "amd", cores, at, kind, domains)


def _victims(decision: reclaim.Decision) -> list[str]:
    return [r.victim.instance_uuid for r in decision.reclaims]


class WorkedCaseTests(testtools.TestCase):
    def test_nothing_is_taken_while_idle_cores_serve_the_need(self) -> None:
        state = PlatformState("amd", 32, {"a": 16, "b": 16}, {"a": 4, "b": 24})
        loans = [_loan("b1", "b", 8, 1)]
        self.assertEqual([], _victims(reclaim.plan(state, loans, [Demand("a", 4)])))

    def test_the_youngest_borrowed_vm_of_the_furthest_over_project_goes_first(self) -> None:
        # a: 4 of 16 and asks 8; idle 0. b is 8 over, c 4 over.
        state = PlatformState("amd", 32, {"a": 16, "b": 8, "c": 8}, {"a": 4, "b": 16, "c": 12})
        loans = [
            _loan("b-old", "b", 4, 1),
            _loan("b-young", "b", 4, 5),
            _loan("c-young", "c", 4, 9),
        ]
        decision = reclaim.plan(state, loans, [Demand("a", 8)])
        # b is furthest over (8 > 4): its youngest; then b and c are both 4
        # over: the tie goes by name, b again.
        self.assertEqual(["b-young", "b-old"], _victims(decision))
        self.assertTrue(all(r.beneficiary == "a" for r in decision.reclaims))
        self.assertIn("borrowed beyond b's entitlement", decision.reclaims[0].reason)

    def test_preemptible_vms_go_before_borrowed_ones(self) -> None:
        state = PlatformState("amd", 16, {"a": 8, "b": 8}, {"a": 0, "b": 12}, preemptible=4)
        loans = [
            _loan("b1", "b", 4, 9),
            _loan("p1", "a", 4, 1, reclaim.PREEMPTIBLE),
        ]
        self.assertEqual(["p1"], _victims(reclaim.plan(state, loans, [Demand("a", 4)])))

    def test_a_vm_that_would_leave_its_project_below_its_entitlement_stays(self) -> None:
        # b is 2 over: its 4-core borrowed VM would leave it 2 below.
        state = PlatformState("amd", 16, {"a": 8, "b": 6}, {"a": 0, "b": 8}, preemptible=8)
        loans = [_loan("b1", "b", 4, 9)]
        decision = reclaim.plan(state, loans, [Demand("a", 4)])
        self.assertEqual([], _victims(decision))
        self.assertEqual(["a"], [u.project for u in decision.unserved])

    def test_as_few_victims_as_cover_the_need(self) -> None:
        state = PlatformState("amd", 24, {"a": 8, "b": 4}, {"a": 0, "b": 24})
        # b's youngest is small: taken first, then the 8-core one covers the
        # need alone and the small one is handed back.
        loans = [_loan("b-big", "b", 8, 1), _loan("b-small", "b", 2, 5)]
        self.assertEqual(["b-big"], _victims(reclaim.plan(state, loans, [Demand("a", 8)])))

    def test_a_reclaim_under_way_covers_its_demand(self) -> None:
        state = PlatformState("amd", 16, {"a": 8, "b": 8}, {"a": 0, "b": 16})
        loans = [_loan("b1", "b", 4, 1), _loan("b2", "b", 4, 2)]
        first = reclaim.plan(state, loans, [Demand("a", 4)])
        self.assertEqual(["b2"], _victims(first))
        pending = [Pending("b2", "a", 4)]
        self.assertEqual([], _victims(reclaim.plan(state, loans, [Demand("a", 4)], pending)))
        # More demand takes more, never the VM already under way.
        self.assertEqual(["b1"], _victims(reclaim.plan(state, loans, [Demand("a", 8)], pending)))

    def test_a_required_level_is_served_inside_one_domain(self) -> None:
        state = PlatformState(
            "amd",
            32,
            {"a": 16, "b": 8},
            {"a": 0, "b": 28},
            idle_by_domain={"rack": {"r1": 2, "r2": 2}},
        )
        loans = [
            _loan("r1-b", "b", 4, 5, rack="r1"),
            _loan("r2-b1", "b", 4, 1, rack="r2"),
            _loan("r2-b2", "b", 4, 2, rack="r2"),
        ]
        decision = reclaim.plan(state, loans, [Demand("a", 10, "rack")])
        # r1 holds 2 idle + 4: not enough; r2 holds 2 + 8 with two victims.
        self.assertEqual({"r2-b1", "r2-b2"}, set(_victims(decision)))
        self.assertIn("in rack r2", decision.reclaims[0].reason)
        # A need no rack can hold takes nothing.
        decision = reclaim.plan(state, loans, [Demand("a", 16, "rack")])
        self.assertEqual([], _victims(decision))
        self.assertIn("no rack of amd can hold", decision.unserved[0].reason)

    def test_a_project_at_its_entitlement_is_no_beneficiary(self) -> None:
        state = PlatformState("amd", 16, {"a": 8, "b": 8}, {"a": 8, "b": 8})
        loans = [_loan("b1", "b", 4, 1)]
        self.assertEqual([], _victims(reclaim.plan(state, loans, [Demand("a", 8)])))

    def test_datetimes_order_youngest_first_too(self) -> None:
        import datetime

        old = datetime.datetime(2026, 1, 1)
        young = old + datetime.timedelta(days=1)
        state = PlatformState("amd", 8, {"a": 4, "b": 0}, {"a": 0, "b": 8})
        loans = [_loan("old", "b", 4, old), _loan("young", "b", 4, young)]
        self.assertEqual(["young"], _victims(reclaim.plan(state, loans, [Demand("a", 4)])))


# -- properties ---------------------------------------------------------------

PROJECTS = ("a", "b", "c", "d")
RACKS = ("r1", "r2")


@dataclasses.dataclass
class World:
    state: PlatformState
    loans: list[Loan]
    demands: list[Demand]
    #: project -> cores of its VMs that are no loan (within its entitlement when placed).
    entitled_vms: dict[str, int]


@st.composite
def worlds(draw, with_levels: bool = False) -> World:
    projects = PROJECTS[: draw(st.integers(2, 4))]
    entitled = {p: draw(st.integers(0, 16)) for p in projects}
    loans: list[Loan] = []
    kept: dict[str, int] = {}
    use: dict[str, int] = {}
    preemptible = 0
    serial = 0
    for p in projects:
        kept[p] = draw(st.integers(0, entitled[p]))
        use[p] = kept[p]
        for _ in range(draw(st.integers(0, 3))):
            serial += 1
            kind = draw(st.sampled_from(reclaim.LOAN_KINDS))
            cores = draw(st.sampled_from((1, 2, 4, 8)))
            rack = draw(st.sampled_from(RACKS))
            loans.append(
                Loan(f"vm{serial}", p, "amd", cores, draw(st.integers(0, 50)), kind, {"rack": rack})
            )
            if kind == reclaim.PREEMPTIBLE:
                preemptible += cores
            else:
                use[p] += cores
    busy = sum(use.values()) + preemptible
    capacity = max(busy, sum(entitled.values())) + draw(st.integers(0, 8))
    idle = capacity - busy
    split = draw(st.integers(0, idle))
    idle_by_domain = {"rack": {"r1": split, "r2": idle - split}} if with_levels else {}
    state = PlatformState("amd", capacity, entitled, use, preemptible, idle_by_domain)
    demands = [
        Demand(
            p,
            draw(st.integers(1, 16)),
            draw(st.sampled_from((None, "rack"))) if with_levels else None,
        )
        for p in projects
        if draw(st.booleans())
    ]
    return World(state, loans, demands, kept)


def _need(state: PlatformState, demand: Demand) -> int:
    return min(demand.cores, state.room(demand.project))


def _apply(world: World, decision: reclaim.Decision) -> World:
    """The victims gone, each beneficiary given the cores it may gain as entitled VMs."""
    state = world.state
    gone = {r.victim.instance_uuid for r in decision.reclaims}
    use = dict(state.use)
    preemptible = state.preemptible
    for r in decision.reclaims:
        if r.victim.preemptible:
            preemptible -= r.victim.cores
        else:
            use[r.victim.project] -= r.victim.cores
    idle = state.capacity - sum(use.values()) - preemptible
    demands = []
    for demand in world.demands:
        placed = min(_need(state, demand), idle)
        idle -= placed
        use[demand.project] = use.get(demand.project, 0) + placed
        if demand.cores - placed > 0:
            demands.append(dataclasses.replace(demand, cores=demand.cores - placed))
    after = dataclasses.replace(state, use=use, preemptible=preemptible, idle_by_domain={})
    loans = [loan for loan in world.loans if loan.instance_uuid not in gone]
    return World(after, loans, demands, world.entitled_vms)


def _overage(state: PlatformState) -> int:
    return sum(state.overage(p) for p in state.entitled)


class PropertyTests(testtools.TestCase):
    @given(worlds(with_levels=True))
    def test_only_loans_are_victims_and_each_once(self, world: World) -> None:
        decision = reclaim.plan(world.state, world.loans, world.demands)
        ids = _victims(decision)
        self.assertEqual(len(ids), len(set(ids)))
        self.assertLessEqual(set(ids), {loan.instance_uuid for loan in world.loans})

    @given(worlds(with_levels=True))
    def test_no_project_that_owned_a_victim_ends_below_its_entitlement(self, world: World) -> None:
        state = world.state
        decision = reclaim.plan(state, world.loans, world.demands)
        taken: dict[str, int] = collections.Counter()
        for r in decision.reclaims:
            if not r.victim.preemptible:
                taken[r.victim.project] += r.victim.cores
        for project, cores in taken.items():
            self.assertGreaterEqual(state.use[project] - cores, state.entitled[project], project)

    @given(worlds(with_levels=True))
    def test_no_over_reclaim(self, world: World) -> None:
        state = world.state
        decision = reclaim.plan(state, world.loans, world.demands)
        by_beneficiary: dict[str, list[int]] = collections.defaultdict(list)
        for r in decision.reclaims:
            by_beneficiary[r.beneficiary].append(r.victim.cores)
            # Only projects below their entitlement benefit.
            self.assertGreater(state.room(r.beneficiary), 0)
        for project, cores in by_beneficiary.items():
            need = sum(_need(state, d) for d in world.demands if d.project == project)
            # Minimal: without its smallest victim, the need would not be covered.
            self.assertLess(sum(cores) - min(cores), need, project)
        if state.idle >= sum(_need(state, d) for d in world.demands):
            self.assertEqual([], decision.reclaims)

    @given(worlds())
    def test_a_reclaim_never_causes_another(self, world: World) -> None:
        first = reclaim.plan(world.state, world.loans, world.demands)
        after = _apply(world, first)
        # Beneficiaries stay within their entitlement; victims' projects at or above theirs.
        for r in first.reclaims:
            self.assertLessEqual(
                after.state.use[r.beneficiary], after.state.entitled[r.beneficiary]
            )
            if not r.victim.preemptible:
                project = r.victim.project
                self.assertGreaterEqual(after.state.use[project], after.state.entitled[project])
        self.assertLessEqual(_overage(after.state), _overage(world.state))
        second = reclaim.plan(after.state, after.loans, after.demands)
        losers = {r.victim.project for r in first.reclaims if not r.victim.preemptible}
        for r in second.reclaims:
            # The cores freed went to a project at or below its share: no
            # victim's project gets them back by a second reclaim.
            self.assertNotIn(r.beneficiary, losers)

    @given(worlds(with_levels=True))
    def test_reclaims_under_way_take_no_second_victim_for_their_demand(self, world: World) -> None:
        first = reclaim.plan(world.state, world.loans, world.demands)
        pending = [
            Pending(r.victim.instance_uuid, r.beneficiary, r.victim.cores) for r in first.reclaims
        ]
        again = reclaim.plan(world.state, world.loans, world.demands, pending)
        self.assertEqual([], _victims(again))

    @given(worlds(), st.randoms(use_true_random=False))
    def test_the_answer_does_not_depend_on_input_order(self, world: World, random) -> None:
        loans, demands = list(world.loans), list(world.demands)
        random.shuffle(loans)
        first = reclaim.plan(world.state, world.loans, world.demands)
        second = reclaim.plan(world.state, loans, demands)
        self.assertEqual(_victims(first), _victims(second))
