"""The ``hpc-nova-scheduler`` command.

One module per command group, as python-openstackclient does: ``db``,
``profile``, ``interference``, ``characterise``, ``model``, ``plan``,
``rebalance``, ``trace``, ``simulate``, ``demo`` and ``reconcile``; each
adds its parser, and :mod:`.common` holds what they share (configuration,
the database, tables, and the one-line errors).

Options are read from the files given with ``--config-file`` (by default
nova.conf where oslo.config finds it), so the command sees the same
``[hpc_scheduler] connection`` as nova-scheduler; ``--connection`` overrides
it for one call.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import TextIO

from hpc_nova_scheduler.cmd import (
    characterise,
    common,
    db,
    demo,
    interference,
    model,
    plan,
    profile,
    rebalance,
    reconcile,
    simulate,
    trace,
)

PROG = common.PROG
#: The command groups, in the order ``--help`` lists them.
GROUPS = (
    reconcile,
    db,
    profile,
    interference,
    characterise,
    model,
    plan,
    rebalance,
    trace,
    simulate,
    demo,
)


def build_parser() -> argparse.ArgumentParser:
    parser = common.Parser(
        prog=PROG,
        description="Manage the HPC-aware Nova scheduler plugin: its database, application "
        "profiles and interference records, and its demo.",
    )
    parser.add_argument(
        "--config-file",
        action="append",
        metavar="PATH",
        help="configuration file with an [hpc_scheduler] section, such as "
        "nova.conf; repeatable (default: nova.conf where oslo.config finds it)",
    )
    parser.add_argument("--config-dir", metavar="DIR", help="directory of *.conf files to read too")
    parser.add_argument(
        "--connection",
        metavar="URL",
        help="plugin database URL, overriding [hpc_scheduler] connection",
    )
    parser.add_argument("--debug", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.add_parser(sub)
    return parser


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = build_parser().parse_args(argv)
    except common.UsageError as error:
        err.write(f"{error}\n")
        return 2
    args.err = err
    return common.run(args, args.func, out, err)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
