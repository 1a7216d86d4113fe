"""The README's first command: the all-in-one demo, end to end."""

from __future__ import annotations

import io

import fixtures
import testtools

from hpc_nova_scheduler.cmd import cli


class TestDemo(testtools.TestCase):
    def test_demo_reproduces_figure_8_and_compares_with_nova(self) -> None:
        directory = self.useFixture(fixtures.TempDir()).path
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(
            ["--config-file", "/dev/null", "demo", "--keep", directory, "--betas", "100"],
            out=out,
            err=err,
        )
        text = out.getvalue()
        self.assertEqual(0, code, err.getvalue() + text)
        self.assertIn("== hpc-nova-scheduler, beta = 100", text)
        self.assertIn("== Nova defaults (no plugin)", text)
        self.assertIn("5 of 5 placements match seed 003's Figure 8.", text)
        self.assertIn("| LU.B.4      | SyncHPC    | 29          | 4   | 3xN6 + 1xN7", text)
        self.assertIn("Under Nova's defaults the ExtremeHPC application shares", text)
