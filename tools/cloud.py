#!/usr/bin/env python3
"""A real OpenStack control plane on this machine: up | status | stress | down.

Run it with the project's virtual environment (made by tools/quickstart.py):

    .venv/bin/python tools/cloud.py up [--computes 8] [--scheduler-workers 2]
                                       [--fairness POLICY] [--enforcement strict|borrow]
                                       [--topology LEVEL=N,...] [--cells N]
    .venv/bin/python tools/cloud.py status
    .venv/bin/python tools/cloud.py stress [--seconds 60] [--clients 4] [--plugin on|off]
                                           [--interference-model NAME]
                                           [--fairness POLICY] [--enforcement strict|borrow]
                                           [--record FILE]
    .venv/bin/python tools/cloud.py down

See doc/source/contributor/control-plane.rst.
"""

import sys
from pathlib import Path

# devcloud/ is developer tooling at the top of the source tree, not part of
# the installed package: it is found here, whatever the working directory.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devcloud.cli import main

if __name__ == "__main__":
    sys.exit(main())
