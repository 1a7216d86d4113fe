"""``reconcile`` without Nova's databases: one line, exit 1, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler import resources
from hpc_nova_scheduler.db import api as db_api

COMMAND = Path(sys.executable).parent / "hpc-nova-scheduler"


class TestReconcileWithoutNova(testtools.TestCase):
    def test_a_missing_nova_configuration_is_one_line(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        url = f"sqlite:///{os.path.join(folder, 'hpc.sqlite')}"
        database = db_api.Database(url)
        self.addCleanup(database.dispose)
        database.sync()
        done = subprocess.run(
            [str(COMMAND), "--connection", url, "reconcile", "--dry-run"],
            capture_output=True,
            text=True,
            cwd=folder,
            timeout=120,
            # The code of this source tree, whose migrations synced the database,
            # wherever the console script's package is installed from.
            env={**os.environ, "PYTHONPATH": str(resources.SOURCE_ROOT)},
        )
        self.assertEqual(1, done.returncode, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertIn("cannot read Nova's databases", done.stderr)
        self.assertIn("--config-file", done.stderr)
        self.assertEqual([], database.list_running())
