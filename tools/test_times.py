#!/usr/bin/env python3
"""Test durations that let stestr balance a fresh clone's two workers.

stestr shares the tests among its workers by the durations its repository
(``.stestr``) has recorded. A fresh clone has none, so it deals the tests
out in turn, and one worker of CI finished six minutes after the other.
``seed`` gives a new repository the durations in ``tools/test-times.json``
(loaded as a run, which is then removed: the durations stay and nothing
else does); ``record`` rewrites that file from the last whole run. Tests
missing from the file are dealt out in turn, as before: the file is a hint
and stale entries cost balance, never correctness.

Run with the virtual environment's Python (it needs stestr's subunit)::

    .venv/bin/python tools/test_times.py seed     # before `stestr run`
    .venv/bin/python tools/test_times.py record   # after a whole run
"""

from __future__ import annotations

import datetime
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import subunit
import testtools
from stestr import utils as stestr_utils

from hpc_nova_scheduler.atomicfile import open_replacing

ROOT = Path(__file__).resolve().parents[1]
#: The durations, relative to the tree's root.
TIMES = Path("tools", "test-times.json")
#: Tests shorter than this are left out of the file: dealt out in turn,
#: they balance well enough, and the file stays small.
SHORTEST = 1.0


def _stestr(root: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    stestr = str(Path(sys.executable).with_name("stestr"))
    return subprocess.run([stestr, *args], cwd=root, input=data, capture_output=True, check=False)


def _stream(times: dict[str, float]) -> bytes:
    """A subunit v2 stream in which each test passed in its duration."""
    buffer = io.BytesIO()
    out = subunit.StreamResultToBytes(buffer)
    start = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
    for test_id, seconds in sorted(times.items()):
        out.status(test_id=test_id, test_status="inprogress", timestamp=start)
        stop = start + datetime.timedelta(seconds=seconds)
        out.status(test_id=test_id, test_status="success", timestamp=stop)
    return buffer.getvalue()


def _durations(value: object) -> dict[str, float]:
    """The file's content as test id -> seconds; ValueError naming the
    first entry that is not one."""
    if not isinstance(value, dict):
        raise ValueError("not an object of test ids and seconds")
    for test_id, seconds in value.items():
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise ValueError(f"{test_id}: {seconds!r} is not a duration in seconds")
    return value


def seed(root: Path = ROOT) -> int:
    """Give the tree's new ``.stestr`` the durations of the file; leave one
    that exists alone (its own durations are better)."""
    if (root / ".stestr").exists():
        return 0
    try:
        times = _durations(json.loads((root / TIMES).read_text()))
    except (OSError, ValueError) as error:
        print(f"{TIMES}: {error}; tests are dealt out in turn")
        return 0
    loaded = _stestr(root, "load", "--force-init", data=_stream(times))
    if loaded.returncode:
        print(f"{TIMES}: stestr load failed; tests are dealt out in turn")
        return 0
    # The loaded run is not a run of this tree: only its durations stay.
    removed = _stestr(root, "history", "remove", "all")
    if removed.returncode:
        print("stestr history remove failed: " + removed.stdout.decode().strip())
        return 1
    print(f"stestr: {len(times)} test durations from {TIMES}")
    return 0


def record(root: Path = ROOT) -> int:
    """Rewrite the file from the last run's tests of ``SHORTEST`` s or more."""
    last = _stestr(root, "last", "--subunit")
    if last.returncode or not last.stdout:
        print("stestr last: no run to record")
        return 1
    times: dict[str, float] = {}

    def on_test(test: dict) -> None:
        start, stop = test["timestamps"]
        if test["status"] in ("success", "fail") and start and stop:
            seconds = (stop - start).total_seconds()
            if seconds >= SHORTEST:
                times[stestr_utils.cleanup_test_name(test["id"])] = round(seconds, 1)

    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    subunit.ByteStreamToStreamResult(io.BytesIO(last.stdout), non_subunit_name="stdout").run(result)
    result.stopTestRun()
    # Whole or not at all: a half-written file would leave the next clone unbalanced.
    with open_replacing(str(root / TIMES)) as stream:
        stream.write(json.dumps(dict(sorted(times.items())), indent=0) + "\n")
    print(f"{TIMES}: {len(times)} tests of {SHORTEST} s or more")
    return 0


def main() -> int:
    actions = {"seed": seed, "record": record}
    if len(sys.argv) != 2 or sys.argv[1] not in actions:
        print(__doc__)
        return 2
    return actions[sys.argv[1]]()


if __name__ == "__main__":
    sys.exit(main())
