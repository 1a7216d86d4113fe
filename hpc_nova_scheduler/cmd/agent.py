"""``hpc-nova-scheduler agent status``: what ``hpc-scheduler-agent`` last did.

For each task of each agent its last run (started, finished, ok or the
error), its lag (seconds since it finished) against its interval, and the
fair-share lease: who allocates, until when (and the idle-traits lease, who
writes the narrowing traits, once that task has run). It reads the plugin database
only; a task whose lag is over twice its interval is ``late`` (the agent
is down or stuck; nova-scheduler places on with what it has).
"""

from __future__ import annotations

import argparse
from typing import TextIO

from oslo_utils import timeutils

from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.cmd import common
from hpc_nova_scheduler.db import api as db_api

#: A task is late when it has not finished for this many of its intervals.
LATE_INTERVALS = 2


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "agent",
        help="what hpc-scheduler-agent's tasks last did",
        description="The last run of each task of each hpc-scheduler-agent, and the "
        "fair-share lease, from the plugin database.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    status = actions.add_parser(
        "status", help="each task's last run, its lag, and the fair-share lease"
    )
    status.add_argument(
        "--format", choices=["table", "json"], default="table", help="default table"
    )
    status.set_defaults(func=status_command)


def _state(error: str | None, lag_s: float, interval_s: float | None) -> str:
    if error is not None:
        return "error"
    if interval_s and lag_s > LATE_INTERVALS * interval_s:
        return "late"
    return "ok"


def status_command(args: argparse.Namespace, out: TextIO) -> int:
    database = common.database(args)
    try:
        runs = database.task_runs()
        lease = database.lease()
        narrowing_lease = database.lease(db_api.IDLE_TRAITS_LEASE)
    finally:
        database.dispose()
    now = timeutils.utcnow()
    rows = []
    for run in runs:
        lag = (now - run.finished_at).total_seconds()
        rows.append(
            {
                "task": run.task,
                "agent": run.agent,
                "started_at": run.started_at.isoformat(),
                "finished_at": run.finished_at.isoformat(),
                "duration_s": (run.finished_at - run.started_at).total_seconds(),
                "lag_s": lag,
                "interval_s": run.interval_s,
                "state": _state(run.error, lag, run.interval_s),
                "error": run.error,
            }
        )
    held = _held(lease, now)
    narrowing_held = _held(narrowing_lease, now)
    if args.format == "json":
        strictjson.dump(
            {"tasks": rows, "fairshare_lease": held, "idle_traits_lease": narrowing_held},
            out,
            indent=2,
        )
        out.write("\n")
        return 0
    if not rows:
        out.write("no task has run yet: is hpc-scheduler-agent running?\n")
    else:
        common.table(
            ("task", "agent", "started", "finished", "lag (s)", "interval (s)", "state"),
            [
                (
                    r["task"],
                    r["agent"],
                    f"{r['started_at'][:19]}",
                    f"{r['finished_at'][:19]}",
                    f"{r['lag_s']:.0f}",
                    "" if r["interval_s"] is None else f"{r['interval_s']:g}",
                    r["state"] if r["error"] is None else f"error: {r['error']}",
                )
                for r in rows
            ],
            out,
        )
    if held is None:
        out.write("fair-share lease: never taken\n")
    else:
        out.write(f"fair-share lease: {_until(held)}\n")
    if narrowing_held is not None:
        # Only where the idle-traits task has ever run.
        out.write(f"idle-traits lease: {_until(narrowing_held)}\n")
    return 0


def _held(lease: db_api.Lease | None, now) -> dict | None:
    if lease is None:
        return None
    return {
        "holder": lease.holder,
        "expires_at": lease.expires_at.isoformat(),
        "expired": lease.expires_at < now,
    }


def _until(held: dict) -> str:
    return (
        f"{held['holder']} until {held['expires_at'][:19]}{' (expired)' if held['expired'] else ''}"
    )
