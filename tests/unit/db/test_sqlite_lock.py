"""Writers of one SQLite file queue, however long SQLite itself would wait."""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import threading

import fixtures
import sqlalchemy
import testtools
from sqlalchemy import exc as sa_exc

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration, sqlite_lock
from tests import db_backends


def _claim(claim_id: str) -> db_api.Claim:
    return db_api.Claim(
        claim_id=claim_id,
        instance_uuid=claim_id,
        application_id=claim_id,
        host="h1",
        nodename="h1",
        app_class=AppClass.ASYNC_HPC,
        cache_score=0.0,
        vms=1,
    )


def hold_a_write(url: str, holding, release) -> None:
    """In another process: claim, and stay inside the transaction until told."""

    def slow_check(view: db_api.ClaimView) -> None:
        holding.set()
        release.wait(120)

    database = db_api.Database(url)
    try:
        database.claim([_claim("theirs")], slow_check, ttl=60)
    finally:
        database.dispose()


def _open_files() -> list[str]:
    names = []
    for fd in os.listdir("/proc/self/fd"):
        # The listing's own descriptor is closed by now.
        with contextlib.suppress(FileNotFoundError):
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
    return names


class TestWriters(db_backends.DatabaseTestCase):
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)
        # This handle gives up on SQLite's own lock after 0.2 s; the other
        # writer holds the file for far longer than that.
        self.impatient = db_api.Database(self.db_url + "?timeout=0.2")
        self.addCleanup(self.impatient.dispose)

    def assert_waits_and_then_writes(self, release: threading.Event) -> None:
        pool = concurrent.futures.ThreadPoolExecutor(1)
        self.addCleanup(pool.shutdown)
        outcome = pool.submit(self.impatient.claim, [_claim("ours")], lambda view: None, ttl=60)
        # Well past its SQLite wait, it is still queued, not refused.
        self.assertRaises(concurrent.futures.TimeoutError, outcome.result, 1.0)
        release.set()
        self.assertIsNone(outcome.result(120))

    def test_a_thread_waits_for_another_handle_of_its_process(self) -> None:
        holding, release = threading.Event(), threading.Event()
        writer = threading.Thread(target=hold_a_write, args=(self.db_url, holding, release))
        writer.start()
        self.addCleanup(writer.join)
        self.addCleanup(release.set)
        self.assertTrue(holding.wait(60))
        self.assert_waits_and_then_writes(release)
        writer.join()
        self.assertEqual({"theirs", "ours"}, {c.claim_id for c in self.database.live_claims()})

    def another_process_writing(self):
        """A process in the middle of a write, and the event that lets it finish."""
        context = multiprocessing.get_context("spawn")
        holding, release = context.Event(), context.Event()
        writer = context.Process(target=hold_a_write, args=(self.db_url, holding, release))
        writer.start()
        self.addCleanup(writer.join, 120)
        self.addCleanup(release.set)
        self.assertTrue(holding.wait(60))
        return writer, release

    def test_a_process_waits_for_another_process(self) -> None:
        writer, release = self.another_process_writing()
        self.assert_waits_and_then_writes(release)
        writer.join(120)
        self.assertEqual(0, writer.exitcode)
        self.assertEqual({"theirs", "ours"}, {c.claim_id for c in self.database.live_claims()})

    def test_no_lock_file_stays_open_between_writes(self) -> None:
        self.database.claim([_claim("c1")], lambda view: None, ttl=60)
        self.assertTrue(os.path.exists(self.database._sqlite_path + sqlite_lock.SUFFIX))
        self.assertEqual([], [name for name in _open_files() if name.endswith(sqlite_lock.SUFFIX)])

    def test_the_turn_ends_at_the_commit_before_the_connection_closes(self) -> None:
        # oslo.db yields to other green threads as a connection closes, after
        # the commit: by then the next writer must be free to go.
        lock = sqlite_lock.for_file(self.database._sqlite_path)
        free_at_close: list[bool] = []

        def try_a_turn() -> None:
            # Without waiting: a thread's turn is free or it is not.
            free = lock._threads.acquire(blocking=False)
            if free:
                lock._threads.release()
            free_at_close.append(free)

        def closing(dbapi_connection, record) -> None:
            other = threading.Thread(target=try_a_turn)
            other.start()
            other.join()

        sqlalchemy.event.listen(self.database.engine, "checkin", closing)
        self.addCleanup(sqlalchemy.event.remove, self.database.engine, "checkin", closing)
        self.database.claim([_claim("c1")], lambda view: None, ttl=60)
        # Two writes: the claim's lock rows, then the claim.
        self.assertEqual([True, True], free_at_close)

    def test_after_the_wait_sqlite_s_own_lock_decides(self) -> None:
        self.useFixture(fixtures.MonkeyPatch("hpc_nova_scheduler.db.sqlite_lock.WAIT", 0.3))
        self.another_process_writing()
        # The other process keeps its turn: after 0.3 s this one goes on to
        # SQLite's lock, which it gives up on after its own 0.2 s.
        error = self.assertRaises(
            sa_exc.OperationalError,
            self.impatient.claim,
            [_claim("ours")],
            lambda view: None,
            ttl=60,
        )
        self.assertIn("database is locked", str(error))


class TestFork(testtools.TestCase):
    def test_a_forked_child_does_not_inherit_a_held_write_lock(self) -> None:
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, "hpc.sqlite")
        held, done = threading.Event(), threading.Event()

        def hold() -> None:
            with sqlite_lock.for_file(path):
                held.set()
                done.wait(120)

        holder = threading.Thread(target=hold)
        holder.start()
        self.addCleanup(holder.join)
        self.addCleanup(done.set)
        self.assertTrue(held.wait(60))
        # Another thread holds the lock as the worker forks. That thread is
        # not in the child, whose threads must find their lock free.
        pid = os.fork()
        if pid == 0:
            free = sqlite_lock.for_file(path)._threads.acquire(blocking=False)
            os._exit(0 if free else 1)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(0, os.waitstatus_to_exitcode(status))

    def test_one_lock_per_file_however_it_is_named(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(folder, "hpc.sqlite")
        # Held, so that the weak table keeps it.
        lock = sqlite_lock.for_file(path)
        self.assertIs(lock, sqlite_lock.for_file(os.path.join(folder, ".", "hpc.sqlite")))
        self.assertIsNot(lock, sqlite_lock.for_file(os.path.join(folder, "other.sqlite")))
