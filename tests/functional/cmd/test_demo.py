"""The README's first command: the all-in-one demo, end to end."""

from __future__ import annotations

import io
import os

import fixtures
import testtools

from hpc_nova_scheduler.cmd import cli


class TestDemo(testtools.TestCase):
    def demo(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(["--config-file", "/dev/null", "demo", *argv], out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    def test_demo_reproduces_figure_8_and_compares_with_nova(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        code, text, err = self.demo("--keep", directory, "--betas", "100")
        self.assertEqual(0, code, err + text)
        self.assertIn("== hpc-nova-scheduler, beta = 100", text)
        self.assertIn("== Nova defaults (no plugin)", text)
        self.assertIn("5 of 5 placements match seed 003's Figure 8.", text)
        self.assertIn("| LU.B.4      | SyncHPC    | 29          | 4   | 3xN6 + 1xN7", text)
        self.assertIn("Under Nova's defaults the ExtremeHPC application shares", text)
        self.assertEqual(
            "RESULT: same as seed 003's Figure 8: 5 of 5 rows match", text.splitlines()[-1]
        )
        self.assertTrue(os.path.exists(os.path.join(directory, "plugin-beta100.sqlite")))

    def test_beta_40_defers_lu_c_16_and_counts_the_order(self) -> None:
        tmp = self.useFixture(fixtures.TempDir()).path
        # Without --keep the demo's folder comes from mkdtemp: put it here.
        self.useFixture(fixtures.MonkeyPatch("tempfile.tempdir", tmp))
        code, text, err = self.demo("--betas", "40")
        # LU.C.16 waits until App1 and the batch App3-App5 have finished.
        self.assertEqual(0, code, err + text)
        self.assertRegex(
            text,
            r"\| LU\.C\.16 +\| SyncHPC +\| 16 +\| 16 +\| 2x\(N1-N8\) after App1, App3-App5 +"
            r"\| 2x\(N1-N8\) after App1, App3-App5 +\| yes ",
        )
        for name in ("IS.B.4", "LU.B.4", "ChaNGa.4", "EP.B.4"):
            self.assertRegex(text, rf"\| {name} .*\| yes ")
        self.assertIn("5 of 5 placements match", text)
        self.assertTrue(text.splitlines()[-1].startswith("RESULT: same as"), text)
        self.assertEqual([], os.listdir(tmp))
