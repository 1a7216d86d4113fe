"""The all-in-one demo: seed 003's Figure 8 case study in an in-process Nova.

For each cache threshold beta, an in-process Nova (API, conductor,
scheduler, Placement, eight fake-driver computes in one rack, SQLite) runs
with the plugin enabled and boots the Figure 8 stream; then the same stream
runs under Nova's default filters and weighers. Each run prints where every
application landed, which requests were deferred, and the cache score each
host carried, next to the paper's table.
"""

from __future__ import annotations

import argparse
import logging as std_logging
import os
import tempfile
import time
import warnings
from typing import TextIO

import prettytable

from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.cmd import cli
from hpc_nova_scheduler.db import api as db_api

EXAMPLE_FILE = "seed-applications.yaml"


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


def _print_scenario(out: TextIO, scenario, paper: dict[str, str] | None, seconds: float) -> int:
    from hpc_nova_scheduler.demo import figure8

    out.write(f"\n== {scenario.title} ({seconds:.0f} s) ==\n")
    columns = ["application", "class", "cache score", "VMs", "placement"]
    if paper:
        columns += ["seed 003 Fig. 8", "same"]
    table = prettytable.PrettyTable(columns)
    table.align = "l"
    matches = 0
    for outcome in scenario.outcomes:
        row = [
            outcome.app.name,
            outcome.app.app_class.value,
            f"{outcome.app.cache_score:g}",
            outcome.app.count,
            outcome.placement,
        ]
        if paper:
            same = outcome.vms_per_host == _parse(paper[outcome.app.name])
            matches += same
            row += [paper[outcome.app.name], "yes" if same else "NO"]
        table.add_row(row)
    out.write(table.get_string() + "\n")
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
    return matches


def _parse(text: str) -> dict[str, int]:
    """The paper's notation back into VMs per host ('after ...' ignored)."""
    counts: dict[str, int] = {}
    for part in text.split(" after ")[0].split("+"):
        per, span = part.strip().split("x", 1)
        first, _, last = span.strip("()").partition("-")
        last = last or first
        for n in range(int(first[1:]), int(last[1:]) + 1):
            counts[f"N{n}"] = int(per)
    return counts


def run(args: argparse.Namespace, out: TextIO) -> int:
    _quiet()
    try:
        from hpc_nova_scheduler.demo import figure8
    except ImportError as error:
        raise cli.CommandError(
            f"the demo runs Nova's functional harness, which is not installed here ({error}); "
            "install it with: pip install 'hpc-nova-scheduler[demo]'"
        ) from None
    workdir = args.keep or tempfile.mkdtemp(prefix="hpc-nova-demo-")
    os.makedirs(workdir, exist_ok=True)
    betas = [float(b) for b in args.betas.split(",") if b.strip()]
    out.write(
        "hpc-nova-scheduler demo: seed 003 Figure 8 in an in-process Nova\n"
        f"cloud: 8 fake-driver hosts N1-N8 of 4 vCPU and 8 GB in one rack; VMs of 1 vCPU "
        f"and 2 GB; alpha = {args.alpha:g}\n"
        "stream: "
        + ", ".join(
            f"{a.name} ({a.app_class.value}, cache {a.cache_score:g})" for a in figure8.STREAM
        )
        + "\n"
        "a request with no placement is deferred; applications then finish in arrival "
        f"order until it fits\nfiles: {workdir}\n"
    )
    total = matches = 0
    nova = None
    for beta in [*betas, None]:
        label = "nova" if beta is None else f"beta{beta:g}"
        url = _database(workdir, label)
        started = time.monotonic()
        scenario = figure8.run(beta, alpha=args.alpha, db_url=url)
        _quiet()
        paper = figure8.PAPER.get(int(beta)) if beta is not None and beta.is_integer() else None
        found = _print_scenario(out, scenario, paper, time.monotonic() - started)
        if beta is None:
            nova = scenario
        if paper:
            total += len(paper)
            matches += found
    if total:
        out.write(f"\n{matches} of {total} placements match seed 003's Figure 8.\n")
    if nova is not None:
        out.write(_nova_summary(nova, min(betas) if betas else 60.0) + "\n")
    return 0


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
