"""Writers of one SQLite file take turns: threads in Python, processes on a file lock.

SQLite has one write lock per database file. A connection that wants it
while another holds it polls, sleeping up to 100 ms between tries, for the
connection's timeout. Polling that slowly is not a queue: under load a
writer can lose every try to writers that come and go between its sleeps,
and fail with ``database is locked`` however short each transaction is.
Scheduler threads and workers therefore take turns here before they write:

* the threads of a process queue on one re-entrant lock per file, shared by
  every handle opened on it;
* the processes then take an exclusive ``flock`` of a file beside the
  database. A waiter tries every few milliseconds rather than blocking in
  the kernel: a blocked call would stop every green thread of an eventlet
  process, and could not give up. After :data:`WAIT` seconds it gives up
  and leaves the matter to SQLite's own lock, as if this module did not
  exist.

SQLite's own lock, and its wait, still guard everything else (readers,
migrations, tools that do not come through here).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import weakref

#: What the lock file is called: the database's name with this added.
SUFFIX = "-writers"
#: Seconds a writer waits for another process's turn (and SQLite's for its lock).
WAIT = 30.0
#: Seconds between a waiter's first tries, and at most between later ones.
FIRST_TRY, LATEST_TRY = 0.001, 0.01


class FileWriteLock:
    """Every writer of one SQLite file: the threads of this process, then other processes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._threads = threading.RLock()
        # How deep the holding thread is; the file is locked at the outermost.
        self._depth = 0
        self._fd: int | None = None

    def __enter__(self) -> FileWriteLock:
        self._threads.acquire()
        try:
            if self._depth == 0:
                self._lock_file()
            self._depth += 1
        except BaseException:
            self._threads.release()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self._depth -= 1
            if self._depth == 0:
                self._unlock_file()
        finally:
            self._threads.release()

    def _lock_file(self) -> None:
        # Opened for each hold, not kept: a process that wrote to many
        # databases (a test run) would otherwise keep a descriptor for each.
        try:
            # Read-only is enough for flock, and lets a worker running as
            # another user share a lock file that an operator's command made.
            fd = os.open(self.path + SUFFIX, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            # A directory this process may not create in: SQLite's own lock
            # is then the only one, as it was before.
            return
        try:
            locked = _take(fd)
        except BaseException:
            os.close(fd)
            raise
        if locked:
            self._fd = fd
        else:
            os.close(fd)

    def _unlock_file(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            # Closing the last descriptor of the open file lets the lock go.
            os.close(fd)

    def forget(self) -> None:
        """Close a lock file inherited by a forked child.

        The parent's lock stays: it lasts while any copy of the descriptor
        is open, and the parent still has its own.
        """
        self._unlock_file()


def _take(fd: int) -> bool:
    """Lock ``fd``'s file, trying for up to :data:`WAIT` seconds; whether it was."""
    deadline = time.monotonic() + WAIT
    pause = FIRST_TRY
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
        time.sleep(pause)
        pause = min(pause * 2, LATEST_TRY)


# Weak: a file's lock lives while some thread holds or waits for it.
_locks: weakref.WeakValueDictionary[str, FileWriteLock] = weakref.WeakValueDictionary()
_guard = threading.Lock()


def _forget_all() -> None:
    # A lock held by a thread of the parent as a worker forks would stay
    # held in the child, where that thread does not exist; and a shared open
    # lock file would make the two processes one holder.
    global _guard
    _guard = threading.Lock()
    for lock in list(_locks.values()):
        lock.forget()
    _locks.clear()


os.register_at_fork(after_in_child=_forget_all)


def for_file(path: str) -> FileWriteLock:
    """This process's write lock for the SQLite database at ``path``.

    Look it up at each write rather than keep it: after a fork the child
    has new ones.
    """
    path = os.path.realpath(path)
    with _guard:
        lock = _locks.get(path)
        if lock is None:
            lock = _locks[path] = FileWriteLock(path)
        return lock
