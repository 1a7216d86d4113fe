"""Claims of fair-share loans: what a claim says, set under the platform's lock."""

from __future__ import annotations

import dataclasses
import types

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.algorithm import PlacementRequest, Plan
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration
from hpc_nova_scheduler.fairshare import in_force as force
from hpc_nova_scheduler.scheduler import claims
from hpc_nova_scheduler.scheduler.fallback import FailurePolicy, FallbackStore
from hpc_nova_scheduler.scheduler.request import RequestState
from tests import db_backends
from tests.unit.scheduler.test_fair_scope import HOSTS, in_force, vm

PROFILE = ApplicationProfile(AppClass.ASYNC_HPC, 1.0, "blast")


class LoanClaimTests:
    """On every backend: the claim reads the use under its locks."""

    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)
        self.entitlements = in_force({"p": {"amd": 4}, "q": {"intel": 12}})
        self.policy = FailurePolicy(FallbackStore())

    def claim(
        self, choice: force.Choice | None, vms: int = 2, host: str = "a1", conflict=None
    ) -> RequestState:
        """Claim ``vms`` 2-core VMs of project p on ``host`` under ``choice``."""
        state = RequestState(PROFILE, f"app-{host}-{vms}", database=self.database, vm_cores=2)
        request = PlacementRequest(PROFILE, Resources(2, 512, 1), vms, state.application_id)
        context = claims.PlanContext(
            hosts=[types.SimpleNamespace(host=h.name, nodename=h.name) for h in HOSTS],
            request=request,
            thresholds=Thresholds(100.0, 100.0),
            table=InterferenceTable(),
            instance_uuid=f"{state.application_id}-0",
            own=set(),
            project_id="p",
        )
        plan = Plan((host,) * vms, None, ())
        self.assertEqual(conflict, claims.claim(state, context, plan, (), self.policy, fair=choice))
        return state

    def choice(self, cores: int, enforcement: str, preemptible: bool = False) -> force.Choice:
        use = self.database.cores_in_use()
        keys = [h.name for h in HOSTS]
        return force.choices(
            self.entitlements,
            self.entitlements.cloud,
            "p",
            cores,
            keys,
            use,
            enforcement,
            preemptible,
        )[0]

    def loans_of(self, state: RequestState) -> list[tuple]:
        return [
            (c.loan, c.loan_platform, c.loan_over)
            for c in self.database.live_claims()
            if c.claim_id == state.claim_id
        ]

    def test_an_entitled_claim_is_no_loan(self) -> None:
        state = self.claim(self.choice(4, hpc_conf.BORROW))
        self.assertEqual([(None, None, None)], self.loans_of(state))
        self.database.record_placed(
            db_api.RunningRecord(
                "u1", "a1", AppClass.ASYNC_HPC, 1.0, project_id="p", cores=2, nodename="a1"
            ),
            state.claim_id,
        )
        self.assertEqual([], self.database.loans())

    def test_a_borrowed_claim_records_the_overage_read_under_the_lock(self) -> None:
        self.database.record_running([vm("u0", "a0", "p", 4)])
        choice = self.choice(4, hpc_conf.BORROW)
        self.assertEqual(db_api.BORROWED, choice.loan)
        # After the choice, before the claim: another VM of p on amd. The
        # overage is read under the lock, so it counts: 4 + 2 + 4 - 4 = 6.
        self.database.record_running([vm("u9", "a2", "p", 2)])
        state = self.claim(choice)
        self.assertEqual([(db_api.BORROWED, "amd", 6)], self.loans_of(state))
        placed = db_api.RunningRecord(
            "u1", "a1", AppClass.ASYNC_HPC, 1.0, project_id="p", cores=2, nodename="a1"
        )
        self.database.record_placed(placed, state.claim_id)
        (loan,) = self.database.loans()
        self.assertEqual(
            ("u1", "p", "amd", 2), (loan.instance_uuid, loan.project, loan.platform, loan.cores)
        )
        self.assertEqual((db_api.BORROWED, 6, False), (loan.kind, loan.over_by, loan.stopped))

    def test_a_preemptible_claim_spends_no_entitlement(self) -> None:
        # p's entitlement is spent; a preemptible claim still takes idle cores.
        self.database.record_running([vm("u0", "a0", "p", 4)])
        choice = self.choice(4, hpc_conf.STRICT, preemptible=True)
        state = self.claim(choice)
        self.assertEqual([(db_api.PREEMPTIBLE, "amd", 0)], self.loans_of(state))
        use = self.database.cores_in_use()
        self.assertEqual({"a0": 4}, use["p"])
        self.assertEqual({"a1": 4}, use[db_api.PREEMPTIBLE_USE])
        # The idle cores are spent, though: 12 - 4 - 4 = 4 left on amd. A
        # claim chosen before is refused under the lock.
        late = dataclasses.replace(choice, cores=6)
        self.claim(late, vms=3, host="a2", conflict="amd has 4 idle cores, 6 asked")


db_backends.for_each_backend(globals(), LoanClaimTests, "TestLoanClaims")
