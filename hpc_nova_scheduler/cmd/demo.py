"""The all-in-one demo: seed 003's Figure 8 case study in an in-process Nova.

For each cache threshold beta, an in-process Nova (API, conductor,
scheduler, Placement, eight fake-driver computes in one rack, SQLite) runs
with the plugin enabled and boots the Figure 8 stream; then the same stream
runs under Nova's default filters and weighers. Each run prints where every
application landed, which requests were deferred, and the cache score each
host carried, next to the paper's table.

The exit status says whether the paper was reproduced: 0 when every row
(placement and deferral order) matches, 1 when a row differs, 2 when a run
failed (a boot that Nova's scheduler did not refuse but that did not become
ACTIVE, or computes that never reported to Placement).

With ``--topology block=2,rack=2`` a further run follows, on hosts nested in
those levels (:mod:`hpc_nova_scheduler.demo.topology`): a short stream that
requires a rack, prefers a block and asks for segments, printed by block and
rack. An application that does not get what it asked for makes the exit
status 1, a failed run 2, as for Figure 8.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging as std_logging
import os
import shutil
import sys
import tempfile
import textwrap
import time
import traceback
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TextIO

import prettytable

from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.cmd import common, options
from hpc_nova_scheduler.db import api as db_api

EXAMPLE_FILE = "seed-applications.yaml"
PAPER_NAME = "seed 003's Figure 8"
EXIT_SAME = 0
EXIT_DIFFERS = 1
EXIT_FAILED = 2


def _quiet() -> None:
    # Nova's harness and its libraries narrate at INFO and warn about their
    # own deprecations; the demo's tables are the output.
    warnings.filterwarnings("ignore")
    for name in (
        "nova",
        "oslo",
        "oslo_db",
        "oslo_messaging",
        "placement",
        "stevedore",
        "hpc_nova_scheduler",
        "alembic",
        "keystoneauth",
        "futurist",
        "",
    ):
        std_logging.getLogger(name).setLevel(std_logging.ERROR)


def _database(workdir: str, label: str) -> str:
    url = f"sqlite:///{os.path.join(workdir, f'plugin-{label}.sqlite')}"
    database = db_api.Database(url)
    try:
        database.sync()
        example = str(resources.example_profiles_dir() / EXAMPLE_FILE)
        database.import_profiles(datafiles.read_profiles(example))
        database.import_interferences(datafiles.read_interferences(example))
    finally:
        database.dispose()
    return url


@dataclasses.dataclass(frozen=True)
class PaperRow:
    """One placement of the paper's table: VMs per host, and who finished first."""

    vms_per_host: dict[str, int]
    after: list[str]


def parse_paper(text: str) -> PaperRow:
    """'2x(N1-N8) after App1, App3-App5' -> VMs per host and the expanded 'after' list."""
    from hpc_nova_scheduler.demo import figure8

    placement, _, after = text.partition(" after ")
    counts: dict[str, int] = {}
    for part in placement.split("+"):
        per, span = part.strip().split("x", 1)
        first, _, last = span.strip().strip("()").partition("-")
        last = last or first
        for n in range(int(first[1:]), int(last[1:]) + 1):
            counts[f"N{n}"] = int(per)
    return PaperRow(counts, figure8.expand_after(after))


def compare(
    vms_per_host: Mapping[str, int], after: Sequence[str], refused: bool, paper: str
) -> str | None:
    """Why the demo's row differs from the paper's, or None when it matches.

    Both the placement and the deferral order ('after ...') count.
    """
    from hpc_nova_scheduler.demo import figure8

    row = parse_paper(paper)
    if refused:
        return "never placed; the paper places it " + paper
    if dict(vms_per_host) != row.vms_per_host:
        return f"placement {figure8.notation(dict(vms_per_host))}, the paper's {paper}"
    if list(after) != row.after:
        ours = ", ".join(figure8.compress_after(list(after))) if after else ""
        theirs = ", ".join(figure8.compress_after(row.after)) if row.after else ""
        if not after:
            return f"placed at once; the paper deferred it until after {theirs}"
        if not row.after:
            return f"deferred until after {ours}; the paper placed it at once"
        return f"deferral order: placed after {ours}, the paper after {theirs}"
    return None


def _wrap(text: str, indent: str = "    ") -> str:
    return textwrap.fill(text, width=96, initial_indent=indent, subsequent_indent=indent)


def _print_scenario(
    out: TextIO, scenario, paper: dict[str, str] | None, seconds: float
) -> tuple[int, list[str]]:
    """Print one run; return how many rows match the paper and why the others do not."""
    from hpc_nova_scheduler.demo import figure8

    out.write(f"\n== {scenario.title} ({seconds:.0f} s) ==\n")
    columns = ["application", "class", "cache score", "VMs", "placement"]
    if paper:
        columns += ["seed 003 Fig. 8", "same"]
    table = prettytable.PrettyTable(columns)
    table.align = "l"
    matches = 0
    differences: list[str] = []
    notes: list[str] = []
    for outcome in scenario.outcomes:
        row = [
            outcome.app.name,
            outcome.app.app_class.value,
            f"{outcome.app.cache_score:g}",
            outcome.app.count,
            outcome.placement,
        ]
        if paper:
            why = compare(
                outcome.vms_per_host, outcome.after, outcome.refused, paper[outcome.app.name]
            )
            matches += why is None
            row += [paper[outcome.app.name], "yes" if why is None else "NO"]
            if why is not None:
                differences.append(f"{outcome.app.name} at beta = {scenario.beta:g}: {why}")
                notes.append(_wrap(f"NO: {outcome.app.name}: {why}.", indent=""))
        table.add_row(row)
    out.write(table.get_string() + "\n")
    for note in notes:
        out.write(note + "\n")
    hosts = prettytable.PrettyTable(["", *figure8.HOSTS])
    dedicated = {
        h
        for o in scenario.outcomes
        if o.app.app_class.value == "ExtremeHPC"
        for h in o.vms_per_host
    }
    hosts.add_row(
        [
            "peak cache score",
            *(
                f"{scenario.peak_cache_per_host[h]:g}" + (" (dedicated)" if h in dedicated else "")
                for h in figure8.HOSTS
            ),
        ]
    )
    hosts.add_row(
        ["cache score at end", *(f"{scenario.cache_per_host[h]:g}" for h in figure8.HOSTS)]
    )
    out.write(hosts.get_string() + "\n")
    return matches, differences


def run(args: argparse.Namespace, out: TextIO) -> int:
    _quiet()
    try:
        from hpc_nova_scheduler.demo import figure8
    except ImportError as error:
        raise common.CommandError(
            f"the demo runs Nova's functional harness, which is not installed here ({error}); "
            "install it with: pip install 'hpc-nova-scheduler[demo]'"
        ) from None
    betas = list(args.betas)
    workdir = args.keep or tempfile.mkdtemp(prefix="hpc-nova-demo-")
    try:
        os.makedirs(workdir, exist_ok=True)
        return _run(args, out, figure8, betas, workdir)
    finally:
        # An interrupted or failed run leaves nothing behind either.
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _run(
    args: argparse.Namespace, out: TextIO, figure8: ModuleType, betas: list[float], workdir: str
) -> int:
    err: TextIO = getattr(args, "err", None) or sys.stderr
    kept = "" if args.keep else " (removed at the end; --keep DIR keeps them)"
    out.write(
        "hpc-nova-scheduler demo: seed 003 Figure 8 in an in-process Nova\n"
        f"cloud: 8 fake-driver hosts N1-N8 of 4 vCPU and 8 GB in one rack; VMs of 1 vCPU "
        f"and 2 GB; alpha = {args.alpha:g}\n"
        "stream: "
        + ", ".join(
            f"{a.name} ({a.app_class.value}, cache {a.cache_score:g})" for a in figure8.STREAM
        )
        + "\n"
        "a request the scheduler refuses (NoValidHost) is deferred; applications then finish "
        "in arrival order,\nand it is retried after each until it fits; any other error fails "
        f"the run\nfiles: {workdir}{kept}\n"
    )
    total = matches = 0
    differences: list[str] = []
    failures: list[str] = []
    nova = None
    for beta in [*betas, None]:
        label = "nova" if beta is None else f"beta{beta:g}"
        title = "Nova defaults (no plugin)" if beta is None else f"beta = {beta:g}"
        started = time.monotonic()
        log_path = os.path.join(workdir, f"nova-{label}.log")
        where = f"Nova's log: {log_path}" if args.keep else "--keep DIR keeps Nova's log"
        try:
            url = _database(workdir, label)
            scenario = figure8.run(beta, alpha=args.alpha, db_url=url, log_path=log_path)
        except figure8.DemoFailure as error:
            failures.append(f"{title}: {error}")
            out.write(f"\n== {title}: FAILED ==\n{_wrap(str(error), indent='')}\n({where})\n")
            continue
        except Exception as error:
            # Whatever else breaks is a failed run too: report it, go on.
            traceback.print_exc(file=err)
            failures.append(f"{title}: {type(error).__name__}: {error}")
            out.write(f"\n== {title}: FAILED ==\n{type(error).__name__}: {error}\n({where})\n")
            continue
        finally:
            # Nova's harness resets logging on the way in and out.
            _quiet()
        paper = figure8.PAPER.get(int(beta)) if beta is not None and beta.is_integer() else None
        found, why = _print_scenario(out, scenario, paper, time.monotonic() - started)
        if beta is None:
            nova = scenario
        if paper:
            total += len(paper)
            matches += found
            differences += why
    shape = getattr(args, "topology", None)
    topology_notes: list[str] = []
    topology_apps = 0
    if shape:
        ran = _run_topology(args, out, err, shape, workdir)
        if isinstance(ran, str):
            failures.append(ran)
        else:
            topology_apps, topology_notes = ran
    if total:
        out.write(f"\n{matches} of {total} placements match {PAPER_NAME}.\n")
    if nova is not None:
        out.write(_nova_summary(nova, min(betas) if betas else 60.0) + "\n")
    if shape and topology_apps:
        out.write(
            f"Topology: {topology_apps - len(topology_notes)} of {topology_apps} applications "
            "got what their hpc:topology_* specs asked for.\n"
        )
    if failures:
        out.write(
            f"RESULT: FAILED: {len(failures)} run(s) failed, so this is no reproduction of "
            f"{PAPER_NAME}: " + " | ".join(failures) + "\n"
        )
        return EXIT_FAILED
    topology = ""
    if topology_notes:
        topology = "; topology stream not as asked: " + "; ".join(topology_notes)
    elif topology_apps:
        topology = f"; topology stream as asked: {topology_apps} of {topology_apps}"
    if differences:
        out.write(
            f"RESULT: DIFFERS from {PAPER_NAME}: {matches} of {total} rows match; "
            + "; ".join(differences)
            + topology
            + "\n"
        )
        return EXIT_DIFFERS
    if topology_notes:
        out.write(
            f"RESULT: DIFFERS: {matches} of {total} rows of {PAPER_NAME} match" + topology + "\n"
        )
        return EXIT_DIFFERS
    if not total:
        out.write(
            f"RESULT: {PAPER_NAME} has no row for these betas; nothing compared" + topology + "\n"
        )
        return EXIT_SAME
    out.write(f"RESULT: same as {PAPER_NAME}: {matches} of {total} rows match" + topology + "\n")
    return EXIT_SAME


def _run_topology(
    args: argparse.Namespace, out: TextIO, err: TextIO, shape, workdir: str
) -> tuple[int, list[str]] | str:
    """The topology stream: how many applications ran and why some did not get
    what they asked for; or, when the run failed, why."""
    from hpc_nova_scheduler.demo import figure8, topology

    found = topology.layout(shape)
    title = "topology " + ",".join(f"{level}={n}" for level, n in shape)
    log_path = os.path.join(workdir, "nova-topology.log")
    where = f"Nova's log: {log_path}" if args.keep else "--keep DIR keeps Nova's log"
    started = time.monotonic()
    try:
        url = _database(workdir, "topology")
        result = topology.run(shape, alpha=args.alpha, db_url=url, log_path=log_path)
    except figure8.DemoFailure as error:
        out.write(f"\n== {title}: FAILED ==\n{_wrap(str(error), indent='')}\n({where})\n")
        return f"{title}: {error}"
    except Exception as error:
        traceback.print_exc(file=err)
        out.write(f"\n== {title}: FAILED ==\n{type(error).__name__}: {error}\n({where})\n")
        return f"{title}: {type(error).__name__}: {error}"
    finally:
        _quiet()
    levels = "/".join(found.levels)
    room = ", ".join(
        f"a {level} {size * topology.VMS_PER_HOST}"
        for level, size in zip(found.levels[1:], found.sizes[1:], strict=True)
    )
    room = f"a {found.levels[0]} holds {found.sizes[0] * topology.VMS_PER_HOST}, {room}"
    out.write(
        f"\n== hpc-nova-scheduler, topology_levels = {','.join(found.levels)} "
        f"({time.monotonic() - started:.0f} s) ==\n"
        f"{len(found.hosts)} hosts N1-N{len(found.hosts)} of 4 vCPU and 8 GB, by path: "
        + "; ".join(
            f"{domain}: {', '.join(hosts)}" for domain, hosts in _hosts_by_inner(found).items()
        )
        + f"\nVMs of 1 vCPU and 2 GB: {room}; each application keeps running\n"
    )
    table = prettytable.PrettyTable(
        ["application", "class", "VMs", "asks for", "placement", f"by {levels}", "as asked"]
    )
    table.align = "l"
    notes = []
    for outcome in result.outcomes:
        app = outcome.app
        table.add_row(
            [
                app.name,
                app.app_class.value,
                app.count,
                app.describe(),
                "refused (NoValidHost)"
                if outcome.refused
                else figure8.notation(outcome.vms_per_host),
                topology.describe_placement(found, outcome.vms_per_host),
                "yes" if outcome.why is None else "NO",
            ]
        )
        if outcome.why is not None:
            notes.append(f"{app.name}: {outcome.why}")
    out.write(table.get_string() + "\n")
    for note in notes:
        out.write(_wrap(f"NO: {note}.", indent="") + "\n")
    return len(result.outcomes), notes


def _hosts_by_inner(found) -> dict[str, list[str]]:
    inner = found.levels[-1]
    by: dict[str, list[str]] = {}
    for host in found.hosts:
        by.setdefault(found.domain(host, inner), []).append(host)
    return by


def _nova_summary(scenario, beta: float) -> str:
    """What Nova's default scheduler did that the plugin prevents."""
    extreme_hosts: set[str] = set()
    sync_hosts: set[str] = set()
    apps_on: dict[str, set[str]] = {}
    for outcome in scenario.outcomes:
        for host in outcome.vms_per_host:
            apps_on.setdefault(host, set()).add(outcome.app.name)
            if outcome.app.app_class.value == "ExtremeHPC":
                extreme_hosts.add(host)
            if outcome.app.app_class.value == "SyncHPC":
                sync_hosts.add(host)
    shared = sorted(h for h in extreme_hosts if len(apps_on[h]) > 1)
    over = sorted(h for h in sync_hosts if scenario.peak_cache_per_host[h] > beta)
    return (
        f"Under Nova's defaults the ExtremeHPC application shares {len(shared)} of its "
        f"{len(extreme_hosts)} hosts with other applications, and {len(over)} of "
        f"{len(sync_hosts)} hosts running SyncHPC carry a cache score above beta = {beta:g}."
    )


def _topology_shape(text: str) -> tuple[tuple[str, int], ...]:
    from hpc_nova_scheduler.demo import topology
    from hpc_nova_scheduler.sim import topology as sim_topology

    try:
        shape = sim_topology.parse_topology(text)
        topology.layout(shape)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return shape


def add_parser(sub) -> None:
    demo = sub.add_parser(
        "demo",
        help="run the all-in-one demo (seed 003 Figure 8 in an in-process Nova)",
        description="Boot seed 003's Figure 8 application stream through an in-process Nova "
        "(API, conductor, scheduler, Placement, fake computes, SQLite) with the "
        "plugin at each beta, then under Nova's default scheduler, and print "
        "the placements side by side with the paper's.",
    )
    demo.add_argument("--keep", metavar="DIR", help="keep the demo's files in DIR")
    demo.add_argument(
        "--betas",
        type=options.comma_list(options.non_negative_float),
        default=[100.0, 40.0, 60.0],
        help="comma-separated sync_cache_threshold values (default: 100,40,60)",
    )
    demo.add_argument(
        "--alpha",
        type=options.non_negative_float,
        default=200.0,
        help="cache_threshold for every run (default: 200)",
    )
    demo.add_argument(
        "--topology",
        type=_topology_shape,
        default=None,
        metavar="LEVEL=N,...",
        help="after Figure 8, a short stream on hosts nested in these levels, read as "
        "simulate --topology reads them (outermost first; each N is how many domains of the "
        "next level one domain holds, the last N how many hosts); two domains of the "
        "outermost level, at most 16 hosts; e.g. block=2,rack=2: hosts N1-N8 in blocks b1, "
        "b2 of racks r1, r2. Its applications require a rack, prefer a block and ask for "
        "segments, and are printed by block and rack",
    )
    demo.set_defaults(func=run)
