"""``hpc-nova-scheduler hosts show``: each host's cache pressure, declared and measured.

Reads the plugin database only: the VMs the plugin records per host
(``app_running``) and, with ``--measured``, what the hosts' collectors
reported (:mod:`hpc_nova_scheduler.measured.hosts` computes the totals).
"""

from __future__ import annotations

import argparse
from typing import TextIO

from oslo_utils import timeutils

from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.cmd import common
from hpc_nova_scheduler.measured import hosts as measured_hosts
from hpc_nova_scheduler.measured.pressure import Settings

MiB = 2**20


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "hosts",
        help="each host's cache pressure, declared and measured",
        description="The hosts the plugin records VMs on, from the plugin database.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = actions.add_parser(
        "show",
        help="each host's VMs and cache pressure (the total of their cache scores)",
        description="Each host's recorded VMs and cache pressure: the total of their "
        "declared cache scores, held to cache_threshold and sync_cache_threshold. With "
        "--measured, also what hpc-scheduler-collector measured there: the total with each "
        "VM measured long enough at its measured score (measured_full_llc_score x "
        "occupancy / LLC size), the total in force under [hpc_scheduler] "
        "cache_pressure_source, the LLC occupancy and memory bandwidth of the host, and "
        "the age of its last report (stale after measured_stale_after).",
    )
    show.add_argument("host", nargs="*", help="only these hosts (default: every host)")
    show.add_argument("--measured", action="store_true", help="also the collectors' measurements")
    show.add_argument("--format", choices=["table", "json"], default="table", help="default table")
    show.set_defaults(func=show_command)


def show_command(args: argparse.Namespace, out: TextIO) -> int:
    settings = Settings.of(args.conf.hpc_scheduler)
    only = sorted(set(args.host)) or None
    database = common.database(args)
    try:
        running = database.list_running(only)
        reports = {}
        instances = {}
        if args.measured:
            reports = {r.host: r for r in database.measured_hosts(hosts=only)}
            instances = database.measured_instances(hosts=only)
    finally:
        database.dispose()
    found = measured_hosts.host_pressures(
        (measured_hosts.RunningScore(r.instance_uuid, r.host, r.cache_score) for r in running),
        settings,
        reports,
        instances,
        timeutils.utcnow(),
    )
    if args.format == "json":
        strictjson.dump(
            {
                "cache_pressure_source": settings.source,
                "hosts": [_as_json(h, args.measured) for h in found],
            },
            out,
            indent=2,
        )
        out.write("\n")
        return 0
    if not found:
        out.write("no host runs a VM the plugin records" + (" or reports" * args.measured) + "\n")
        return 0
    if not args.measured:
        common.table(
            ("host", "VMs", "declared"), [(h.host, h.vms, f"{h.declared:g}") for h in found], out
        )
        return 0
    common.table(
        (
            "host",
            "VMs",
            "declared",
            "measured",
            "VMs measured",
            f"in force ({settings.source})",
            "LLC occupancy",
            "memory bandwidth",
            "report",
        ),
        [
            (
                h.host,
                h.vms,
                f"{h.declared:g}",
                f"{h.measured:.1f}",
                h.measured_vms,
                f"{h.in_force:.1f}",
                _occupancy(h),
                _bandwidth(h),
                _report(h, settings),
            )
            for h in found
        ],
        out,
    )
    return 0


def _occupancy(h: measured_hosts.HostPressure) -> str:
    share = h.occupancy_share
    if share is None:
        return "unknown"
    return f"{h.report.totals['llc_occupancy'] / MiB:.1f} MiB ({share:.0%})"


def _bandwidth(h: measured_hosts.HostPressure) -> str:
    if h.report is None or "mbm_total_bps" not in h.report.totals:
        return "unknown"
    return f"{h.report.totals['mbm_total_bps'] / 1e9:.2f} GB/s"


def _report(h: measured_hosts.HostPressure, settings: Settings) -> str:
    if h.age is None:
        return "never"
    state = f"stale (> {settings.stale_after:g} s)" if h.stale else "fresh"
    problems = f"; {len(h.report.problems)} problem(s)" if h.report.problems else ""
    return f"{h.age:.0f} s ago, {state}{problems}"


def _as_json(h: measured_hosts.HostPressure, measured: bool) -> dict:
    found: dict = {"host": h.host, "vms": h.vms, "declared": h.declared}
    if not measured:
        return found
    report = h.report
    found.update(
        {
            "measured": h.measured,
            "measured_vms": h.measured_vms,
            "in_force": h.in_force,
            "report_age_s": h.age,
            "stale": h.stale,
            "llc_bytes": None if report is None else report.llc_bytes,
            "totals": {} if report is None else dict(report.totals),
            "measures": [] if report is None else list(report.measures),
            "problems": [] if report is None else list(report.problems),
        }
    )
    return found
