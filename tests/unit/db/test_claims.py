"""Claims on every backend: written under locks, used up, settled, expired."""

from __future__ import annotations

import concurrent.futures
import datetime
import threading

from oslo_utils import timeutils
from sqlalchemy import update

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration, models
from tests import db_backends

BUDGET = 100.0
SCORE = 30.0


def claim(claim_id: str, host: str = "n1", vms: int = 1, spare: int = 0, app: str = "app"):
    return db_api.Claim(
        claim_id=claim_id,
        instance_uuid=f"{claim_id}-first",
        application_id=app,
        host=host,
        nodename=host,
        app_class=AppClass.ASYNC_HPC,
        cache_score=SCORE,
        vms=vms,
        spare=spare,
        cell_uuid="cell",
    )


def within_budget(host: str, adding: int):
    """A check like the filter's: the host's cache total stays within BUDGET."""

    def check(view: db_api.ClaimView) -> str | None:
        total = sum(r.cache_score for r in view.running if r.host == host)
        total += sum(c.cache_score * (c.vms + c.spare) for c in view.claims if c.host == host)
        return "over budget" if total + adding * SCORE > BUDGET else None

    return check


class ClaimTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)

    def test_a_refused_check_writes_nothing(self) -> None:
        self.assertEqual("no", self.database.claim([claim("c1")], lambda view: "no", ttl=60))
        self.assertEqual([], self.database.live_claims())

    def test_the_view_holds_the_hosts_and_the_application(self) -> None:
        self.database.record_running(
            [
                db_api.RunningRecord("a", "n1", AppClass.SYNC_HPC, 5.0, request_id="x"),
                db_api.RunningRecord("b", "n9", AppClass.SYNC_HPC, 5.0, request_id="app"),
                db_api.RunningRecord("c", "n9", AppClass.SYNC_HPC, 5.0, request_id="y"),
            ]
        )
        self.database.claim([claim("c0", "n8", app="app")], lambda view: None, ttl=60)
        seen = []
        self.database.claim([claim("c1")], lambda view: seen.append(view), ttl=60)
        self.assertEqual({"a", "b"}, {row.instance_uuid for row in seen[0].running})
        self.assertEqual(["c0"], [c.claim_id for c in seen[0].claims])

    def test_recording_a_vm_uses_up_its_claim(self) -> None:
        self.database.claim(
            [claim("c1", vms=2), claim("c1", "n2", vms=0, spare=1)],
            lambda v: None,
            ttl=60,
        )
        vm = db_api.RunningRecord(
            "u1", "n1", AppClass.ASYNC_HPC, SCORE, nodename="n1", request_id="app"
        )
        self.database.record_placed(vm, "c1")
        self.assertEqual(
            {("n1", 1, 0), ("n2", 0, 1)},
            {(c.host, c.vms, c.spare) for c in self.database.live_claims()},
        )
        self.database.record_placed(
            db_api.RunningRecord("u2", "n1", AppClass.ASYNC_HPC, SCORE, nodename="n1"), "c1"
        )
        # Used up on n1; the spare slot on n2 stays until the builds settle.
        self.assertEqual(
            [("n2", 0, 1)], [(c.host, c.vms, c.spare) for c in self.database.live_claims()]
        )
        self.assertEqual({"c1"}, {vm.claim_id for vm in self.database.list_running()})
        self.assertEqual(
            {"c1": ("cell", ["c1-first", "u1", "u2"])},
            {k: (cell, sorted(uuids)) for k, (cell, uuids) in self.database.open_claims().items()},
        )
        self.database.release_claims(["c1"])
        self.assertEqual([], self.database.live_claims())

    def test_expired_claims_no_longer_count(self) -> None:
        self.database.claim([claim("old"), claim("new", "n2")], lambda v: None, ttl=60)
        table = models.AppClaim.__table__
        with self.database._writer() as session:
            session.execute(
                update(table)
                .where(table.c.claim_id == "old")
                .values(expires_at=timeutils.utcnow() - datetime.timedelta(seconds=1))
            )
        self.assertEqual(["new"], [c.claim_id for c in self.database.live_claims()])
        self.assertEqual(["new"], list(self.database.open_claims()))
        self.assertEqual(1, self.database.expire_claims())
        self.assertEqual(0, self.database.expire_claims())

    def test_application_hosts_are_its_rows_and_live_planned_claims(self) -> None:
        self.database.record_running(
            [
                db_api.RunningRecord("a", "n1", AppClass.SYNC_HPC, 5.0, request_id="group"),
                db_api.RunningRecord("b", "n2", AppClass.SYNC_HPC, 5.0, request_id="other"),
            ]
        )
        self.database.claim(
            [claim("c1", "n3", app="group"), claim("c1", "n4", vms=0, spare=1, app="group")],
            lambda v: None,
            ttl=60,
        )
        self.database.claim([claim("old", "n5", app="group")], lambda v: None, ttl=60)
        table = models.AppClaim.__table__
        with self.database._writer() as session:
            session.execute(
                update(table)
                .where(table.c.claim_id == "old")
                .values(expires_at=timeutils.utcnow() - datetime.timedelta(seconds=1))
            )
        # A spare slot is no VM of the application, nor is an expired claim.
        self.assertEqual({("n1", None), ("n3", "n3")}, self.database.application_hosts("group"))
        self.assertEqual(set(), self.database.application_hosts("nobody"))

    def test_claims_of_one_class(self) -> None:
        extreme = db_api.Claim(
            "x", "x-first", "xapp", "n3", "n3", AppClass.EXTREME_HPC, 47.0, vms=4
        )
        self.database.claim([claim("c1"), extreme], lambda v: None, ttl=60)
        self.assertEqual(
            ["x"], [c.claim_id for c in self.database.of_class(AppClass.EXTREME_HPC)[1]]
        )
        self.assertEqual(["c1"], [c.claim_id for c in self.database.live_claims(["n1"])])

    def test_concurrent_claims_on_one_host_are_serialised(self) -> None:
        # Eight threads, each with its own database handle as separate
        # scheduler workers have, claim one VM of score 30 on a host whose
        # budget holds three: exactly three may win.
        barrier = threading.Barrier(8)

        def race(i: int) -> str | None:
            database = db_api.Database(self.db_url)
            try:
                barrier.wait(timeout=30)
                return database.claim(
                    [claim(f"c{i}", app=f"app{i}")], within_budget("n1", 1), ttl=60
                )
            finally:
                database.dispose()

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(race, range(8), timeout=120))
        self.assertEqual(3, results.count(None), results)
        self.assertEqual(3, len(self.database.live_claims(["n1"])))

    def test_long_names_fit_the_lock_table(self) -> None:
        name = db_api.lock_name("host", "h" * 300)
        self.assertLessEqual(len(name), models.NAME_LENGTH)
        self.assertNotEqual(name, db_api.lock_name("host", "h" * 299))


db_backends.for_each_backend(globals(), ClaimTests, "TestClaims")
