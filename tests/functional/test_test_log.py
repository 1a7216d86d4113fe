"""The test log: a cloud's start and teardown leave nothing below WARNING in it."""

from __future__ import annotations

import logging

import testtools

from tests.functional import base


def _cloud() -> type:
    """A cloud that starts and is torn down, and does nothing else; made
    here, so that the runner does not collect it as a test of its own."""

    class Cloud(base.NovaTestCase):
        def test_nothing(self) -> None:
            pass

    return Cloud


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


class TestTestLog(testtools.TestCase):
    def test_a_cloud_leaves_no_info_lines_outside_its_own_capture(self) -> None:
        # Nova's log fixture replaces the root's handlers for the test's
        # duration: what reaches this one was logged outside it, into the
        # run's log, where every test's lines pile up.
        records = _Records()
        root = logging.getLogger()
        root.addHandler(records)
        self.addCleanup(root.removeHandler, records)
        result = testtools.TestResult()
        _cloud()("test_nothing").run(result)
        self.assertTrue(result.wasSuccessful(), result.errors + result.failures)
        self.assertEqual([], [line for line in records.lines if not line.startswith("WARNING")])
