"""``hpc-nova-scheduler interference import | list | export``."""

from __future__ import annotations

import argparse
from typing import TextIO

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.cmd import common, record_files


def cmd_interference_import(args: argparse.Namespace, out: TextIO) -> int:
    records = datafiles.read_interferences(args.file, args.format)
    if args.dry_run:
        out.write(
            f"{args.file}: {len(records)} valid interference records; nothing written (--dry-run)\n"
        )
        return 0
    result = common.database(args).import_interferences(records)
    out.write(f"{args.file}: {len(records)} interference records: {result}\n")
    return 0


def cmd_interference_list(args: argparse.Namespace, out: TextIO) -> int:
    records = common.database(args).list_interferences([args.app] if args.app else None)
    tolerance = args.conf[hpc_conf.GROUP_NAME].interference_tolerance
    common.table(
        (
            "app a",
            "app b",
            "slowdown a (%)",
            "slowdown b (%)",
            "source",
            "measured at",
            f"harmful (> {tolerance:g}%)",
        ),
        [
            (
                r.app_a,
                r.app_b,
                r.slowdown_a,
                r.slowdown_b,
                r.source,
                r.measured_at,
                "yes" if r.is_harmful(tolerance) else "no",
            )
            for r in records
        ],
        out,
    )
    return 0


def cmd_interference_export(args: argparse.Namespace, out: TextIO) -> int:
    records = common.database(args).list_interferences()
    return record_files.export(
        args,
        out,
        lambda stream, fmt: datafiles.write_interferences(stream, records, fmt),
    )


def add_parser(sub) -> None:
    record_files.add_file_commands(
        sub,
        "interference",
        "pairwise interference records",
        {
            "import": cmd_interference_import,
            "list": cmd_interference_list,
            "export": cmd_interference_export,
        },
    )
