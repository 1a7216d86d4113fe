"""``hpc-nova-scheduler db sync | version``: the plugin database's schema."""

from __future__ import annotations

import argparse
from typing import TextIO

from hpc_nova_scheduler.cmd import common


def cmd_db_sync(args: argparse.Namespace, out: TextIO) -> int:
    database = common.database(args, require_schema=False)
    out.write(f"database at revision {database.sync(args.revision)}\n")
    return 0


def cmd_db_version(args: argparse.Namespace, out: TextIO) -> int:
    current = common.database(args, require_schema=False).revision()
    out.write(f"{current or 'none (run db sync)'}\n")
    return 0


def add_parser(sub) -> None:
    db = sub.add_parser(
        "db",
        help="create or upgrade the plugin database schema",
        description="Manage the plugin database schema (alembic migrations).",
    )
    db_actions = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    sync = db_actions.add_parser(
        "sync",
        help="upgrade the schema to the newest revision",
        description="Create the plugin's tables, or upgrade them.",
    )
    sync.add_argument("--revision", default="head", help="target revision (default: head)")
    sync.set_defaults(func=cmd_db_sync)
    version = db_actions.add_parser(
        "version",
        help="print the schema revision",
        description="Print the schema's current revision.",
    )
    version.set_defaults(func=cmd_db_version)
