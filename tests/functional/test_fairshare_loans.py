"""Loans inside Nova (issue 45): borrowed and preemptible VMs, booted through Nova's API.

The cloud of :mod:`tests.functional.test_fairshare`: two platforms (amd,
intel) of three 4-vCPU hosts, two projects with a share. p-blast is entitled
to 4 cores of amd, p-gene to 12 of intel. A VM placed beyond its project's
entitlement under ``borrow`` is a borrowed loan, one of a preemptible flavor
a preemptible loan, whatever the enforcement; the agent may take either back.
"""

from __future__ import annotations

import datetime

from oslo_utils import timeutils

from hpc_nova_scheduler.agent.allocator import nova_nodes
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare import live_allocation, platforms
from hpc_nova_scheduler.scheduler.aggregate_tags import AggregateTags
from tests.functional.test_fairshare import AMD, INTEL, FairshareCloud

LONG_AGO = datetime.datetime(2000, 1, 1)


class LoanCloud(FairshareCloud):
    DEMAND = {"p-blast": 4, "p-gene": 12}

    def setUp(self) -> None:
        super().setUp()
        outcome = self.allocate()
        self.assertEqual({"amd": 4}, outcome.allocation["p-blast"])
        self.assertEqual({"intel": 12}, outcome.allocation["p-gene"])

    def loans(self) -> dict[str, tuple[str, str, str, int, int]]:
        """instance uuid -> (project, kind, platform, cores, over_by)."""
        return {
            loan.instance_uuid: (loan.project, loan.kind, loan.platform, loan.cores, loan.over_by)
            for loan in self.database.loans()
        }

    def preemptible_flavor(self, vcpus: int = 1) -> str:
        return self.hpc_flavor(
            vcpus=vcpus, app_class="AsyncHPC", cache_score=1, app_name="blast", preemptible="true"
        )

    def running(self, project: str) -> dict[str, int]:
        """The project's running cores per platform, as the allocator reads them."""
        cloud = platforms.build_cloud(nova_nodes(), AggregateTags().current())
        inputs = live_allocation.read_inputs(self.database, cloud, 3600, timeutils.utcnow())
        return next(p.running for p in inputs.projects if p.name == project)


class TestBorrowedLoans(LoanCloud):
    FAIRNESS = {**FairshareCloud.FAIRNESS, "fairshare_enforcement": "borrow"}

    def test_a_vm_beyond_the_entitlement_is_a_borrowed_loan(self) -> None:
        flavor = self.app_flavor("blast")
        entitled = self.boot_as("p-blast", flavor, 4)
        self.assertEqual({"amd"}, self.platforms_of(entitled))
        self.assertEqual({}, self.loans())
        # 2 more on amd: 2 beyond the entitlement; then 1 more: 3 beyond.
        borrowed = self.boot_as("p-blast", flavor, 2)
        again = self.boot_as("p-blast", flavor, 1)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in borrowed + again})
        self.assertEqual({"amd"}, self.platforms_of(borrowed + again))
        expected = {s["id"]: ("p-blast", db_api.BORROWED, "amd", 1, 2) for s in borrowed}
        expected[again[0]["id"]] = ("p-blast", db_api.BORROWED, "amd", 1, 3)
        self.assertEqual(expected, self.loans())
        # Borrowed VMs run: they are the project's use.
        self.assertEqual({"amd": 7}, self.running("p-blast"))

    def test_an_entitled_vm_of_the_other_project_is_no_loan(self) -> None:
        gene = self.boot_as("p-gene", self.app_flavor("gene", vcpus=4), 3)
        self.assertEqual({"intel"}, self.platforms_of(gene))
        self.assertEqual({}, self.loans())


class TestPreemptibleLoans(LoanCloud):
    """Under strict: preemptible VMs take idle cores and no entitlement."""

    def test_a_preemptible_vm_takes_idle_cores_and_leaves_the_entitlement(self) -> None:
        preemptible = self.boot_as("p-blast", self.preemptible_flavor(), 6)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in preemptible})
        self.assertEqual({"amd"}, self.platforms_of(preemptible))
        self.assertEqual(
            {s["id"]: ("p-blast", db_api.PREEMPTIBLE, "amd", 1, 0) for s in preemptible},
            self.loans(),
        )
        self.assertEqual({}, self.running("p-blast"))
        # The whole entitlement is still there, and no more.
        flavor = self.app_flavor("blast")
        entitled = self.boot_as("p-blast", flavor, 4)
        self.assertEqual({"amd"}, self.platforms_of(entitled))
        self.assert_refused(self.boot_as("p-blast", flavor, 1))
        self.assertEqual(6, len(self.loans()))
        self.assertEqual({"amd": 4}, self.running("p-blast"))
        # amd has 2 idle cores left: 3 preemptible ones go to intel's.
        more = self.boot_as("p-blast", self.preemptible_flavor(), 3)
        self.assertEqual({"intel"}, self.platforms_of(more))

    def test_a_project_without_a_share_lends_nothing_but_its_vm_is_a_loan(self) -> None:
        servers = self.boot_as("p-other", self.preemptible_flavor(vcpus=4), 1)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers})
        (loan,) = self.loans().values()
        self.assertEqual(("p-other", db_api.PREEMPTIBLE), loan[:2])

    def test_no_idle_cores_refuses_without_counting_demand(self) -> None:
        # 13 cores: more than any platform has.
        self.assert_refused(self.boot_as("p-blast", self.preemptible_flavor(), 13))
        self.assertEqual([], self.database.refusals(LONG_AGO))
        self.assertEqual({}, self.loans())


class TestFairnessOffPreemptible(LoanCloud):
    """Without a generation in force, hpc:preemptible changes nothing."""

    def test_fair_share_off_places_preemptible_vms_as_any(self) -> None:
        self.flags(fairness_policy="none", group="hpc_scheduler")
        servers = self.boot_as("p-blast", self.preemptible_flavor(), 8)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers})
        self.assertEqual({}, self.loans())


class TestTopologyRefusal(LoanCloud):
    RACKS = {"r-amd": AMD, "r-intel": INTEL}

    def test_a_refusal_records_the_required_level(self) -> None:
        flavor = self.hpc_flavor(
            app_class="SyncHPC", cache_score=1, app_name="blast", topology_required="rack"
        )
        self.assert_refused(self.boot_as("p-blast", flavor, 5))
        self.assert_refused(self.boot_as("p-blast", self.app_flavor("blast"), 6))
        refusals = self.database.refusals(LONG_AGO)
        self.assertEqual(
            [("p-blast", 5, "rack"), ("p-blast", 6, None)],
            [(r.project, r.cores, r.topology_level) for r in refusals],
        )
