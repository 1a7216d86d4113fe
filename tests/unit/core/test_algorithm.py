"""Seed 003's Algorithm 1 in the core engine."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core import admission, algorithm
from hpc_nova_scheduler.core.algorithm import NoPlacement, PlacementRequest, Policy
from hpc_nova_scheduler.core.cluster import Host, Resources, RunningVM
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.records import InterferenceRecord
from hpc_nova_scheduler.core.state import ClusterState

NODE = Resources(4, 8192, 0)
VM = Resources(1, 2048, 0)
#: Seed 003 Fig. 8: (name, class, cache score, VMs), in arrival order.
FIG8 = [
    ("IS.B.4", AppClass.EXTREME_HPC, 47, 4),
    ("LU.C.16", AppClass.SYNC_HPC, 16, 16),
    ("LU.B.4", AppClass.SYNC_HPC, 29, 4),
    ("ChaNGa.4", AppClass.SYNC_HPC, 7.5, 4),
    ("EP.B.4", AppClass.ASYNC_HPC, 2.5, 4),
]


def request(
    name: str, app_class: AppClass, score: float, count: int, demand: Resources = VM
) -> PlacementRequest:
    return PlacementRequest(ApplicationProfile(app_class, score, name), demand, count, name)


def fig8_cluster() -> ClusterState:
    cluster = ClusterState()
    for i in range(1, 9):
        cluster.add_host(f"N{i}", NODE, rack="r1", cpu_group="opteron")
    return cluster


def run_stream(cluster: ClusterState, stream, thresholds: Thresholds) -> dict[str, dict | None]:
    placed = {}
    for name, cls, score, count in stream:
        req = request(name, cls, score, count)
        try:
            plan = algorithm.plan(req, cluster.hosts(), thresholds)
        except NoPlacement:
            placed[name] = None
            continue
        cluster.apply(plan, req)
        placed[name] = cluster.vms_per_host(name)
    return placed


def nodes(spec: str) -> dict[str, int]:
    """'4xN2-N5 + 1xN7' -> {'N2': 4, ..., 'N7': 1} (the paper's notation)."""
    counts = {}
    for part in spec.split("+"):
        per, span = part.strip().split("x")
        first, _, last = span.partition("-")
        last = last or first
        for i in range(int(first[1:]), int(last[1:]) + 1):
            counts[f"N{i}"] = int(per)
    return counts


class TestFigure8(testtools.TestCase):
    """The placements of seed 003's Figure 8 table, for each beta."""

    def test_beta_100(self) -> None:
        placed = run_stream(fig8_cluster(), FIG8, Thresholds(200, 100))
        self.assertEqual(
            {
                "IS.B.4": nodes("4xN1"),
                "LU.C.16": nodes("4xN2-N5"),
                "LU.B.4": nodes("3xN6 + 1xN7"),
                "ChaNGa.4": nodes("1xN6 + 3xN7"),
                "EP.B.4": nodes("4xN8"),
            },
            placed,
        )

    def test_beta_60(self) -> None:
        cluster = fig8_cluster()
        placed = run_stream(cluster, FIG8, Thresholds(200, 60))
        self.assertEqual(
            {
                "IS.B.4": nodes("4xN1"),
                "LU.C.16": nodes("3xN2-N6 + 1xN7"),
                "LU.B.4": None,
                "ChaNGa.4": nodes("1xN2-N5"),
                "EP.B.4": nodes("1xN6 + 3xN7"),
            },
            placed,
        )
        # LU.B.4 runs after App1 (IS) finishes.
        cluster.release(["IS.B.4"])
        again = run_stream(cluster, [FIG8[2]], Thresholds(200, 60))
        self.assertEqual({"LU.B.4": nodes("2xN1 + 2xN8")}, again)

    def test_beta_40(self) -> None:
        cluster = fig8_cluster()
        placed = run_stream(cluster, FIG8, Thresholds(200, 40))
        self.assertEqual(
            {
                "IS.B.4": nodes("4xN1"),
                "LU.C.16": None,
                "LU.B.4": nodes("1xN2-N5"),
                "ChaNGa.4": nodes("1xN2-N5"),
                "EP.B.4": nodes("1xN2-N5"),
            },
            placed,
        )
        # LU.C.16 runs after App1 and App3-App5.
        cluster.release(["IS.B.4", "LU.B.4", "ChaNGa.4", "EP.B.4"])
        again = run_stream(cluster, [FIG8[1]], Thresholds(200, 40))
        self.assertEqual({"LU.C.16": nodes("2xN1-N8")}, again)


class TestFigure1(testtools.TestCase):
    """Dimension-aware packing fits two requests that blind packing cannot."""

    def setUp(self) -> None:
        super().setUp()
        self.cpu_rich = Resources(8, 4096, 0)
        self.ram_rich = Resources(4, 8192, 0)
        self.first = request("A", AppClass.NON_HPC, 0, 4, Resources(2, 1024, 0))
        self.second = request("B", AppClass.NON_HPC, 0, 2, Resources(1, 4096, 0))

    def both_fit(self, policy: Policy) -> bool:
        cluster = ClusterState()
        cluster.add_host("h1", self.cpu_rich)
        cluster.add_host("h2", self.ram_rich)
        thresholds = Thresholds(1e9, 1e9)
        try:
            for req in (self.first, self.second):
                cluster.apply(algorithm.plan(req, cluster.hosts(), thresholds, policy=policy), req)
        except NoPlacement:
            return False
        return True

    def test_cosine_fits_both(self) -> None:
        self.assertTrue(self.both_fit(Policy()))

    def test_dimension_blind_packings_do_not(self) -> None:
        self.assertFalse(self.both_fit(Policy(packing=algorithm.PACKING_MOST_FREE_RAM)))
        self.assertFalse(self.both_fit(Policy.nova_like(algorithm.PACKING_MOST_FREE_RAM)))


class TestTopology(testtools.TestCase):
    def hosts(self, racks: dict[str, list[tuple[str, int]]]) -> list[Host]:
        out = []
        for rack, members in racks.items():
            for name, free_vms in members:
                out.append(Host(name, NODE, VM.scaled(free_vms), rack=rack, cpu_group="g"))
        return out

    def test_extreme_fills_the_roomiest_rack_first(self) -> None:
        hosts = self.hosts(
            {"small": [("a1", 4), ("a2", 4)], "big": [("b1", 2), ("b2", 4), ("b3", 4)]}
        )
        plan = algorithm.plan(request("x", AppClass.EXTREME_HPC, 0, 8), hosts, Thresholds(1, 1))
        self.assertEqual(["b2"] * 4 + ["b3"] * 4, list(plan.hosts))
        self.assertEqual(("big",), plan.racks)

    def test_racks_of_equal_capacity_do_not_interleave(self) -> None:
        hosts = self.hosts({"r2": [("c", 4), ("d", 4)], "r1": [("a", 4), ("b", 4)]})
        plan = algorithm.plan(request("x", AppClass.SYNC_HPC, 0, 8), hosts, Thresholds(100, 60))
        self.assertEqual(1, len(plan.racks))
        self.assertEqual(2, len(plan.vms_per_host()))

    def test_sync_spans_as_few_racks_as_possible(self) -> None:
        hosts = self.hosts({"r1": [("a", 4), ("b", 4)], "r2": [("c", 4), ("d", 4), ("e", 4)]})
        plan = algorithm.plan(request("x", AppClass.SYNC_HPC, 10, 6), hosts, Thresholds(100, 60))
        self.assertEqual(("r2",), plan.racks)
        self.assertEqual([4, 2], sorted(plan.vms_per_host().values(), reverse=True))

    def test_hosts_without_rack_are_racks_of_their_own(self) -> None:
        hosts = [Host("a", NODE, NODE), Host("b", NODE, NODE)]
        self.assertEqual({"host:a", "host:b"}, {h.rack_id for h in hosts})

    def test_growing_application_stays_in_its_rack(self) -> None:
        own = RunningVM("u1", AppClass.SYNC_HPC, 0, "x", "app")
        hosts = [
            Host("a", NODE, NODE, rack="r1", cpu_group="g"),
            Host("b", NODE, NODE, rack="r1", cpu_group="g"),
            Host("c", NODE, VM.scaled(3), rack="r2", cpu_group="g", vms=(own,)),
        ]
        req = PlacementRequest(ApplicationProfile(AppClass.SYNC_HPC, 0, "x"), VM, 3, "app")
        plan = algorithm.plan(req, hosts, Thresholds(100, 60))
        self.assertEqual(("c", "c", "c"), plan.hosts)


class TestHomogeneity(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.hosts = [
            Host(f"{g}{i}", NODE, NODE, rack="r", cpu_group=g)
            for g in ("amd", "intel")
            for i in range(2)
        ]

    def test_hpc_request_stays_in_one_group(self) -> None:
        for cls in (AppClass.EXTREME_HPC, AppClass.SYNC_HPC, AppClass.ASYNC_HPC):
            plan = algorithm.plan(request("x", cls, 0, 8), self.hosts, Thresholds(100, 60))
            self.assertEqual(1, len({h[:-1] for h in plan.hosts}), cls)

    def test_request_no_group_can_hold_is_refused_not_split(self) -> None:
        error = self.assertRaises(
            NoPlacement,
            algorithm.plan,
            request("x", AppClass.ASYNC_HPC, 0, 9),
            self.hosts,
            Thresholds(100, 60),
        )
        self.assertIn("no single processor group", error.reason)

    def test_non_hpc_may_span_groups(self) -> None:
        plan = algorithm.plan(
            request("x", AppClass.NON_HPC, 0, 12), self.hosts, Thresholds(100, 60)
        )
        self.assertEqual({"amd", "intel"}, {h[:-1] for h in plan.hosts})


class TestInterferenceCriteria(testtools.TestCase):
    def host(self, *vms: RunningVM, name: str = "h") -> Host:
        return Host(name, NODE, NODE - VM.scaled(len(vms)), rack="r", cpu_group="g", vms=vms)

    def test_alpha_limits_every_host(self) -> None:
        busy = self.host(RunningVM("u", AppClass.ASYNC_HPC, 90, "a", "a"))
        self.assertRaises(
            NoPlacement,
            algorithm.plan,
            request("x", AppClass.ASYNC_HPC, 20, 1),
            [busy],
            Thresholds(100, 60),
        )
        algorithm.plan(request("x", AppClass.ASYNC_HPC, 10, 1), [busy], Thresholds(100, 60))

    def test_beta_applies_to_sync_requests_and_hosts_running_sync(self) -> None:
        async_host = self.host(RunningVM("u", AppClass.ASYNC_HPC, 50, "a", "a"))
        sync_host = self.host(RunningVM("u", AppClass.SYNC_HPC, 50, "a", "a"))
        limits = Thresholds(100, 60)
        self.assertRaises(
            NoPlacement,
            algorithm.plan,
            request("x", AppClass.SYNC_HPC, 20, 1),
            [async_host],
            limits,
        )
        self.assertRaises(
            NoPlacement,
            algorithm.plan,
            request("x", AppClass.ASYNC_HPC, 20, 1),
            [sync_host],
            limits,
        )
        algorithm.plan(request("x", AppClass.ASYNC_HPC, 20, 1), [async_host], limits)

    def test_a_request_counts_its_own_vms(self) -> None:
        plan = algorithm.plan(
            request("x", AppClass.SYNC_HPC, 25, 4),
            [self.host(name="a"), self.host(name="b")],
            Thresholds(100, 60),
        )
        self.assertEqual({"a": 2, "b": 2}, plan.vms_per_host())

    def test_harmful_pairs_never_share(self) -> None:
        table = InterferenceTable.from_records([InterferenceRecord("A", "B", 30, 2)], tolerance=10)
        busy = self.host(RunningVM("u", AppClass.ASYNC_HPC, 0, "B", "b1"), name="a")
        empty = Host("z", NODE, NODE, rack="r", cpu_group="g")
        plan = algorithm.plan(
            request("A", AppClass.ASYNC_HPC, 0, 1), [busy, empty], Thresholds(100, 60), table
        )
        self.assertEqual(("z",), plan.hosts)
        plan = algorithm.plan(
            request("C", AppClass.ASYNC_HPC, 0, 1), [busy, empty], Thresholds(100, 60), table
        )
        self.assertEqual(("a",), plan.hosts)

    def test_measurements_override_predictions(self) -> None:
        table = InterferenceTable.from_records(
            [
                InterferenceRecord("A", "B", 30, 2, "predicted"),
                InterferenceRecord("A", "B", 1, 2, "measured"),
            ],
            tolerance=10,
        )
        self.assertFalse(table.conflicts("A", "B"))
        table = InterferenceTable.from_records(
            [InterferenceRecord("A", "A", 44.5, 44.5, "measured")], tolerance=10
        )
        self.assertTrue(table.conflicts("A", "A"))


class TestDedication(testtools.TestCase):
    def test_extreme_only_on_empty_hosts_and_keeps_them(self) -> None:
        cluster = ClusterState()
        for name in ("a", "b", "c"):
            cluster.add_host(name, NODE, rack="r", cpu_group="g")
        other = request("web", AppClass.NON_HPC, 0, 1)
        cluster.apply(algorithm.Plan(("a",), None, ("r",)), other)
        extreme = request("IS", AppClass.EXTREME_HPC, 0, 5)
        plan = algorithm.plan(extreme, cluster.hosts(), Thresholds(100, 60))
        self.assertNotIn("a", plan.hosts)
        cluster.apply(plan, extreme)
        later = algorithm.plan(
            request("x", AppClass.NON_HPC, 0, 3), cluster.hosts(), Thresholds(100, 60)
        )
        self.assertEqual({"a"}, set(later.hosts))

    def test_nova_like_policy_ignores_classes(self) -> None:
        hosts = [
            Host("a", NODE, NODE - VM, vms=(RunningVM("u", AppClass.EXTREME_HPC, 0, "x", "x"),))
        ]
        plan = algorithm.plan(
            request("y", AppClass.NON_HPC, 0, 1), hosts, Thresholds(1, 1), policy=Policy.nova_like()
        )
        self.assertEqual(("a",), plan.hosts)

    def test_bad_requests(self) -> None:
        self.assertRaises(
            NoPlacement,
            algorithm.plan,
            request("x", AppClass.NON_HPC, 0, 0),
            [Host("a", NODE, NODE)],
            Thresholds(1, 1),
        )
        self.assertRaises(
            NoPlacement, algorithm.plan, request("x", AppClass.NON_HPC, 0, 1), [], Thresholds(1, 1)
        )
        self.assertRaises(ValueError, Policy, packing="random")


# -- properties over random request streams ---------------------------------

CLASSES = list(AppClass)


@st.composite
def clusters(draw) -> ClusterState:
    cluster = ClusterState()
    for i in range(draw(st.integers(1, 8))):
        cluster.add_host(
            f"h{i}",
            Resources(draw(st.sampled_from([2, 4, 8])), draw(st.sampled_from([4096, 8192])), 100),
            rack=f"r{draw(st.integers(0, 2))}",
            cpu_group=draw(st.sampled_from("xy")),
        )
    return cluster


requests = st.lists(
    st.tuples(
        st.sampled_from(CLASSES),
        st.floats(0, 40),
        st.integers(1, 6),
        st.sampled_from([Resources(1, 1024, 10), Resources(2, 512, 10), Resources(1, 3072, 20)]),
        st.sampled_from(["A", "B", "C", None]),
    ),
    min_size=1,
    max_size=12,
)


class TestInvariants(testtools.TestCase):
    """Thresholds never exceeded, dedicated hosts stay dedicated, homogeneity holds."""

    @settings(max_examples=150, deadline=None)
    @given(clusters(), requests, st.floats(30, 120), st.floats(0, 1))
    def test_invariants_hold_over_random_streams(self, cluster, stream, alpha, beta_share) -> None:
        limits = Thresholds(alpha, alpha * beta_share)
        table = InterferenceTable.from_records([InterferenceRecord("A", "B", 50, 1)], 10)
        for i, (cls, score, count, demand, name) in enumerate(stream):
            req = PlacementRequest(ApplicationProfile(cls, score, name), demand, count, f"app{i}")
            try:
                plan = algorithm.plan(req, cluster.hosts(), limits, table)
            except NoPlacement:
                continue
            self.assertEqual(count, len(plan.hosts))
            before = {h.name: h for h in cluster.hosts()}
            for name, adding in plan.vms_per_host().items():
                # The claim step judges each host with the same rules.
                self.assertIsNone(
                    admission.refusal(
                        before[name].vms, req.profile, f"app{i}", adding, limits, table
                    )
                )
            spares = algorithm.alternates(req, cluster.hosts(), plan, limits, table, limit=3)
            cluster.apply(plan, req)
            if cls.needs_homogeneity:
                groups = {h.cpu_group for h in cluster.hosts() if h.name in plan.hosts}
                self.assertEqual(1, len(groups))
            self.check(cluster.hosts(), limits, table)
            for spare in spares:
                # A failed build rebuilt on an alternate keeps every rule,
                # even with its failed host's slot still counted.
                self.assertNotIn(spare, plan.hosts)
                if cls.needs_homogeneity:
                    self.assertEqual(plan.cpu_group, before[spare].cpu_group)
                trial = copy.deepcopy(cluster)
                trial.apply(algorithm.Plan((spare,), None, ()), dataclasses.replace(req, count=1))
                self.check(trial.hosts(), limits, table)

    def check(self, hosts: list[Host], limits: Thresholds, table: InterferenceTable) -> None:
        for host in hosts:
            for value in host.free.as_tuple():
                self.assertGreaterEqual(value, -1e-9, host)
            apps = {vm.application_id for vm in host.vms}
            if any(vm.app_class is AppClass.EXTREME_HPC for vm in host.vms):
                self.assertEqual(1, len(apps), f"dedicated host {host.name} shared: {apps}")
                continue
            total = host.cache_total
            self.assertLessEqual(total, limits.alpha + 1e-6, host)
            if any(vm.app_class is AppClass.SYNC_HPC for vm in host.vms):
                self.assertLessEqual(total, limits.beta + 1e-6, host)
            names = {(vm.app_name, vm.application_id) for vm in host.vms}
            for a, app_a in names:
                for b, app_b in names:
                    if app_a != app_b:
                        self.assertFalse(table.conflicts(a, b), host)


class TestCacheRule(testtools.TestCase):
    """A host's room under the thresholds is the VMs it admits one by one."""

    @settings(max_examples=300, deadline=None)
    @given(
        st.sampled_from([Thresholds(200, 60), Thresholds(40, 30), Thresholds(30, 40)]),
        st.sampled_from([0.0, 7.5, 15.0, 29.9, 30.0]),
        st.booleans(),
        st.lists(
            st.tuples(st.sampled_from([0.0, 29.9, 45.0, 59.8, 60.0, 89.7, 250.0]), st.booleans()),
            min_size=1,
            max_size=8,
        ),
        st.integers(0, 6),
    )
    def test_room_is_what_one_by_one_admits(self, limits, score, sync_request, hosts, copies):
        rule = algorithm.CacheRule(limits, score, sync_request)
        cache = np.array([total for total, _ in hosts])
        sync = np.array([held for _, held in hosts])
        room = rule.room(np.full(len(hosts), float(copies)), cache, sync)
        for (total, held), got in zip(hosts, room.tolist(), strict=True):
            admitted = 0
            while admitted < copies and rule.admits_one(total + admitted * score, held):
                admitted += 1
            self.assertEqual(admitted, got, (total, held))


class TestNovaWeighers(testtools.TestCase):
    def test_free_ram_and_vcpus_normalised_and_summed(self) -> None:
        capacity = Resources(4, 8192, 0)
        hosts = [
            Host("a", capacity, Resources(3, 2048, 0)),  # RAM 0, CPU 1: 1.0
            Host("b", capacity, Resources(2, 8192, 0)),  # RAM 1, CPU 0.5: 1.5
            Host("c", capacity, Resources(1, 4096, 0)),  # RAM 1/3, CPU 0: 0.33
        ]
        req = request("x", AppClass.NON_HPC, 0, 1, Resources(1, 1024, 0))
        chosen = {
            packing: algorithm.plan(
                req, hosts, Thresholds(100, 60), policy=Policy.nova_like(packing)
            ).hosts
            for packing in algorithm.PACKINGS
        }
        self.assertEqual(("b",), chosen[algorithm.PACKING_NOVA_WEIGHERS])
        self.assertEqual(("a",), chosen[algorithm.PACKING_MOST_FREE_PES])
        self.assertEqual(("c",), chosen[algorithm.PACKING_LEAST_FREE_PES])

    def test_each_vm_weighs_every_host_again(self) -> None:
        capacity = Resources(4, 8192, 0)
        hosts = [Host("a", capacity, capacity), Host("b", capacity, Resources(3, 8192, 0))]
        req = request("x", AppClass.NON_HPC, 0, 4, Resources(1, 1024, 0))
        plan = algorithm.plan(
            req,
            hosts,
            Thresholds(100, 60),
            policy=Policy.nova_like(algorithm.PACKING_NOVA_WEIGHERS),
        )
        # a (more free) first; then a and b tie on CPU, a has less RAM: b; and so on.
        self.assertEqual(("a", "b", "a", "b"), plan.hosts)


# -- the fast engine against the literal one --------------------------------

policies = st.builds(
    Policy,
    classes=st.booleans(),
    topology=st.booleans(),
    homogeneity=st.booleans(),
    cache_criteria=st.booleans(),
    interference_table=st.booleans(),
    # The reference engine predates Nova's normalised weighers (tested apart).
    packing=st.sampled_from(
        [p for p in algorithm.PACKINGS if p != algorithm.PACKING_NOVA_WEIGHERS]
    ),
)

#: (class, cache score, VMs, demand, name, release an earlier application?)
steps = st.lists(
    st.tuples(
        st.sampled_from(CLASSES),
        st.sampled_from([0.0, 2.5, 7.5, 10.0, 16.0, 29.0, 0.1, 1 / 3]),
        st.integers(1, 9),
        st.sampled_from(
            [
                Resources(1, 1024, 10),
                Resources(2, 512, 10),
                Resources(1, 3072, 20),
                Resources(1, 2048 / 3, 0),
                Resources(0, 0, 0),
            ]
        ),
        st.sampled_from(["A", "B", "C", None]),
        st.booleans(),
    ),
    min_size=1,
    max_size=16,
)


class TestAgreesWithReference(testtools.TestCase):
    """plan() over columns makes exactly the literal Algorithm 1's choices."""

    @settings(max_examples=300, deadline=None)
    @given(clusters(), steps, policies, st.floats(20, 120), st.floats(0, 1), st.booleans())
    def test_same_plans(self, cluster, stream, policy, alpha, beta_share, live_columns) -> None:
        from tests.unit.core import reference_algorithm as reference

        limits = Thresholds(alpha, alpha * beta_share)
        table = InterferenceTable.from_records(
            [InterferenceRecord("A", "B", 50, 1), InterferenceRecord("C", "C", 50, 50)], 10
        )
        old_policy = reference.Policy(**dataclasses.asdict(policy))
        placed: list[str] = []
        for i, (cls, score, count, demand, name, release) in enumerate(stream):
            if release and placed:
                cluster.release([placed.pop(0)])
            app = f"app{i % 5}" if i % 3 else f"app{i}"
            profile = ApplicationProfile(cls, score, name)
            req = PlacementRequest(profile, demand, count, app)
            old_req = reference.PlacementRequest(profile, demand, count, app)
            hosts = cluster.hosts()
            try:
                expected = reference.plan(old_req, hosts, limits, table, old_policy)
            except reference.NoPlacement as refusal:
                expected = refusal.reason
            view = cluster.columns() if live_columns else hosts
            try:
                got = algorithm.plan(req, view, limits, table, policy)
            except NoPlacement as refusal:
                self.assertEqual(expected, refusal.reason)
                continue
            self.assertNotIsInstance(expected, str, got)
            self.assertEqual(
                (expected.hosts, expected.cpu_group, expected.racks),
                (got.hosts, got.cpu_group, got.racks),
            )
            cluster.apply(got, req)
            placed.append(app)
