"""``hpc-nova-scheduler fairshare simulate``: seed 002's many-task simulator over a grid.

Table 8's scenarios x two-level policies x parameters x seeds, run on local
processes or a Dask cluster (:mod:`hpc_nova_scheduler.sweep`), judged
against Fairness + AllCore, printed as a table, CSV or JSON, and drawn in
the style of the paper's Figs. 3-7.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
from typing import TextIO

from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.cmd import common, fairshare_simulate_vm, options


def _policies(values: list[str]) -> list:
    """The combinations ``--policy`` names: labels, or seed002 / anchors / all."""
    from hpc_nova_scheduler.fairshare import experiments

    chosen = []
    for value in values or ["all"]:
        for label in filter(None, (v.strip() for v in value.split(","))):
            if label in ("seed002", "all"):
                chosen.extend(experiments.seed002_combinations())
            if label in ("anchors", "all"):
                chosen.extend(experiments.anchor_combinations())
            if label == "all":
                chosen.extend(experiments.own_combinations())
            if label in ("seed002", "anchors", "all"):
                continue
            try:
                chosen.append(_known(experiments.Combination.parse(label)))
            except ValueError as error:
                raise common.CommandError(f"--policy: {error}") from None
    if not chosen:
        raise common.CommandError("--policy: no policy named")
    return list(dict.fromkeys(chosen))


def _known(combination):
    """``combination`` if every name in it is known, else ValueError naming the bad one."""
    from hpc_nova_scheduler.fairshare import allocator

    for kind, name, known in (
        ("first-level policy", combination.first, allocator.first_level_names()),
        ("platform affinity", combination.metric, allocator.PLATFORM_METRICS),
        ("second-level policy", combination.second, allocator.second_level_names()),
        ("co-runner affinity", combination.corunner, allocator.CORUNNER_METRICS),
    ):
        if name not in known:
            raise ValueError(f"unknown {kind} {name!r}; known: {', '.join(known)}")
    return combination


def _scenarios(values: list[str]) -> list[str]:
    from hpc_nova_scheduler.fairshare import workload

    names = []
    for value in values or ["default"]:
        for name in filter(None, (v.strip() for v in value.split(","))):
            if name == "all":
                names.extend(s.name for s in workload.scenarios())
                continue
            try:
                names.append(workload.scenario(name).name)
            except workload.UnknownScenario as error:
                raise common.CommandError(f"--scenario: {error}") from None
    if not names:
        raise common.CommandError("--scenario: no scenario named")
    return list(dict.fromkeys(names))


#: The shortest re-planning interval: each one re-plans the whole cloud.
MIN_INTERVAL_S = 60.0


def _values(option: str, text: str, parse, check, what: str) -> list:
    """The comma-separated values of ``option``, each parsed and checked."""
    values = []
    for item in filter(None, (v.strip() for v in text.split(","))):
        try:
            value = parse(item)
        except ValueError:
            raise common.CommandError(f"{option}: {item!r} is not {what}") from None
        if not check(value):
            raise common.CommandError(f"{option} must be {what}, not {item}")
        values.append(value)
    if not values:
        raise common.CommandError(f"{option}: no value given")
    return list(dict.fromkeys(values))


def _weights(items: list[str] | None) -> tuple[tuple[str, float], ...]:
    from hpc_nova_scheduler.fairshare import workload

    found = {}
    for item in items or []:
        application, sep, text = item.partition("=")
        if not sep or application not in workload.TASKS:
            raise common.CommandError(
                f"--weight {item!r}: expected APPLICATION=WEIGHT with an application of "
                f"{', '.join(workload.TASKS)}"
            )
        try:
            weight = float(text)
        except ValueError:
            weight = float("nan")
        if not (math.isfinite(weight) and weight > 0):
            raise common.CommandError(f"--weight {item!r}: the weight must be a number > 0")
        found[application] = weight
    return tuple(sorted((a, w) for a, w in found.items() if w != 1.0))


def _settings(args: argparse.Namespace) -> list[dict]:
    """Every combination of the swept options, checked: the grid's parameters."""
    from hpc_nova_scheduler.fairshare import workload

    seconds = "a number of seconds >= 0"
    grid = {
        "top_percent": _values(
            "--top-percent",
            args.top_percent,
            int,
            lambda v: 1 <= v <= 50,
            "an integer from 1 to 50",
        ),
        "core_unit": _values(
            "--core-unit", args.core_unit, int, lambda v: v >= 1, "an integer >= 1"
        ),
        "node_unit": _values(
            "--node-unit", args.node_unit, int, lambda v: v >= 1, "an integer >= 1"
        ),
        "half_life_s": _values(
            "--half-life", args.half_life, float, lambda v: 0 <= v < math.inf, seconds
        ),
        "arrivals": _values(
            "--arrivals",
            args.arrivals,
            str,
            lambda v: v in ("all-at-once", *workload.ARRIVAL_RATES),
            "all-at-once or a Poisson rate: " + ", ".join(workload.ARRIVAL_RATES),
        ),
    }
    interval = args.interval
    if not (interval == 0 or MIN_INTERVAL_S <= interval < math.inf):
        raise common.CommandError(
            f"--interval must be 0 or at least {MIN_INTERVAL_S:g} seconds, not {interval}"
        )
    if args.runs < 1:
        raise common.CommandError(f"--runs must be at least 1, not {args.runs}")
    weights = _weights(args.weight)
    return [
        dict(zip(grid, values, strict=True), interval_s=interval, weights=weights)
        for values in itertools.product(*grid.values())
    ]


SIMULATE_COLUMNS = (
    "scenario",
    "policy",
    "settings",
    "arrivals",
    "engine",
    "runs",
    "fairness",
    "jain",
    "max_min",
    "efficiency",
    "makespan_h",
)


def cmd_simulate(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.fairshare import experiments, figures, simulation, summary

    if fairshare_simulate_vm.selected(args):
        grid = fairshare_simulate_vm.cells(args, _weights(args.weight), _known, MIN_INTERVAL_S)
        return fairshare_simulate_vm.cmd_vm(args, out, grid)
    args.engine = args.engine or "discrete"
    if args.png:
        common.check_output_path("--png", args.png, folder=True)
    settings = _settings(args)
    scenarios = _scenarios(args.scenario)
    combinations = _policies(args.policy)
    cells = list(
        dict.fromkeys(
            cell
            for options in settings
            for cell in experiments.grid(
                scenarios, combinations, seeds=range(args.runs), engine=args.engine, **options
            )
        )
    )
    results = common.run_grid(
        args,
        simulation.run,
        cells,
        key=lambda c: f"{c.scenario} {c.combination.label} seed {c.seed}",
    )
    if common.report_failed(args, results):
        return 1
    judged = experiments.judge(r.value for r in results if r.ok)
    # The baseline is shown too: every efficiency is relative to it.
    shown = judged
    rows = summary.seed_means(shown)
    if args.png:
        # Before anything is printed: a directory that cannot be written
        # must leave no table behind either.
        try:
            written = figures.draw(args.png, judged, args.engine)
        except OSError as error:
            raise common.CommandError(f"--png {args.png}: {error.strerror or error}") from None
        for path in written:
            args.err.write(f"wrote {path}\n")
    if args.format == "json":
        strictjson.dump(
            {
                "engine": args.engine,
                "summary": [dict(zip(SIMULATE_COLUMNS, row, strict=True)) for row in rows],
                "runs": [_run_record(j) for j in shown],
                "comparisons": summary.comparisons_of(judged),
            },
            out,
            indent=2,
        )
        out.write("\n")
    elif args.format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(
            (
                "scenario",
                "policy",
                "settings",
                "arrivals",
                "engine",
                "seed",
                "fairness",
                "jain",
                "max_min",
                "efficiency",
                "makespan_s",
            )
        )
        for j in shown:
            o = j.outcome
            writer.writerow(
                (
                    j.cell.scenario,
                    j.cell.combination.label,
                    summary.settings_label(j.cell),
                    j.cell.arrivals,
                    o.engine,
                    j.cell.seed,
                    repr(o.fairness),
                    repr(o.jain),
                    repr(o.spread),
                    repr(j.efficiency),
                    repr(o.makespan_s),
                )
            )
    else:
        out.write(f"engine: {args.engine} ({ENGINES[args.engine]})\n")
        common.table(
            SIMULATE_COLUMNS,
            [
                (
                    *row[:6],
                    f"{row[6]:.4f}",
                    f"{row[7]:.4f}",
                    f"{row[8]:.3f}",
                    f"{row[9]:.4f}",
                    f"{row[10]:.3f}",
                )
                for row in rows
            ],
            out,
        )
    return 0


ENGINES = {
    "discrete": "pilots fetching tasks one by one, each task's run time drawn",
    "rate": "each pilot completing tasks at 1/run time",
    "vm": "VMs that stay, strict or borrow, with or without reclaim",
}


def _run_record(j) -> dict:
    o = j.outcome
    return {
        "scenario": j.cell.scenario,
        "policy": j.cell.combination.label,
        "seed": j.cell.seed,
        "arrivals": j.cell.arrivals,
        "top_percent": j.cell.top_percent,
        "core_unit": j.cell.core_unit,
        "node_unit": j.cell.node_unit,
        "half_life_s": j.cell.half_life_s,
        "interval_s": j.cell.interval_s,
        "weights": dict(j.cell.weights),
        "engine": o.engine,
        "fairness": o.fairness,
        "jain": o.jain,
        "max_min": o.spread,
        "efficiency": j.efficiency,
        "makespan_s": o.makespan_s,
        "normalised_throughput": o.normalised,
    }


def add_parser(actions) -> None:
    simulate = actions.add_parser(
        "simulate",
        help="seed 002's many-task simulator: policies side by side on Table 8's scenarios",
        description="Simulate Table 5's platforms running Table 6's many-task applications "
        "(Table 8's scenarios) under two-level policies, with seeded run times generated to "
        "match Tables 3 and 4. Every first level x platform metric x second level of seed "
        "002, the production anchors (equal cores, billing weights, decayed usage) and our "
        "equivalent-rr are run side by side by default; Fairness + AllCore is always run, "
        "as the baseline of efficiency. The grid runs on local processes, or on a Dask "
        "cluster with --dask.",
    )
    simulate.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        help="a Table 8 scenario (default, without-gene, small-cheetah, large-lcloud, "
        "without-blast, small-montage, ...) or all; repeatable or comma-separated; "
        "default: default",
    )
    simulate.add_argument(
        "--policy",
        action="append",
        metavar="LABEL",
        help="FIRST/METRIC/SECOND (pa-rr/rpa/maf, paf/epa/random, maf:raw for MAF on raw "
        "differences), FIRST/SECOND for fairness and the anchors (equal-cores/random), "
        "or seed002, anchors, all (those and equivalent-rr, ours); repeatable or "
        "comma-separated; default: all",
    )
    simulate.add_argument(
        "--engine",
        choices=list(ENGINES),
        default=None,
        help="discrete pilots and tasks, the rate-based evaluation (fast, for sweeps), or "
        "vm: the cloud nova-scheduler governs, VM by VM (see below); default discrete, or vm "
        "when a VM-level option is given",
    )
    simulate.add_argument("--runs", type=int, default=1, help="seeded repetitions (seeds 0..N-1)")
    simulate.add_argument(
        "--arrivals",
        default="all-at-once",
        metavar="LIST",
        help="all-at-once (the paper's default) or a Poisson rate: eighth, quarter, half or "
        "whole (mean gap = that part of the 6.43 h equal-share makespan)",
    )
    simulate.add_argument(
        "--top-percent", default="50", metavar="LIST", help="k of PAF and AAF (1-50)"
    )
    simulate.add_argument("--core-unit", default="1", metavar="LIST", help="D_unit of PA-based RR")
    simulate.add_argument("--node-unit", default="1", metavar="LIST", help="P_unit of CA-based RR")
    simulate.add_argument(
        "--half-life",
        default="0",
        metavar="LIST",
        help="usage half-lives in seconds for policies with history, comma-separated, each "
        "a setting of the grid (0: no history; default 0)",
    )
    simulate.add_argument(
        "--interval",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="re-plan every interval (at least 60 s) as well as at submissions and queue "
        "ends (0: only then); the VM-level engine's allocator period (default there 300)",
    )
    simulate.add_argument(
        "--weight",
        action="append",
        metavar="APP=WEIGHT",
        help="the share weight of an application's user (default 1; repeatable)",
    )
    simulate.add_argument(
        "--format",
        choices=["table", "csv", "json"],
        default="table",
        help="table (means over runs), csv (every run) or json (both, and the figures' "
        "comparisons); unrounded in csv and json. --arrivals, --top-percent, --core-unit, "
        "--node-unit and --half-life take comma-separated lists: the grid runs every "
        "combination",
    )
    simulate.add_argument("--png", metavar="DIR", help="write Figs. 3-7 and the anchors' plot")
    where = simulate.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=options.positive_int,
        default=None,
        metavar="N",
        help="run the grid on N local processes (default: one per CPU); 1 runs it in this process",
    )
    where.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run the grid on the existing Dask cluster whose scheduler is at ADDRESS, e.g. "
        "tcp://10.0.0.5:8786 (its workers need hpc-nova-scheduler installed)",
    )
    fairshare_simulate_vm.add_arguments(simulate)
    simulate.set_defaults(func=cmd_simulate)
