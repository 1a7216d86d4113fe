"""The one-host admission rules a claim is checked with."""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.core import admission
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile

THRESHOLDS = Thresholds(alpha=100.0, beta=60.0)


def vm(app: str, cls: AppClass = AppClass.ASYNC_HPC, score: float = 0.0, name=None) -> RunningVM:
    return RunningVM(f"{app}-vm", cls, score, name, app)


def refusal(vms, cls=AppClass.ASYNC_HPC, score=0.0, adding=1, name=None, table=None):
    profile = ApplicationProfile(app_class=cls, cache_score=score, app_name=name)
    return admission.refusal(vms, profile, "me", adding, THRESHOLDS, table)


class TestRefusal(testtools.TestCase):
    def test_alpha_counts_every_vm_being_added(self) -> None:
        self.assertIsNone(refusal([vm("a", score=40)], score=30, adding=2))
        self.assertIn("alpha", refusal([vm("a", score=40)], score=31, adding=2))

    def test_beta_applies_where_sync_runs_or_arrives(self) -> None:
        self.assertIsNone(refusal([vm("a", score=50)], score=10))
        self.assertIn("beta", refusal([vm("a", AppClass.SYNC_HPC, 50)], score=11))
        self.assertIn("beta", refusal([vm("a", score=50)], AppClass.SYNC_HPC, 11))

    def test_extreme_hosts_are_dedicated_both_ways(self) -> None:
        extreme = vm("a", AppClass.EXTREME_HPC)
        self.assertIn("dedicated", refusal([extreme]))
        self.assertIn("without other", refusal([vm("a")], AppClass.EXTREME_HPC))
        own = RunningVM("x", AppClass.EXTREME_HPC, 47, None, "me")
        self.assertIsNone(refusal([own], AppClass.EXTREME_HPC, 47, adding=3))

    def test_extreme_requests_ignore_cache_thresholds_on_their_own_hosts(self) -> None:
        own = RunningVM("x", AppClass.EXTREME_HPC, 90, None, "me")
        self.assertIsNone(refusal([own], AppClass.EXTREME_HPC, 90, adding=2))

    def test_harmful_pairs_never_share(self) -> None:
        table = InterferenceTable(frozenset({("IS", "LU")}))
        self.assertIn("harmful", refusal([vm("a", name="LU")], name="IS", table=table))
        # The application's own VMs are never its harmful partners.
        own = RunningVM("x", AppClass.ASYNC_HPC, 0, "LU", "me")
        self.assertIsNone(refusal([own], name="IS", table=table))

    def test_nothing_to_add_is_always_admitted(self) -> None:
        self.assertIsNone(refusal([vm("a", AppClass.EXTREME_HPC)], adding=0))
