"""What the ``profile`` and ``interference`` command groups share.

Both keep records that come from and go to CSV or YAML files: ``import``
(validated whole, one transaction), ``list`` and ``export``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TextIO

from hpc_nova_scheduler import atomicfile, datafiles
from hpc_nova_scheduler.cmd import common


def export(args: argparse.Namespace, out: TextIO, write: Callable[[TextIO, str], None]) -> int:
    fmt = (
        datafiles.detect_format(args.file, args.format)
        if args.file != "-"
        else (args.format or "yaml")
    )
    if args.file == "-":
        write(out, fmt)
        return 0
    with atomicfile.open_replacing(args.file, "w", encoding="utf-8", newline="") as stream:
        write(stream, fmt)
    return 0


def add_file_commands(
    sub: argparse._SubParsersAction,
    noun: str,
    plural: str,
    handlers: dict[str, common.Handler],
) -> argparse._SubParsersAction:
    """The ``import``, ``list`` and ``export`` actions of ``noun``; its actions, for more."""
    parser = sub.add_parser(
        noun,
        help=f"import, list and export {plural}",
        description=f"Manage {plural} in the plugin database.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    imp = actions.add_parser(
        "import",
        help=f"import {plural} from a CSV or YAML file",
        description=(
            f"Validate every {noun} record of FILE, then create or "
            "update them in one transaction. A file with any bad "
            "row is rejected whole; importing the same file again "
            "changes nothing."
        ),
    )
    imp.add_argument("file", metavar="FILE", help="CSV or YAML file, or - for standard input")
    imp.add_argument(
        "--format",
        choices=datafiles.FORMATS,
        help="file format (default: from the name)",
    )
    imp.add_argument("--dry-run", action="store_true", help="validate only; write nothing")
    imp.set_defaults(func=handlers["import"])

    lst = actions.add_parser(
        "list",
        help=f"list the {plural} in the database",
        description=f"List the {plural} in the database as a table.",
    )
    lst.set_defaults(func=handlers["list"])
    if noun == "profile":
        lst.add_argument("--app-class", help="only profiles of this application class")
        show = actions.add_parser("show", help="show one profile", description="Show one profile.")
        show.add_argument("name", metavar="NAME")
        show.set_defaults(func=handlers["show"])
    else:
        lst.add_argument("--app", help="only records involving this application")

    exp = actions.add_parser(
        "export",
        help=f"export the {plural} to a CSV or YAML file",
        description=(
            f"Write every {noun} record to FILE in a form that 'import' reads back unchanged."
        ),
    )
    exp.add_argument("file", metavar="FILE", help="output file, or - for standard output")
    exp.add_argument(
        "--format",
        choices=datafiles.FORMATS,
        help="file format (default: from the name; yaml for standard output)",
    )
    exp.set_defaults(func=handlers["export"])
    return actions
