"""Why a plan leaves each host out: the rule, and its value against the limit."""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import NoPlacement, PlacementRequest
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.judge import Refusal, Resident, summary
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.state import ClusterState

NODE = Resources(4, 8192, 0)
VM = Resources(1, 2048, 0)
LIMITS = Thresholds(100, 60)


def request(name: str, app_class: AppClass, score: float, count: int) -> PlacementRequest:
    return PlacementRequest(ApplicationProfile(app_class, score, name), VM, count, name)


class _Judge:
    """A host judge that refuses any host where ``victim`` would run with others."""

    name = "toy"

    def __init__(self, victim: str) -> None:
        self.victim = victim

    def refusal(self, residents: list[Resident], host_type: str | None = None) -> str | None:
        return self.refusals([residents], [host_type])[0]

    def refusals(self, hosts, host_types=None) -> list[str | None]:
        return [
            f"predicted slowdown 31% of {self.victim} > tolerance 20% (toy)"
            if len(found) > 1 and any(name == self.victim for name, _ in found)
            else None
            for found in hosts
        ]


class TestLeftOut(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.cluster = ClusterState()
        for index in range(1, 8):
            group = "zen" if index == 7 else "intel"
            self.cluster.add_host(f"n{index}", NODE, rack="r1", cpu_group=group)
        # n1: ExtremeHPC; n2: full; n3: a harmful partner; n4: cache 90.
        self.place("n1", request("IS.B.4", AppClass.EXTREME_HPC, 47, 1))
        self.place("n2", request("FILL", AppClass.NON_HPC, 0, 4))
        self.place("n3", request("CG", AppClass.ASYNC_HPC, 1, 1))
        self.place("n4", request("MG", AppClass.ASYNC_HPC, 90, 1))

    def place(self, host: str, req: PlacementRequest) -> None:
        plan = algorithm.Plan((host,) * req.count, None, ("r1",))
        self.cluster.apply(plan, req)

    def explain(self, req: PlacementRequest, **options) -> tuple[algorithm.Plan | None, dict]:
        table = InterferenceTable(frozenset({("CG", "LU")}))
        try:
            chosen = algorithm.plan(req, self.cluster.hosts(), LIMITS, table, **options)
        except NoPlacement:
            chosen = None
        found = algorithm.left_out(req, self.cluster.hosts(), chosen, LIMITS, table, **options)
        return chosen, {r.host: (r.rule, r.detail) for r in found}

    def test_every_host_left_out_names_its_rule_and_value(self) -> None:
        chosen, found = self.explain(request("LU", AppClass.SYNC_HPC, 20, 2))
        self.assertEqual(("n5", "n5"), chosen.hosts)
        self.assertEqual(
            {
                "n1": ("ExtremeHPC", "ExtremeHPC host of IS.B.4"),
                "n2": ("resources", "free vcpus 0 < 1"),
                "n3": ("interference table", "harmful pair LU + CG (interference table)"),
                "n4": ("alpha", "cache 110 > alpha 100"),
                "n6": ("packing", "not needed: the plan is complete on 1 host(s)"),
                "n7": ("homogeneity", "processor group zen; the plan's is intel"),
            },
            found,
        )

    def test_beta_next_to_synchpc(self) -> None:
        self.place("n5", request("LU.B", AppClass.SYNC_HPC, 50, 1))
        _, found = self.explain(request("EP", AppClass.ASYNC_HPC, 20, 1))
        self.assertEqual(("beta", "cache 70 > beta 60 (SyncHPC)"), found["n5"])

    def test_a_refused_request_leaves_every_host_out(self) -> None:
        chosen, found = self.explain(request("LU", AppClass.SYNC_HPC, 20, 12))
        self.assertIsNone(chosen)
        self.assertEqual(7, len(found))
        self.assertEqual(("capacity", "processor group intel hold(s) 6 of 12 VMs"), found["n5"])
        self.assertEqual(("capacity", "processor group zen hold(s) 3 of 12 VMs"), found["n7"])

    def test_an_extremehpc_request_needs_hosts_to_itself(self) -> None:
        _, found = self.explain(request("IS.C", AppClass.EXTREME_HPC, 47, 1))
        self.assertEqual("ExtremeHPC", found["n3"][0])
        self.assertIn("1 VM(s) of other applications", found["n3"][1])

    def test_each_extremehpc_host_names_its_own_application(self) -> None:
        self.place("n5", request("FT.C.4", AppClass.EXTREME_HPC, 30, 1))
        _, found = self.explain(request("EP", AppClass.ASYNC_HPC, 1, 1))
        self.assertEqual(("ExtremeHPC", "ExtremeHPC host of IS.B.4"), found["n1"])
        self.assertEqual(("ExtremeHPC", "ExtremeHPC host of FT.C.4"), found["n5"])

    def test_a_request_for_no_resources_says_so(self) -> None:
        empty = PlacementRequest(
            ApplicationProfile(AppClass.ASYNC_HPC, 1, "EP"), Resources(0, 0, 0), 1, "EP"
        )
        _, found = self.explain(empty)
        self.assertEqual(("resources", "the flavor asks for no VCPU, memory or disk"), found["n5"])

    def test_a_judge_gives_its_own_reason(self) -> None:
        _, found = self.explain(request("MG2", AppClass.ASYNC_HPC, 1, 1), rule=_Judge("MG"))
        self.assertEqual(
            ("model toy", "predicted slowdown 31% of MG > tolerance 20% (toy)"), found["n4"]
        )

    def test_summary_counts_hosts_by_rule(self) -> None:
        refusals = [
            Refusal("a", "alpha", ""),
            Refusal("b", "ExtremeHPC", ""),
            Refusal("c", "alpha", ""),
        ]
        self.assertEqual("alpha 2, ExtremeHPC 1", summary(refusals))
        self.assertEqual("c: cache 1 > alpha 0", str(Refusal("c", "alpha", "cache 1 > alpha 0")))
