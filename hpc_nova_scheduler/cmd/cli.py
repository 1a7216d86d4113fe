"""The ``hpc-nova-scheduler`` command.

One module per command group, as python-openstackclient does: ``db``,
``profile``, ``interference``, ``characterise``, ``model``, ``plan``,
``rebalance``, ``trace``, ``simulate``, ``fairshare``, ``demo``,
``reconcile``, ``agent`` and ``topology``; each adds its parser, and :mod:`.common`
holds what they share (configuration, the database, tables, and the
one-line errors).

Options are read from the files given with ``--config-file`` (by default
nova.conf where oslo.config finds it), so the command sees the same
``[hpc_scheduler] connection`` as nova-scheduler; ``--connection`` overrides
it for one call.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from hpc_nova_scheduler.cmd import (
    agent,
    characterise,
    common,
    db,
    demo,
    fairshare,
    hosts,
    interference,
    model,
    plan,
    profile,
    rebalance,
    reconcile,
    simulate,
    topology,
    trace,
)

PROG = common.PROG
#: The status when the reader of standard output went away (``| head``):
#: 128 + SIGPIPE, what the shell reports for a tool that SIGPIPE ends (as
#: ``yes | head`` does) and the same convention as 130 for Ctrl-C. Python's
#: documentation exits with 1 there only because that is Python's own status
#: for an unhandled EPIPE; 141 tells a ``pipefail`` script what happened.
PIPE_CLOSED = 141
#: The command groups, in the order ``--help`` lists them.
GROUPS = (
    reconcile,
    agent,
    hosts,
    topology,
    db,
    profile,
    interference,
    characterise,
    model,
    plan,
    rebalance,
    trace,
    simulate,
    fairshare,
    demo,
)


def build_parser() -> argparse.ArgumentParser:
    parser = common.Parser(
        prog=PROG,
        description="The HPC-aware Nova scheduler plugin's command: its database, application "
        "profiles, interference records and models; fair share of heterogeneous platforms "
        "among projects (fairshare); the hosts' network topology (topology); the "
        "trace-driven simulator (simulate) and fair-share simulator (fairshare simulate); "
        "batch planning, rebalancing, and the all-in-one demo.",
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


class ReaderGone(Exception):
    """Whoever reads standard output closed it (``| head`` has read enough).

    Not an :class:`OSError`, so that :func:`common.run` does not report it
    as a failure.
    """


class _Output:
    """The command's output stream, telling a closed reader from other errors.

    A ``BrokenPipeError`` while writing here means the reader went away; one
    raised elsewhere (a database socket, a child process's pipe) stays a
    failure that :func:`common.run` reports.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise ReaderGone from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise ReaderGone from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _discard(stream: TextIO) -> None:
    """Send what ``stream`` still holds to /dev/null.

    Python flushes standard output again at exit, which would fail again on
    the closed pipe and print "Exception ignored ... BrokenPipeError"; this
    is the remedy Python's documentation gives (the note on SIGPIPE in the
    ``signal`` module). Restoring SIGPIPE's default instead would also kill
    the command when a database connection breaks.
    """
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run the command; a closed output pipe ends it quietly with :data:`PIPE_CLOSED`."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        try:
            return _run(argv, _Output(out), err)
        finally:
            # Flushed here, also after --help (SystemExit), so that a closed
            # pipe is met inside this block and not at the interpreter's exit.
            out.flush()
    except (ReaderGone, BrokenPipeError):
        _discard(out)
        return PIPE_CLOSED


def _run(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
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
