"""Sweeps: grids of cells in this process, on a process pool and on a Dask cluster."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import socketserver
import subprocess
import sys
import threading
import time

import fixtures
import testtools

from devcloud import services
from hpc_nova_scheduler import sweep
from tests import clusters
from tests.processes import GENEROUS, children, end_group


@dataclasses.dataclass(frozen=True)
class Cell:
    policy: str
    seed: int


GRID = [Cell(policy, seed) for policy in ("a", "bb", "ccc") for seed in range(3)]


# The cell functions are top level, so that they pickle for a pool or a cluster.
def score(cell: Cell) -> tuple[str, int]:
    return cell.policy, len(cell.policy) * 10 + cell.seed


def score_with(cell: Cell, shared: dict[str, int]) -> int:
    return shared[cell.policy] + cell.seed


def where(cell: Cell) -> int:
    return os.getpid()


def _tries(folder: str, cell: Cell) -> int:
    """How often ``cell`` has been run, this time included: a file a try, as
    cells run in other processes that share no memory with the test."""
    path = os.path.join(folder, f"{cell.policy}-{cell.seed}")
    with open(path, "a") as stream:
        stream.write("x")
    with open(path) as stream:
        return len(stream.read())


@dataclasses.dataclass(frozen=True)
class Flaky:
    """Fails its first ``failures`` tries, by raising or by ending its worker."""

    folder: str
    cell: Cell
    failures: int
    exit: bool = False


def flaky(cell: Flaky) -> str:
    if _tries(cell.folder, cell.cell) <= cell.failures:
        if cell.exit:
            # A lost worker: the process ends with no exception to send back.
            os._exit(3)
        raise RuntimeError(f"{cell.cell.policy} failed\nsecond line")
    return cell.cell.policy


def lost_worker_grids(once: str, twice: str) -> dict:
    """Grids whose middle cell ends its worker once, then twice (in a clean process)."""
    messages = Messages()
    logging.getLogger(sweep.__name__).addHandler(messages)

    def grid(folder: str, failures: int) -> list[Flaky]:
        return [
            Flaky(folder, cell, failures if i == 1 else 0, True) for i, cell in enumerate(GRID[:3])
        ]

    return {
        "once": sweep.run_grid(flaky, grid(once, 1), workers=2),
        "twice": sweep.run_grid(flaky, grid(twice, 2), workers=2),
        "logs": messages.messages,
    }


def flaky_grid(folder: str, failures: int, exit: bool = False) -> list[Flaky]:
    """Three cells; the middle one fails its first ``failures`` tries."""
    return [Flaky(folder, cell, failures if i == 1 else 0, exit) for i, cell in enumerate(GRID[:3])]


def pool_grids(once: str, always: str) -> dict:
    """Every grid the tests run on a pool of two workers, in a clean process.

    A process pool's management thread turns green under the test runner's
    eventlet patching and can wait forever (seen in CI), so pools run from
    a clean interpreter, as a user's command would.
    """
    messages = Messages()
    logging.getLogger(sweep.__name__).addHandler(messages)
    seen: list[Cell] = []
    shared = {"a": 100, "bb": 200, "ccc": 300}
    return {
        "score": sweep.run_grid(score, GRID, workers=2),
        "where": sweep.run_grid(where, GRID, workers=2),
        "pid": os.getpid(),
        "shared": sweep.run_grid(score_with, GRID, shared=shared, workers=2),
        "on_result": sweep.run_grid(
            score, GRID, workers=2, on_result=lambda r: seen.append(r.cell)
        ),
        "seen": seen,
        "once": sweep.run_grid(flaky, flaky_grid(once, 1), workers=2, key=lambda f: str(f.cell)),
        "always": sweep.run_grid(
            flaky, flaky_grid(always, 2), workers=2, key=lambda f: str(f.cell.seed)
        ),
        "logs": messages.messages,
    }


#: A sweep whose cells never end, run as a user's script: each cell marks
#: that it started in the folder given, then sleeps.
_ENDLESS = """
import os
import sys
import time

from hpc_nova_scheduler import sweep


def endless(cell):
    open(os.path.join(sys.argv[1], str(cell)), "w").close()
    time.sleep(3600)


if __name__ == "__main__":
    try:
        sweep.run_grid(endless, range(6), workers=2)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\\n")
        sys.exit(130)
"""


#: A sweep whose every forked process is sent Ctrl-C inside ``os.fork()``,
#: the instant before the worker's own code runs, where a real Ctrl-C can
#: land by chance. The hook is C through and through (libc's ``raise`` in a
#: partial), so that it returns before Python looks at the signal.
_CTRL_C_AT_FORK = """
import ctypes
import functools
import os
import signal
import sys

from hpc_nova_scheduler import sweep


def score(cell):
    return cell * 10


if __name__ == "__main__":
    libc = ctypes.CDLL(None)
    os.register_at_fork(after_in_child=functools.partial(libc["raise"], signal.SIGINT))
    results = sweep.run_grid(score, range(4), workers=2)
    print([(r.ok, r.value) for r in results])
"""


class TestRunGrid(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.folder = self.useFixture(fixtures.TempDir()).path
        self.logs = self.useFixture(fixtures.FakeLogger(name=sweep.__name__))

    def test_a_pool_of_two_keeps_order_shares_data_retries_and_reports(self) -> None:
        once, always = (self.useFixture(fixtures.TempDir()).path for _ in range(2))
        found = clusters.in_clean_process(pool_grids, once, always)
        results = found["score"]
        self.assertEqual([score(cell) for cell in GRID], [r.value for r in results])
        self.assertEqual(GRID, [r.cell for r in results])
        self.assertEqual([str(cell) for cell in GRID], [r.key for r in results])
        self.assertTrue(all(r.ok and r.attempts == 1 for r in results))
        self.assertNotIn(found["pid"], {r.value for r in found["where"]})
        shared = {"a": 100, "bb": 200, "ccc": 300}
        expected = [shared[c.policy] + c.seed for c in GRID]
        self.assertEqual(expected, [r.value for r in found["shared"]])
        self.assertEqual(sorted(GRID, key=str), sorted(found["seen"], key=str))
        self.assert_tried_again(found["once"])
        self.assert_given_up(found["always"], flaky_grid(always, 2))
        self.assertIn(
            "cell Cell(policy='a', seed=1) failed (RuntimeError: a failed); trying it once more",
            found["logs"],
        )
        self.assertIn("cell 1 failed again (RuntimeError: a failed); giving up", found["logs"])

    def test_one_worker_runs_in_this_process(self) -> None:
        results = sweep.run_grid(where, GRID, workers=1)
        self.assertEqual({os.getpid()}, {r.value for r in results})
        self.assertTrue(sweep.in_process(GRID, 1))
        self.assertTrue(sweep.in_process(GRID[:1], 4))
        self.assertFalse(sweep.in_process(GRID, 2))
        self.assertFalse(sweep.in_process(GRID, 1, "tcp://127.0.0.1:8786"))
        # Nothing need pickle in this process: a local function will do.
        self.assertEqual(
            [1, 1], [r.value for r in sweep.run_grid(lambda c: 1, GRID[:2], workers=1)]
        )
        shared = {"a": 100, "bb": 200, "ccc": 300}
        results = sweep.run_grid(score_with, GRID, shared=shared, workers=1)
        self.assertEqual([shared[c.policy] + c.seed for c in GRID], [r.value for r in results])
        seen: list[Cell] = []
        sweep.run_grid(score, GRID, workers=1, on_result=lambda r: seen.append(r.cell))
        self.assertEqual(sorted(GRID, key=str), sorted(seen, key=str))

    def assert_tried_again(self, results) -> None:
        self.assertEqual(["a", "a", "a"], [r.value for r in results])
        self.assertEqual([1, 2, 1], [r.attempts for r in results])
        self.assertTrue(all(r.ok for r in results))

    def assert_given_up(self, results, grid: list[Flaky]) -> None:
        self.assertEqual(3, len(results))
        self.assertEqual([True, False, True], [r.ok for r in results])
        self.assertEqual(grid[1], results[1].cell)
        self.assertEqual("RuntimeError: a failed", results[1].error)
        self.assertEqual(2, results[1].attempts)
        self.assertIsNone(results[1].value)
        self.assertEqual([results[1]], sweep.failed(results))

    def test_in_this_process_a_cell_that_fails_once_is_tried_again(self) -> None:
        grid = flaky_grid(self.folder, 1)
        self.assert_tried_again(sweep.run_grid(flaky, grid, workers=1, key=lambda f: str(f.cell)))
        # The first line of the error: one line a failure in the log.
        self.assertIn(
            "cell Cell(policy='a', seed=1) failed (RuntimeError: a failed); trying it once more",
            self.logs.output,
        )

    def test_in_this_process_a_cell_that_always_fails_is_reported_not_dropped(self) -> None:
        grid = flaky_grid(self.folder, 2)
        results = sweep.run_grid(flaky, grid, workers=1, key=lambda f: str(f.cell.seed))
        self.assert_given_up(results, grid)
        self.assertIn("cell 1 failed again (RuntimeError: a failed); giving up", self.logs.output)

    def test_a_lost_worker_is_tried_again_and_reported(self) -> None:
        # A pool that loses a worker is mended by the executor's own thread:
        # under the test runner's eventlet patching that thread is green and
        # can wait forever, so the pool runs from a clean interpreter, as a
        # user's command would.
        once, twice = (self.useFixture(fixtures.TempDir()).path for _ in range(2))
        found = clusters.in_clean_process(lost_worker_grids, once, twice)
        results = found["once"]
        self.assertEqual([True, True, True], [r.ok for r in results])
        self.assertEqual(2, results[1].attempts)
        results = found["twice"]
        self.assertEqual([True, False, True], [r.ok for r in results])
        self.assertIn("worker lost", results[1].error)
        self.assertTrue(any("worker lost" in m for m in found["logs"]), found["logs"])

    def test_ctrl_c_ends_a_pool_without_waiting_for_its_cells(self) -> None:
        script = os.path.join(self.folder, "endless.py")
        with open(script, "w") as stream:
            stream.write(_ENDLESS)
        started = os.path.join(self.folder, "started")
        os.mkdir(started)
        process = subprocess.Popen(
            [sys.executable, script, started],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # A group of its own, as a shell gives a command: Ctrl-C goes to
            # the command and its workers alike.
            start_new_session=True,
        )
        self.addCleanup(end_group, process)
        deadline = time.monotonic() + GENEROUS
        while len(os.listdir(started)) < 2 and process.poll() is None:
            self.assertLess(time.monotonic(), deadline, "the cells did not start")
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=GENEROUS)
        self.assertEqual(130, process.returncode, err)
        # Not a traceback from each worker: they leave the signal to the parent.
        self.assertEqual("interrupted\n", err)
        self.assertEqual(2, len(os.listdir(started)))

    def test_workers_end_with_a_parent_that_ends_abruptly(self) -> None:
        script = os.path.join(self.folder, "endless.py")
        with open(script, "w") as stream:
            stream.write(_ENDLESS)
        started = os.path.join(self.folder, "started")
        os.mkdir(started)
        process = subprocess.Popen(
            [sys.executable, script, started],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.addCleanup(end_group, process)
        deadline = time.monotonic() + GENEROUS
        while len(os.listdir(started)) < 2 and process.poll() is None:
            self.assertLess(time.monotonic(), deadline, "the cells did not start")
            time.sleep(0.1)
        workers = children(process.pid)
        self.assertNotEqual([], workers)
        # The parent alone, killed as nothing can clean up after: its
        # workers, in the middle of endless cells, must not outlive it.
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + GENEROUS
        while [w for w in workers if services.alive(w)]:
            self.assertLess(time.monotonic(), deadline, f"workers {workers} outlived the parent")
            time.sleep(0.1)

    def test_ctrl_c_while_a_worker_forks_is_dropped_by_the_worker(self) -> None:
        script = os.path.join(self.folder, "ctrl_c_at_fork.py")
        with open(script, "w") as stream:
            stream.write(_CTRL_C_AT_FORK)
        done = subprocess.run(
            [sys.executable, script],
            capture_output=True,
            text=True,
            timeout=GENEROUS,
            start_new_session=True,
        )
        # Unheld, each worker raised KeyboardInterrupt in its copy of the
        # sweep and the pool broke: tracebacks, and cells lost twice.
        self.assertEqual((0, ""), (done.returncode, done.stderr))
        self.assertEqual("[(True, 0), (True, 10), (True, 20), (True, 30)]\n", done.stdout)

    def test_what_does_not_pickle_is_refused_before_anything_runs(self) -> None:
        error = self.assertRaises(TypeError, sweep.run_grid, lambda c: 1, GRID, workers=2)
        self.assertIn("the cell function", str(error))
        error = self.assertRaises(
            TypeError, sweep.run_grid, score_with, GRID, shared=lambda: 1, workers=2
        )
        self.assertIn("shared", str(error))

    def test_bad_arguments(self) -> None:
        self.assertEqual([], sweep.run_grid(score, [], workers=2))
        error = self.assertRaises(ValueError, sweep.run_grid, score, GRID, workers=0)
        self.assertEqual("workers must be at least 1, not 0", str(error))

    def test_a_bad_dask_address_is_one_line_naming_it(self) -> None:
        chatter = self.useFixture(Chatter()).address
        for address in ("tcp://127.0.0.1:1", "nonsense", "foo://bar:1", chatter):
            error = self.assertRaises(
                sweep.DaskUnreachable,
                sweep.run_grid,
                score,
                GRID,
                dask_address=address,
                connect_timeout=0.5,
            )
            self.assertIsInstance(error, ValueError)
            self.assertIn(f"no Dask scheduler at {address!r}", str(error))
            self.assertEqual(1, len(str(error).splitlines()))


class Chatter(fixtures.Fixture):
    """A TCP server on this machine that answers every connection with bytes
    that are not Dask's: something else listening at the address given."""

    def _setUp(self) -> None:
        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4)

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.address = f"tcp://127.0.0.1:{server.server_address[1]}"


class Messages(logging.Handler):
    """The messages logged, where :class:`fixtures.FakeLogger` cannot reach:
    in the clean process that talks to the cluster."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def grids_on_dask(address: str, folder: str) -> dict:
    """The grids :class:`TestOnDask` checks, run on the cluster at ``address``."""
    messages = Messages()
    logging.getLogger(sweep.__name__).addHandler(messages)
    shared = {"a": 1, "bb": 2, "ccc": 3}
    flakies = [
        Flaky(folder, cell, failures) for cell, failures in zip(GRID, (0, 1, 2), strict=False)
    ]
    return {
        "plain": sweep.run_grid(score, GRID, dask_address=address),
        "shared": sweep.run_grid(score_with, GRID, shared=shared, dask_address=address),
        "flaky": sweep.run_grid(flaky, flakies, dask_address=address),
        "where": sweep.run_grid(where, GRID, dask_address=address),
        "pid": os.getpid(),
        "logs": messages.messages,
    }


class TestOnDask(testtools.TestCase):
    def test_a_grid_end_to_end(self) -> None:
        address = self.useFixture(clusters.DaskCluster()).address
        folder = self.useFixture(fixtures.TempDir()).path
        found = clusters.in_clean_process(grids_on_dask, address, folder)
        self.assertEqual([score(cell) for cell in GRID], [r.value for r in found["plain"]])
        self.assertEqual([str(cell) for cell in GRID], [r.key for r in found["plain"]])
        self.assertEqual(
            [{"a": 1, "bb": 2, "ccc": 3}[c.policy] + c.seed for c in GRID],
            [r.value for r in found["shared"]],
        )
        results = found["flaky"]
        self.assertEqual([True, True, False], [r.ok for r in results])
        self.assertEqual([1, 2, 2], [r.attempts for r in results])
        self.assertEqual("RuntimeError: a failed", results[2].error)
        self.assertIsNone(results[2].value)
        self.assertIn("failed again (RuntimeError: a failed); giving up", "\n".join(found["logs"]))
        # The cells ran in the cluster's workers, not in the process that asked.
        self.assertNotIn(found["pid"], {r.value for r in found["where"]})
