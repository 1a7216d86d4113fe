"""Seed 002's first level: the paper's algorithms, and the invariants of an entitlement."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core.sharing import Claimant, Platform, ShareRequest, SharingError
from hpc_nova_scheduler.fairshare import allocator, first_level
from hpc_nova_scheduler.fairshare.anchors import BillingWeights, DecayedUsage, EqualCores

POLICIES = (
    "fairness",
    "paf",
    "aaf",
    "pa-rr",
    "equivalent-rr",
    "equal-cores",
    "billing-weights",
    "decayed-usage",
)
#: The policies whose shares are apportioned by effective weight. PAF, AAF
#: and equivalent-rr serve users greedily in an order that weights change,
#: and promise no monotony (the README says so).
SHARE_BY_WEIGHT = ("fairness", "pa-rr", "equal-cores", "decayed-usage")


@st.composite
def problems(draw, weighted: bool = False, history: bool = False):
    n_platforms = draw(st.integers(1, 5))
    platforms = tuple(
        Platform(f"p{j}", draw(st.integers(0, 12)), draw(st.sampled_from([1, 2, 4, 8, 12])))
        for j in range(n_platforms)
    )
    n_users = draw(st.integers(1, 7))
    claimants = tuple(
        Claimant(
            f"u{i}",
            f"app{i}",
            draw(st.integers(0, 150)),
            weight=draw(st.sampled_from([1e-9, 0.5, 1.0, 2.0, 3.0, 1e6])) if weighted else 1.0,
            usage=draw(st.sampled_from([0.0, 10.0, 500.0, 9000.0, 1e15])) if history else 0.0,
        )
        for i in range(n_users)
    )
    values = st.sampled_from([0.4, 0.8, 1.0, 1.1, 1.5, 2.3])
    affinity = {c.name: {p.name: draw(values) for p in platforms} for c in claimants}
    solo = {
        c.name: {p.name: 100.0 / affinity[c.name][p.name] for p in platforms} for c in claimants
    }
    return ShareRequest(claimants, platforms, affinity, solo)


def allocate(name, request, **options):
    return allocator.FIRST_LEVEL.load(name, **options).allocate(request)


def totals(allocation):
    return {name: sum(cores.values()) for name, cores in allocation.items()}


class TestInvariants(testtools.TestCase):
    @settings(max_examples=120, deadline=None)
    @given(problems(weighted=True, history=True), st.sampled_from(POLICIES), st.integers(1, 7))
    def test_no_core_twice_none_beyond_demand_work_conserving(self, request, name, unit):
        allocation = allocate(name, request, top_percent=50, core_unit=unit)
        first_level.check_allocation(request, allocation)
        for platform in request.platforms:
            self.assertLessEqual(sum(a[platform.name] for a in allocation.values()), platform.cores)
        for claimant in request.claimants:
            self.assertLessEqual(sum(allocation[claimant.name].values()), claimant.demand)
        cores = sum(p.cores for p in request.platforms)
        demand = sum(c.demand for c in request.claimants)
        self.assertEqual(min(cores, demand), sum(totals(allocation).values()))

    @settings(max_examples=120, deadline=None)
    @given(
        problems(weighted=True, history=True),
        st.sampled_from(SHARE_BY_WEIGHT),
        st.data(),
    )
    def test_more_usage_never_gives_a_larger_share(self, request, name, data):
        who = data.draw(st.sampled_from(request.claimants))
        more = data.draw(st.sampled_from([1.0, 100.0, 10_000.0, 1e6]))
        busier = tuple(
            Claimant(c.name, c.application, c.demand, c.weight, c.usage + more)
            if c.name == who.name
            else c
            for c in request.claimants
        )
        before = totals(allocate(name, request))[who.name]
        after = totals(
            allocate(
                name,
                ShareRequest(busier, request.platforms, request.affinity, request.solo),
            )
        )[who.name]
        self.assertLessEqual(after, before)

    @settings(max_examples=80, deadline=None)
    @given(problems(), st.sampled_from(POLICIES), st.sampled_from([0.5, 1.0, 7.0]))
    def test_equal_weights_and_equal_history_change_nothing(self, request, name, weight):
        same = tuple(
            Claimant(c.name, c.application, c.demand, weight, 42.0) for c in request.claimants
        )
        self.assertEqual(
            allocate(name, request),
            allocate(name, ShareRequest(same, request.platforms, request.affinity, request.solo)),
        )

    def test_a_single_user_gets_everything_it_can_use(self):
        platforms = (Platform("a", 3, 4), Platform("b", 2, 8))
        for name in POLICIES:
            request = ShareRequest((Claimant("only", "x", 1000),), platforms, {}, {})
            self.assertEqual({"only": {"a": 12, "b": 16}}, allocate(name, request), name)

    def test_zero_demand_is_valid(self):
        platforms = (Platform("a", 3, 4),)
        claimants = (Claimant("idle", "x", 0), Claimant("busy", "y", 5))
        for name in POLICIES:
            allocation = allocate(name, ShareRequest(claimants, platforms, {}, {}))
            self.assertEqual({"idle": {"a": 0}, "busy": {"a": 5}}, allocation, name)


# -- The paper's algorithms, transcribed literally (equal users, no history) --


def paper_fair_shares(total, demand):
    """Algorithm 2 line 7: equal shares, unneeded cores spread equally, leftovers in order."""
    share = dict.fromkeys(demand, 0)
    active = [u for u, d in demand.items() if d > 0]
    remaining = total
    while active:
        each = remaining // len(active)
        done = [u for u in active if demand[u] <= each]
        if not done:
            break
        for u in done:
            share[u] = demand[u]
            remaining -= demand[u]
        active = [u for u in active if u not in done]
    if active:
        each = remaining // len(active)
        for u in active:
            share[u] = each
        for u in active[: remaining - each * len(active)]:
            share[u] += 1
    return share


def paper_round_robin(request, unit):
    """Algorithm 2, line 11 reading P[r]."""
    users = [c.name for c in request.claimants]
    av = {p.name: p.cores for p in request.platforms}
    fair = paper_fair_shares(sum(av.values()), {c.name: c.demand for c in request.claimants})
    share = {u: {p.name: 0 for p in request.platforms} for u in users}
    while sum(fair.values()) > sum(sum(s.values()) for s in share.values()):
        progressed = False
        for u in users:
            if fair[u] - sum(share[u].values()) <= 0:
                continue
            best = None
            for p in request.platforms:
                if av[p.name] > 0 and (
                    best is None or request.affinity[u][p.name] > request.affinity[u][best]
                ):
                    best = p.name
            if best is None:
                continue
            d = min(unit, fair[u] - sum(share[u].values()), av[best])
            share[u][best] += d
            av[best] -= d
            progressed = True
        if not progressed:
            break
    return share


def paper_affinity_first(request, favours):
    """Algorithm 1, line 14 reading S[j]."""
    users = [c.name for c in request.claimants]
    task = {c.name: c.demand for c in request.claimants}
    av = {p.name: p.cores for p in request.platforms}
    share = {u: {p.name: 0 for p in request.platforms} for u in users}
    given = lambda u: sum(share[u].values())  # noqa: E731
    while sum(av.values()) > 0 and sum(task.values()) > sum(given(u) for u in users):
        left = [u for u in users if task[u] > given(u)]
        plats = [p.name for p in request.platforms if av[p.name] > 0]
        z = favours(request, left, plats)
        s = {p: sum(1 for u in left if (u, p) in z) for p in plats}
        for u in sorted(left, key=lambda u: (task[u] - given(u), users.index(u))):
            order = sorted(
                [p.name for p in request.platforms],
                key=lambda p: (
                    -request.affinity[u][p],
                    [q.name for q in request.platforms].index(p),
                ),
            )
            for p in order:
                if (u, p) in z:
                    d = min(task[u] - given(u), av[p] // s[p])
                    z.discard((u, p))
                    s[p] -= 1
                    share[u][p] += d
                    av[p] -= d
    return share


def top(k, n):
    return max(1, k * n // 100)


def paf_favours(k):
    def favours(request, users, plats):
        z = set()
        for p in plats:
            ranked = sorted(users, key=lambda u: (-request.affinity[u][p], users.index(u)))
            z.update((u, p) for u in ranked[: top(k, len(users))])
        return z

    return favours


def aaf_favours(k):
    def favours(request, users, plats):
        z = set()
        names = [p.name for p in request.platforms]
        for u in users:
            ranked = sorted(plats, key=lambda p: (-request.affinity[u][p], names.index(p)))
            z.update((u, p) for p in ranked[: top(k, len(plats))])
        return z

    return favours


class TestThePaperExactly(testtools.TestCase):
    """With equal weights and no history, the allocation is the paper's algorithms."""

    @settings(max_examples=150, deadline=None)
    @given(problems(), st.integers(1, 9))
    def test_pa_based_round_robin(self, request, unit):
        self.assertEqual(
            paper_round_robin(request, unit), allocate("pa-rr", request, core_unit=unit)
        )

    @settings(max_examples=150, deadline=None)
    @given(problems(), st.integers(1, 50))
    def test_provider_affinity_first(self, request, k):
        self.assertEqual(
            paper_affinity_first(request, paf_favours(k)), allocate("paf", request, top_percent=k)
        )

    @settings(max_examples=150, deadline=None)
    @given(problems(), st.integers(1, 50))
    def test_application_affinity_first(self, request, k):
        self.assertEqual(
            paper_affinity_first(request, aaf_favours(k)), allocate("aaf", request, top_percent=k)
        )

    @settings(max_examples=100, deadline=None)
    @given(problems())
    def test_fairness_splits_every_platform_equally_when_everyone_needs_more(self, request):
        total = sum(p.cores for p in request.platforms)
        users = len(request.claimants)
        big = tuple(Claimant(c.name, c.application, total) for c in request.claimants)
        allocation = allocate(
            "fairness", ShareRequest(big, request.platforms, request.affinity, request.solo)
        )
        divisible = all(p.cores % users == 0 for p in request.platforms)
        for platform in request.platforms:
            got = sorted(a[platform.name] for a in allocation.values())
            if divisible:
                self.assertEqual([platform.cores // users] * users, got)
            self.assertLessEqual(got[-1] - got[0], 2)

    def test_fairness_takes_a_light_load_evenly_from_every_platform(self):
        platforms = (
            Platform("gene", 300, 2),
            Platform("cheetah", 75, 8),
            Platform("darth", 75, 8),
            Platform("lcloud", 50, 12),
        )
        claimants = (Claimant("a", "x", 50), Claimant("b", "y", 50))
        allocation = allocate("fairness", ShareRequest(claimants, platforms, {}, {}))
        for cores in allocation.values():
            self.assertEqual(50, sum(cores.values()))
            self.assertTrue(all(12 <= n <= 13 for n in cores.values()), cores)

    def test_fairness_water_fills_unneeded_cores(self):
        platforms = (Platform("a", 10, 6), Platform("b", 10, 6))
        claimants = (Claimant("small", "x", 10), Claimant("u1", "y", 500), Claimant("u2", "z", 500))
        allocation = allocate("fairness", ShareRequest(claimants, platforms, {}, {}))
        self.assertEqual({"small": 10, "u1": 55, "u2": 55}, totals(allocation))
        self.assertEqual({"a": 5, "b": 5}, allocation["small"])


class TestTheDefaultScenario(testtools.TestCase):
    """Table 5's platforms and Table 6's users, with the shipped run times."""

    def setUp(self):
        super().setUp()
        from hpc_nova_scheduler.fairshare import affinity, runs
        from hpc_nova_scheduler.fairshare.combinations import CombinationTable

        solo = affinity.solo_runtimes(runs.read_runs("etc/profiles/seed-002-runs.csv"))
        self.times = CombinationTable(solo)
        self.platforms = (
            Platform("gene", 300, 2),
            Platform("cheetah", 75, 8),
            Platform("darth", 75, 8),
            Platform("lcloud", 50, 12),
        )
        tasks = {
            "AutoDock": 34600,
            "Blast": 248800,
            "CacheBench": 31230,
            "Montage": 72950,
            "ThreeKaonOmega": 112420,
        }
        self.claimants = tuple(Claimant(a, a, n) for a, n in tasks.items())

    def request(self, metric):
        return ShareRequest(
            self.claimants,
            self.platforms,
            allocator.platform_affinity(metric, self.claimants, self.platforms, self.times),
            {},
        )

    def test_fairness_gives_120_cores_of_each_platform_to_each(self):
        allocation = allocate("fairness", self.request("rpa"))
        for cores in allocation.values():
            self.assertEqual({"gene": 120, "cheetah": 120, "darth": 120, "lcloud": 120}, cores)

    def test_pa_based_rr_gives_each_its_fair_share_on_its_best_platforms(self):
        allocation = allocate("pa-rr", self.request("rpa"))
        self.assertEqual(dict.fromkeys(allocation, 480), totals(allocation))
        # RPA (Table 3): CacheBench's best platform is gene, Montage's and
        # Blast's lcloud, ThreeKaonOmega's and AutoDock's cheetah.
        self.assertEqual(0, allocation["CacheBench"]["cheetah"])
        self.assertEqual(300, allocation["Montage"]["lcloud"])
        self.assertEqual(300, allocation["ThreeKaonOmega"]["cheetah"])

    def test_paf_is_unfair_by_construction(self):
        allocation = totals(allocate("paf", self.request("rpa")))
        self.assertGreater(max(allocation.values()) - min(allocation.values()), 300)


class TestBadInput(testtools.TestCase):
    def test_top_percent_outside_1_to_50(self):
        for bad in (0, 51, -3, 2.5, True):
            error = self.assertRaises(
                SharingError, allocator.FIRST_LEVEL.load, "paf", top_percent=bad
            )
            self.assertIn("top_percent", str(error))

    def test_units_below_one(self):
        self.assertRaises(SharingError, allocator.FIRST_LEVEL.load, "pa-rr", core_unit=0)
        self.assertRaises(SharingError, allocator.TwoLevel, node_unit=0)

    def test_unknown_policy_and_metric(self):
        error = self.assertRaises(SharingError, allocator.TwoLevel, first="fifo")
        self.assertIn("unknown first-level policy 'fifo'", str(error))
        self.assertIn("pa-rr", str(error))
        self.assertRaises(SharingError, allocator.TwoLevel, metric="speed")
        self.assertRaises(SharingError, allocator.TwoLevel, corunner="worst")

    def test_weight_and_usage(self):
        self.assertRaises(SharingError, Claimant, "u", "a", 1, weight=0)
        self.assertRaises(SharingError, Claimant, "u", "a", 1, weight=float("nan"))
        self.assertRaises(SharingError, Claimant, "u", "a", 1, usage=-1)
        self.assertRaises(SharingError, Claimant, "u", "a", -1)


class TestAnchors(testtools.TestCase):
    def test_equal_cores_takes_platforms_in_offer_order(self):
        platforms = (Platform("slow", 2, 2), Platform("fast", 2, 2))
        claimants = (Claimant("a", "x", 2), Claimant("b", "y", 100))
        request = ShareRequest(claimants, platforms, {"a": {"fast": 9.0}}, {})
        self.assertEqual(
            {"a": {"slow": 2, "fast": 0}, "b": {"slow": 2, "fast": 4}},
            EqualCores().allocate(request),
        )

    def test_decayed_usage_lowers_a_heavy_user(self):
        platforms = (Platform("p", 10, 1),)
        light = ShareRequest((Claimant("a", "x", 10), Claimant("b", "y", 10)), platforms, {}, {})
        heavy = ShareRequest(
            (Claimant("a", "x", 10, usage=1000.0), Claimant("b", "y", 10)), platforms, {}, {}
        )
        self.assertEqual({"a": {"p": 5}, "b": {"p": 5}}, DecayedUsage().allocate(light))
        self.assertLess(DecayedUsage().allocate(heavy)["a"]["p"], 5)
        self.assertEqual({"a": {"p": 5}, "b": {"p": 5}}, EqualCores().allocate(heavy))

    def test_equivalent_rr_gives_more_cores_to_a_user_on_slow_cores(self):
        platforms = (Platform("slow", 12, 1), Platform("fast", 8, 1))
        solo = {"a": {"slow": 200.0, "fast": 100.0}, "b": {"slow": 100.0, "fast": 100.0}}
        affinity = {"a": {"fast": 2.0, "slow": 1.0}, "b": {"slow": 2.0, "fast": 1.0}}
        claimants = (Claimant("a", "x", 100), Claimant("b", "y", 100))
        request = ShareRequest(claimants, platforms, affinity, solo)
        self.assertEqual({"a": 10, "b": 10}, totals(allocate("pa-rr", request)))
        # a's 8 fast cores are worth 8 and each slow one a half; b's slow
        # cores are worth 1 each. Filling the lower worth first ends at a
        # 8 + 3 x 0.5 = 9.5 and b 9: a takes 11 cores, b 9.
        allocation = allocate("equivalent-rr", request)
        self.assertEqual({"a": {"slow": 3, "fast": 8}, "b": {"slow": 9, "fast": 0}}, allocation)

    def test_billing_weights_bill_a_fast_platform_more(self):
        platforms = (Platform("slow", 4, 1), Platform("fast", 4, 1))
        solo = {"a": {"slow": 200.0, "fast": 100.0}, "b": {"slow": 200.0, "fast": 100.0}}
        request = ShareRequest((Claimant("a", "x", 8), Claimant("b", "y", 8)), platforms, {}, solo)
        bill = BillingWeights.billing(request)
        self.assertGreater(bill["fast"], bill["slow"])
        allocation = BillingWeights().allocate(request)
        self.assertEqual({"a": 4, "b": 4}, totals(allocation))
