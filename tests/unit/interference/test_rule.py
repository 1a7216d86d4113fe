"""Admission by an interference model, in the planner and at the claim."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.core import admission, algorithm
from hpc_nova_scheduler.core.algorithm import NoPlacement, PlacementRequest
from hpc_nova_scheduler.core.cluster import Resources, RunningVM
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.judge import residents
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.state import ClusterState
from hpc_nova_scheduler.interference import model_registry
from hpc_nova_scheduler.interference.base import Tenant
from hpc_nova_scheduler.interference.rule import ModelRule

PROFILES = {
    r.name: r
    for r in datafiles.read_profiles(
        str(resources.example_profiles_dir() / "seed-applications.yaml")
    )
}
#: Seed 004's applications with scores (IS.B.4 and the like have none).
SCORED = sorted(n for n, p in PROFILES.items() if p.sllc_score is not None)
LIMITS = Thresholds(1000, 1000)
VM = Resources(1, 512, 0)


def cloud(hosts: int, cores: int = 8) -> ClusterState:
    cluster = ClusterState()
    for i in range(hosts):
        cluster.add_host(f"h{i}", Resources(cores, 16384, 0), rack="r0", cpu_group="x")
    return cluster


def request(name: str | None, app: str, count: int = 2, cls=AppClass.SYNC_HPC):
    return PlacementRequest(ApplicationProfile(cls, 0.0, name), VM, count, app)


def rule(model: str = "ivmp-base", tolerance: float = 10.0) -> ModelRule:
    return ModelRule(model_registry.load(model), tolerance, PROFILES)


def place(cluster: ClusterState, req: PlacementRequest, model_rule: ModelRule) -> algorithm.Plan:
    plan = algorithm.plan(req, cluster.columns(), LIMITS, rule=model_rule)
    cluster.apply(plan, req)
    return plan


class TestPlanner(testtools.TestCase):
    def test_a_pair_the_model_predicts_harmful_never_shares_a_host(self) -> None:
        cluster = cloud(2)
        first = place(cluster, request("PTRANS.I1.P6", "a"), rule())
        second = place(cluster, request("PTRANS.I1.P6", "b"), rule())
        self.assertFalse(set(first.hosts) & set(second.hosts))
        # 40 % predicted: with one host, no placement, and the reason says why.
        single = cloud(1)
        place(single, request("PTRANS.I1.P6", "a"), rule())
        error = self.assertRaises(
            NoPlacement,
            algorithm.plan,
            request("PTRANS.I1.P6", "b"),
            single.columns(),
            LIMITS,
            rule=rule(),
        )
        self.assertIn("interference model ivmp-base", error.reason)

    def test_a_benign_pair_shares_a_host(self) -> None:
        cluster = cloud(2)
        first = place(cluster, request("DGEMM.I1.P6", "a"), rule())
        second = place(cluster, request("PKTM.I2.P6", "b"), rule())
        self.assertEqual(set(first.hosts), set(second.hosts))

    def test_the_tolerance_decides(self) -> None:
        cluster = cloud(1)
        place(cluster, request("PTRANS.I1.P6", "a"), rule(tolerance=45))
        place(cluster, request("PTRANS.I1.P6", "b"), rule(tolerance=45))

    def test_co_runners_the_model_cannot_judge_keep_it_off(self) -> None:
        for name in (None, "IS.B.4", "UNKNOWN"):
            cluster = cloud(1)
            place(cluster, request(name, "plain", cls=AppClass.NON_HPC), rule())
            self.assertRaises(
                NoPlacement,
                algorithm.plan,
                request("PKTM.I2.P6", "b"),
                cluster.columns(),
                LIMITS,
                rule=rule(),
            )

    def test_alone_on_a_host_needs_no_prediction(self) -> None:
        cluster = cloud(2)
        place(cluster, request("IS.B.4", "a", count=10), rule())  # no scores, alone
        place(cluster, request("IS.B.4", "a", count=2), rule())  # the same application grows

    def test_the_cache_thresholds_give_way_to_the_model(self) -> None:
        cluster = cloud(1)
        heavy = PlacementRequest(
            ApplicationProfile(AppClass.SYNC_HPC, 50.0, "DGEMM.I1.P6"), VM, 4, "a"
        )
        tight = Thresholds(10, 10)
        self.assertRaises(NoPlacement, algorithm.plan, heavy, cluster.columns(), tight)
        algorithm.plan(heavy, cluster.columns(), tight, rule=rule())


class TestClaimCheck(testtools.TestCase):
    def test_admission_asks_the_model(self) -> None:
        there = [
            RunningVM("v1", AppClass.SYNC_HPC, 0.0, "PTRANS.I1.P6", "a"),
            RunningVM("v2", AppClass.SYNC_HPC, 0.0, "PTRANS.I1.P6", "a"),
        ]
        profile = ApplicationProfile(AppClass.SYNC_HPC, 0.0, "PTRANS.I1.P6")
        reason = admission.refusal(there, profile, "b", 1, LIMITS, rule=rule())
        self.assertIn("predicted slowdown 40.0% of PTRANS.I1.P6", reason)
        self.assertIn("> tolerance 10% (ivmp-base)", reason)
        self.assertIsNone(admission.refusal(there, profile, "a", 1, LIMITS, rule=rule()))

    def test_residents_group_vms_by_application(self) -> None:
        vms = [
            RunningVM("v1", application_id="a", app_name="A"),
            RunningVM("v2", application_id="a", app_name="A"),
            RunningVM("v3"),
            RunningVM("v4", application_id="b", app_name="B"),
        ]
        self.assertEqual([("A", 2), (None, 1), ("B", 3)], residents(vms, "b", "B", 2))


class TestInvariant(testtools.TestCase):
    """The model's tolerance is never exceeded on any host."""

    @settings(max_examples=100, deadline=None)
    @given(
        st.lists(
            st.tuples(st.sampled_from(SCORED), st.integers(1, 6), st.booleans()),
            min_size=1,
            max_size=15,
        ),
        st.sampled_from(["ivmp", "ivmp-base"]),
        st.floats(2, 30),
    )
    def test_tolerance_holds_over_random_streams(self, stream, model, tolerance) -> None:
        judge = rule(model, tolerance)
        cluster = cloud(4, cores=6)
        running: list[str] = []
        for i, (name, count, release) in enumerate(stream):
            if release and running:
                cluster.release([running.pop(0)])
            try:
                place(cluster, request(name, f"app{i}", count), judge)
            except NoPlacement:
                continue
            running.append(f"app{i}")
            for host in cluster.hosts():
                apps = {vm.application_id: vm.app_name for vm in host.vms}
                if len(apps) > 1:
                    tenants = [Tenant.of(PROFILES[n]) for n in apps.values()]
                    self.assertLessEqual(
                        judge.model.predict(tenants).worst, tolerance + 1e-9, host.name
                    )


class TestModelNotReady(testtools.TestCase):
    def test_an_unfitted_model_refuses_shared_hosts_and_does_not_raise(self) -> None:
        judge = ModelRule(model_registry.load("pair-forest"), 10.0, PROFILES)
        reason = judge.refusal([("FFT.I1.P4", 1), ("HPL.I1.P6", 1)])
        self.assertIn("is not fitted", reason)
        self.assertIsNone(judge.refusal([("FFT.I1.P4", 4)]))


class TestBatch(testtools.TestCase):
    def test_refusals_of_many_hosts_are_each_host_s_own(self) -> None:
        hosts = [
            [("PTRANS.I1.P6", 2), ("PTRANS.I1.P6", 1)],
            [("DGEMM.I1.P6", 1), ("PKTM.I2.P6", 2)],
            [("IS.B.4", 1), ("FFT.I1.P4", 1)],
            [(None, 1), ("FFT.I1.P4", 1)],
            [("FFT.I1.P4", 4)],
            [("NOPE", 1), ("FFT.I1.P4", 1)],
        ]
        for model in ("ivmp", "ivmp-base", "cache-score", "cache-pressure"):
            judge = rule(model, 10.0)
            self.assertEqual([judge.refusal(h) for h in hosts], judge.refusals(hosts), model)
        reasons = rule("ivmp-base").refusals(hosts)
        self.assertIn("predicted slowdown 40.0%", reasons[0])
        self.assertIsNone(reasons[1])
        self.assertIn("sllc_score", reasons[2])
        self.assertIn("without an application name", reasons[3])
        self.assertIsNone(reasons[4])
        self.assertIn("no profile of NOPE", reasons[5])

    def test_hosts_alike_are_asked_about_once(self) -> None:
        asked: list[int] = []
        model = model_registry.load("ivmp-base")
        real = model.predict_many

        def counting(hosts):
            asked.append(len(hosts))
            return real(hosts)

        model.predict_many = counting
        judge = ModelRule(model, 10.0, PROFILES)
        harmful = [("PTRANS.I1.P6", 2), ("PTRANS.I1.P6", 1)]
        benign = [("DGEMM.I1.P6", 1), ("PKTM.I2.P6", 2)]
        hosts = [harmful, benign] * 50 + [list(benign)]
        types = ["x"] * 100 + ["y"]
        reasons = judge.refusals(hosts, types)
        self.assertEqual([3], asked)  # two contents on type x, one on type y
        self.assertEqual([judge.refusal(h, t) for h, t in zip(hosts, types, strict=True)], reasons)
        self.assertEqual(50, sum(r is not None for r in reasons))
