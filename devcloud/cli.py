"""``tools/cloud.py up | status | stress | down``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from devcloud import SOURCE_TREE, backends, config, control, fairshare, memory, racks, services
from hpc_nova_scheduler.cmd import options

DEFAULT_ROOT = SOURCE_TREE / ".cloud"
MYSQL = "mysql+pymysql://root@127.0.0.1"
RABBIT = "rabbit://guest:guest@127.0.0.1:5672"


def _say(message: str) -> None:
    print(f"cloud: {message}", flush=True)


def cmd_up(args: argparse.Namespace) -> int:
    if args.nodes and args.measured:
        print("cloud: --measured: not with --nodes (a collector per compute of one node)")
        return 2
    if args.nodes:
        if args.computes is not None:
            print("cloud: --computes: not with --nodes (one compute service per rack)")
            return 2
        computes = racks.services_for(args.nodes, args.rack_size)
        try:
            racks.topology(args.topology)
        except ValueError as error:
            print(f"cloud: --topology: {error}")
            return 2
    else:
        computes = 8 if args.computes is None else args.computes
    if args.cells > computes:
        print(f"cloud: --cells {args.cells}: more cells than computes ({computes})")
        return 2
    control.up(
        args.root,
        mysql=args.mysql,
        rabbit=args.rabbit,
        computes=computes,
        scheduler_workers=args.scheduler_workers,
        plugin=args.plugin == "on",
        say=_say,
        keep_on_failure=args.keep_on_failure,
        policy=args.policy,
        interference_model=args.interference_model,
        fairness=args.fairness,
        enforcement=args.enforcement,
        topology=args.topology,
        cells=args.cells,
        reclaim=args.reclaim,
        reclaim_grace=args.reclaim_grace,
        nodes=args.nodes or 0,
        rack_size=args.rack_size,
        services_per_process=args.services_per_process,
        placement_results=args.placement_results,
        idle_trait_interval=args.idle_trait_interval,
        measured=args.measured,
    )
    return 0


def _idle_trait_interval(text: str) -> int:
    """Seconds in nova.conf's range for the option (1 to 3600)."""
    value = options.positive_int(text)
    if value > 3600:
        raise argparse.ArgumentTypeError(f"must be at most 3600, got {text!r}")
    return value


def cmd_status(args: argparse.Namespace) -> int:
    run = control.load_current(args.root)
    print(
        f"run {run.run_id} in {run.folder} (plugin {'on' if run.plugin else 'off'}, "
        f"interference_model {run.interference_model}, fairness_policy {run.fairness}"
        + (f" ({run.enforcement})" if run.fairness != "none" else "")
        + (
            f", fairshare_reclaim {run.reclaim} (grace {run.reclaim_grace} s)"
            if run.fairness != "none" and run.reclaim != "off"
            else ""
        )
        + f"; {control.describe_topology(run)}"
        + (f"; {run.cells} cells" if run.cells > 1 else "")
        + (f"; {run.nodes} nodes in {run.computes} racks of {run.rack_size}" if run.nodes else "")
        + (
            f"; max_placement_results {run.placement_results}"
            if run.placement_results is not None
            else ""
        )
        + (
            f"; idle and roomy-rack traits every {run.idle_trait_interval} s"
            if run.idle_trait_interval
            else ""
        )
        + ")"
    )
    width = max(len(s.name) for s in run.services) if run.services else 10
    stopped = 0
    for name, pid, state, detail in control.status(run):
        stopped += state != "running"
        print(f"  {name:<{width}}  {pid:>7}  {state:<8} {detail}")
    for line in memory.table(memory.usage(run)):
        print(f"  {line}")
    return 1 if stopped else 0


def cmd_down(args: argparse.Namespace) -> int:
    run = control.load_current(args.root)
    control.down(run, say=_say, keep_files=args.keep_logs)
    return 0


def cmd_stress(args: argparse.Namespace) -> int:
    from devcloud import stress

    run = control.load_current(args.root)
    return stress.main(run, args, say=_say)


def reclaim_grace(text: str) -> int:
    """``--reclaim-grace``: whole seconds, within ``fairshare_reclaim_grace``'s bounds."""
    seconds = options.non_negative_int(text)
    if seconds > GRACE_MAX:
        raise argparse.ArgumentTypeError(f"at most {GRACE_MAX} seconds (7 days), not {seconds}")
    return seconds


#: ``[hpc_scheduler] fairshare_reclaim_grace``'s maximum.
GRACE_MAX = 7 * 24 * 3600


def add_reclaim_arguments(parser: argparse.ArgumentParser, *, default: bool) -> None:
    """``--reclaim`` and ``--reclaim-grace``; ``default``: up's defaults, else None (keep)."""
    parser.add_argument(
        "--reclaim",
        choices=config.RECLAIM_MODES,
        default="off" if default else None,
        help="[hpc_scheduler] fairshare_reclaim under --fairness: how hpc-scheduler-agent "
        "takes borrowed cores back (default "
        + ("off" if default else "the cloud's; restarts nova-scheduler if it changes")
        + f"); with it on, fairshare_interval is {config.RECLAIM_INTERVAL} s instead of "
        f"{config.FAIRSHARE_INTERVAL}",
    )
    parser.add_argument(
        "--reclaim-grace",
        type=reclaim_grace,
        metavar="SECONDS",
        default=config.RECLAIM_GRACE if default else None,
        help="[hpc_scheduler] fairshare_reclaim_grace: seconds between marking a victim and "
        "acting on it (default " + (f"{config.RECLAIM_GRACE}" if default else "the cloud's") + ")",
    )


def topology_shape(text: str) -> tuple[tuple[str, int], ...]:
    """``--topology block=2,rack=2``, read as ``simulate --topology`` reads it."""
    from hpc_nova_scheduler.sim import topology

    try:
        return topology.parse_topology(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tools/cloud.py",
        description="A real Nova and Placement control plane on this machine, for trials.",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(os.environ.get("HPC_CLOUD_ROOT", DEFAULT_ROOT)),
        help="folder holding the runs (default: .cloud in the source tree, or $HPC_CLOUD_ROOT)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    up = sub.add_parser("up", help="start a cloud", description="Set up and start a cloud.")
    up.add_argument(
        "--computes",
        type=options.positive_int,
        default=None,
        help="nova-compute processes (default 8)",
    )
    up.add_argument(
        "--nodes",
        type=options.positive_int,
        default=None,
        help="this many nodes instead of --computes: racks of --rack-size nodes, one "
        "nova-compute service each (hosts compute-000, ...; nodes compute-000-n00, ...), "
        f"several services per process; {racks.NODE_VCPUS} vCPU, "
        f"{racks.NODE_MEMORY_MB // 1024} GiB, {racks.NODE_DISK_GB} GB each, processor "
        "models alternating by pairs of racks; --topology then names the levels above "
        "the rack (block=6: six racks a block)",
    )
    up.add_argument(
        "--rack-size",
        type=options.positive_int,
        default=racks.RACK_SIZE,
        help=f"nodes per rack under --nodes (default {racks.RACK_SIZE})",
    )
    up.add_argument(
        "--services-per-process",
        type=options.positive_int,
        default=racks.SERVICES_PER_PROCESS,
        help="compute services sharing one process under --nodes "
        f"(default {racks.SERVICES_PER_PROCESS})",
    )
    up.add_argument(
        "--placement-results",
        type=options.positive_int,
        default=None,
        metavar="M",
        help="[scheduler] max_placement_results (default: Nova's, 1000)",
    )
    up.add_argument(
        "--idle-trait-interval",
        type=_idle_trait_interval,
        default=0,
        metavar="S",
        help="[hpc_scheduler] idle_trait_interval, with roomy_rack_trait: the agent keeps "
        "CUSTOM_HPC_IDLE and CUSTOM_HPC_ROOMY_RACK every S seconds (default: off)",
    )
    up.add_argument(
        "--scheduler-workers",
        type=options.positive_int,
        default=2,
        help="[scheduler] workers (default 2)",
    )
    up.add_argument(
        "--plugin", choices=("on", "off"), default="on", help="enable HpcPlacementFilter"
    )
    up.add_argument(
        "--policy",
        choices=("reject", "degrade"),
        default="reject",
        help="[hpc_scheduler] database_failure_policy (default reject)",
    )
    up.add_argument(
        "--interference-model",
        metavar="NAME",
        default="cache-score",
        help="[hpc_scheduler] interference_model: cache-score (default), ivmp, ivmp-base, "
        "pair-forest, runtime-trees or a stored name (a fitted kind is fitted and stored)",
    )
    up.add_argument(
        "--fairness",
        choices=fairshare.POLICIES,
        default="none",
        help="[hpc_scheduler] fairness_policy (default none); stress then sets up three "
        "projects with a share",
    )
    up.add_argument(
        "--enforcement",
        choices=fairshare.ENFORCEMENTS,
        default="strict",
        help="[hpc_scheduler] fairshare_enforcement under --fairness (default strict)",
    )
    add_reclaim_arguments(up, default=True)
    up.add_argument(
        "--topology",
        type=topology_shape,
        default=(),
        metavar="LEVEL=N,...",
        help="nest the computes in topology levels, outermost first, as simulate --topology "
        "does: each level's N is how many domains of the next level one of its domains "
        "holds, the last level's how many computes; e.g. block=2,rack=2 makes 2 blocks of "
        "2 racks of 2 computes out of 8. Tags the hosts with hpc:<level> aggregates and sets "
        "[hpc_scheduler] topology_levels (default: racks of 4 computes, topology_levels "
        "rack)",
    )
    up.add_argument(
        "--cells",
        type=options.positive_int,
        default=1,
        help="Nova cells the computes are spread over, in contiguous blocks, each after the "
        "first with its own database, RabbitMQ virtual host and nova-conductor (default 1)",
    )
    up.add_argument(
        "--measured",
        action="store_true",
        help="measure each compute's guests: a generated resctrl tree per compute driven by "
        "the cache-pressure ground truth (devcloud.counters), the computes' fake driver "
        "writing libvirt's status files, and an hpc-scheduler-collector per compute; the "
        "agent's measured rebalance on (stress --measured uses them)",
    )
    up.add_argument("--mysql", default=MYSQL, help=f"MariaDB server URL (default {MYSQL})")
    up.add_argument("--rabbit", default=RABBIT, help=f"RabbitMQ URL (default {RABBIT})")
    up.add_argument(
        "--keep-on-failure", action="store_true", help="leave a failed setup running to inspect"
    )
    up.set_defaults(func=cmd_up)
    status = sub.add_parser("status", help="show each service and its pid")
    status.set_defaults(func=cmd_status)
    down = sub.add_parser("down", help="stop everything 'up' started and remove it")
    down.add_argument("--keep-logs", action="store_true", help="keep the run's folder")
    down.set_defaults(func=cmd_down)
    from devcloud import stress

    stress.add_arguments(sub, cmd_stress)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (services.ServiceError, backends.BackendError) as error:
        print(f"cloud: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
