#!/usr/bin/env python3
"""Nova's own functional tests, run with the plugin's filter and weigher on.

A compatibility job, too long for CI: it runs named modules of the installed
Nova's functional tests in three modes and compares them.

- ``off``:  Nova alone.
- ``on``:   ``HpcPlacementFilter`` appended to ``[filter_scheduler]
  enabled_filters``, the plugin's filters and weighers to
  ``available_filters`` and ``weight_classes``, as the install guide tells an
  operator; each test has its own plugin database (a fresh SQLite file).
- ``full``: as ``on``, with ``fairness_policy = pa-rr`` and
  ``topology_levels = block,rack``.

Run it with the project's virtual environment::

    .venv/bin/python tools/nova_compat.py --mode all
    .venv/bin/python tools/nova_compat.py --mode on --modules test_aggregates \\
        --concurrency 2 --list-failures

Nova is not edited: each module runs under stestr in a scratch directory,
through a generated package whose ``load_tests`` hands over Nova's module and
whose import installs two hooks (see :func:`install_hooks`). Each mode's
results are kept in the work directory (``--workdir``), so that ``--mode on``
run after ``--mode off`` is compared with it. A mode fails (exit status 1)
when a test that passes with ``off`` does not pass with it; without a
result of ``off`` to compare with, when any test fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hpc_nova_scheduler.cmd.options import positive_int

ROOT = Path(__file__).resolve().parents[1]
MODES = ("off", "on", "full")
#: Nova's functional test modules run by default (short names are under
#: ``nova.tests.functional``).
DEFAULT_MODULES = (
    "test_aggregates",
    "test_server_group",
    "test_scheduler",
    "test_cold_migrate",
    "test_boot_from_volume",
    "test_availability_zones",
    "test_servers",
)
NOVA_FUNCTIONAL = "nova.tests.functional"
PLUGIN_FILTERS = "hpc_nova_scheduler.scheduler.filters.all_filters"
PLUGIN_WEIGHERS = "hpc_nova_scheduler.scheduler.weights.all_weighers"
PLUGIN_FILTER = "HpcPlacementFilter"
#: ``[hpc_scheduler]`` options of each mode, besides the database.
MODE_FLAGS: dict[str, dict[str, object]] = {
    "off": {},
    "on": {},
    "full": {"fairness_policy": "pa-rr", "topology_levels": ["block", "rack"]},
}
#: Test outcomes that count as passed; anything else ran and failed, except skips.
PASSED = ("success", "xfail")
SKIPPED = ("skip",)
#: Listed and never started: their worker died or hung (a test that was
#: running then is reported failed).
NOT_RUN = ("exists",)
PACKAGE = "nova_compat_tests"
#: A test that hangs fails after this long instead of stopping its worker
#: for good (seen with Nova's PortAcceleratorServerOpsTest on a busy machine).
DEFAULT_TIMEOUT = 600


# -- the hooks, installed in the test processes --------------------------------


def _appended(values: list[str], extra: str) -> list[str]:
    return list(values) if extra in values else [*values, extra]


def install_hooks(mode: str) -> None:
    """Make every Nova test of this process run with the plugin in ``mode``.

    Two hooks, the least that reaches every test whatever it configures:

    - after ``nova.test.TestCase.setUp`` (where Nova's config fixture starts),
      the test finds the api-paste.ini that the nova wheel installs (Nova's
      default is a source tree's) and, with the plugin, a fresh plugin
      database, migrated as the plugin's own functional harness does, and
      the mode's ``[hpc_scheduler]`` options;
    - when a scheduler builds its ``HostManager``, the plugin's filter and
      weighers are appended to whatever the test configured by then (many of
      Nova's tests set their own ``enabled_filters`` or ``weight_classes``),
      as an operator appends them to theirs.

    Both change Nova's config fixture, which resets them after each test.
    """
    import fixtures
    from nova import conf as nova_conf
    from nova import test as nova_test
    from nova.scheduler import host_manager

    from hpc_nova_scheduler import conf as hpc_conf
    from hpc_nova_scheduler.db import api as db_api
    from hpc_nova_scheduler.demo.cloud import api_paste_config

    conf = nova_conf.CONF
    paste = api_paste_config()
    set_up = nova_test.TestCase.setUp
    build = host_manager.HostManager.__init__

    def setUp(self) -> None:
        set_up(self)
        conf.set_default("api_paste_config", paste, group="wsgi")
        if mode == "off":
            return
        directory = self.useFixture(fixtures.TempDir()).path
        url = "sqlite:///" + os.path.join(directory, "hpc.sqlite")
        database = db_api.Database(url)
        self.addCleanup(database.dispose)
        database.sync()
        self.flags(
            connection=url,
            fallback_connection="sqlite:///" + os.path.join(directory, "hpc-fallback.sqlite"),
            group=hpc_conf.GROUP_NAME,
            **MODE_FLAGS[mode],
        )

    def __init__(self) -> None:
        scheduler = conf.filter_scheduler
        for option, extra in (
            ("available_filters", PLUGIN_FILTERS),
            ("enabled_filters", PLUGIN_FILTER),
            ("weight_classes", PLUGIN_WEIGHERS),
        ):
            conf.set_override(option, _appended(scheduler[option], extra), "filter_scheduler")
        build(self)

    nova_test.TestCase.setUp = setUp
    if mode != "off":
        host_manager.HostManager.__init__ = __init__


# -- the runner ----------------------------------------------------------------


@dataclasses.dataclass
class Result:
    """One module's run in one mode: test id -> outcome, and the details of failures."""

    module: str
    mode: str
    outcomes: dict[str, str]
    details: dict[str, str] = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    error: str = ""

    @property
    def run(self) -> int:
        return sum(1 for status in self.outcomes.values() if status not in SKIPPED + NOT_RUN)

    @property
    def failed(self) -> list[str]:
        return sorted(
            test
            for test, status in self.outcomes.items()
            if status not in PASSED + SKIPPED + NOT_RUN
        )

    @property
    def not_run(self) -> list[str]:
        return sorted(test for test, status in self.outcomes.items() if status in NOT_RUN)

    @property
    def skipped(self) -> int:
        return sum(1 for status in self.outcomes.values() if status in SKIPPED)


def module_path(name: str) -> str:
    """``test_servers`` -> ``nova.tests.functional.test_servers``; dotted names stay."""
    return name if "." in name else f"{NOVA_FUNCTIONAL}.{name}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="nova_compat.py",
        description="Run Nova's own functional tests with the plugin off, on, or fully on.",
    )
    parser.add_argument("--mode", choices=[*MODES, "all"], default="all")
    parser.add_argument(
        "--modules",
        nargs="+",
        default=list(DEFAULT_MODULES),
        metavar="MODULE",
        help=f"Nova test modules; short names are under {NOVA_FUNCTIONAL}",
    )
    parser.add_argument("--concurrency", type=positive_int, default=1)
    parser.add_argument(
        "--timeout",
        type=positive_int,
        default=DEFAULT_TIMEOUT,
        help="seconds after which a test fails (OS_TEST_TIMEOUT; default %(default)s)",
    )
    parser.add_argument(
        "--filter",
        type=_regex,
        metavar="REGEX",
        help="only the tests whose id matches (a long module in parts); "
        "the results add to those of the module's earlier parts",
    )
    parser.add_argument(
        "--list-failures",
        action="store_true",
        help="print the last line of each failure's traceback too",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "hpc-nova-compat",
        help="scratch runs and the results of each mode (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    args.modules = list(dict.fromkeys(module_path(name) for name in args.modules))
    args.modes = list(MODES) if args.mode == "all" else [args.mode]
    return args


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular expression: {error}") from None
    return text


def regressions(baseline: dict[str, str], other: dict[str, str]) -> list[str]:
    """Tests that pass in ``baseline`` and do not pass (or did not run) in ``other``."""
    return sorted(
        test
        for test, status in baseline.items()
        if status in PASSED and other.get(test) not in PASSED
    )


def selected(outcomes: dict[str, str], test_filter: str | None) -> dict[str, str]:
    """The outcomes of the tests that ``--filter`` selects (all without one)."""
    if test_filter is None:
        return outcomes
    pattern = re.compile(test_filter)
    return {test: status for test, status in outcomes.items() if pattern.search(test)}


def signature(details: str) -> str:
    """The last non-empty line of a traceback: what a failure is at a glance."""
    lines = [line.strip() for line in details.splitlines() if line.strip()]
    return lines[-1] if lines else "(no details)"


def _scratch_package(directory: Path, mode: str, module: str) -> None:
    package = directory / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        f"import nova_compat\n\nnova_compat.install_hooks({mode!r})\n"
    )
    (package / "test_nova.py").write_text(
        "import importlib\n\n\n"
        "def load_tests(loader, tests, pattern):\n"
        f"    return loader.loadTestsFromModule(importlib.import_module({module!r}))\n"
    )


def _outcomes(stream: bytes) -> tuple[dict[str, str], dict[str, str]]:
    import subunit
    import testtools
    from stestr import utils as stestr_utils

    outcomes: dict[str, str] = {}
    details: dict[str, str] = {}

    def on_test(test: dict) -> None:
        test_id = stestr_utils.cleanup_test_name(test["id"])
        # A test may come twice (listed as "exists", then run): the last word stays.
        outcomes[test_id] = test["status"]
        details.pop(test_id, None)
        if test["status"] not in PASSED and test["status"] not in SKIPPED:
            details[test_id] = "\n".join(
                content.as_text()
                for name, content in test["details"].items()
                if name == "traceback" or name.startswith("traceback")
            )

    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    subunit.ByteStreamToStreamResult(io.BytesIO(stream), non_subunit_name="stdout").run(result)
    result.stopTestRun()
    return outcomes, details


def run_module(
    workdir: Path,
    mode: str,
    module: str,
    concurrency: int,
    test_filter: str | None = None,
    timeout: int = DEFAULT_TIMEOUT,
) -> Result:
    directory = workdir / "runs" / mode / module
    shutil.rmtree(directory, ignore_errors=True)
    _scratch_package(directory, mode, module)
    env = dict(os.environ, OS_TEST_TIMEOUT=str(timeout))
    # This tree's plugin, not whichever the environment installed, and the hooks.
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "tools"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    command = [
        sys.executable, "-m", "stestr", "--test-path", PACKAGE, "--top-dir", ".",
        "run", "--subunit", "--concurrency", str(concurrency),
    ]  # fmt: skip
    if test_filter is not None:
        command.append(test_filter)
    started = time.monotonic()
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, check=False)
    seconds = time.monotonic() - started
    (directory / "stderr.txt").write_bytes(done.stderr)
    outcomes, details = _outcomes(done.stdout)
    error = ""
    if not outcomes:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
        error = f"stestr ran no test (exit {done.returncode}): " + " | ".join(tail)
    return Result(module, mode, outcomes, details, seconds, error)


def merged(earlier: Result, part: Result) -> Result:
    """A module's earlier results with those of another part of it."""
    return Result(
        part.module,
        part.mode,
        {**earlier.outcomes, **part.outcomes},
        {**earlier.details, **part.details},
        earlier.seconds + part.seconds,
        "; ".join(filter(None, [earlier.error, part.error])),
    )


def _save(workdir: Path, mode: str, results: list[Result], *, parts: bool) -> None:
    saved = _load(workdir, mode)
    for result in results:
        earlier = saved.get(result.module)
        saved[result.module] = merged(earlier, result) if parts and earlier else result
    value = {module: dataclasses.asdict(result) for module, result in saved.items()}
    (workdir / f"{mode}.json").write_text(json.dumps(value, indent=1, sort_keys=True) + "\n")


def _load(workdir: Path, mode: str) -> dict[str, Result]:
    path = workdir / f"{mode}.json"
    if not path.is_file():
        return {}
    return {module: Result(**value) for module, value in json.loads(path.read_text()).items()}


def counts_line(run: int, failed: int) -> str:
    return f"{run} run, {failed} failed"


def report(mode: str, results: list[Result], list_failures: bool) -> None:
    for result in results:
        print(f"[{mode}] {result.module}: {counts_line(result.run, len(result.failed))}")
        print(
            f"    {result.skipped} skipped, {len(result.not_run)} did not run,"
            f" {result.seconds:.0f} s"
        )
        if result.error:
            print(f"    {result.error}")
        for test in result.failed:
            print(f"    FAILED {test}")
            if list_failures:
                print(f"        {signature(result.details.get(test, ''))}")
        for test in result.not_run if list_failures else ():
            print(f"    DID NOT RUN {test}")
    run = sum(result.run for result in results)
    failed = sum(len(result.failed) for result in results)
    seconds = sum(result.seconds for result in results)
    print(f"[{mode}] total: {counts_line(run, failed)}")
    print(f"    {seconds:.0f} s")


def compare(
    mode: str,
    modules: list[str],
    results: dict[str, Result],
    baseline: dict[str, Result],
    test_filter: str | None = None,
) -> bool:
    """Print the tests (of those ``test_filter`` selects) that pass with ``off``
    and not in ``mode``; True when there are none."""
    lost: list[str] = []
    for module in modules:
        if module in baseline and module in results:
            expected = selected(baseline[module].outcomes, test_filter)
            lost += regressions(expected, results[module].outcomes)
    print(f"[{mode}] compared with off: {len(lost)} pass with the plugin off and not {mode}")
    for test in lost:
        print(f"    REGRESSION {test}")
    return not lost


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    healthy = True
    for mode in args.modes:
        results = [
            run_module(args.workdir, mode, module, args.concurrency, args.filter, args.timeout)
            for module in args.modules
        ]
        _save(args.workdir, mode, results, parts=args.filter is not None)
        report(mode, results, args.list_failures)
        healthy = healthy and not any(result.error for result in results)
        baseline = _load(args.workdir, "off")
        if mode != "off" and all(module in baseline for module in args.modules):
            by_module = {result.module: result for result in results}
            healthy = compare(mode, args.modules, by_module, baseline, args.filter) and healthy
        else:
            if mode != "off":
                print(f"[{mode}] no result of --mode off for every module to compare with")
            healthy = healthy and not any(result.failed for result in results)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
