"""The real job logs in ``shared/traces`` beside the repository.

CI always has them; elsewhere a test that needs one skips, unless ``CI`` is
set, where their absence is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import testtools

from hpc_nova_scheduler import resources

TRACES = resources.SOURCE_ROOT.parent / "shared" / "traces"


def trace(test: testtools.TestCase, name: str) -> str:
    path = Path(os.environ.get("HPC_TRACES", TRACES)) / name
    if not path.is_file():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            test.fail(f"trace {path} is missing in CI")
        test.skipTest(f"trace {path} is not here")
    return str(path)
