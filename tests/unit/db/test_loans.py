"""Loans and reclaims in the plugin database, on SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import threading

from oslo_utils import timeutils

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.db import migration
from tests import db_backends


def _claim(project: str, host: str, vms: int, cores: int, claim_id: str, **loan) -> db_api.Claim:
    return db_api.Claim(
        claim_id=claim_id,
        instance_uuid=claim_id,
        application_id=claim_id,
        host=host,
        nodename=host,
        app_class=AppClass.ASYNC_HPC,
        cache_score=0.0,
        vms=vms,
        project_id=project,
        cores=cores,
        **loan,
    )


def _vm(uuid: str, host: str, project: str, cores: int) -> db_api.RunningRecord:
    return db_api.RunningRecord(
        uuid, host, AppClass.ASYNC_HPC, 1.0, project_id=project, cores=cores
    )


def _new(uuid: str, beneficiary: str = "B") -> loans_db.NewReclaim:
    return loans_db.NewReclaim(uuid, "A", "amd", 4, db_api.BORROWED, beneficiary, "why")


class LoanTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)

    def test_a_borrowed_claim_becomes_a_loan_when_its_vm_is_recorded(self) -> None:
        claim = _claim(
            "A", "h1", 2, 4, "c1", loan=db_api.BORROWED, loan_platform="amd", loan_over=8
        )
        self.assertIsNone(self.database.claim([claim], lambda view: None, ttl=60))
        self.database.record_placed(_vm("vm1", "h1", "A", 4), "c1")
        self.database.record_placed(_vm("vm2", "h1", "A", 4), "c1")
        found = self.database.loans()
        self.assertEqual(["vm1", "vm2"], sorted(loan.instance_uuid for loan in found))
        loan = found[0]
        self.assertEqual(
            ("A", "amd", 4, db_api.BORROWED, 8, False, "h1"),
            (
                loan.project,
                loan.platform,
                loan.cores,
                loan.kind,
                loan.over_by,
                loan.stopped,
                loan.key,
            ),
        )
        # An entitled claim makes no loan.
        self.assertIsNone(
            self.database.claim([_claim("A", "h2", 1, 4, "c2")], lambda v: None, ttl=60)
        )
        self.database.record_placed(_vm("vm3", "h2", "A", 4), "c2")
        self.assertEqual(2, len(self.database.loans()))
        # A loan goes with its VM's record.
        self.database.forget_running(["vm1"])
        self.assertEqual(["vm2"], [loan.instance_uuid for loan in self.database.loans()])
        self.assertEqual(1, self.database.prune_loans())

    def test_preemptible_cores_count_apart_and_stopped_ones_not_at_all(self) -> None:
        preemptible = _claim(
            "A", "h1", 1, 4, "c1", loan=db_api.PREEMPTIBLE, loan_platform="amd", loan_over=0
        )
        borrowed = _claim("A", "h1", 1, 2, "c2", loan=db_api.BORROWED, loan_platform="amd")
        for claim in (preemptible, borrowed):
            self.assertIsNone(self.database.claim([claim], lambda view: None, ttl=60))
        # Planned, not yet recorded: the claims count, preemptible apart.
        self.assertEqual(
            {"A": {"h1": 2}, db_api.PREEMPTIBLE_USE: {"h1": 4}}, self.database.cores_in_use()
        )
        self.database.record_placed(_vm("p1", "h1", "A", 4), "c1")
        self.database.record_placed(_vm("b1", "h1", "A", 2), "c2")
        self.assertEqual(
            {"A": {"h1": 2}, db_api.PREEMPTIBLE_USE: {"h1": 4}}, self.database.cores_in_use(["h1"])
        )
        self.database.set_stopped("b1", True)
        self.assertEqual({db_api.PREEMPTIBLE_USE: {"h1": 4}}, self.database.cores_in_use())
        self.database.set_stopped("b1", False)
        self.assertEqual(2, self.database.cores_in_use()["A"]["h1"])

    def test_a_vm_is_requested_once_while_its_reclaim_is_open(self) -> None:
        now = timeutils.utcnow()
        written = self.database.request_reclaims([_new("vm1"), _new("vm1")], "stop", 60, now)
        self.assertEqual(1, len(written))
        record = written[0]
        self.assertEqual(
            (loans_db.REQUESTED, "stop", 0), (record.state, record.mode, record.attempts)
        )
        self.assertEqual(60, (record.act_after - record.requested_at).total_seconds())
        self.assertEqual([], self.database.request_reclaims([_new("vm1", "C")], "stop", 60, now))
        # Acted is still open; failed is not: a later run may ask again.
        self.assertTrue(
            self.database.update_reclaim(
                record.id, state=loans_db.ACTED, expected=loans_db.REQUESTED, acted_at=now
            )
        )
        self.assertFalse(
            self.database.update_reclaim(
                record.id, state=loans_db.FAILED, expected=loans_db.REQUESTED
            )
        )
        self.assertEqual([], self.database.request_reclaims([_new("vm1")], "stop", 60, now))
        self.database.update_reclaim(record.id, state=loans_db.FAILED, attempts=3, error="409")
        again = self.database.request_reclaims([_new("vm1")], "delete", 0, now)
        self.assertEqual(1, len(again))
        states = [(r.state, r.attempts, r.error) for r in self.database.reclaims()]
        self.assertEqual([(loans_db.REQUESTED, 0, None), (loans_db.FAILED, 3, "409")], states)
        self.assertEqual(1, len(self.database.reclaims(loans_db.OPEN_STATES)))
        later = now + datetime.timedelta(days=8)
        self.assertEqual(1, self.database.prune_reclaims(later))
        self.assertEqual([again[0].id], [r.id for r in self.database.reclaims()])

    def test_two_agents_requesting_at_once_request_each_vm_once(self) -> None:
        barrier = threading.Barrier(4)

        def agent(number: int) -> int:
            database = db_api.Database(self.db_url)
            try:
                database.reclaims()
                barrier.wait(timeout=120)
                wanted = [_new(f"vm{n}", f"B{number}") for n in range(5)]
                return len(database.request_reclaims(wanted, "stop", 0))
            finally:
                database.dispose()

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            written = sum(pool.map(agent, range(4)))
        self.assertEqual(5, written)
        self.assertEqual(5, len(self.database.reclaims(loans_db.OPEN_STATES)))

    def test_add_loan_adopts_a_vm_placed_before(self) -> None:
        self.database.record_running([_vm("old", "h1", "A", 4)])
        placed = timeutils.utcnow().replace(microsecond=0)
        loan = loans_db.LoanRecord(
            "old", "A", "amd", 4, db_api.BORROWED, placed, 4, False, "h1", None
        )
        self.database.add_loan(loan)
        self.assertEqual([dataclasses.replace(loan, nodename=None)], self.database.loans())


db_backends.for_each_backend(globals(), LoanTests, "TestLoans")
