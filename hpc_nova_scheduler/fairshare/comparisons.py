"""Seed 002's figures as numbers: what Figs. 3-7 and section 6.5 compare.

Every function takes judged outcomes (:func:`.experiments.judge`) and
returns plain dicts, which the command prints and :mod:`.figures` draws.
Improvements are in percent, positive when the first-named is better:
higher fairness, lower efficiency (a makespan ratio).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Sequence

from hpc_nova_scheduler.fairshare.experiments import (
    ANCHORS,
    FIRST_LEVELS,
    PAPER_BEST,
    SECOND_LEVELS,
    Combination,
    Judged,
    mean,
)
from hpc_nova_scheduler.fairshare.workload import scenario as scenario_named

Summary = dict[str, float]


def kind(judged: Judged) -> str:
    return scenario_named(judged.cell.scenario).kind


def _summary(items: Sequence[Judged]) -> Summary:
    return {
        "fairness": mean(j.fairness for j in items),
        "efficiency": mean(j.efficiency for j in items),
        "fairness_min": min((j.fairness for j in items), default=float("nan")),
        "fairness_max": max((j.fairness for j in items), default=float("nan")),
        "efficiency_min": min((j.efficiency for j in items), default=float("nan")),
        "efficiency_max": max((j.efficiency for j in items), default=float("nan")),
        "runs": float(len(items)),
    }


def _grouped(
    judged: Iterable[Judged], key: Callable[[Combination], str | None]
) -> dict[str, dict[str, Summary]]:
    """key -> scenario kind (and "all") -> summary, over the cells ``key`` names."""
    buckets: dict[str, dict[str, list[Judged]]] = collections.defaultdict(
        lambda: collections.defaultdict(list)
    )
    for item in judged:
        name = key(item.cell.combination)
        if name is None:
            continue
        buckets[name][kind(item)].append(item)
        buckets[name]["all"].append(item)
    return {
        name: {k: _summary(items) for k, items in kinds.items()} for name, kinds in buckets.items()
    }


def by_platform_metric(judged: Iterable[Judged]) -> dict[str, dict[str, Summary]]:
    """Fig. 3: every first level but Fairness, with every second level, per metric."""
    return _grouped(
        judged,
        lambda c: (
            c.metric
            if c.first in FIRST_LEVELS and c.first != "fairness" and c.corunner == "normalised"
            else None
        ),
    )


def by_first_level(judged: Iterable[Judged]) -> dict[str, dict[str, Summary]]:
    """Fig. 5: RPA and the normalised difference, every second level, per first level."""
    return _grouped(
        judged,
        lambda c: (
            c.first
            if c.first in FIRST_LEVELS and c.metric == "rpa" and c.corunner == "normalised"
            else None
        ),
    )


def by_second_level(judged: Iterable[Judged]) -> dict[str, dict[str, Summary]]:
    """Fig. 6: RPA and the normalised difference, every first level, per second level."""
    return _grouped(
        judged,
        lambda c: (
            c.second
            if c.first in FIRST_LEVELS and c.metric == "rpa" and c.corunner == "normalised"
            else None
        ),
    )


def _index(judged: Iterable[Judged]) -> dict[tuple, Judged]:
    """Runs by (scenario, seed, options, combination): twins differ in the policy only."""
    return {(j.cell.scenario, j.cell.seed, j.cell.options, j.cell.combination): j for j in judged}


def _better(a: Judged, b: Judged) -> tuple[float, float]:
    """How much better ``a`` is than ``b``: fairness and efficiency, percent."""
    fairness = (a.fairness - b.fairness) / abs(b.fairness) * 100 if b.fairness else 0.0
    efficiency = (b.efficiency - a.efficiency) / b.efficiency * 100
    return fairness, efficiency


def rpa_over_epa(judged: Iterable[Judged]) -> dict[str, object]:
    """Fig. 4: per run, how much better RPA is than EPA (sorted), and the share of runs
    where it is better."""
    index = _index(judged)
    fairness, efficiency = [], []
    for (scenario, seed, options, combination), item in index.items():
        if combination.metric != "rpa" or combination.first not in FIRST_LEVELS:
            continue
        if combination.first == "fairness":
            continue
        twin = index.get(
            (
                scenario,
                seed,
                options,
                Combination(combination.first, "epa", combination.second, combination.corunner),
            )
        )
        if twin is None:
            continue
        f, e = _better(item, twin)
        fairness.append(f)
        efficiency.append(e)
    fairness.sort()
    efficiency.sort()
    return {
        "fairness": fairness,
        "efficiency": efficiency,
        "fairness_better_share": _share(fairness),
        "efficiency_better_share": _share(efficiency),
        "fairness_max": max(fairness, default=float("nan")),
        "efficiency_max": max(efficiency, default=float("nan")),
    }


def _share(values: Sequence[float]) -> float:
    return sum(1 for v in values if v > 1e-9) / len(values) * 100 if values else float("nan")


def maf_over_random(judged: Iterable[Judged], first: str = "pa-rr") -> Summary:
    """Section 6.3: MAF against Random under ``first`` with RPA, percent."""
    index = _index(judged)
    fairness, efficiency = [], []
    for (scenario, seed, options, combination), item in index.items():
        if combination != Combination(first, "rpa", "maf"):
            continue
        other = index.get((scenario, seed, options, Combination(first, "rpa", "random")))
        if other is None:
            continue
        f, e = _better(item, other)
        fairness.append(f)
        efficiency.append(e)
    return {
        "fairness_mean": mean(fairness),
        "fairness_max": max(fairness, default=float("nan")),
        "efficiency_mean": mean(efficiency),
        "efficiency_max": max(efficiency, default=float("nan")),
        "runs": float(len(fairness)),
    }


def level_effects(judged: Iterable[Judged]) -> dict[str, Summary]:
    """Fig. 7: per scenario, best against worst first level (RPA, MAF) and best against
    worst second level (PA-based RR, RPA); mean and max over the scenarios, percent."""
    index = _index(judged)
    groups = {(s, seed, a) for (s, seed, a, _) in index}
    effects: dict[str, dict[str, list[float]]] = {
        "first": {"fairness": [], "efficiency": []},
        "second": {"fairness": [], "efficiency": []},
    }
    for group in sorted(groups):
        for level, combinations in (
            ("first", [Combination(f, "rpa", "maf") for f in FIRST_LEVELS]),
            ("second", [Combination("pa-rr", "rpa", s) for s in SECOND_LEVELS]),
        ):
            runs = [index[(*group, c)] for c in combinations if (*group, c) in index]
            if len(runs) < 2:
                continue
            fair = [r.fairness for r in runs]
            eff = [r.efficiency for r in runs]
            effects[level]["fairness"].append((max(fair) - min(fair)) / abs(min(fair)) * 100)
            effects[level]["efficiency"].append((max(eff) - min(eff)) / max(eff) * 100)
    return {
        level: {
            "fairness_mean": mean(values["fairness"]),
            "fairness_max": max(values["fairness"], default=float("nan")),
            "efficiency_mean": mean(values["efficiency"]),
            "efficiency_max": max(values["efficiency"], default=float("nan")),
        }
        for level, values in effects.items()
    }


def against_anchors(
    judged: Iterable[Judged], ours: Combination = PAPER_BEST
) -> list[dict[str, object]]:
    """Per scenario and arrivals (mean over seeds): our fairness and efficiency beside
    each anchor's, whether ours is fairer than every anchor, and whether its
    efficiency is within 2% of the best anchor's."""
    rows: dict[tuple[str, tuple], dict[str, list[Judged]]] = collections.defaultdict(
        lambda: collections.defaultdict(list)
    )
    for item in judged:
        c = item.cell.combination
        name = c.first if c.first in ANCHORS else ("ours" if c == ours else None)
        if name:
            rows[(item.cell.scenario, item.cell.options)][name].append(item)
    table = []
    for (scenario, _), runs in rows.items():
        if "ours" not in runs or not any(a in runs for a in ANCHORS):
            continue
        cell = runs["ours"][0].cell
        row: dict[str, object] = {
            "scenario": scenario,
            "arrivals": cell.arrivals,
            "half_life_s": cell.half_life_s,
            "interval_s": cell.interval_s,
        }
        for name in ("ours", *ANCHORS):
            if name in runs:
                row[f"{name}_fairness"] = mean(j.fairness for j in runs[name])
                row[f"{name}_efficiency"] = mean(j.efficiency for j in runs[name])
        present = [a for a in ANCHORS if a in runs]
        row["fairer_than_all"] = all(row["ours_fairness"] > row[f"{a}_fairness"] for a in present)
        best = min(row[f"{a}_efficiency"] for a in present)
        row["efficiency_within_2pct"] = row["ours_efficiency"] <= best * 1.02
        table.append(row)
    return table


def sensitivity(judged: Iterable[Judged]) -> dict[str, Summary]:
    """Section 6.5: PA-based RR with D_unit and CA-based RR with P_unit, against unit 1.

    Runs are bucketed by the unit and by every other setting (arrivals,
    history, re-planning, the other unit, k), so that a grid sweeping
    several settings at once never averages them together; the other
    settings are named in the key only when the grid has more than one.
    """
    out: dict[str, Summary] = {}
    items = list(judged)
    for label, pick, unit_of in (
        (
            "core_unit",
            lambda c: c.first == "pa-rr" and c.metric == "rpa",
            lambda cell: cell.core_unit,
        ),
        (
            "node_unit",
            lambda c: c.second == "ca-rr" and c.first == "pa-rr",
            lambda cell: cell.node_unit,
        ),
    ):
        buckets: dict[tuple, list[Judged]] = collections.defaultdict(list)
        for item in items:
            if pick(item.cell.combination):
                rest = dataclasses.replace(item.cell, **{label: 1}).options
                buckets[(unit_of(item.cell), rest)].append(item)
        several = len({rest for _, rest in buckets}) > 1
        for (unit, _rest), runs in sorted(
            buckets.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))
        ):
            key = f"{label}={unit}"
            if several:
                key += " (" + _describe(runs[0].cell, label) + ")"
            out[key] = _summary(runs)
    return out


def _describe(cell, unit: str) -> str:
    """The settings of ``cell`` other than ``unit``, for a key."""
    parts = [f"arrivals={cell.arrivals}", f"engine={cell.engine}"]
    for name in ("core_unit", "node_unit", "top_percent", "half_life_s", "interval_s"):
        if name != unit:
            parts.append(f"{name}={getattr(cell, name):g}")
    if cell.weights:
        parts.append("weights=" + ",".join(f"{a}:{w:g}" for a, w in cell.weights))
    return " ".join(parts)
