"""``hpc-nova-scheduler fairshare``: seed 002's fairness-aware sharing of platforms.

``fairshare affinity RUNS_FILE`` prints each application's platform
affinities (throughput, EPA, RPA) and, when the file has runs with
co-runners, its co-runner affinities (raw and normalised), as tables, CSV
or JSON. The JSON object and the CSV columns are a contract that scripts
read: numbers are unrounded, keys in the order of the file.

``fairshare simulate`` lives in :mod:`.fairshare_simulate`; ``fairshare share``,
``demand`` and ``runs`` (the data in the plugin database) in
:mod:`.fairshare_data`; ``allocate``, ``show`` and ``report`` (fair share in
the live cloud) in :mod:`.fairshare_live`; ``reclaim list`` and ``reclaim
plan`` (borrowed capacity taken back) in :mod:`.fairshare_reclaim`.
"""

from __future__ import annotations

import argparse
import csv
from typing import TextIO

from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.cmd import (
    common,
    fairshare_data,
    fairshare_live,
    fairshare_reclaim,
    fairshare_simulate,
)

#: Metric key, its heading, and how tables print it (JSON and CSV never round).
METRICS = (
    ("throughput", "throughput (tasks per core-hour)", "{:.2f}"),
    ("epa", "egocentric platform affinity (EPA)", "{:.3f}"),
    ("rpa", "reciprocal platform affinity (RPA)", "{:.3f}"),
    ("corunner_raw", "co-runner affinity, raw difference (s)", "{:.2f}"),
    ("corunner_normalised", "co-runner affinity, normalised difference (%)", "{:.2f}"),
)


def cmd_affinity(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.fairshare import affinity, runs

    try:
        found = affinity.affinities(runs.read_runs(args.runs_file))
    except affinity.MissingSoloRun as error:
        raise common.CommandError(f"{args.runs_file}: {error}") from None
    for application, platform in found.missing:
        args.err.write(
            f"{common.PROG}: warning: {application} has no solo run on {platform}: "
            f"its platform affinity there is neutral ({affinity.NEUTRAL:g})\n"
        )
    metrics = [(key, title, form) for key, title, form in METRICS if getattr(found, key)]
    if args.format == "json":
        strictjson.dump({key: getattr(found, key) for key, _, _ in metrics}, out, indent=2)
        out.write("\n")
    elif args.format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(("metric", "application", "platform", "value"))
        for key, _, _ in metrics:
            for application, values in getattr(found, key).items():
                for platform, value in values.items():
                    writer.writerow((key, application, platform, repr(value)))
    else:
        for index, (key, title, form) in enumerate(metrics):
            if index:
                out.write("\n")
            out.write(f"{title}\n")
            table = getattr(found, key)
            rows = [
                (
                    application,
                    *(
                        form.format(table[application][p]) if p in table[application] else "-"
                        for p in found.platforms
                    ),
                )
                for application in found.applications
                if application in table
            ]
            common.table(("application", *found.platforms), rows, out)
    return 0


def add_parser(sub) -> None:
    fairshare = sub.add_parser(
        "fairshare",
        help="seed 002's fair sharing of heterogeneous platforms",
        description="Fairness-aware sharing of heterogeneous platforms (seed 002): platform "
        "and co-runner affinities of many-task applications, and the many-task simulator "
        "that runs the two-level policies side by side.",
    )
    actions = fairshare.add_subparsers(dest="action", required=True, metavar="ACTION")
    affinity = actions.add_parser(
        "affinity",
        help="platform and co-runner affinities from measured task runs",
        description="Compute each application's throughput, egocentric (EPA) and reciprocal "
        "(RPA) platform affinity from its solo runs, and its co-runner affinity (raw "
        "seconds and normalised percent) from its runs with co-runners. RUNS_FILE is CSV "
        "with the header application,platform,runtime_s and an optional column "
        "corunners (co-runner applications joined by '+', empty for a solo run); several "
        "rows of one pair are averaged. An application with no solo run on a platform "
        "gets neutral affinity there (1.0), with a warning.",
    )
    affinity.add_argument("runs_file", metavar="RUNS_FILE", help="CSV of task runs ('-': stdin)")
    affinity.add_argument(
        "--format",
        choices=["table", "csv", "json"],
        default="table",
        help="table (rounded), or csv and json (unrounded, for scripts); default table",
    )
    affinity.set_defaults(func=cmd_affinity)
    fairshare_simulate.add_parser(actions)
    fairshare_data.add_parser(actions)
    fairshare_live.add_parser(actions)
    fairshare_reclaim.add_parser(actions)
