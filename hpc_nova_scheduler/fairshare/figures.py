"""PNG plots in the style of seed 002's Figs. 3-7, and the anchors' comparison.

Each figure draws one function of :mod:`.comparisons`: fairness on the
left, efficiency on the right, bars per scenario type (Default, W/o Plat.,
S/L Plat., W/o App., S/L App.) as the paper groups them, with min/max
whiskers where the paper draws them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from hpc_nova_scheduler.fairshare import comparisons
from hpc_nova_scheduler.fairshare.experiments import Judged
from hpc_nova_scheduler.fairshare.workload import KINDS

_PANELS = (
    ("fairness", "fairness (higher is better)"),
    ("efficiency", "efficiency (lower is better)"),
)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(path: str, title: str, grouped: dict, whiskers: bool) -> None:
    plt = _pyplot()
    names = list(grouped)
    kinds = [k for k in (*KINDS, "all") if any(k in grouped[n] for n in names)]
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / max(len(names), 1)
    for axis, (key, label) in zip(axes, _PANELS, strict=True):
        for i, name in enumerate(names):
            xs, ys, low, high = [], [], [], []
            for j, k in enumerate(kinds):
                summary = grouped[name].get(k)
                if summary is None:
                    continue
                xs.append(j + i * width)
                ys.append(summary[key])
                low.append(summary[key] - summary[f"{key}_min"])
                high.append(summary[f"{key}_max"] - summary[key])
            axis.bar(xs, ys, width, label=name, yerr=[low, high] if whiskers else None, capsize=2)
        axis.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(kinds))])
        axis.set_xticklabels(kinds, fontsize=8)
        axis.set_ylabel(label)
        axis.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _sorted_lines(path: str, title: str, data: dict) -> None:
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    for axis, key in zip(axes, ("fairness", "efficiency"), strict=True):
        values = data[key]
        axis.plot(range(len(values)), values)
        axis.axhline(0, color="grey", linewidth=0.8)
        axis.set_xlabel("runs, sorted")
        axis.set_ylabel(f"{key}: RPA better than EPA (%)")
        axis.grid(alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _anchors(path: str, rows: Sequence[dict], suffix: str = "") -> None:
    plt = _pyplot()
    from hpc_nova_scheduler.fairshare.experiments import ANCHORS

    names = ("ours", *ANCHORS)
    labels = [f"{r['scenario']}" + ("" if r["arrivals"] == "all-at-once" else "*") for r in rows]
    figure, axes = plt.subplots(2, 1, figsize=(max(8, len(rows) * 0.55), 7))
    width = 0.8 / len(names)
    for axis, key in zip(axes, ("fairness", "efficiency"), strict=True):
        for i, name in enumerate(names):
            ys = [r.get(f"{name}_{key}", float("nan")) for r in rows]
            axis.bar([j + i * width for j in range(len(rows))], ys, width, label=name)
        axis.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(rows))])
        axis.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        axis.set_ylabel(key)
        axis.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, ncol=4)
    figure.suptitle("PA-based RR + RPA + MAF against production fair share (* Poisson)" + suffix)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def draw(directory: str, judged: Sequence[Judged], engine: str = "") -> list[str]:
    """Every figure the outcomes allow, as PNG files in ``directory``; their paths.

    ``engine`` (discrete or rate) is named in every title."""
    if not os.path.isdir(directory):
        # The folder itself, not its parents: a mistyped path is an error.
        os.mkdir(directory)
    written = []

    suffix = f" ({engine} engine)" if engine else ""

    def target(name: str) -> str:
        path = os.path.join(directory, name)
        written.append(path)
        return path

    metric = comparisons.by_platform_metric(judged)
    if metric:
        _bars(
            target("fig3-platform-metrics.png"),
            "Fig. 3: platform affinity metrics" + suffix,
            metric,
            False,
        )
    rpa_epa = comparisons.rpa_over_epa(judged)
    if rpa_epa["fairness"]:
        _sorted_lines(target("fig4-rpa-vs-epa.png"), "Fig. 4: RPA against EPA" + suffix, rpa_epa)
    first = comparisons.by_first_level(judged)
    if first:
        _bars(target("fig5-first-level.png"), "Fig. 5: first-level policies" + suffix, first, True)
    second = comparisons.by_second_level(judged)
    if second:
        _bars(
            target("fig6-second-level.png"), "Fig. 6: second-level policies" + suffix, second, True
        )
    effects = comparisons.level_effects(judged)
    if any(v["fairness_mean"] == v["fairness_mean"] for v in effects.values()):
        _effects(target("fig7-level-effects.png"), effects, suffix)
    anchors = comparisons.against_anchors(judged)
    if anchors:
        _anchors(target("anchors.png"), anchors, suffix)
    return written


def _effects(path: str, effects: dict, suffix: str = "") -> None:
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(9, 4))
    for axis, key in zip(axes, ("fairness", "efficiency"), strict=True):
        levels = list(effects)
        means = [effects[level][f"{key}_mean"] for level in levels]
        maxima = [effects[level][f"{key}_max"] for level in levels]
        axis.bar([i - 0.2 for i in range(len(levels))], means, 0.4, label="average")
        axis.bar([i + 0.2 for i in range(len(levels))], maxima, 0.4, label="worst case")
        axis.set_xticks(range(len(levels)))
        axis.set_xticklabels([f"{level} level" for level in levels])
        axis.set_ylabel(f"{key}: best over worst policy (%)")
        axis.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle("Fig. 7: impact of the first and second levels" + suffix)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
