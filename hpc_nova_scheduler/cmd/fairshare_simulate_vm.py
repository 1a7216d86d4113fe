"""``fairshare simulate --engine vm``: strict, borrow and borrow + reclaim, VM by VM.

The VM-level engine (:mod:`hpc_nova_scheduler.fairshare.cloud_sim`, its
clouds and grid in :mod:`~hpc_nova_scheduler.fairshare.cloud_scenarios`) runs
what nova-scheduler enforces: VMs that stay (``--lifetime``, services with
``--services``), ``--enforcement`` and ``--reclaim``. Any of its options
selects it; the many-task engines' own options are refused beside it. This
module parses and prints; the runs and the comparison are the system's.
"""

from __future__ import annotations

import argparse
import csv
import math
from typing import TextIO

from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.cmd import common

VM = "vm"
#: The options only the VM-level engine takes (their dests).
OWN = ("enforcement", "reclaim", "lifetime", "services", "grace", "horizon", "declare")
#: The many-task engines' options, with their defaults: refused beside the VM engine.
THEIRS = {
    "arrivals": "all-at-once",
    "top_percent": "50",
    "core_unit": "1",
    "node_unit": "1",
    "half_life": "0",
    "png": None,
}
COLUMNS = (
    "scenario",
    "services",
    "mode",
    "runs",
    "fairness",
    "worst_platform",
    "utilisation",
    "borrowed",
    "reclaims",
    "max_wait_s",
)


def selected(args: argparse.Namespace) -> bool:
    """Whether the command runs the VM-level engine; a one-line error if it is asked both ways."""
    own = [name for name in OWN if getattr(args, name) is not None]
    if args.engine == VM or (args.engine is None and own):
        theirs = [name for name, default in THEIRS.items() if getattr(args, name) != default]
        if theirs:
            raise common.CommandError(
                f"--{theirs[0].replace('_', '-')} applies to the many-task engines "
                "(discrete, rate), not to --engine vm"
            )
        return True
    if own:
        raise common.CommandError(
            f"--{own[0]} applies to the VM-level engine: drop --engine {args.engine} "
            "or give --engine vm"
        )
    return False


def _list(option: str, text: str | None, default: str, known: tuple[str, ...]) -> list[str]:
    values = list(dict.fromkeys(v.strip() for v in (text or default).split(",") if v.strip()))
    if not values:
        raise common.CommandError(f"{option}: no value given")
    for value in values:
        if value not in known:
            raise common.CommandError(f"{option}: {value!r} is not one of {', '.join(known)}")
    return values


def _seconds(option: str, value: float | None, default: float, least: float) -> float:
    if value is None:
        return default
    if not (math.isfinite(value) and value >= least):
        raise common.CommandError(f"{option} must be a number of seconds >= {least:g}, not {value}")
    return value


def _services(text: str | None) -> list[float]:
    found = []
    for item in filter(None, (v.strip() for v in (text or "0").split(","))):
        try:
            value = float(item)
        except ValueError:
            value = math.nan
        if not 0.0 <= value <= 1.0:
            raise common.CommandError(f"--services: {item!r} is not a fraction from 0 to 1")
        found.append(value)
    if not found:
        raise common.CommandError("--services: no value given")
    return list(dict.fromkeys(found))


def _policy(values: list[str] | None, known):
    from hpc_nova_scheduler.fairshare import experiments

    labels = [v.strip() for value in values or [] for v in value.split(",") if v.strip()]
    if len(labels) > 1 or any(label in ("seed002", "anchors", "all") for label in labels):
        raise common.CommandError(
            "--policy: the VM-level engine runs one policy, e.g. pa-rr/rpa/maf"
        )
    try:
        return known(experiments.Combination.parse(labels[0] if labels else "pa-rr/rpa/maf"))
    except ValueError as error:
        raise common.CommandError(f"--policy: {error}") from None


def _scenarios(values: list[str] | None) -> list[str]:
    from hpc_nova_scheduler.fairshare import cloud_scenarios, workload

    known = cloud_scenarios.scenario_names()
    names = []
    for value in values or ["default"]:
        for name in filter(None, (v.strip() for v in value.split(","))):
            if name == "all":
                names.extend(s.name for s in workload.scenarios())
            elif name in known:
                names.append(name)
            else:
                raise common.CommandError(
                    f"--scenario: unknown scenario {name!r}; known: {', '.join(known)}, all"
                )
    if not names:
        raise common.CommandError("--scenario: no scenario named")
    return list(dict.fromkeys(names))


def cells(
    args: argparse.Namespace,
    weights: tuple[tuple[str, float], ...],
    known,
    min_interval_s: float,
) -> list:
    """The grid the options ask for, every value checked.

    ``known`` checks a policy's names and ``min_interval_s`` bounds the
    interval, as ``fairshare_simulate`` does for the many-task engines.
    """
    from hpc_nova_scheduler.fairshare import cloud_scenarios, cloud_sim

    enforcements = _list("--enforcement", args.enforcement, "strict,borrow", cloud_sim.ENFORCEMENTS)
    reclaims = [v == "on" for v in _list("--reclaim", args.reclaim, "off,on", ("off", "on"))]
    try:
        lifetime = cloud_sim.Lifetime.parse(
            args.lifetime or cloud_scenarios.BATCH_LIFETIME.label
        ).label
    except cloud_sim.CloudSimError as error:
        raise common.CommandError(f"--lifetime: {error}") from None
    services = _services(args.services)
    interval = args.interval or cloud_sim.DEFAULT_INTERVAL_S
    if not (min_interval_s <= interval < math.inf):
        raise common.CommandError(
            f"--interval must be at least {min_interval_s:g} seconds, not {interval}"
        )
    grace = _seconds("--grace", args.grace, cloud_sim.DEFAULT_GRACE_S, 0)
    horizon = _seconds("--horizon", args.horizon, cloud_scenarios.DEFAULT_HORIZON_S, interval)
    if args.runs < 1:
        raise common.CommandError(f"--runs must be at least 1, not {args.runs}")
    policy = _policy(args.policy, known)
    declare = (args.declare or "standing").strip()
    if declare not in cloud_scenarios.DECLARES:
        raise common.CommandError(
            f"--declare: {declare!r} is not one of {', '.join(cloud_scenarios.DECLARES)}"
        )
    grid = []
    for scenario in _scenarios(args.scenario):
        own = scenario == cloud_scenarios.RETURNING
        for fraction in [None] if own else services:
            for enforcement, reclaim in cloud_scenarios.modes(enforcements, reclaims):
                for seed in range(args.runs):
                    grid.append(
                        cloud_scenarios.Cell(
                            scenario=scenario,
                            seed=seed,
                            settings=cloud_sim.Settings(
                                enforcement=enforcement,
                                reclaim=reclaim,
                                interval_s=interval,
                                grace_s=grace,
                                first=policy.first,
                                metric=policy.metric,
                                second=policy.second,
                                corunner=policy.corunner,
                            ),
                            horizon_s=horizon,
                            lifetime=lifetime,
                            services=fraction,
                            weights=weights,
                            declare=declare,
                        )
                    )
    return grid


def _services_label(value: float | None) -> str:
    return "own" if value is None else f"{value:g}"


def cmd_vm(args: argparse.Namespace, out: TextIO, grid: list) -> int:
    """Run ``grid`` (from :func:`cells`) and print it as ``--format`` asks."""
    from hpc_nova_scheduler.fairshare import cloud_scenarios

    results = common.run_grid(
        args,
        cloud_scenarios.run,
        grid,
        key=lambda c: f"{c.scenario} {c.settings.mode} seed {c.seed}",
    )
    if common.report_failed(args, results):
        return 1
    values = [r.value for r in results]
    rows = cloud_scenarios.rows(grid, values)
    verdicts = cloud_scenarios.verdicts(rows)
    first = grid[0].settings
    settings = {
        "interval_s": first.interval_s,
        "grace_s": first.grace_s,
        "horizon_s": grid[0].horizon_s,
        "lifetime": grid[0].lifetime,
        "policy": "/".join((first.first, first.metric, first.second)),
        "declare": grid[0].declare,
    }
    if args.format == "json":
        strictjson.dump(
            {
                "engine": VM,
                "settings": settings,
                "summary": [_row_record(r) for r in rows],
                "verdicts": [_verdict_record(v) for v in verdicts],
                "runs": [_run_record(c, r) for c, r in zip(grid, values, strict=True)],
            },
            out,
            indent=2,
        )
        out.write("\n")
    elif args.format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(
            ("scenario", "services", "mode", "seed", "platform", "fairness", "utilisation")
        )  # fmt: skip
        for cell, result in zip(grid, values, strict=True):
            for platform, fairness in result.fairness.items():
                writer.writerow(
                    (
                        cell.scenario,
                        _services_label(cell.services),
                        result.mode,
                        cell.seed,
                        platform,
                        repr(fairness),
                        repr(result.utilisation[platform]),
                    )
                )
    else:
        out.write(
            f"engine: vm (VMs that stay; interval {settings['interval_s']:g} s, grace "
            f"{settings['grace_s']:g} s, horizon {settings['horizon_s']:g} s, lifetime "
            f"{settings['lifetime']}, declarations {settings['declare']}, policy "
            f"{settings['policy']})\n"
        )
        common.table(
            COLUMNS,
            [
                (
                    r.scenario,
                    _services_label(r.services),
                    r.mode,
                    r.runs,
                    f"{r.fairness:.4f}",
                    f"{r.worst_fairness:.4f}",
                    f"{r.utilisation:.4f}",
                    f"{r.borrowed:g}",
                    f"{r.reclaims:g}",
                    f"{r.max_delay_s:.0f}",
                )
                for r in rows
            ],
            out,
        )
        if verdicts:
            common.table(
                (
                    "scenario",
                    "services",
                    "fairness_vs_strict",
                    "utilisation_vs_borrow",
                    "within_5%",
                ),
                [
                    (
                        v.scenario,
                        _services_label(v.services),
                        f"{v.fairness_ratio:.4f}",
                        f"{v.utilisation_ratio:.4f}",
                        "yes" if v.holds else "no",
                    )
                    for v in verdicts
                ],
                out,
            )
    return 0


def _row_record(row) -> dict:
    return {
        "scenario": row.scenario,
        "services": row.services,
        "mode": row.mode,
        "runs": row.runs,
        "fairness": row.fairness,
        "worst_platform_fairness": row.worst_fairness,
        "utilisation": row.utilisation,
        "borrowed": row.borrowed,
        "reclaims": row.reclaims,
        "max_wait_s": row.max_delay_s,
    }


def _verdict_record(verdict) -> dict:
    return {
        "scenario": verdict.scenario,
        "services": verdict.services,
        "fairness_vs_strict": verdict.fairness_ratio,
        "utilisation_vs_borrow": verdict.utilisation_ratio,
        "within_5_percent": verdict.holds,
    }


def _run_record(cell, result) -> dict:
    return {
        "scenario": cell.scenario,
        "services": cell.services,
        "mode": result.mode,
        "seed": cell.seed,
        "fairness": dict(result.fairness),
        "utilisation": dict(result.utilisation),
        "total_utilisation": result.total_utilisation,
        "borrowed": result.borrowed,
        "refused": result.refused,
        "reclaims": result.reclaims,
        "reclaimed_cores": result.reclaimed_cores,
        "max_wait_s": max(result.reclaim_delays, default=0.0),
    }


def add_arguments(simulate) -> None:
    """The VM-level engine's options on ``fairshare simulate``."""
    vm = simulate.add_argument_group(
        "VM-level engine (--engine vm; any of these options selects it)",
        "VMs that stay until their lifetime ends, admitted within each project's "
        "entitlement (strict) or also onto idle cores (borrow), borrowed VMs taken back "
        "by reclaim. Table 8's scenarios as clouds, or returning-project (a project back "
        "after an idle week). Compares strict, borrow and borrow + reclaim by default.",
    )
    vm.add_argument(
        "--enforcement",
        metavar="LIST",
        help="strict, borrow or both (comma-separated; default strict,borrow)",
    )
    vm.add_argument(
        "--reclaim",
        metavar="LIST",
        help="off, on or both (default off,on; strict + reclaim runs only when asked alone: "
        "nothing is borrowed under strict)",
    )
    vm.add_argument(
        "--lifetime",
        metavar="SPEC",
        help="how long a batch VM runs: SECONDS, exp:SECONDS (exponential with that mean) or "
        "forever (default exp:3600)",
    )
    vm.add_argument(
        "--services",
        metavar="LIST",
        help="fractions from 0 to 1 of each project's declared cores held by services, VMs "
        "that never end (comma-separated, each a row; default 0)",
    )
    vm.add_argument(
        "--grace",
        type=float,
        metavar="SECONDS",
        help="seconds between a reclaim's decision and its victim's end (default 300)",
    )
    vm.add_argument(
        "--declare",
        metavar="WHEN",
        help="standing: each project's declared demand stands while it is idle, so its "
        "entitlement waits for it (default); active: it is withdrawn while idle, and "
        "entitlements follow who is asking",
    )
    vm.add_argument(
        "--horizon",
        type=float,
        metavar="SECONDS",
        help="how long Table 8's clouds run (default 172800, two days; returning-project "
        "runs its nine days)",
    )
