"""The database side of enforcing fair share: cores in use, entitlement claims, lease, refusals.

Every test runs on SQLite, MariaDB and PostgreSQL.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import multiprocessing
import threading
import time

from oslo_utils import timeutils

from hpc_nova_scheduler.core.profile import AppClass, ProfileError
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration
from tests import db_backends

HOSTS = ("h1", "h2", "h3")


def _claim(project: str, host: str, vms: int, cores: int, claim_id: str) -> db_api.Claim:
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
    )


class EnforcementDataTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)

    def test_cores_in_use_count_records_and_planned_vms_not_spares(self) -> None:
        self.database.record_running(
            [
                db_api.RunningRecord(
                    f"vm{n}", "h1", AppClass.ASYNC_HPC, 1.0, project_id="A", cores=4
                )
                for n in range(3)
            ]
            + [db_api.RunningRecord("old", "h2", AppClass.SYNC_HPC, 1.0, project_id="B")]
        )
        spare = dataclasses.replace(_claim("B", "h3", 0, 8, "c2"), spare=1)
        for claim in (_claim("B", "h2", 2, 8, "c1"), spare):
            self.assertIsNone(self.database.claim([claim], lambda view: None, ttl=60))
        self.assertEqual({"A": {"h1": 12}, "B": {"h2": 16}}, self.database.cores_in_use())
        self.assertEqual({"A": {"h1": 12}}, self.database.cores_in_use(["h1"]))
        # The sweep fills in the cores of rows written before they were kept.
        self.assertEqual(1, self.database.set_cores({"old": 2, "vm0": 4}))
        self.assertEqual(18, self.database.cores_in_use(["h2"])["B"]["h2"])
        # Recording a VM again without its cores keeps them.
        self.database.record_running(
            [db_api.RunningRecord("vm0", "h1", AppClass.ASYNC_HPC, 1.0, project_id="A")]
        )
        self.assertEqual(12, self.database.cores_in_use(["h1"])["A"]["h1"])

    def test_claims_of_one_entitlement_from_two_workers_never_exceed_it(self) -> None:
        # Four threads with a database handle each, as scheduler workers,
        # claim 4 cores at a time on the hosts of one platform against an
        # entitlement of 20: exactly 5 claims may win.
        entitlement, cores = 20, 4
        lock = db_api.lock_name("platform", "amd")
        barrier = threading.Barrier(4)

        def worker(number: int) -> int:
            database = db_api.Database(self.db_url)
            won = 0
            try:
                barrier.wait()
                for attempt in range(6):
                    host = HOSTS[(number + attempt) % len(HOSTS)]

                    def check(view: db_api.ClaimView) -> str | None:
                        used = sum(view.use.get("A", {}).values())
                        return None if used + cores <= entitlement else "entitlement spent"

                    claim = _claim("A", host, 1, cores, f"w{number}-{attempt}")
                    if (
                        database.claim([claim], check, ttl=60, extra_locks=[lock], use_hosts=HOSTS)
                        is None
                    ):
                        won += 1
            finally:
                database.dispose()
            return won

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            wins = sum(pool.map(worker, range(4)))
        self.assertEqual(entitlement // cores, wins)
        self.assertEqual(entitlement, sum(self.database.cores_in_use()["A"].values()))

    def test_claims_from_worker_processes_never_exceed_an_entitlement(self) -> None:
        # Scheduler workers are processes: four, each with its own engine,
        # claim 4 cores at a time against an entitlement of 20 at once.
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(4, mp_context=context) as pool:
            start = time.time() + 3.0  # every process is up and connected by then
            wins = sum(pool.map(claim_in_a_process, [(self.db_url, n, start) for n in range(4)]))
        self.assertEqual(5, wins)
        self.assertEqual(20, sum(self.database.cores_in_use()["A"].values()))

    def test_the_lease_has_one_holder_until_it_expires_or_is_released(self) -> None:
        self.assertIsNone(self.database.lease())
        first = self.database.take_lease("w1", ttl=60)
        self.assertEqual("w1", first.holder)
        self.assertIsNone(self.database.take_lease("w2", ttl=60))
        self.assertIsNotNone(self.database.take_lease("w1", ttl=60))
        self.assertTrue(self.database.mark_lease("w1", digest="abc"))
        self.assertFalse(self.database.mark_lease("w2", digest="def"))
        at = datetime.datetime(2026, 11, 25, 12, 0, 0)
        self.assertTrue(self.database.mark_lease("w1", accounted_at=at))
        self.assertEqual(
            ("abc", at), (self.database.lease().digest, self.database.lease().accounted_at)
        )
        self.assertFalse(self.database.release_lease("w2"))
        self.assertTrue(self.database.release_lease("w1"))
        taken = self.database.take_lease("w2", ttl=0.5)
        # The new holder inherits the marks: usage is never charged twice.
        self.assertEqual(("abc", at), (taken.digest, taken.accounted_at))
        self.database.forget_digest()
        self.assertIsNone(self.database.lease().digest)
        time.sleep(1.1)
        # w2 stopped renewing (a worker that died): the lease goes to w1.
        self.assertEqual("w1", self.database.take_lease("w1", ttl=60).holder)

    def test_concurrent_takers_get_one_lease(self) -> None:
        barrier = threading.Barrier(4)

        def take(number: int) -> bool:
            database = db_api.Database(self.db_url)
            try:
                barrier.wait()
                return database.take_lease(f"w{number}", ttl=60) is not None
            finally:
                database.dispose()

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            self.assertEqual(1, sum(pool.map(take, range(4))))

    def test_the_copy_takes_the_shares_and_the_latest_generation_as_they_are(self) -> None:
        self.database.set_share("old", 1.0)
        self.database.write_generation("paf", {"old": {"amd": 1}}, {})
        latest = db_api.Generation(
            7, datetime.datetime(2026, 1, 2, 3, 4, 5), "pa-rr", {"A": {"amd": 4}}, {"cloud": {}}
        )
        self.database.replace_entitlements({"A": 2.0}, latest)
        self.assertEqual({"A": 2.0}, self.database.shares())
        self.assertEqual(latest, self.database.latest_generation())
        self.database.replace_entitlements({}, None)
        self.assertIsNone(self.database.latest_generation())

    def test_a_declared_demand_may_name_its_application(self) -> None:
        self.database.set_demand("A", 8, "BLAST")
        self.database.set_demand("B", 4)
        self.assertEqual({"A": 8, "B": 4}, self.database.demand())
        self.assertEqual({"A": "BLAST"}, self.database.demand_applications())
        self.database.set_demand("A", 6)
        self.assertEqual({}, self.database.demand_applications())
        self.assertRaises(ProfileError, self.database.set_demand, "A", 6, " ")

    def test_refusals_are_read_since_a_time_and_pruned(self) -> None:
        self.database.record_refusal("A", "BLAST", 8)
        self.database.record_refusal("B", None, 2)
        now = timeutils.utcnow()
        hour = datetime.timedelta(hours=1)
        found = self.database.refusals(now - hour)
        self.assertEqual(
            [("A", "BLAST", 8), ("B", None, 2)],
            [(r.project, r.application, r.cores) for r in found],
        )
        self.assertEqual([], self.database.refusals(now + hour))
        self.assertEqual(2, self.database.prune_refusals(now + hour))
        self.assertEqual([], self.database.refusals(now - hour))
        self.assertRaises(ProfileError, self.database.record_refusal, "", None, 1)
        self.assertRaises(ProfileError, self.database.record_refusal, "A", None, -1)


def claim_in_a_process(job: tuple[str, int, float]) -> int:
    """One worker process's claims of 4 cores of A's 20 on platform amd; how many won."""
    url, number, start = job
    database = db_api.Database(url)
    lock = db_api.lock_name("platform", "amd")

    def check(view: db_api.ClaimView) -> str | None:
        used = sum(view.use.get("A", {}).values())
        return None if used + 4 <= 20 else "entitlement spent"

    won = 0
    try:
        database.cores_in_use()  # connected before the start
        time.sleep(max(start - time.time(), 0.0))
        for attempt in range(6):
            claim = _claim("A", HOSTS[(number + attempt) % 3], 1, 4, f"p{number}-{attempt}")
            if database.claim([claim], check, ttl=60, extra_locks=[lock], use_hosts=HOSTS) is None:
                won += 1
    finally:
        database.dispose()
    return won


db_backends.for_each_backend(globals(), EnforcementDataTests, "TestEnforcementData")
