"""The demo's verdict: reading the paper's table, comparing, exit status, clean-up.

Nova is not started here: ``figure8.run`` is replaced by scenarios built
from the paper's own table, so only the demo's judgement is under test.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys

import fixtures
import testtools

from hpc_nova_scheduler.cmd import demo
from hpc_nova_scheduler.demo import figure8


class TestParsePaper(testtools.TestCase):
    def test_spans_counts_and_sums(self) -> None:
        row = demo.parse_paper("3x(N2-N6) + 1xN7")
        self.assertEqual({"N2": 3, "N3": 3, "N4": 3, "N5": 3, "N6": 3, "N7": 1}, row.vms_per_host)
        self.assertEqual([], row.after)

    def test_after_is_expanded(self) -> None:
        row = demo.parse_paper("2x(N1-N8) after App1, App3-App5")
        self.assertEqual({f"N{n}": 2 for n in range(1, 9)}, row.vms_per_host)
        self.assertEqual(["App1", "App3", "App4", "App5"], row.after)

    def test_single_after(self) -> None:
        row = demo.parse_paper("2xN1 + 2xN8 after App1")
        self.assertEqual({"N1": 2, "N8": 2}, row.vms_per_host)
        self.assertEqual(["App1"], row.after)

    def test_every_paper_row_round_trips_through_the_demo_notation(self) -> None:
        for table in figure8.PAPER.values():
            for text in table.values():
                row = demo.parse_paper(text)
                outcome = figure8.AppPlacement(figure8.STREAM[0], row.vms_per_host, row.after)
                self.assertEqual(text, outcome.placement)


class TestCompare(testtools.TestCase):
    PAPER_40 = "2x(N1-N8) after App1, App3-App5"
    EVERYWHERE = {f"N{n}": 2 for n in range(1, 9)}

    def test_same_placement_and_order(self) -> None:
        self.assertIsNone(
            demo.compare(self.EVERYWHERE, ["App1", "App3", "App4", "App5"], False, self.PAPER_40)
        )

    def test_the_deferral_order_counts(self) -> None:
        why = demo.compare(self.EVERYWHERE, ["App1", "App3", "App4"], False, self.PAPER_40)
        self.assertEqual(
            "deferral order: placed after App1, App3-App4, the paper after App1, App3-App5", why
        )

    def test_deferred_here_but_not_in_the_paper(self) -> None:
        why = demo.compare({"N1": 4}, ["App2"], False, "4xN1")
        self.assertEqual("deferred until after App2; the paper placed it at once", why)

    def test_placed_at_once_here_but_deferred_in_the_paper(self) -> None:
        why = demo.compare(self.EVERYWHERE, [], False, self.PAPER_40)
        self.assertEqual("placed at once; the paper deferred it until after App1, App3-App5", why)

    def test_placement_differs(self) -> None:
        why = demo.compare({"N2": 4}, [], False, "4xN1")
        self.assertEqual("placement 4xN2, the paper's 4xN1", why)

    def test_never_placed(self) -> None:
        self.assertIn("never placed", demo.compare({}, [], True, "4xN1"))


def _paper_scenario(beta: float | None, after: dict[str, list[str]] | None = None):
    """The scenario the paper reports for ``beta`` (Nova's run: the paper's beta=100)."""
    table = figure8.PAPER[100 if beta is None else int(beta)]
    outcomes = []
    for app in figure8.STREAM:
        row = demo.parse_paper(table[app.name])
        outcomes.append(
            figure8.AppPlacement(app, row.vms_per_host, (after or {}).get(app.name, row.after))
        )
    zero = dict.fromkeys(figure8.HOSTS, 0.0)
    title = "Nova defaults (no plugin)" if beta is None else f"hpc-nova-scheduler, beta = {beta:g}"
    return figure8.DemoRun(title, beta, outcomes, dict(zero), dict(zero))


class TestRun(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        # mkdtemp creates the demo's folder here, where the test can look.
        self.useFixture(fixtures.MonkeyPatch("tempfile.tempdir", self.tmp))
        self.useFixture(
            fixtures.MonkeyPatch(
                "hpc_nova_scheduler.cmd.demo._database",
                lambda workdir, label: f"sqlite:///{os.path.join(workdir, label)}",
            )
        )
        self.seen_workdirs: list[str] = []

    def fake_run(self, scenarios: dict[float | None, object]) -> None:
        def run(beta, alpha, db_url, log_path):
            self.seen_workdirs.append(os.path.dirname(db_url[len("sqlite:///") :]))
            found = scenarios[beta]
            if isinstance(found, BaseException):
                raise found
            return found

        self.useFixture(fixtures.MonkeyPatch("hpc_nova_scheduler.demo.figure8.run", run))

    def demo(self, betas: str, keep: str | None = None) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        args = argparse.Namespace(
            keep=keep, betas=[float(b) for b in betas.split(",")], alpha=200.0, err=err
        )
        code = demo.run(args, out)
        return code, out.getvalue(), err.getvalue()

    def last_line(self, text: str) -> str:
        return text.rstrip("\n").splitlines()[-1]

    def assert_removed(self) -> None:
        self.assertTrue(self.seen_workdirs)
        self.assertEqual([], os.listdir(self.tmp))

    def test_all_rows_match_exits_0_and_removes_the_folder(self) -> None:
        self.fake_run({100.0: _paper_scenario(100.0), None: _paper_scenario(None)})
        code, out, _ = self.demo("100")
        self.assertEqual(0, code, out)
        self.assertIn("5 of 5 placements match seed 003's Figure 8.", out)
        self.assertEqual(
            "RESULT: same as seed 003's Figure 8: 5 of 5 rows match", self.last_line(out)
        )
        self.assert_removed()

    def test_keep_keeps_the_folder(self) -> None:
        kept = os.path.join(self.tmp, "kept")
        self.fake_run({100.0: _paper_scenario(100.0), None: _paper_scenario(None)})
        code, out, _ = self.demo("100", keep=kept)
        self.assertEqual(0, code, out)
        self.assertEqual([kept], self.seen_workdirs[:1])
        self.assertTrue(os.path.isdir(kept))

    def test_another_deferral_order_is_not_a_match(self) -> None:
        ours = {"LU.C.16": ["App1", "App3", "App4"]}
        self.fake_run({40.0: _paper_scenario(40.0, ours), None: _paper_scenario(None)})
        code, out, _ = self.demo("40")
        self.assertEqual(demo.EXIT_DIFFERS, code, out)
        self.assertRegex(
            out, r"\| LU\.C\.16 .*after App1, App3-App4 .*after App1, App3-App5 .*\| NO "
        )
        self.assertIn("4 of 5 placements match", out)
        self.assertEqual(
            "RESULT: DIFFERS from seed 003's Figure 8: 4 of 5 rows match; LU.C.16 at beta = 40: "
            "deferral order: placed after App1, App3-App4, the paper after App1, App3-App5",
            self.last_line(out),
        )
        self.assert_removed()

    def test_an_unexplained_difference_gets_no_explanation(self) -> None:
        ours = {"LU.C.16": ["App1", "App3"]}
        self.fake_run({40.0: _paper_scenario(40.0, ours), None: _paper_scenario(None)})
        code, out, _ = self.demo("40")
        self.assertEqual(demo.EXIT_DIFFERS, code, out)
        self.assertNotIn("Seed 003 does not say", out)

    def test_a_failed_boot_fails_the_run(self) -> None:
        failure = figure8.DemoFailure("IS.B.4: server abc is ERROR: Build of instance abc aborted")
        self.fake_run({100.0: failure, None: _paper_scenario(None)})
        code, out, _ = self.demo("100")
        self.assertEqual(demo.EXIT_FAILED, code, out)
        self.assertIn("== beta = 100: FAILED ==", out)
        self.assertIn("Build of instance abc aborted", out)
        self.assertIn("(--keep DIR keeps Nova's log)", out)
        last = self.last_line(out)
        self.assertTrue(last.startswith("RESULT: FAILED: 1 run(s) failed"), last)
        self.assertIn("beta = 100: IS.B.4: server abc is ERROR", last)
        self.assert_removed()

    def test_a_crash_fails_the_run_and_still_removes_the_folder(self) -> None:
        self.fake_run({100.0: RuntimeError("boom"), None: _paper_scenario(None)})
        code, out, err = self.demo("100")
        self.assertEqual(demo.EXIT_FAILED, code, out)
        self.assertIn("RuntimeError: boom", self.last_line(out))
        self.assertIn("Traceback", err)
        self.assert_removed()

    def test_an_interrupt_still_removes_the_folder(self) -> None:
        self.fake_run({100.0: KeyboardInterrupt(), None: _paper_scenario(None)})
        self.assertRaises(KeyboardInterrupt, self.demo, "100")
        self.assert_removed()

    def test_betas_without_a_paper_row_compare_nothing(self) -> None:
        self.fake_run({50.0: _paper_scenario(None), None: _paper_scenario(None)})
        code, out, _ = self.demo("50")
        self.assertEqual(0, code, out)
        self.assertIn("nothing compared", self.last_line(out))


#: The command as its console script runs it, in a fresh interpreter: the
#: demo's patching happens when ``hpc_nova_scheduler.cmd`` is first imported.
COMMAND = "import sys; from hpc_nova_scheduler.cmd import cli; sys.exit(cli.main())"
#: Only so that a regression fails rather than hangs.
GENEROUS = 300


class TestTopologyOption(testtools.TestCase):
    def test_a_bad_topology_is_the_usage_error_alone(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        done = subprocess.run(
            [sys.executable, "-c", COMMAND, "demo", "--topology", "bad=x"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=GENEROUS,
        )
        self.assertEqual(2, done.returncode, done.stderr)
        self.assertEqual("", done.stdout)
        self.assertEqual(1, len(done.stderr.splitlines()), done.stderr)
        self.assertIn("demo: error: argument --topology: 'bad=x' is not LEVEL=N", done.stderr)
        self.assertEqual([], os.listdir(folder))

    def test_checking_the_topology_imports_nothing_of_nova(self) -> None:
        # Nothing of Nova, and no eventlet patching. (2025.1's oslo.log
        # imports eventlet itself, through oslo_utils.eventletutils, but
        # patches nothing.)
        script = (
            "import sys; from hpc_nova_scheduler.cmd import demo; "
            "demo._topology_shape('block=2,rack=2'); "
            "patcher = sys.modules.get('eventlet.patcher'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'nova'), "
            "bool(patcher and patcher.is_monkey_patched('socket')))"
        )
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=GENEROUS
        )
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual("[] False\n", done.stdout)
        self.assertEqual("", done.stderr)
