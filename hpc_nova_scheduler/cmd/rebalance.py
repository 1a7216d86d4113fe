"""``hpc-nova-scheduler rebalance``: re-plan running HPC applications, migrate them."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TextIO

from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.cmd import common, options, planning

MIGRATIONS = ("live", "cold")


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "rebalance",
        help="propose (and with --apply, make) migrations that lower predicted interference",
        description="Read the running HPC applications from Nova and the plugin database, "
        "place them afresh with a batch planner within each pool of identical hosts (same "
        "capacity, processor group and rack), and propose the moves that lead there, at most "
        "--max-moves, each to a host with room at that moment. Nothing moves without --apply.",
    )
    common.add_cloud_arguments(parser)
    parser.add_argument(
        "--planner", default="ils", help="batch planner (default ils; see 'plan --help')"
    )
    parser.add_argument(
        "--max-moves",
        type=options.non_negative_int,
        default=10,
        help="most moves to propose, over all pools (default 10)",
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="carry the moves out, one application at a time; stop at the first error",
    )
    parser.add_argument(
        "--migration",
        choices=MIGRATIONS,
        default="live",
        help="live (default) or cold migration (migrate, then confirm the resize)",
    )
    parser.add_argument(
        "--timeout",
        type=options.positive_float,
        default=600.0,
        metavar="SECONDS",
        help="longest wait for one server to move (default 600)",
    )
    parser.add_argument("--format", choices=["table", "json"], default="table")
    planning.add_planner_arguments(
        parser,
        "weight of interference against hosts in use, 0 to 1, for ILS and MILP and for "
        "valuing moves (default 0.7, seed 004's)",
    )
    parser.set_defaults(func=run)


def propose(args: argparse.Namespace, conn, database, planner=None):
    """The pools of the live cloud and a plan for each, within ``--max-moves``."""
    from hpc_nova_scheduler.live import pools, view
    from hpc_nova_scheduler.planners import rebalance

    planner = planner or planning.load_planner(args, args.planner)
    model = planning.interference_model()
    try:
        cloud = view.read(conn)
    except view.CloudUnreadable as error:
        raise common.CommandError(str(error)) from None
    running = database.list_running()
    profiles = {p.name: p for p in database.list_profiles()}
    pooled = pools.build(cloud, running, profiles, model, args.migration)
    plans, unplanned = rebalance.propose_all(
        pooled.pools, planner, model, args.max_moves, alpha=args.alpha
    )
    if unplanned:
        pooled = dataclasses.replace(
            pooled,
            left_out=(
                *pooled.left_out,
                *((host, why) for pool, why in unplanned for host in pool.hosts),
            ),
        )
    return pooled, plans


def records_follow(conn, database, servers) -> str:
    """Make the plugin's rows of ``servers`` name the hosts Nova has them on.

    The scheduler records a move's destination when it chooses it; a
    migration the hypervisor then rolls back leaves the row on the target
    until the plugin next looks at those hosts. Rebalance knows which
    servers it touched, so it puts their rows right at once.
    """
    from hpc_nova_scheduler.db import api as db_api
    from hpc_nova_scheduler.live import migrate

    errors = db_api.ERRORS
    try:
        rows = {row.instance_uuid: row for row in database.list_running()}
    except errors as error:
        return f"; the plugin's records of its servers could not be read ({error})"
    fixed, unsure = [], []
    for server_id in servers:
        try:
            server = conn.compute.get_server(server_id)
        except migrate.failures() as error:
            unsure.append(f"{server_id} ({error})")
            continue
        if server.task_state or not server.compute_host:
            # Still on its way: the scheduler's record may be the right one.
            unsure.append(f"{server_id} ({server.task_state or 'no host'})")
            continue
        row = rows.get(server_id)
        if row is not None and server.compute_host != row.host:
            fixed.append(
                dataclasses.replace(
                    row, host=server.compute_host, nodename=server.hypervisor_hostname
                )
            )
    note = ""
    if fixed:
        try:
            database.record_running(fixed)
        except errors as error:
            return f"; the plugin's records of its servers could not be written ({error})"
        note = f"; the plugin's records of {len(fixed)} of its servers now name their hosts again"
    if unsure:
        note += f"; not checked against Nova, still moving or unreadable: {', '.join(unsure)}"
    return note


def _describe(pooled, plans, out: TextIO, fmt: str) -> None:
    moves = [(plan, move) for plan in plans for move in plan.moves]
    if fmt == "json":
        document = {
            "left_out": [{"host": h, "reason": r} for h, r in pooled.left_out],
            "pools": [
                {
                    "pool": p.pool,
                    "planner": p.planner,
                    "interference_before": round(p.before, 4),
                    "interference_after": round(p.after, 4),
                    "interference_planned": round(p.planned, 4),
                    "hosts_before": p.hosts_before,
                    "hosts_after": p.hosts_after,
                    "moves_left": p.left,
                    "moves": [
                        {
                            "application": m.unit.name,
                            "servers": list(m.unit.servers),
                            "from": m.source,
                            "to": m.target,
                            "gain": round(m.gain, 4),
                        }
                        for m in p.moves
                    ],
                }
                for p in plans
            ],
        }
        strictjson.dump(document, out, indent=2)
        out.write("\n")
        return
    for host, reason in pooled.left_out:
        out.write(f"left out: {host}: {reason}\n")
    if moves:
        common.table(
            ("#", "application", "servers", "from", "to", "gain (%)"),
            [
                (i, m.unit.name, " ".join(m.unit.servers), m.source, m.target, f"{m.gain:.2f}")
                for i, (_, m) in enumerate(moves, start=1)
            ],
            out,
        )
    for p in plans:
        out.write(
            f"pool {p.pool}: predicted interference {p.before:.2f} -> {p.after:.2f} "
            f"({p.planner}'s placement: {p.planned:.2f}), hosts used {p.hosts_before} -> "
            f"{p.hosts_after}, {len(p.moves)} moves"
            + (f"; {p.left} applications stay off the planned hosts" if p.left else "")
            + "\n"
        )
    if not plans:
        out.write("no pool of hosts whose servers may all move\n")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.live import migrate

    planner = planning.load_planner(
        args, args.planner
    )  # a bad --planner is told before the cloud is asked
    database = common.database(args)
    conn = common.connect(args)
    pooled, plans = propose(args, conn, database, planner)
    _describe(pooled, plans, out, args.format)
    moves = [move for plan in plans for move in plan.moves]
    if not args.apply:
        if moves and args.format == "table":
            out.write("dry run: nothing moved; --apply makes these moves\n")
        return 0
    mover = migrate.Mover(conn, migration=args.migration, timeout=args.timeout)

    def moved(done: int, move) -> None:
        out.write(
            f"moved {move.unit.name} ({len(move.unit.servers)} servers) "
            f"from {move.source} to {move.target} [{done}/{len(moves)}]\n"
        )
        out.flush()

    try:
        migrate.carry_out(mover, moves, after_each=moved)
    except migrate.MoveFailed as error:
        raise common.CommandError(
            f"stopped after {error.done} of {len(moves)} moves: {error}"
            f"{records_follow(conn, database, error.move.unit.servers)}"
        ) from None
    out.write(f"rebalance: {len(moves)} moves made\n")
    return 0
