"""A real Dask cluster for tests, and a clean interpreter to talk to it from.

The test runner's processes are not a place for Dask: stestr imports every
test module, Nova's functional tests among them, and those apply eventlet's
monkey-patching to the whole process. Under it threads are green threads
that share one OS thread, and Dask's client and scheduler, which run an
asyncio loop on a thread of their own, hang or find "a running event loop"
where there is none of theirs. So the cluster runs in an interpreter of
its own (:class:`DaskCluster`), and a test calls the sweep or the command
in another (:func:`in_clean_process`), as a user's shell would.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import fixtures

from hpc_nova_scheduler import resources

T = TypeVar("T")

#: Long enough for a loaded CI machine to start, or stop, two worker processes.
START_TIMEOUT = 120.0
CLOSE_TIMEOUT = 60.0

_CLUSTER = """
import sys
from distributed import LocalCluster

cluster = LocalCluster(
    n_workers=2,
    threads_per_worker=1,
    processes=True,
    dashboard_address=None,
    worker_dashboard_address=None,
)
print(cluster.scheduler_address, flush=True)
sys.stdin.read()  # until the test closes it
cluster.close()
"""


class DaskCluster(fixtures.Fixture):
    """A :class:`distributed.LocalCluster` of two worker processes of one
    thread each, in its own interpreter; ``address`` is its scheduler's.

    Worker processes, not threads: cells and results really pickle, and
    the workers import the cell functions as a remote cluster's would. They
    start in the repository's root, so ``tests`` imports there too.
    """

    def _setUp(self) -> None:
        log = os.path.join(self.useFixture(fixtures.TempDir()).path, "cluster.log")
        with open(log, "w") as stream:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _CLUSTER],
                cwd=resources.SOURCE_ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stream,
                text=True,
            )
        self.addCleanup(self._close)
        # A cluster that hangs while starting is ended: its address is then "".
        timer = threading.Timer(START_TIMEOUT, self.process.kill)
        timer.start()
        try:
            self.address = self.process.stdout.readline().strip()
        finally:
            timer.cancel()
        if not self.address:
            with open(log) as stream:
                raise RuntimeError(f"the Dask cluster did not start:\n{stream.read()[-2000:]}")

    def _close(self) -> None:
        # End of input tells the cluster to close its workers and itself.
        self.process.stdin.close()
        try:
            self.process.wait(timeout=CLOSE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


def in_clean_process(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a new interpreter, free of the runner's monkey-patching.

    ``fn`` and its arguments and result must pickle; ``fn`` is a top-level
    function of an importable module.
    """
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(fn, *args).result()
