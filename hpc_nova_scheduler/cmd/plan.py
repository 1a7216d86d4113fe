"""``hpc-nova-scheduler plan``: place a batch of applications with batch planners."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import time
from typing import TextIO

from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.cmd import common, options, planning

DEFAULT_PLANNERS = ["ils", "ffd", "bfd"]


def cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler import datafiles
    from hpc_nova_scheduler.core.errors import CannotPlace
    from hpc_nova_scheduler.interference.base import MissingFeatures, Tenant
    from hpc_nova_scheduler.planners import batchfile, summary

    if args.png:
        common.check_output_path("--png", args.png)
    planners = [planning.load_planner(args, name) for name in args.planner]
    described = batchfile.read(args.batch, cloud=not args.live)
    names = None
    cloud = {"source": args.batch}
    if args.live:
        described, names, cloud = _live_cloud(args, described)
    if args.profiles:
        records = datafiles.read_profiles(args.profiles)
    else:
        records = common.database(args).list_profiles()
    batch = described.batch({r.name: r for r in records}, args.batch)
    model = planning.interference_model()
    try:
        model.check([Tenant.of(app.profile) for app in batch.apps])
    except MissingFeatures as error:
        raise common.CommandError(f"{args.batch}: {error}") from None
    results = []
    for planner in planners:
        started = time.perf_counter()
        try:
            placement = planner.place(batch)
        except CannotPlace as error:
            raise common.CommandError(f"planner {planner.name}: {error}") from None
        seconds = time.perf_counter() - started
        found = summary.summarise(placement, batch, model, names)
        # The keys in the order the JSON output has always had them.
        results.append(
            {
                "planner": planner.name,
                "hosts_used": found["hosts_used"],
                "interference": found["interference"],
                "worst_host": found["worst_host"],
                "seconds": round(seconds, 3),
                "feasible": found["feasible"],
                "hosts": found["hosts"],
            }
        )
    _write(args, results, cloud, out)
    if args.png:
        _figure(results, batch, args.png)
        out.write(f"wrote {args.png}\n")
    return 0


def _live_cloud(args: argparse.Namespace, described):
    """The batch file with the live cloud's empty identical hosts as its cloud."""
    from hpc_nova_scheduler.live import view

    try:
        found = view.read(common.connect(args))
    except view.CloudUnreadable as error:
        raise common.CommandError(str(error)) from None
    hosts = view.empty_hosts(found, args.cpu_group)
    if not hosts:
        where = f" of processor group {args.cpu_group}" if args.cpu_group else ""
        raise common.CommandError(f"the cloud has no empty host{where} that can receive servers")
    first = hosts[0]
    described = dataclasses.replace(
        described, hosts=len(hosts), vcpus=first.vcpus, ram_mb=first.memory_mb
    )
    cloud = {
        "source": "live",
        "hosts": [h.name for h in hosts],
        "cpu_group": first.cpu_group,
        "vcpus": first.vcpus,
        "ram_mb": first.memory_mb,
    }
    return described, [h.name for h in hosts], cloud


def _write(args: argparse.Namespace, results: list[dict], cloud: dict, out: TextIO) -> None:
    if args.format == "json":
        strictjson.dump({"batch": args.batch, "cloud": cloud, "plans": results}, out, indent=2)
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
    if cloud["source"] == "live":
        out.write(
            f"cloud: {len(cloud['hosts'])} empty hosts of processor group "
            f"{cloud['cpu_group'] or 'untagged'}, {cloud['vcpus']:g} vCPU and "
            f"{cloud['ram_mb']:g} MB each: {', '.join(cloud['hosts'])}\n"
        )
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
                where = f"{host['host']}: " if cloud["source"] == "live" else ""
                row.append(
                    f"{where}{' + '.join(host['applications'])} ({host['interference']:.2f}%)"
                )
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
        "(see doc/source/user/planners.rst): seed 004's ILS, the exact MILP optimum for small "
        "batches, and the six bin-packing baselines. Prints the hosts used and the "
        "predicted interference (ivmp) per host for each.",
    )
    parser.add_argument("batch", metavar="BATCH_FILE", help="YAML with 'cloud:' and 'batch:'")
    parser.add_argument(
        "--live",
        action="store_true",
        help="plan on the live cloud's empty hosts, read through Nova's and Placement's "
        "APIs (the largest group of identical ones), instead of the file's 'cloud:'",
    )
    common.add_cloud_arguments(parser)
    parser.add_argument(
        "--cpu-group",
        metavar="NAME",
        help="with --live: only hosts of this processor group (hpc:cpu_group)",
    )
    parser.add_argument(
        "--planner",
        type=options.comma_list(str),
        default=DEFAULT_PLANNERS,
        help="comma-separated planners (default ils,ffd,bfd): ils, milp, blossom, greedy, "
        "annealing, ff, bf, wf, ffd, bfd, wfd",
    )
    parser.add_argument(
        "--profiles",
        metavar="FILE",
        help="profiles from this YAML or CSV file instead of the plugin database",
    )
    parser.add_argument("--format", choices=["table", "csv", "json"], default="table")
    parser.add_argument("--png", metavar="FILE", help="also draw hosts by applications")
    planning.add_planner_arguments(
        parser, "ILS and MILP: weight of interference against hosts, 0 to 1 (default 0.7)"
    )
    parser.set_defaults(func=cmd_plan)
