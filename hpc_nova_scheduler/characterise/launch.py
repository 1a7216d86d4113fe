"""Run one command and report its wall time and resource usage as JSON.

``python -m hpc_nova_scheduler.characterise.launch RESULT -- COMMAND...``

The characteriser starts every measured run through this small process.
Linux carries a process's peak memory across exec, so a command spawned
straight from a large process (the characteriser, a test runner) would
report that process's memory as its own peak; spawned from here, it
reports its own. The wall time is taken here too, around the command
alone. The exit status is the command's.
"""

from __future__ import annotations

import json
import os
import sys
import time

FIELDS = (
    "ru_utime",
    "ru_stime",
    "ru_maxrss",
    "ru_minflt",
    "ru_majflt",
    "ru_nvcsw",
    "ru_nivcsw",
    "ru_inblock",
    "ru_oublock",
)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: launch RESULT -- COMMAND...\n")
        return 2
    result, command = argv[0], argv[2:]
    started = time.perf_counter()
    try:
        pid = os.posix_spawnp(command[0], command, os.environ)
    except OSError as error:
        sys.stderr.write(f"cannot run {command[0]!r}: {error}\n")
        return 127
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    with open(result, "w") as stream:
        json.dump({"wall": wall, "status": code, **{f: getattr(usage, f) for f in FIELDS}}, stream)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
