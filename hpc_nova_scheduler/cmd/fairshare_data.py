"""``hpc-nova-scheduler fairshare share | demand | runs``: seed 002's data in the plugin database.

The first slice of issue 22: what the fair-share allocator will read, kept
where every scheduler sees it. ``share`` sets and lists each project's
share weight, ``demand`` each project's demand in cores, and ``runs``
imports and exports the measured task runs (the CSV of ``fairshare
affinity``). Every write is checked first and made in one transaction: bad
input is a one-line error and nothing is written.
"""

from __future__ import annotations

import argparse
import csv
import math
from typing import TextIO

from hpc_nova_scheduler import atomicfile, strictjson
from hpc_nova_scheduler.cmd import common
from hpc_nova_scheduler.db import api as db_api


def _project(text: str) -> str:
    if not text.strip():
        raise common.CommandError("PROJECT: empty")
    return text


def _weight(text: str) -> float:
    try:
        weight = float(text)
    except ValueError:
        raise common.CommandError(f"WEIGHT: {text!r} is not a number") from None
    if not math.isfinite(weight) or weight <= 0:
        raise common.CommandError(f"WEIGHT: {text!r} is not a positive finite number")
    return weight


def _cores(text: str) -> int:
    try:
        cores = int(text)
    except ValueError:
        raise common.CommandError(f"CORES: {text!r} is not an integer") from None
    if cores < 0:
        raise common.CommandError(f"CORES: {text!r} is negative")
    if cores > db_api.MAX_CORES:
        # Refused here, not by the database's integer column.
        raise common.CommandError(f"CORES: {text!r} is more than {db_api.MAX_CORES}")
    return cores


def _listing(values: dict, heading: str, fmt: str, out: TextIO) -> None:
    if fmt == "json":
        strictjson.dump(values, out, indent=2)
        out.write("\n")
        return
    common.table(("project", heading), list(values.items()), out)


def cmd_share_set(args: argparse.Namespace, out: TextIO) -> int:
    project, weight = _project(args.project), _weight(args.weight)
    common.database(args).set_share(project, weight)
    out.write(f"{project}: share weight {weight:g}\n")
    return 0


def cmd_share_list(args: argparse.Namespace, out: TextIO) -> int:
    _listing(common.database(args).shares(), "weight", args.format, out)
    return 0


def cmd_demand_set(args: argparse.Namespace, out: TextIO) -> int:
    project, cores = _project(args.project), _cores(args.cores)
    common.database(args).set_demand(project, cores, args.application)
    suffix = f" of {args.application}" if args.application else ""
    out.write(f"{project}: demand {cores} cores{suffix}\n")
    return 0


def cmd_demand_list(args: argparse.Namespace, out: TextIO) -> int:
    database = common.database(args)
    demand, applications = database.demand(), database.demand_applications()
    if args.format == "json":
        listed = {
            project: {"cores": cores, "application": applications.get(project)}
            for project, cores in demand.items()
        }
        strictjson.dump(listed, out, indent=2)
        out.write("\n")
        return 0
    rows = [(project, cores, applications.get(project, "-")) for project, cores in demand.items()]
    common.table(("project", "cores", "application"), rows, out)
    return 0


def cmd_demand_clear(args: argparse.Namespace, out: TextIO) -> int:
    project = None if args.project is None else _project(args.project)
    removed = common.database(args).clear_demand(project)
    if project is not None and not removed:
        raise common.CommandError(f"PROJECT: {project!r} has no demand to clear")
    out.write(f"{removed} demand(s) cleared\n")
    return 0


def cmd_runs_import(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.fairshare import runs

    # The whole file is read and checked before the database is opened.
    found = runs.read_runs(args.file)
    result = common.database(args).import_runs(found, source="import")
    out.write(f"{args.file}: {len(found)} runs: {result}\n")
    return 0


def write_runs(stream: TextIO, stored) -> None:
    """The runs as the CSV that ``fairshare affinity`` and ``runs import`` read."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(("application", "platform", "runtime_s", "corunners"))
    for run in stored:
        # repr: the shortest text that reads back as the same float.
        writer.writerow(
            (run.application, run.platform, repr(run.runtime_s), "+".join(run.corunners))
        )


def cmd_runs_export(args: argparse.Namespace, out: TextIO) -> int:
    stored = common.database(args).runs()
    if args.file == "-":
        write_runs(out, stored)
        return 0
    with atomicfile.open_replacing(args.file, "w", encoding="utf-8", newline="") as stream:
        write_runs(stream, stored)
    return 0


def _format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=["table", "json"], default="table", help="default table"
    )


def add_parser(actions) -> None:
    share = actions.add_parser(
        "share",
        help="set and list the projects' share weights",
        description="Each project's share weight: its entitlement relative to the other "
        "projects' (seed 002's fair share). The scheduler side that reads it is coming.",
    )
    share_actions = share.add_subparsers(dest="share_action", required=True, metavar="ACTION")
    share_set = share_actions.add_parser(
        "set", help="set a project's share weight", description="Set PROJECT's share weight."
    )
    share_set.add_argument("project", metavar="PROJECT")
    share_set.add_argument("weight", metavar="WEIGHT", help="a positive number")
    share_set.set_defaults(func=cmd_share_set)
    share_list = share_actions.add_parser(
        "list", help="list the share weights", description="List every project's share weight."
    )
    _format(share_list)
    share_list.set_defaults(func=cmd_share_list)

    demand = actions.add_parser(
        "demand",
        help="set, list and clear the projects' demands in cores",
        description="Each project's demand: the cores it asks for now (seed 002's fair "
        "share gives no project more than it asks for). The scheduler side is coming.",
    )
    demand_actions = demand.add_subparsers(dest="demand_action", required=True, metavar="ACTION")
    demand_set = demand_actions.add_parser(
        "set", help="set a project's demand", description="Set PROJECT's demand in cores."
    )
    demand_set.add_argument("project", metavar="PROJECT")
    demand_set.add_argument("cores", metavar="CORES", help="a whole number of cores, >= 0")
    demand_set.add_argument(
        "--application",
        metavar="APP",
        help="the application the cores are for (its hpc:app_name): entitlements follow "
        "its platform affinities before its first VM runs",
    )
    demand_set.set_defaults(func=cmd_demand_set)
    demand_list = demand_actions.add_parser(
        "list", help="list the demands", description="List every project's demand in cores."
    )
    _format(demand_list)
    demand_list.set_defaults(func=cmd_demand_list)
    demand_clear = demand_actions.add_parser(
        "clear",
        help="forget a project's demand, or every demand",
        description="Forget PROJECT's demand, or every project's demand without PROJECT.",
    )
    demand_clear.add_argument("project", metavar="PROJECT", nargs="?")
    demand_clear.set_defaults(func=cmd_demand_clear)

    runs = actions.add_parser(
        "runs",
        help="import and export measured task runs",
        description="Measured task runs of many-task applications, the CSV that 'fairshare "
        "affinity' reads (application,platform,runtime_s[,corunners]).",
    )
    runs_actions = runs.add_subparsers(dest="runs_action", required=True, metavar="ACTION")
    runs_import = runs_actions.add_parser(
        "import",
        help="import a runs file",
        description="Check every row of FILE, then make its runs the imported runs of every "
        "application it names, in one transaction: an import replaces all the imported runs "
        "of those applications and leaves other applications alone, so importing the same "
        "file again changes nothing. A file with any bad row is rejected whole.",
    )
    runs_import.add_argument("file", metavar="FILE", help="CSV of task runs ('-': stdin)")
    runs_import.set_defaults(func=cmd_runs_import)
    runs_export = runs_actions.add_parser(
        "export",
        help="export the stored runs as a runs file",
        description="Write every stored run as the CSV that 'runs import' and 'fairshare "
        "affinity' read.",
    )
    runs_export.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        default="-",
        help="where to write (default '-': stdout)",
    )
    runs_export.set_defaults(func=cmd_runs_export)
