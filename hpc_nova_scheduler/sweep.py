"""Sweeps: a grid of independent cells run on a process pool or a Dask cluster.

A sweep runs one function over every cell of a grid (scenarios or logs x
policies x parameters x seeds, say) and gathers the results in the grid's
order. It is a helper: it imports nothing else from the package, so any
command or research system can use it.

The API is :func:`run_grid`, with :func:`failed` and :func:`in_process`::

    results = sweep.run_grid(
        fn,                   # picklable top-level function: fn(cell) or fn(cell, shared)
        cells,                # the grid, in order: small frozen dataclasses or tuples
        shared=context,       # optional: what every cell reads (the jobs, the cloud...),
                              #   sent once to each worker rather than once per cell
        workers=None,         # local processes; None: os.cpu_count(); 1: in this process
        dask_address=None,    # "tcp://host:8786": an existing Dask cluster instead
        key=str,              # a cell's name in logs and in its result
        on_result=None,       # called in this process with each finished CellResult
    )
    for result in results:    # one CellResult per cell, in the grid's order
        result.cell, result.key, result.ok, result.value, result.error, result.attempts
    for result in sweep.failed(results):  # those that failed both tries
        print(f"{result.key}: {result.error}", file=sys.stderr)  # then exit non-zero
    sweep.in_process(cells, workers, dask_address)  # True: fn may hold what cannot pickle

``fn`` must not depend on what other cells did: cells run in any order,
several on one worker, each worker with its own copy of ``shared``. A
cell that changes ``shared`` changes it for some later cells only, so
``fn`` builds whatever it changes (a planner, a random generator) afresh,
from the cell and ``shared``; then the results do not depend on where
cells ran. ``shared`` None means there is none: ``fn(cell)`` is called.

Where cells run:

* ``workers=1`` (or a grid of one cell): in this process, one after the
  other, so that a debugger and a traceback see the cell's own frames, and
  whatever ``fn`` and ``shared`` are need not pickle. A grid of one cell
  gains nothing from a pool.
* otherwise, without ``dask_address``: a local
  :class:`~concurrent.futures.ProcessPoolExecutor` of ``min(workers,
  cells)`` processes, with the platform's default start method.
* with ``dask_address``: the cells are submitted to the existing Dask
  cluster there (:class:`distributed.Client`); ``workers`` is not used, the
  cluster has its own. The workers must be able to import ``fn``'s module.

A cell fails when ``fn`` raises or when its worker is lost. Every failure
is logged (the cell's key and the error) and the cell is tried once more;
a cell that fails again is in the results with ``ok`` false and ``error``
its one-line message, never left out. Callers report such cells and exit
non-zero. A local pool that loses a worker stops every cell running on it:
those cells fail (their workers were lost), the cells that had not started
are run again without counting it against them.

Ctrl-C (:class:`KeyboardInterrupt` in the calling process) ends a local
pool's workers at once, running cells and all, and is raised again: the
caller reports it. Workers ignore the signal themselves.

An address where no Dask scheduler answers within ``connect_timeout``
seconds raises :class:`DaskUnreachable`, a :class:`ValueError` whose
message is one line naming the address. ``fn``, ``shared`` or a cell that
does not pickle, for a pool or a cluster, raises :class:`TypeError` before
anything runs: that is a mistake in the caller, not a failed cell.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import dataclasses
import logging
import multiprocessing
import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Generic, TypeVar

LOG = logging.getLogger(__name__)

C = TypeVar("C")
R = TypeVar("R")

#: Tries a cell gets: the first and one more.
TRIES = 2
#: Seconds to wait for a Dask scheduler to answer.
CONNECT_TIMEOUT = 5.0


class DaskUnreachable(ValueError):
    """No Dask scheduler answered at the address given."""


@dataclasses.dataclass(frozen=True)
class CellResult(Generic[C, R]):
    """One cell of a grid, and what came of it.

    ``value`` is what ``fn`` returned (None when the cell failed);
    ``error`` is None, or the one-line message of its last failure;
    ``attempts`` counts the tries it took (1 or 2).
    """

    cell: C
    key: str
    value: R | None = None
    error: str | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None


def failed(results: Iterable[CellResult]) -> list[CellResult]:
    """The results whose cell failed every try."""
    return [result for result in results if not result.ok]


def in_process(
    cells: Sequence[Any], workers: int | None = None, dask_address: str | None = None
) -> bool:
    """Whether :func:`run_grid` runs these cells in the calling process.

    A caller may then hand ``fn`` things that do not pickle (a progress bar).
    """
    return dask_address is None and min(_workers(workers), len(cells)) <= 1


def run_grid(
    fn: Callable[..., R],
    cells: Iterable[C],
    *,
    shared: Any = None,
    workers: int | None = None,
    dask_address: str | None = None,
    key: Callable[[C], str] = str,
    on_result: Callable[[CellResult[C, R]], None] | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> list[CellResult[C, R]]:
    """Run ``fn`` over every cell; one :class:`CellResult` a cell, in the grid's order.

    ``fn(cell)`` is called, or ``fn(cell, shared)`` when ``shared`` is not
    None. See the module's documentation for where cells run and how
    failures are tried again and reported.
    """
    grid = list(cells)
    count = _workers(workers)
    keys = [key(cell) for cell in grid]
    tasks = _Tasks(fn, grid, keys, shared, on_result)
    if not grid:
        return []
    if dask_address is not None:
        _check_pickles(fn, grid, shared)
        _on_dask(tasks, dask_address, connect_timeout)
    elif in_process(grid, count):
        _in_process(tasks)
    else:
        _check_pickles(fn, grid, shared)
        _on_pool(tasks, min(count, len(grid)))
    return tasks.results()


def _workers(workers: int | None) -> int:
    if workers is None:
        return os.cpu_count() or 1
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    return workers


def _check_pickles(fn: Callable, grid: Sequence, shared: Any) -> None:
    for what, value in (
        ("the cell function", fn),
        ("shared", shared),
        *(("cell", c) for c in grid),
    ):
        try:
            pickle.dumps(value)
        except Exception as error:
            # Anything may fail to pickle, and with any exception.
            raise TypeError(
                f"{what} {_short(value)} cannot be sent to a worker: {_message(error)}"
            ) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _message(error: BaseException) -> str:
    """``Type: first line of the message``: one line to log and to print."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


class _Tasks:
    """The grid's bookkeeping: tries, outcomes and the reports of failures."""

    def __init__(self, fn, grid, keys, shared, on_result) -> None:
        self.fn = fn
        self.grid = grid
        self.keys = keys
        self.shared = shared
        self.on_result = on_result
        self.tries = [0] * len(grid)
        self.outcomes: list[CellResult | None] = [None] * len(grid)

    def succeeded(self, index: int, value: Any) -> None:
        self.tries[index] += 1
        self._settle(
            index, CellResult(self.grid[index], self.keys[index], value, None, self.tries[index])
        )

    def failed(self, index: int, error: str) -> bool:
        """Count a failed try; True when the cell is to be tried once more."""
        self.tries[index] += 1
        if self.tries[index] < TRIES:
            LOG.warning("cell %s failed (%s); trying it once more", self.keys[index], error)
            return True
        LOG.error("cell %s failed again (%s); giving up", self.keys[index], error)
        self._settle(
            index, CellResult(self.grid[index], self.keys[index], None, error, self.tries[index])
        )
        return False

    def _settle(self, index: int, result: CellResult) -> None:
        self.outcomes[index] = result
        if self.on_result is not None:
            self.on_result(result)

    def results(self) -> list[CellResult]:
        missing = [self.keys[i] for i, r in enumerate(self.outcomes) if r is None]
        # Each branch settles every cell; a hole here is a bug in this module.
        assert not missing, f"cells without a result: {missing}"
        return list(self.outcomes)  # type: ignore[arg-type]


def _in_process(tasks: _Tasks) -> None:
    for index, cell in enumerate(tasks.grid):
        while True:
            try:
                value = _call(tasks.fn, cell, tasks.shared)
            except Exception as error:
                if tasks.failed(index, _message(error)):
                    continue
            else:
                tasks.succeeded(index, value)
            break


def _call(fn: Callable, cell: Any, shared: Any) -> Any:
    return fn(cell) if shared is None else fn(cell, shared)


# -- a local process pool -------------------------------------------------------------

#: In a pool's worker: what every cell shares, and which cells have started.
_WORKER_SHARED: Any = None
_WORKER_STARTED: Any = None


#: Linux's prctl option: a signal the kernel sends when the parent ends.
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this worker when the process that started it ends.

    A worker whose parent ended without ending it (a Ctrl-C that met the
    pool as it started, a crash) would wait on the pool's queue forever,
    holding the parent's pipes open: a shell or a test waiting for them
    waits too (seen in CI). Linux only; elsewhere the parent's own
    clean-up is all there is.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)  # the parent ended before the request took hold


def _install(shared: Any, started: Any, parent: int | None = None) -> None:
    """A pool worker's initializer: keep what every cell of the pool reads."""
    global _WORKER_SHARED, _WORKER_STARTED
    if parent is not None:
        _die_with_parent(parent)
    _WORKER_SHARED, _WORKER_STARTED = shared, started
    # Ctrl-C reaches every process of the terminal's group: the parent ends
    # the pool, and a worker interrupted on its own would print a traceback
    # and go on to the next cell. Ignoring it also drops a Ctrl-C that came
    # while the parent held it off (see _sigint_held); then it may come in.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold Ctrl-C off while the pool starts its workers, and deliver it after.

    A forked worker runs its parent's code until it gets to its own: a
    Ctrl-C that reaches it in that instant is raised in a copy of the
    caller, which reports "interrupted" a second time (seen in CI). A held
    signal waits; the worker's initializer drops it, the parent gets its
    own as soon as the workers are started.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _pool_call(fn: Callable, cell: Any, index: int) -> Any:
    # Marked before the work, in shared memory that outlives this process:
    # if the worker dies, the parent knows this cell was running.
    _WORKER_STARTED[index] = 1
    return _call(fn, cell, _WORKER_SHARED)


def _pool_context() -> multiprocessing.context.BaseContext | None:
    """How pool workers start: forked, unless eventlet has patched this process.

    A process that eventlet patched (Nova's test harness, the demo) cannot
    fork safely: the child shares its parent's epoll hub, and a green read
    of the pool's queue there may wait for an event the parent took (a
    test run hung so). Its workers start as fresh interpreters instead.
    """
    eventlet = sys.modules.get("eventlet")
    if eventlet is not None and eventlet.patcher.is_monkey_patched("os"):
        return multiprocessing.get_context("spawn")
    return None


def _on_pool(tasks: _Tasks, workers: int) -> None:
    """Rounds of a fresh pool over the cells still to run, until none is left.

    Each round ends with its pool: all its cells done, or the pool broken
    by a lost worker. Every round settles or charges a try to at least one
    cell, so there are at most ``TRIES`` rounds a cell.
    """
    pending = list(range(len(tasks.grid)))
    while pending:
        context = _pool_context()
        started = (context or multiprocessing).Array("b", len(tasks.grid), lock=False)
        lost: list[int] = []
        again: list[int] = []
        pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=min(workers, len(pending)),
            mp_context=context,
            initializer=_install,
            initargs=(tasks.shared, started, os.getpid()),
        )
        try:
            with _sigint_held():
                futures = {pool.submit(_pool_call, tasks.fn, tasks.grid[i], i): i for i in pending}
            for future in concurrent.futures.as_completed(futures):
                index = futures[future]
                try:
                    value = future.result()
                except BrokenProcessPool:
                    lost.append(index)
                except Exception as error:
                    if tasks.failed(index, _message(error)):
                        again.append(index)
                else:
                    tasks.succeeded(index, value)
        except KeyboardInterrupt:
            # Ctrl-C: the user wants the prompt back now, not once the
            # running cells (minutes each, in a sweep) have ended.
            _terminate(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        running = [i for i in lost if started[i]] or lost
        for index in sorted(running):
            if tasks.failed(index, "worker lost: the process running the cell ended abruptly"):
                again.append(index)
        # Cells the broken pool never started lost nothing: no try is charged.
        again += [i for i in lost if i not in running]
        pending = sorted(again)


def _terminate(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """End the pool's workers at once, whatever cell they are running."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:  # Python 3.14
        terminate()
        return
    # Before 3.14 the executor keeps its processes only here.
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


# -- an existing Dask cluster ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Box:
    """``shared`` scattered as one object: Dask would split a list or a dict."""

    value: Any


def _dask_call(fn: Callable, cell: Any, box: _Box | None) -> Any:
    return _call(fn, cell, None if box is None else box.value)


def _probe(address: str, timeout: float) -> None:
    """Raise :class:`DaskUnreachable` unless a Dask scheduler answers at ``address``.

    Tried with a bare connection and Dask's handshake first: a
    :class:`distributed.Client` that fails to connect leaves an object whose
    clean-up prints tracebacks when it is collected.
    """
    from distributed.comm import connect

    async def knock() -> None:
        # The outer limit too: a peer that accepts and then says nothing.
        comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout + 1)
        await comm.close()

    try:
        asyncio.run(knock())
    except Exception as error:
        # Any failure at all, even of memory: something that is not a Dask
        # scheduler can answer with bytes that Dask reads as a huge length.
        raise _unreachable(address, error) from None


def _unreachable(address: str, error: BaseException) -> DaskUnreachable:
    why = _message(error)
    if not isinstance(error, OSError | ValueError):
        why = f"what answers there does not speak Dask ({why})"
    return DaskUnreachable(f"no Dask scheduler at {address!r}: {why}")


def _on_dask(tasks: _Tasks, address: str, timeout: float) -> None:
    from distributed import Client, as_completed

    _probe(address, timeout)
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except Exception as error:
        raise _unreachable(address, error) from None
    try:
        box = None
        if tasks.shared is not None:
            box = client.scatter(_Box(tasks.shared), broadcast=True, hash=False)

        def submit(index: int):
            # pure=False: a try again is a new task, not the failed one's result.
            return client.submit(_dask_call, tasks.fn, tasks.grid[index], box, pure=False)

        futures = {submit(i): i for i in range(len(tasks.grid))}
        running = as_completed(list(futures), loop=client.loop)
        for future in running:
            index = futures.pop(future)
            try:
                value = future.result()
            except Exception as error:
                # KilledWorker when the cluster lost the workers that ran it.
                if tasks.failed(index, _message(error)):
                    retry = submit(index)
                    futures[retry] = index
                    running.add(retry)
            else:
                tasks.succeeded(index, value)
            future.release()
    finally:
        client.close()
