"""``hpc-nova-scheduler fairshare reclaim list | plan``: borrowed capacity taken back.

``list`` prints every reclaim the plugin database holds, pending and done
(the agent keeps ended ones for a week). ``plan`` is a dry run: what the
next allocator run of ``hpc-scheduler-agent`` would take back now, from the
latest generation (:func:`~hpc_nova_scheduler.fairshare.live_reclaim.plan`,
as the agent runs it), with the victims, their beneficiaries, the reasons,
and each need no reclaim can meet and why. It writes nothing.

The decision looks at the hosts' topology domains only for needs with
``hpc:topology_required``; only then does ``plan`` read Nova's aggregates
(as ``fairshare allocate`` does, through an injectable source) and plan
again with them. What the commands print is computed by
:mod:`~hpc_nova_scheduler.fairshare.reclaim_report`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO

from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.cmd import common, fairshare_live
from hpc_nova_scheduler.db import loans as loans_db

if TYPE_CHECKING:
    from hpc_nova_scheduler.fairshare import live_reclaim

#: Where ``plan`` gets the aggregates' ``hpc:`` tags (host -> key -> values):
#: Nova by default, a mapping in tests.
TagsSource = Callable[[argparse.Namespace], "Mapping | None"]


def _when(value) -> str:
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M:%S}"


# -- list ----------------------------------------------------------------------


def cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.fairshare import reclaim_report

    database = common.database(args)
    try:
        records = database.reclaims([args.state] if args.state else None)
    finally:
        database.dispose()
    if args.format == "json":
        strictjson.dump({"reclaims": reclaim_report.reclaim_rows(records)}, out, indent=2)
        out.write("\n")
        return 0
    if not records:
        which = f" {args.state}" if args.state else ""
        out.write(f"no{which} reclaims\n")
        return 0
    common.table(
        (
            "id",
            "state",
            "mode",
            "server",
            "project",
            "platform",
            "cores",
            "kind",
            "beneficiary",
            "requested (UTC)",
            "act after (UTC)",
            "acted (UTC)",
            "attempts",
        ),
        [
            (
                r.id,
                r.state,
                r.mode,
                r.instance_uuid,
                r.project,
                r.platform,
                r.cores,
                r.kind,
                r.beneficiary,
                _when(r.requested_at),
                _when(r.act_after),
                _when(r.acted_at),
                r.attempts,
            )
            for r in records
        ],
        out,
    )
    for r in records:
        out.write(f"reclaim {r.id}: {r.reason}\n")
        if r.error:
            out.write(f"reclaim {r.id} {r.state}: {r.error}\n")
    counts = reclaim_report.count_by_state(records)
    out.write(
        f"{len(records)} reclaim(s): "
        + ", ".join(f"{n} {state}" for state, n in counts.items())
        + "\n"
    )
    return 0


# -- plan ----------------------------------------------------------------------


def plan_handler(source: TagsSource = fairshare_live.nova_tags) -> common.Handler:
    """The ``fairshare reclaim plan`` command, reading aggregates' tags from ``source``."""

    def handler(args: argparse.Namespace, out: TextIO) -> int:
        return _plan(args, out, source)

    return handler


def _levels(args: argparse.Namespace) -> tuple[str, ...]:
    from hpc_nova_scheduler.topology import levels

    try:
        return levels.configured(args.conf)
    except levels.LevelsOptionError as error:
        raise common.CommandError(str(error)) from None


def _settings(args: argparse.Namespace) -> tuple[int, str, str]:
    """``fairshare_interval``, ``fairness_policy`` and ``fairshare_reclaim``, also when
    fair share is off (one line naming a bad option)."""
    interval, policy = fairshare_live._interval(args.conf)
    # _interval read (and checked) every fair-share option, fairshare_reclaim too.
    return interval, policy, args.conf[hpc_conf.GROUP_NAME].fairshare_reclaim


def _plan(args: argparse.Namespace, out: TextIO, source: TagsSource) -> int:
    from hpc_nova_scheduler.fairshare import live_reclaim, reclaim_report
    from hpc_nova_scheduler.scheduler import domains

    interval, policy, mode = _settings(args)
    database = common.database(args)
    try:
        generation = database.latest_generation()
        if generation is None:
            raise common.CommandError(
                f"no fair-share generation yet: the allocator has not run; run "
                f"'{common.PROG} fairshare allocate' or set [{hpc_conf.GROUP_NAME}] "
                "fairness_policy"
            )
        known = [p.name for p in live_reclaim.cloud_of(generation).platforms]
        if args.platform is not None and args.platform not in known:
            raise common.CommandError(
                f"--platform {args.platform}: no such platform in generation "
                f"{generation.number} (its platforms: {', '.join(known) or 'none'})"
            )
        now = timeutils.utcnow()
        found = live_reclaim.plan(database, generation, interval, now, only=args.platform)
        if reclaim_report.needs_domains(found):
            # Without such a need the decision never looks at domains: Nova is read only now.
            levels = _levels(args)
            tags = source(args)
            found = live_reclaim.plan(
                database,
                generation,
                interval,
                now,
                domains_of=domains.domains_of_hosts(tags, levels),
                only=args.platform,
            )
    finally:
        database.dispose()
    if args.format == "json":
        strictjson.dump(
            {
                "fairness_policy": policy,
                "fairshare_reclaim": mode,
                **reclaim_report.plan_json(found),
            },
            out,
            indent=2,
        )
        out.write("\n")
        return 0
    _plan_tables(found, policy, mode, out)
    return 0


def _plan_tables(found: live_reclaim.Plan, policy: str, mode: str, out: TextIO) -> None:
    from hpc_nova_scheduler.fairshare import reclaim_report

    out.write(
        f"generation {found.generation}, fairshare_reclaim = {mode}: dry run, nothing written\n"
    )
    if policy == hpc_conf.NO_FAIRNESS or mode == hpc_conf.RECLAIM_OFF:
        option = (
            "fairness_policy = none"
            if policy == hpc_conf.NO_FAIRNESS
            else ("fairshare_reclaim = off")
        )
        out.write(
            f"[{hpc_conf.GROUP_NAME}] {option}: the agent takes nothing back; "
            "this is what it would take with fair share and reclaim on\n"
        )
    rows = [
        (
            r.platform,
            r.victim.instance_uuid,
            r.victim.project,
            r.victim.kind,
            r.victim.cores,
            _when(r.victim.placed_at),
            r.beneficiary,
        )
        for r in found.reclaims
    ]
    if rows:
        out.write("victims\n")
        common.table(
            ("platform", "server", "project", "kind", "cores", "placed (UTC)", "beneficiary"),
            rows,
            out,
        )
        for r in found.reclaims:
            out.write(f"{r.victim.instance_uuid}: {r.reason}\n")
    else:
        out.write("victims: none\n")
    needs = [n for p in found.platforms for n in reclaim_report.needs(p)]
    if needs:
        out.write("unmet demand of projects below their entitlement\n")
        common.table(
            (
                "platform",
                "project",
                "asks",
                "required level",
                "entitled",
                "in use",
                "under way",
                "taken now",
                "unserved",
                "why",
            ),
            [
                (
                    n.platform,
                    n.project,
                    n.asks,
                    ", ".join(n.levels) or "-",
                    n.entitled,
                    n.in_use,
                    n.under_way,
                    n.taken,
                    n.unserved,
                    n.why,
                )
                for n in needs
            ],
            out,
        )
    else:
        out.write("unmet demand of projects below their entitlement: none\n")
    cores = sum(r.victim.cores for r in found.reclaims)
    unserved = sum(u.cores for u in found.unserved)
    out.write(
        f"{len(found.reclaims)} victim(s), {cores} cores; {unserved} cores of need unserved\n"
    )


# -- the parsers ---------------------------------------------------------------


def add_parser(actions, source: TagsSource = fairshare_live.nova_tags) -> None:
    reclaim = actions.add_parser(
        "reclaim",
        help="borrowed and preemptible cores taken back: the reclaims, and a dry run",
        description="Fair-share reclaim (fairshare_reclaim): after each allocator run, "
        "hpc-scheduler-agent takes back borrowed cores (VMs placed beyond their project's "
        "entitlement under fairshare_enforcement = borrow) and preemptible VMs (flavors "
        "with hpc:preemptible = true) for projects below their entitlement with unmet "
        "demand, when the platform has no idle cores for them.",
    )
    steps = reclaim.add_subparsers(dest="reclaim_action", required=True, metavar="ACTION")
    listing = steps.add_parser(
        "list",
        help="every reclaim, pending and done",
        description="Every reclaim of the plugin database, newest first: its id, state "
        "(requested: marked, waiting for its grace; acted: the victim was stopped, "
        "shelved or deleted; failed: Nova's API refused fairshare_reclaim_attempts "
        "times, the operator acts; cancelled: the victim went away or back within its "
        "entitlement; restarted: its tenant started or unshelved the victim again), "
        "mode, victim server, its project, platform, cores and kind (borrowed or "
        "preemptible), the beneficiary, when it was requested, when it may be acted on, "
        "when it was acted on, the attempts, the last error and the reason. Ended "
        "reclaims are kept a week.",
    )
    listing.add_argument("--state", choices=loans_db.STATES, help="only the reclaims in this state")
    fairshare_live._format(listing)
    listing.set_defaults(func=cmd_list)
    plan = steps.add_parser(
        "plan",
        help="dry run: what the next allocator run would take back",
        description="What hpc-scheduler-agent would take back after its next allocator "
        "run, from the latest generation and the plugin database now: the victims (server, "
        "project, kind, cores, when placed), their beneficiaries and the reasons; then per "
        "project below its entitlement with unmet demand (declared demand not running, "
        "requests refused for its entitlement in the last fairshare_interval) on a "
        "platform, what serves it (idle cores, reclaims under way, victims) or why nothing "
        "can. Reads Nova's aggregates (the hosts' topology domains) only when a need has "
        "hpc:topology_required. Writes nothing, marks no server.",
    )
    plan.add_argument(
        "--platform", metavar="PLATFORM", help="only this platform (of the latest generation)"
    )
    fairshare_live._format(plan)
    plan.set_defaults(func=plan_handler(source))
