"""The one place where the supported Nova releases differ (``compat``)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler import compat

ROOT = Path(__file__).resolve().parents[2]


def nova_monkey_patch(calls: list[str] | None) -> types.ModuleType:
    """``nova.monkey_patch`` as a release has it: with ``patch()`` unless ``calls`` is None."""
    module = types.ModuleType("nova.monkey_patch")
    if calls is not None:
        module.patch = lambda backend="eventlet": calls.append(backend)
    return module


class TestMonkeyPatch(testtools.TestCase):
    # Only one release is installed: the other's module is stood in for.
    def test_nova_33_and_later_choose_with_the_binary_default(self) -> None:
        calls: list[str] = []
        self.useFixture(fixtures.MonkeyPatch("nova.monkey_patch", nova_monkey_patch(calls)))
        compat.monkey_patch()
        compat.monkey_patch(backend="threading")
        self.assertEqual(["eventlet", "threading"], calls)

    def test_nova_31_patched_on_import_and_has_no_patch(self) -> None:
        self.useFixture(fixtures.MonkeyPatch("nova.monkey_patch", nova_monkey_patch(None)))
        compat.monkey_patch(backend="threading")


class TestParseNovaArgs(testtools.TestCase):
    def parse(self, parse_args) -> None:
        self.useFixture(fixtures.MonkeyPatch("nova.config.parse_args", parse_args))
        compat.parse_nova_args(("agent", "--config-file", "x.conf"), prog="hpc-scheduler-agent")

    def test_nova_33_and_later_are_given_the_program_name(self) -> None:
        calls = []

        def parse_args(
            argv, default_config_files=None, configure_db=True, init_rpc=True, prog=None
        ):
            calls.append((argv, init_rpc, prog))

        self.parse(parse_args)
        self.assertEqual(
            [(["agent", "--config-file", "x.conf"], False, "hpc-scheduler-agent")], calls
        )

    def test_nova_31_takes_no_program_name(self) -> None:
        calls = []

        def parse_args(argv, default_config_files=None, configure_db=True, init_rpc=True):
            calls.append((argv, init_rpc))

        self.parse(parse_args)
        self.assertEqual([(["agent", "--config-file", "x.conf"], False)], calls)


class TestTheTestPackagePatchesFirst(testtools.TestCase):
    def test_any_subset_runs_patched(self) -> None:
        # The unit tests alone hung when the patching came midway through
        # loading them: importing the test package must patch, before any
        # test module.
        env = dict(os.environ)
        env.pop("OS_NOVA_DISABLE_EVENTLET_PATCHING", None)
        code = (
            "import sys, tests\n"
            "from eventlet import patcher\n"
            "assert not any(m.startswith('tests.unit') for m in sys.modules)\n"
            "print(patcher.is_monkey_patched('thread'), patcher.is_monkey_patched('socket'))\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
        )
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual("True True", result.stdout.strip().splitlines()[-1])
