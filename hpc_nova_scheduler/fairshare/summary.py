"""What ``fairshare simulate`` reports of judged runs: means over seeds, the comparisons.

The runs are judged by :func:`~.experiments.judge` (fairness, Jain's index,
efficiency against the baseline); here they are grouped per setting and
averaged over their seeds, and the comparisons of :mod:`.comparisons` are
gathered for the JSON output. The command formats what it gets.
"""

from __future__ import annotations

import statistics

from hpc_nova_scheduler.fairshare import comparisons


def seed_means(judged) -> list[tuple]:
    """One row per scenario, policy, settings, arrivals and engine: the number
    of seeds, then the means over them of the fairness, Jain's index, the
    max-min spread, the efficiency and the makespan in hours."""

    groups: dict[tuple, list] = {}
    for j in judged:
        groups.setdefault(
            (
                j.cell.scenario,
                j.cell.combination.label,
                settings_label(j.cell),
                j.cell.arrivals,
                j.outcome.engine,
            ),
            [],
        ).append(j)
    return [
        (
            *key,
            len(items),
            statistics.fmean(i.outcome.fairness for i in items),
            statistics.fmean(i.outcome.jain for i in items),
            statistics.fmean(i.outcome.spread for i in items),
            statistics.fmean(i.efficiency for i in items),
            statistics.fmean(i.outcome.makespan_s for i in items) / 3600.0,
        )
        for key, items in groups.items()
    ]


def settings_label(cell) -> str:
    """The parameters of ``cell`` that differ from the defaults, e.g. ``D=200 k=20``."""
    parts = []
    for value, default, form in (
        (cell.top_percent, 50, "k={}"),
        (cell.core_unit, 1, "D={}"),
        (cell.node_unit, 1, "P={}"),
        (cell.half_life_s, 0.0, "half-life={:g}s"),
        (cell.interval_s, 0.0, "every {:g}s"),
    ):
        if value != default:
            parts.append(form.format(value))
    parts.extend(f"{app}x{weight:g}" for app, weight in cell.weights)
    return " ".join(parts) or "-"


def comparisons_of(judged) -> dict:
    """Every comparison the JSON output carries, by name."""
    return {
        "platform_metrics": comparisons.by_platform_metric(judged),
        "rpa_over_epa": {
            k: v
            for k, v in comparisons.rpa_over_epa(judged).items()
            if k not in ("fairness", "efficiency")
        },
        "first_level": comparisons.by_first_level(judged),
        "second_level": comparisons.by_second_level(judged),
        "maf_over_random": comparisons.maf_over_random(judged),
        "level_effects": comparisons.level_effects(judged),
        "anchors": comparisons.against_anchors(judged),
        "sensitivity": comparisons.sensitivity(judged),
    }
