#!/usr/bin/env python3
"""Set up a virtual environment and run the demo or the whole test suite.

    python3.11 tools/quickstart.py demo    # the all-in-one demo
    python3.11 tools/quickstart.py test    # lint + every test + docs

Only Python 3.11 is needed: the script makes ``.venv`` (or $HPC_VENV) and
installs the plugin with Nova, Placement, the test tools and the
documentation tools, pinned by ``tools/constraints.txt``; it reinstalls only
when those files change.

Database tests use MariaDB and PostgreSQL on localhost when they answer
(``OS_TEST_DBAPI_ADMIN_CONNECTION`` chooses other servers) and skip when they
do not, except where ``CI`` or ``HPC_REQUIRE_DB_BACKENDS`` is set: there a
missing backend fails the run.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("HPC_VENV", ROOT / ".venv"))
PINNED = [
    "requirements.txt",
    "test-requirements.txt",
    "doc/requirements.txt",
    "tools/constraints.txt",
    "setup.cfg",
]
# sqlite:// must stay in the list: Nova's own test fixtures provision their
# SQLite databases through the same variable.
DEFAULT_DB_ADMIN = (
    "sqlite://;mysql+pymysql://root@127.0.0.1/;postgresql+psycopg2://postgres@127.0.0.1/postgres"
)


def _bin(name: str) -> str:
    return str(VENV / "bin" / name)


def _run(*command: str, env: dict[str, str] | None = None) -> int:
    print("+", " ".join(command), flush=True)
    return subprocess.call(command, cwd=ROOT, env=env)


def ensure_venv() -> None:
    if sys.version_info < (3, 11):
        sys.exit("Python 3.11 or newer is needed")
    digest = hashlib.sha256(b"".join((ROOT / p).read_bytes() for p in PINNED)).hexdigest()
    stamp = VENV / ".hpc-nova-scheduler-installed"
    if stamp.is_file() and stamp.read_text() == digest:
        return
    if not (VENV / "bin" / "python").exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    code = _run(
        _bin("python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-c",
        "tools/constraints.txt",
        "-r",
        "requirements.txt",
        "-r",
        "test-requirements.txt",
        "-r",
        "doc/requirements.txt",
        "-e",
        ".",
    )
    if code:
        sys.exit(f"installation failed (exit {code})")
    stamp.write_text(digest)


def _sphinx(tree: str) -> tuple[str, ...]:
    # Every warning an error, as tox -e docs and tox -e releasenotes build.
    # -E reads every page again: the generated references and the reno notes
    # change without their pages changing.
    return ("sphinx-build", "-W", "-E", "-q", "-b", "html", f"{tree}/source", f"{tree}/build/html")


def run_demo(extra: list[str]) -> int:
    return _run(_bin("hpc-nova-scheduler"), "demo", *extra)


def _summary(env: dict[str, str]) -> tuple[int, int, int] | None:
    result = subprocess.run(
        [_bin("stestr"), "last"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    counts = {}
    for label in ("Passed", "Failed", "Skipped"):
        match = re.search(rf"- {label}: (\d+)", result.stdout)
        counts[label] = int(match.group(1)) if match else 0
    if not any(counts.values()):
        return None
    return counts["Passed"], counts["Failed"], counts["Skipped"]


def run_tests(extra: list[str]) -> int:
    env = dict(os.environ)
    env.setdefault("OS_TEST_DBAPI_ADMIN_CONNECTION", DEFAULT_DB_ADMIN)
    if env.get("CI", "").lower() in ("1", "true", "yes"):
        env["HPC_REQUIRE_DB_BACKENDS"] = "1"
    env["PATH"] = str(VENV / "bin") + os.pathsep + env.get("PATH", "")
    failed = []
    for name, command in (
        ("ruff check", ("ruff", "check", ".")),
        ("ruff format", ("ruff", "format", "--check", ".")),
        ("docs", _sphinx("doc")),
        ("release notes", _sphinx("releasenotes")),
    ):
        if _run(_bin(command[0]), *command[1:], env=env):
            failed.append(name)
    # A fresh clone's stestr has no durations to share the tests out by.
    if _run(_bin("python"), "tools/test_times.py", "seed", env=env):
        failed.append("test times")
    code = _run(_bin("stestr"), "run", *extra, env=env)
    counts = _summary(env)
    if counts is None:
        print("tests: no test ran", flush=True)
        return 1
    passed, failures, skipped = counts
    print(f"tests: {passed} passed, {failures} failed, {skipped} skipped", flush=True)
    if failed:
        print("failed: " + ", ".join(failed), flush=True)
    return 1 if (code or failures or failed or passed == 0) else 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("demo", "test"):
        print(__doc__)
        return 2
    ensure_venv()
    action, extra = sys.argv[1], sys.argv[2:]
    return run_demo(extra) if action == "demo" else run_tests(extra)


if __name__ == "__main__":
    sys.exit(main())
