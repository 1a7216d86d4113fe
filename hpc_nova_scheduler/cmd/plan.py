"""``hpc-nova-scheduler plan``: place a batch of applications with batch planners."""

from __future__ import annotations

import argparse
import csv
import json
import time
from typing import TextIO

from hpc_nova_scheduler.cmd import common, options

DEFAULT_PLANNERS = ["ils", "ffd", "bfd"]


def _planner(args: argparse.Namespace, name: str):
    from hpc_nova_scheduler.ivmp.ils import IlsParameters
    from hpc_nova_scheduler.planners import registry

    try:
        parameters = IlsParameters(alpha=args.alpha, multistart=args.multistart, seed=args.seed)
    except ValueError as error:
        raise common.CommandError(f"--alpha: {error}") from None
    extra = {}
    if name == "ils":
        extra = {"parameters": parameters}
    elif name == "milp":
        extra = {"parameters": parameters, "time_limit": args.time_limit}
    try:
        return registry.load(name, **extra)
    except registry.UnknownPlanner as error:
        raise common.CommandError(f"--planner: {error}") from None


def cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler import datafiles
    from hpc_nova_scheduler.interference.base import MissingFeatures, Tenant
    from hpc_nova_scheduler.ivmp.exact import TooLarge
    from hpc_nova_scheduler.ivmp.model import IvmpExtended
    from hpc_nova_scheduler.planners import batchfile
    from hpc_nova_scheduler.planners.base import host_level
    from hpc_nova_scheduler.planners.binpacking import NoRoom

    planners = [_planner(args, name) for name in args.planner]
    described = batchfile.read(args.batch)
    if args.profiles:
        records = datafiles.read_profiles(args.profiles)
    else:
        records = common.database(args).list_profiles()
    batch = described.batch({r.name: r for r in records}, args.batch)
    model = IvmpExtended()
    try:
        model.check([Tenant.of(app.profile) for app in batch.apps])
    except MissingFeatures as error:
        raise common.CommandError(f"{args.batch}: {error}") from None
    results = []
    for planner in planners:
        started = time.perf_counter()
        try:
            placement = planner.place(batch)
        except (NoRoom, TooLarge) as error:
            raise common.CommandError(f"planner {planner.name}: {error}") from None
        seconds = time.perf_counter() - started
        hosts = []
        for host, apps in placement.groups().items():
            level = host_level(model, [batch.apps[a] for a in apps])
            hosts.append(
                {
                    "host": host,
                    "applications": [batch.apps[a].name for a in apps],
                    "cpu": round(sum(batch.apps[a].cpu for a in apps), 6),
                    "mem": round(sum(batch.apps[a].mem for a in apps), 6),
                    "interference": round(level, 4),
                }
            )
        results.append(
            {
                "planner": planner.name,
                "hosts_used": placement.hosts_used,
                "interference": round(sum(h["interference"] for h in hosts), 4),
                "worst_host": max(h["interference"] for h in hosts),
                "seconds": round(seconds, 3),
                "feasible": placement.feasible(batch),
                "hosts": hosts,
            }
        )
    _write(args, results, out)
    if args.png:
        _figure(results, batch, args.png)
        out.write(f"wrote {args.png}\n")
    return 0


def _write(args: argparse.Namespace, results: list[dict], out: TextIO) -> None:
    if args.format == "json":
        json.dump({"batch": args.batch, "plans": results}, out, indent=2)
        out.write("\n")
        return
    if args.format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["planner", "host", "applications", "cpu", "mem", "interference"])
        for result in results:
            for host in result["hosts"]:
                writer.writerow(
                    [
                        result["planner"],
                        host["host"],
                        "+".join(host["applications"]),
                        host["cpu"],
                        host["mem"],
                        host["interference"],
                    ]
                )
        return
    common.table(
        ("planner", "hosts used", "predicted interference (sum %)", "worst host %", "seconds"),
        [
            (r["planner"], r["hosts_used"], r["interference"], r["worst_host"], r["seconds"])
            for r in results
        ],
        out,
    )
    width = max(len(r["hosts"]) for r in results)
    rows = []
    for index in range(width):
        row: list[object] = [index]
        for result in results:
            if index < len(result["hosts"]):
                host = result["hosts"][index]
                row.append(f"{' + '.join(host['applications'])} ({host['interference']:.2f}%)")
            else:
                row.append("")
        rows.append(row)
    common.table(["host", *(r["planner"] for r in results)], rows, out)


def _figure(results: list[dict], batch, path: str) -> None:
    """Hosts by applications, one panel per planner: each host's applications marked."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    names = sorted({app.name for app in batch.apps})
    figure, axes = pyplot.subplots(
        1, len(results), figsize=(4 * len(results), 1 + 0.3 * len(names)), squeeze=False
    )
    for axis, result in zip(axes[0], results, strict=True):
        for host in result["hosts"]:
            for name in set(host["applications"]):
                count = host["applications"].count(name)
                axis.scatter(host["host"], names.index(name), s=40 * count, color="tab:blue")
        axis.set_title(f"{result['planner']}: {result['hosts_used']} hosts")
        axis.set_xlabel("host")
        axis.set_yticks(range(len(names)))
        axis.set_yticklabels(names if axis is axes[0][0] else [])
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "plan",
        help="place a batch of applications with batch planners, side by side",
        description="Place every application of BATCH_FILE at once with each --planner "
        "(see doc/planners.rst): seed 004's ILS, the exact MILP optimum for small "
        "batches, and the six bin-packing baselines. Prints the hosts used and the "
        "predicted interference (ivmp) per host for each.",
    )
    parser.add_argument("batch", metavar="BATCH_FILE", help="YAML with 'cloud:' and 'batch:'")
    parser.add_argument(
        "--planner",
        type=options.comma_list(str),
        default=DEFAULT_PLANNERS,
        help="comma-separated planners (default ils,ffd,bfd): ils, milp, ff, bf, wf, ffd, bfd, wfd",
    )
    parser.add_argument(
        "--profiles",
        metavar="FILE",
        help="profiles from this YAML or CSV file instead of the plugin database",
    )
    parser.add_argument("--format", choices=["table", "csv", "json"], default="table")
    parser.add_argument("--png", metavar="FILE", help="also draw hosts by applications")
    parser.add_argument(
        "--alpha",
        type=options.non_negative_float,
        default=0.7,
        help="ILS and MILP: weight of interference against hosts, 0 to 1 (default 0.7)",
    )
    parser.add_argument(
        "--multistart",
        type=options.positive_int,
        default=50,
        help="ILS starts (default 50)",
    )
    parser.add_argument(
        "--time-limit",
        type=options.positive_float,
        default=60.0,
        metavar="SECONDS",
        help="MILP time limit (default 60)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(func=cmd_plan)
