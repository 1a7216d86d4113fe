"""Processes that tests start in a group of their own, as a shell starts a command."""

from __future__ import annotations

import os
import signal
import subprocess

#: Only so that a regression fails rather than hangs: never a measure of speed.
GENEROUS = 120.0


def end_group(process: subprocess.Popen) -> None:
    """Kill ``process``'s group if it still runs, and reap it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a pool's workers, say)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stream:
                # The name may hold spaces: the fields after it are plain.
                fields = stream.read().rpartition(")")[2].split()
        except OSError:
            continue  # not a process, or one that has just ended
        if entry.isdigit() and int(fields[1]) == pid:
            found.append(int(entry))
    return found
