"""``hpc-nova-scheduler interference import | list | export | suspects``."""

from __future__ import annotations

import argparse
from typing import TextIO

from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler import datafiles, strictjson
from hpc_nova_scheduler.cmd import common, options, record_files
from hpc_nova_scheduler.measured import suspects as suspects_mod
from hpc_nova_scheduler.measured.pressure import Settings


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


def _ratio(text: str) -> float:
    value = options.positive_float(text)
    if value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be more than 1, not {text!r}")
    return value


def cmd_interference_suspects(args: argparse.Namespace, out: TextIO) -> int:
    settings = Settings.of(args.conf.hpc_scheduler)
    database = common.database(args)
    try:
        running = database.list_running()
        instances = database.measured_instances()
    finally:
        database.dispose()
    fresh = suspects_mod.fresh_figures(instances, timeutils.utcnow(), settings)
    vms = suspects_mod.measured_vms(running, fresh, min_samples=settings.min_samples)
    found = suspects_mod.find(vms, ratio=args.ratio, min_siblings=args.min_siblings)
    if args.format == "json":
        strictjson.dump(
            [
                {
                    "victim": s.victim.instance_uuid,
                    "application": s.victim.application,
                    "host": s.victim.host,
                    "cpi": s.victim.cpi,
                    "siblings_cpi": s.siblings_cpi,
                    "siblings": s.siblings,
                    "suspects": [
                        {
                            "instance": vm.instance_uuid,
                            "application": vm.application,
                            "llc_occupancy": vm.occupancy,
                        }
                        for vm in s.suspects
                    ],
                }
                for s in found
            ],
            out,
            indent=2,
        )
        out.write("\n")
        return 0
    with_cpi = sum(1 for vm in vms if vm.cpi is not None)
    if not found:
        out.write(
            f"no suspect: {with_cpi} of {len(vms)} recorded VMs have a fresh CPI, and none "
            f"exceeds {args.ratio:g} times its siblings' median\n"
        )
        return 0
    common.table(
        ("victim", "application", "host", "CPI", "siblings' CPI", "suspects (loudest first)"),
        [
            (
                s.victim.instance_uuid,
                s.victim.application,
                s.victim.host,
                f"{s.victim.cpi:.2f}",
                f"{s.siblings_cpi:.2f} ({s.siblings})",
                " ".join(vm.instance_uuid for vm in s.suspects) or "none on its host",
            )
            for s in found
        ],
        out,
    )
    return 0


def add_parser(sub) -> None:
    actions = record_files.add_file_commands(
        sub,
        "interference",
        "pairwise interference records",
        {
            "import": cmd_interference_import,
            "list": cmd_interference_list,
            "export": cmd_interference_export,
        },
    )
    suspects = actions.add_parser(
        "suspects",
        help="VMs far slower than their application's siblings, and who shares their hosts",
        description="CPI2's antagonist detection on what hpc-scheduler-collector measured: "
        "a VM whose cycles per instruction (decayed mean, with measured_min_samples samples, "
        "fresher than measured_stale_after) exceed RATIO times the median of its "
        "application's other VMs is a victim, and the VMs of other applications on its "
        "host are suspects, loudest LLC occupancy first. measured-rebalance moves suspects "
        "first. Hosts whose processors expose no cycle and instruction counters report no "
        "CPI and list nothing.",
    )
    suspects.add_argument(
        "--ratio",
        type=_ratio,
        default=suspects_mod.RATIO,
        help=f"a victim's CPI over its siblings' median (default {suspects_mod.RATIO:g})",
    )
    suspects.add_argument(
        "--min-siblings",
        type=options.positive_int,
        default=suspects_mod.MIN_SIBLINGS,
        help="siblings with a CPI an application needs before one of its VMs is judged "
        f"(default {suspects_mod.MIN_SIBLINGS})",
    )
    suspects.add_argument("--format", choices=["table", "json"], default="table")
    suspects.set_defaults(func=cmd_interference_suspects)
