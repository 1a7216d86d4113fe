"""``hpc-nova-scheduler fairshare allocate | show | report``: fair share in the live cloud.

``allocate`` runs seed 002's two levels once, from the plugin database
(shares, demand, runs, recorded VMs, refusals, decayed usage) and Nova's
compute nodes and aggregates, prints the entitlements per project and
platform and the node templates, and writes them as a new generation
unless ``--dry-run``. It is what the allocator of ``hpc-scheduler-agent``
does at every ``fairshare_interval``, except that it never charges usage: only
the lease's holder does, so that no second is charged twice.

``show`` is the tenant's view, what Slurm's ``sshare`` shows: per project
and platform the entitlement of the latest generation, the cores in use,
the decayed usage, the affinity and the relative throughput. ``report``
is the operator's: how fairly the cores in use serve the projects now
(Jain's index of their normalised throughput) and how well they fit the
platforms (an efficiency estimate). Both read the generation's stored
platforms, so neither needs Nova. What they print is computed by
:mod:`~hpc_nova_scheduler.fairshare.live_report`; this module reads and prints.

Nova is imported only by ``allocate``'s default source of compute nodes
(:func:`~hpc_nova_scheduler.agent.allocator.nova_nodes`, imported when
the command runs), so that ``--help`` and the other commands run without it.
"""

from __future__ import annotations

import argparse
import logging
import types
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from oslo_utils import timeutils

from hpc_nova_scheduler import atomicfile, strictjson
from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.cmd import common

if TYPE_CHECKING:
    from hpc_nova_scheduler.fairshare import live_allocation, live_report, platforms

#: Where ``allocate`` gets the compute nodes and their aggregates' ``hpc:``
#: tags (host -> key -> values) from: Nova by default, a list in tests.
CloudSource = Callable[[argparse.Namespace], "tuple[Sequence[platforms.Node], Mapping | None]"]


def _agent_allocator() -> types.ModuleType:
    """:mod:`~hpc_nova_scheduler.agent.allocator`, imported without Nova's chatter.

    It imports Nova, and Nova loads oslo.service's eventlet backend, which
    logs at INFO where the command's oslo.log writes (standard output, where
    it would break ``--format json``) and warns that eventlet is deprecated.
    Neither concerns the reader of a fair-share table.
    """
    logging.getLogger("oslo_service.backend").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
        from hpc_nova_scheduler.agent import allocator
    return allocator


# -- options -----------------------------------------------------------------


def _settings(conf, policy: str | None = None) -> hpc_conf.FairnessSettings | None:
    """The command's fair-share options, ``policy`` overriding ``fairness_policy``."""
    if policy is not None:
        conf.set_override("fairness_policy", policy, group=hpc_conf.GROUP_NAME)
    try:
        return hpc_conf.fairness_settings(conf)
    except hpc_conf.ConfigurationError as error:
        raise common.CommandError(str(error)) from None


def _interval(conf) -> tuple[int, str]:
    """``fairshare_interval`` and ``fairness_policy``, also when fair share is off."""
    found = _settings(conf)
    if found is not None:
        return found.interval, found.policy
    # fairness_settings read (and checked) every option before it saw 'none'.
    return conf[hpc_conf.GROUP_NAME].fairshare_interval, hpc_conf.NO_FAIRNESS


# -- allocate ------------------------------------------------------------------


def tags_of(aggregates: Iterable[Any]) -> dict[str, dict[str, frozenset[str]]]:
    """Every host's ``hpc:`` aggregate metadata, as the scheduler reads it.

    The scheduler's :class:`~hpc_nova_scheduler.scheduler.aggregate_tags.AggregateTags`
    falls back to its cache on failure; a command has no cache, so a
    failure here is the command's error.
    """
    from hpc_nova_scheduler.scheduler import aggregate_tags

    return aggregate_tags.tags_of(aggregates)


def read_nova() -> tuple[list[platforms.Node], dict]:
    """The compute nodes of every cell and the aggregates' tags, with Nova configured."""
    from nova import context as nova_context
    from nova import objects

    allocator = _agent_allocator()
    aggregates = objects.AggregateList.get_all(nova_context.get_admin_context())
    return allocator.nova_nodes(), tags_of(aggregates)


def read_nova_tags() -> dict:
    """The aggregates' tags alone (the hosts' topology domains), with Nova configured."""
    from nova import context as nova_context
    from nova import objects

    _agent_allocator()  # Nova's modules, imported without its chatter
    return tags_of(objects.AggregateList.get_all(nova_context.get_admin_context()))


def nova_tags(args: argparse.Namespace) -> dict:
    """:func:`read_nova_tags` after loading Nova's configuration from the command's files."""
    from hpc_nova_scheduler.cmd import reconcile

    return reconcile.read_cloud(args, read_nova_tags)


def nova_source(args: argparse.Namespace) -> tuple[list[platforms.Node], dict]:
    """:func:`read_nova` after loading Nova's configuration from the command's files."""
    from hpc_nova_scheduler.cmd import reconcile

    return reconcile.read_cloud(args, read_nova)


def allocate_handler(source: CloudSource = nova_source) -> common.Handler:
    """The ``fairshare allocate`` command, reading compute nodes from ``source``."""

    def handler(args: argparse.Namespace, out: TextIO) -> int:
        return _allocate(args, out, source)

    return handler


def _allocate(args: argparse.Namespace, out: TextIO, source: CloudSource) -> int:
    from hpc_nova_scheduler.core.sharing import SharingError
    from hpc_nova_scheduler.fairshare import live_allocation, platforms

    options = _settings(args.conf, args.policy)
    if options is None:
        raise common.CommandError(
            f"fair share is off ([{hpc_conf.GROUP_NAME}] fairness_policy = none); set it, "
            "or pass --policy equal|paf|aaf|pa-rr for a trial"
        )
    database = common.database(args)
    try:
        if not database.shares():
            raise common.CommandError(
                f"no project has a share; set one with '{common.PROG} fairshare share set "
                "PROJECT WEIGHT'"
            )
        try:
            nodes, tags = source(args)
            cloud = platforms.build_cloud(nodes, tags)
            outcome = live_allocation.allocate(database, options, cloud, write=not args.dry_run)
        except (platforms.FairshareError, SharingError) as error:
            raise common.CommandError(f"cannot allocate: {error}; nothing written") from None
    finally:
        database.dispose()
    if args.format == "json":
        strictjson.dump(_allocation_json(options, outcome, args.dry_run), out, indent=2)
        out.write("\n")
        return 0
    _allocation_tables(outcome, out)
    if args.dry_run:
        out.write(f"policy {options.policy}: nothing written (--dry-run)\n")
    else:
        out.write(f"policy {options.policy}: generation {outcome.generation} written\n")
    return 0


def _allocation_json(
    options: hpc_conf.FairnessSettings, outcome: live_allocation.Outcome, dry_run: bool
) -> dict:
    return {
        "policy": options.policy,
        "generation": outcome.generation,
        "dry_run": dry_run,
        "platforms": {
            p.name: {"nodes": p.nodes, "cores_per_node": p.cores_per_node, "cores": p.cores}
            for p in outcome.inputs.cloud.platforms
        },
        "demand": {p.name: p.demand for p in outcome.inputs.projects},
        "allocation": outcome.allocation,
        "affinity": outcome.affinity,
        "templates": outcome.templates,
    }


def _allocation_tables(outcome: live_allocation.Outcome, out: TextIO) -> None:
    platforms = [p.name for p in outcome.inputs.cloud.platforms]
    rows = []
    for project in outcome.inputs.projects:
        cores = outcome.allocation.get(project.name, {})
        rows.append(
            (
                project.name,
                f"{project.weight:g}",
                project.demand,
                *(cores.get(name, 0) for name in platforms),
                sum(cores.values()),
            )
        )
    out.write("entitlements (cores)\n")
    common.table(("project", "weight", "demand", *platforms, "total"), rows, out)
    out.write("node templates\n")
    template_rows = [
        (
            platform,
            " + ".join(f"{name}:{cores}" for name, cores in template["slots"]) or "(empty)",
            template["nodes"],
        )
        for platform in platforms
        for template in outcome.templates.get(platform, [])
    ]
    common.table(("platform", "cores per project on a node", "nodes"), template_rows, out)


# -- what show and report read -----------------------------------------------


def _generation_json(found: live_report.Live) -> dict:
    return {
        "number": found.generation.number,
        "policy": found.generation.policy,
        "created_at": found.generation.created_at.isoformat(),
        "age_s": found.age_s,
        "stale": found.stale,
        "fairness_policy": found.policy,
        "fairshare_interval": found.interval,
    }


def _read_live(args: argparse.Namespace, project: str | None = None) -> live_report.Live:
    from hpc_nova_scheduler.fairshare import live_allocation, live_report, platforms

    interval, policy = _interval(args.conf)
    database = common.database(args)
    try:
        shares = database.shares()
        if project is not None and project not in shares:
            raise common.CommandError(
                f"--project {project}: no such project has a share "
                f"(see '{common.PROG} fairshare share list')"
            )
        generation = database.latest_generation()
        if generation is None:
            raise common.CommandError(
                f"no fair-share generation yet: the allocator has not run; run "
                f"'{common.PROG} fairshare allocate' or set [{hpc_conf.GROUP_NAME}] "
                "fairness_policy"
            )
        stored = generation.templates if isinstance(generation.templates, Mapping) else {}
        cloud = platforms.cloud_from_json(stored.get("cloud", {"platforms": [], "hosts": {}}))
        now = timeutils.utcnow()
        inputs = live_allocation.read_inputs(database, cloud, interval, now)
        use = database.cores_in_use()
        usage = database.usage()
        loans = database.loans()
    finally:
        database.dispose()
    return live_report.live_view(
        generation,
        cloud.platforms,
        cloud.platform_of,
        inputs.projects,
        inputs.table,
        policy=policy,
        interval=interval,
        now=now,
        shares=shares,
        use=use,
        usage=usage,
        loans=loans,
    )


def _age(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _header(found: live_report.Live, out: TextIO, err: TextIO) -> None:
    state = "STALE, not enforced" if found.stale else "in force"
    if found.policy == hpc_conf.NO_FAIRNESS:
        state = "not enforced: fairness_policy = none"
    out.write(
        f"generation {found.generation.number} ({found.generation.policy}), written "
        f"{_age(found.age_s)} ago at {found.generation.created_at:%Y-%m-%d %H:%M:%S} UTC: "
        f"{state} (stale after 2 x fairshare_interval = {2 * found.interval} s)\n"
    )
    _warn_elsewhere(found, err)


def _warn_elsewhere(found: live_report.Live, err: TextIO) -> None:
    lost = sum(found.elsewhere.values())
    if lost:
        err.write(
            f"{common.PROG}: warning: {lost} cores in use on hosts that generation "
            f"{found.generation.number} does not know are left out; run "
            f"'{common.PROG} fairshare allocate'\n"
        )


def _number(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)


# -- show --------------------------------------------------------------------


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.fairshare import live_report

    found = _read_live(args, args.project)
    names = [args.project] if args.project else sorted(found.shares)
    projects = live_report.project_shares(found, names)
    if args.format == "json":
        strictjson.dump(
            {"generation": _generation_json(found), "projects": projects}, out, indent=2
        )
        out.write("\n")
        _warn_elsewhere(found, args.err)
        return 0
    _header(found, out, args.err)
    rows = []
    for name, project in projects.items():
        for platform, values in project["platforms"].items():
            rows.append(
                (
                    name,
                    f"{project['weight']:g}",
                    project["application"] or "-",
                    platform,
                    values["entitled"],
                    values["in_use"],
                    values["borrowed"],
                    values["preemptible"],
                    f"{values['usage_core_seconds'] / 3600:.2f}",
                    _number(values["affinity"], "{:.3f}"),
                    _number(values["relative_throughput"], "{:.2f}"),
                )
            )
    common.table(
        (
            "project",
            "weight",
            "application",
            "platform",
            "entitled",
            "in use",
            "borrowed",
            "preemptible",
            "usage (core-h)",
            "affinity",
            "rel. throughput",
        ),
        rows,
        out,
    )
    return 0


# -- report ------------------------------------------------------------------


def _draw(path: str, result: live_report.Fairness, found: live_report.Live) -> None:
    """A bar per project: its normalised throughput share; written whole or not at all."""
    import matplotlib

    # Its first run logs at INFO that it built its font cache: not the reader's concern.
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    from matplotlib import pyplot

    names = list(result.projects)
    values = [result.projects[n]["normalised_throughput_share"] for n in names]
    figure, axis = pyplot.subplots(figsize=(max(4.0, 0.8 * len(names) + 2), 3.5))
    colours = ["tab:blue" if n in result.counted else "tab:gray" for n in names]
    axis.bar(names, values, color=colours)
    axis.set_ylabel("best-equivalent cores / weight")
    jain = "-" if result.jain is None else f"{result.jain:.3f}"
    efficiency = "-" if result.efficiency is None else f"{result.efficiency:.3f}"
    axis.set_title(
        f"generation {found.generation.number}: Jain {jain}, efficiency {efficiency}",
        fontsize=10,
    )
    figure.tight_layout()
    try:
        with atomicfile.replacing(path) as scratch:
            figure.savefig(scratch, format="png")
    finally:
        pyplot.close(figure)


def cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.fairshare import live_report

    found = _read_live(args)
    result = live_report.fairness_of(found)
    if args.png:
        # Before anything is printed: a file that cannot be written leaves
        # no report behind either.
        try:
            _draw(args.png, result, found)
        except OSError as error:
            raise common.CommandError(f"--png {args.png}: {error.strerror or error}") from None
    if args.format == "json":
        strictjson.dump(
            {
                "generation": _generation_json(found),
                "projects": result.projects,
                "counted": list(result.counted),
                "jain_index": result.jain,
                "efficiency": result.efficiency,
            },
            out,
            indent=2,
        )
        out.write("\n")
        _warn_elsewhere(found, args.err)
        return 0
    _header(found, out, args.err)
    rows = [
        (
            name,
            f"{p['weight']:g}",
            p["demand"],
            p["cores_in_use"],
            f"{p['best_equivalent_cores']:.2f}",
            f"{p['normalised_throughput_share']:.2f}",
        )
        for name, p in result.projects.items()
    ]
    common.table(
        ("project", "weight", "demand", "in use", "best-equiv. cores", "norm. throughput share"),
        rows,
        out,
    )
    out.write(
        f"Jain's index over {len(result.counted)} project(s) asking for cores: "
        f"{_number(result.jain, '{:.3f}')}\n"
        f"efficiency (best-equivalent cores / cores in use): "
        f"{_number(result.efficiency, '{:.3f}')}\n"
    )
    return 0


# -- the parsers ---------------------------------------------------------------


def _format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=["table", "json"],
        default="table",
        help="table (rounded), or json (unrounded, for scripts); default table",
    )


def add_parser(actions, source: CloudSource = nova_source) -> None:
    allocate = actions.add_parser(
        "allocate",
        help="run the fair-share allocator once and write a generation",
        description="Run seed 002's two levels once, as the allocator inside "
        "nova-scheduler does every fairshare_interval: from the shares, demand, runs, "
        "recorded VMs, refusals and decayed usage of the plugin database and from Nova's "
        "compute nodes and aggregates (hpc:platform, hpc:cpu_group, cpu_info), compute "
        "the entitlements per project and platform and the node templates, print them, "
        "and write them as a new generation, which the placement filter enforces. Uses "
        "the [hpc_scheduler] fair-share options of the configuration files; usage is not "
        "charged (only the allocator that holds the lease charges it). Needs "
        "nova-scheduler's nova.conf to read Nova's databases.",
    )
    allocate.add_argument(
        "--dry-run", action="store_true", help="print the entitlements, write nothing"
    )
    allocate.add_argument(
        "--policy",
        choices=sorted(hpc_conf.FAIRNESS_POLICIES),
        help="first-level policy for this run instead of fairness_policy (a trial; a "
        "generation it writes holds until the allocator's next run)",
    )
    _format(allocate)
    allocate.set_defaults(func=allocate_handler(source))

    show = actions.add_parser(
        "show",
        help="entitlements, use and affinity per project and platform (like sshare)",
        description="Per project with a share and per platform, what Slurm's sshare shows "
        "a user: the entitlement in cores of the latest generation; the cores in use "
        "(recorded VMs and live claims, but not preemptible VMs: those never count against "
        "the entitlement); of those in use, the borrowed cores (VMs placed beyond the "
        "entitlement under fairshare_enforcement = borrow, which fairshare_reclaim may take "
        "back); the cores of the project's preemptible VMs (flavors with hpc:preemptible = "
        "true, always open to reclaim); a VM a reclaim took back counts in none; the decayed "
        "usage in best-equivalent core-hours as the allocator last charged it; the "
        "affinity the filter orders platforms by (platform_affinity); and the relative "
        "throughput, the project's application's "
        "tasks per core-hour on the platform over those on its fastest platform (1.00 on "
        "its best platform; '-' where it has no solo run there), from the stored runs. "
        "Also the generation's number and age, and whether it is stale (older than 2 x "
        "fairshare_interval: the filter then places without fair share).",
    )
    show.add_argument("--project", metavar="PROJECT", help="only this project (it needs a share)")
    _format(show)
    show.set_defaults(func=cmd_show)

    report = actions.add_parser(
        "report",
        help="live fairness and efficiency over the cloud",
        description="Per project with a share: its normalised throughput share, the cores "
        "it uses on each platform times its relative throughput there (best-equivalent "
        "cores; 1 where unmeasured), over its weight. Then Jain's index of those shares "
        "over the projects that ask for cores (demand or cores in use; 1 is perfectly "
        "fair), and an efficiency estimate: best-equivalent cores in use over cores in "
        "use (1 when every core runs its project on its fastest platform). Platforms are "
        "those of the latest generation.",
    )
    report.add_argument("--png", metavar="FILE", help="also draw the shares as a bar chart (PNG)")
    _format(report)
    report.set_defaults(func=cmd_report)
