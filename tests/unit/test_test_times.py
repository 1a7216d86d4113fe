"""tools/test_times.py: a fresh clone's stestr shares tests by their durations."""

from __future__ import annotations

import importlib.util
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import fixtures
import testtools
from stestr.repository import util as repository_util

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("test_times", ROOT / "tools" / "test_times.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


test_times = _module()


class TestTestTimes(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.root = Path(self.useFixture(fixtures.TempDir()).path)
        (self.root / "tools").mkdir()

    def _write(self, times: dict[str, float]) -> None:
        (self.root / test_times.TIMES).write_text(json.dumps(times))

    def _quietly(self, action) -> tuple[int, str]:
        out = io.StringIO()
        with redirect_stdout(out):
            code = action(self.root)
        return code, out.getvalue()

    def test_a_new_repository_gets_the_durations_and_no_run(self) -> None:
        self._write({"pkg.TestA.test_long": 250.0, "pkg.TestA.test_short": 2.5})
        code, said = self._quietly(test_times.seed)
        self.assertEqual(0, code)
        self.assertIn("2 test durations", said)
        repo = repository_util.get_repo_open(repo_url=str(self.root))
        times = repo.get_test_times(["pkg.TestA.test_long", "pkg.TestA.test_short", "pkg.new"])
        self.assertEqual(
            {"pkg.TestA.test_long": 250.0, "pkg.TestA.test_short": 2.5}, times["known"]
        )
        self.assertEqual({"pkg.new"}, set(times["unknown"]))
        # The loaded run is gone: `stestr last` can only show a real one.
        self.assertEqual([], repo.get_run_ids())

    def test_a_repository_that_exists_keeps_its_own_durations(self) -> None:
        (self.root / ".stestr").mkdir()
        self._write({"pkg.TestA.test_long": 250.0})
        self.assertEqual((0, ""), self._quietly(test_times.seed))
        self.assertEqual([], [p.name for p in (self.root / ".stestr").iterdir()])

    def test_no_file_leaves_the_tests_dealt_out_in_turn(self) -> None:
        code, said = self._quietly(test_times.seed)
        self.assertEqual(0, code)
        self.assertIn("tools/test-times.json", said)
        self.assertFalse((self.root / ".stestr").exists())

    def test_entries_that_are_not_durations_leave_the_tests_dealt_out_in_turn(self) -> None:
        for content, named in (
            ('["pkg.TestA.test_long"]', "not an object"),
            ('{"pkg.TestA.test_long": "slow"}', "pkg.TestA.test_long: 'slow'"),
            ('{"pkg.TestA.test_long": -1}', "pkg.TestA.test_long: -1"),
            ('{"pkg.TestA.test_long": true}', "pkg.TestA.test_long: True"),
            ('{"pkg.TestA.test_long": NaN}', "pkg.TestA.test_long: nan"),
            ('{"pkg.TestA.test_long": Infinity}', "pkg.TestA.test_long: inf"),
            ('{"pkg.TestA.test_long": 2', "tools/test-times.json: Expecting"),
        ):
            (self.root / test_times.TIMES).write_text(content)
            code, said = self._quietly(test_times.seed)
            self.assertEqual(0, code)
            self.assertIn(named, said)
            self.assertEqual(1, len(said.splitlines()), said)
            self.assertFalse((self.root / ".stestr").exists())

    def test_record_keeps_the_tests_of_a_second_or_more(self) -> None:
        stream = test_times._stream(
            {"pkg.TestA.test_long": 250.04, "pkg.TestA.test_quick": 0.5, "pkg.TestB.test_s": 1.0}
        )
        loaded = test_times._stestr(self.root, "load", "--force-init", data=stream)
        self.assertEqual(0, loaded.returncode, loaded.stdout)
        code, said = self._quietly(test_times.record)
        self.assertEqual(0, code)
        self.assertIn("2 tests", said)
        recorded = json.loads((self.root / test_times.TIMES).read_text())
        self.assertEqual({"pkg.TestA.test_long": 250.0, "pkg.TestB.test_s": 1.0}, recorded)

    def test_record_without_a_run_fails(self) -> None:
        code, said = self._quietly(test_times.record)
        self.assertEqual(1, code)
        self.assertIn("no run", said)
        self.assertFalse((self.root / test_times.TIMES).exists())
