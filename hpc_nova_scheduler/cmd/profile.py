"""``hpc-nova-scheduler profile import | list | show | export``."""

from __future__ import annotations

import argparse
from typing import TextIO

from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.cmd import common, record_files
from hpc_nova_scheduler.core.profile import AppClass


def cmd_profile_import(args: argparse.Namespace, out: TextIO) -> int:
    records = datafiles.read_profiles(args.file, args.format)
    if args.dry_run:
        out.write(f"{args.file}: {len(records)} valid profiles; nothing written (--dry-run)\n")
        return 0
    result = common.database(args).import_profiles(records)
    out.write(f"{args.file}: {len(records)} profiles: {result}\n")
    return 0


def cmd_profile_list(args: argparse.Namespace, out: TextIO) -> int:
    records = common.database(args).list_profiles()
    if args.app_class:
        wanted = AppClass.parse(args.app_class, key="--app-class")
        records = [r for r in records if r.app_class is wanted]
    common.table(
        (
            "name",
            "class",
            "cache score",
            "SLLC",
            "DRAM",
            "NET",
            "solo runtime (s)",
            "counters",
        ),
        [
            (
                r.name,
                r.app_class.value,
                r.cache_score,
                r.sllc_score,
                r.dram_score,
                r.net_score,
                r.solo_runtime,
                len(r.counters) or None,
            )
            for r in records
        ],
        out,
    )
    return 0


def cmd_profile_show(args: argparse.Namespace, out: TextIO) -> int:
    record = common.database(args).get_profile(args.name)
    if record is None:
        raise common.CommandError(f"no profile named {args.name!r}")
    rows = [(k, v) for k, v in record.to_mapping().items() if k != "counters"]
    rows += [(f"counter {k}", v) for k, v in record.counters.items()]
    common.table(("field", "value"), rows, out)
    return 0


def cmd_profile_export(args: argparse.Namespace, out: TextIO) -> int:
    records = common.database(args).list_profiles()
    return record_files.export(
        args, out, lambda stream, fmt: datafiles.write_profiles(stream, records, fmt)
    )


def add_parser(sub) -> None:
    record_files.add_file_commands(
        sub,
        "profile",
        "application profiles",
        {
            "import": cmd_profile_import,
            "list": cmd_profile_list,
            "show": cmd_profile_show,
            "export": cmd_profile_export,
        },
    )
