"""No invariant breaks when requests are scheduled concurrently.

200 multi-VM requests of every class go through ``HpcPlacementFilter`` over
a small cloud (8 hosts, 2 racks, 2 processor groups): from 8 threads sharing
one filter (one nova-scheduler worker), and from 2 worker processes of 4
threads each sharing the plugin database. Requests are deleted along the
way so that they keep competing for the hosts' cache budgets. Then every
invariant is checked: alpha, beta, ExtremeHPC dedication both ways,
homogeneity, the interference table, and no placed VM missing from
``app_running`` (see ``concurrency_harness``).

The schedulers run in spawned processes even for the thread test: a test
runner that imported Nova's functional tests has eventlet's monkey-patching
in force, and nova-scheduler runs native threads.
"""

from __future__ import annotations

import time

from tests import db_backends
from tests.unit.scheduler import concurrency_harness as harness

REQUESTS = 200
THREADS = 8
PROCESSES = 2
THREADS_PER_PROCESS = 4
#: Accepted requests a scheduler keeps alive before it deletes some.
KEEP_ALIVE = 6
#: Fewer accepted requests than this means the filter refused nearly everything.
MIN_ACCEPTED = 20
#: Per scheduler process, once it has started.
TIMEOUT = 120.0


class ConcurrencyTests:
    """Runs requests, then checks the invariants on ``self.database``."""

    db_url: str

    def setUp(self) -> None:
        super().setUp()
        harness.prepare_database(self.db_url)

    def schedule(
        self, requests: list[harness.Request], processes: int, threads: int, keep_alive: int
    ) -> None:
        shares = [requests[n::processes] for n in range(processes)]
        started = time.monotonic()
        outcomes, errors = harness.run_processes(
            self.db_url,
            shares,
            threads=threads,
            seed=7,
            keep_alive=keep_alive,
            timeout=TIMEOUT,
        )
        violations, stats = harness.check(requests, outcomes, self.database.list_running())
        stats["seconds"] = round(time.monotonic() - started, 1)
        violations = errors + violations
        self.assertEqual([], violations, harness.report(violations, stats))
        self.assertGreater(stats["accepted"], MIN_ACCEPTED, harness.report(violations, stats))


class ThreadTests(ConcurrencyTests):
    """Threads of one nova-scheduler worker sharing one filter."""

    def test_threads_of_one_scheduler(self) -> None:
        self.schedule(harness.make_requests(REQUESTS, seed=3), 1, THREADS, KEEP_ALIVE)


class ProcessTests(ConcurrencyTests):
    """nova-scheduler worker processes sharing the plugin database."""

    def test_scheduler_processes_sharing_the_database(self) -> None:
        self.schedule(
            harness.make_requests(REQUESTS, seed=5),
            PROCESSES,
            THREADS_PER_PROCESS,
            KEEP_ALIVE // PROCESSES,
        )


class TestOneAtATime(ConcurrencyTests, db_backends.DatabaseTestCase):
    """Requests one after the other pass the same checks: what the tests
    above find comes from concurrency, not from the checker."""

    def test_one_thread(self) -> None:
        self.schedule(harness.make_requests(60, seed=3), 1, 1, KEEP_ALIVE)


db_backends.for_each_backend(globals(), ThreadTests, "TestThreads")
db_backends.for_each_backend(globals(), ProcessTests, "TestProcesses")
# Several processes writing one SQLite file would test SQLite's locking.
del TestProcessesSQLite  # noqa: F821
