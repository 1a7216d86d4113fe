"""What ``hpc-nova-scheduler topology show | check`` print and draw.

:mod:`.topology` reads the cloud from Nova; the topology system builds the
tree of domains and finds where the tags do not form one
(:mod:`hpc_nova_scheduler.topology.tree`). This module only renders them:
the problems as lines, the tree as indented text or as a PNG of nested
boxes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hpc_nova_scheduler import atomicfile
from hpc_nova_scheduler.topology import levels as topology
from hpc_nova_scheduler.topology.tree import Cloud, Domain


def describe_levels(levels: Sequence[str]) -> str:
    return f"level{'s' if len(levels) > 1 else ''} {', '.join(levels)}"


def check_lines(
    cloud: Cloud, levels: Sequence[str], found: Sequence[topology.Inconsistency]
) -> list[str]:
    """One line per problem of ``found``; one line saying so when there is none."""
    if not found:
        return [f"topology: {_hosts(len(cloud.hosts))}, {describe_levels(levels)}: consistent"]
    return [str(problem) for problem in found]


# -- the tree ----------------------------------------------------------------


def _cores(value: float) -> str:
    return f"{value:g}"


def _hosts(count: int) -> str:
    return f"{count} host{'' if count == 1 else 's'}"


def text_lines(root: Domain, levels: Sequence[str]) -> list[str]:
    """The tree as indented lines: each domain with its free and total vCPUs."""
    lines = [
        f"topology: {_hosts(root.hosts)}, {describe_levels(levels)}; "
        f"{_cores(root.free)} of {_cores(root.total)} vCPUs free"
    ]
    for depth, node in root.walk():
        if node is root:
            continue
        count = "" if node.level == topology.HOST_LEVEL else f" ({_hosts(node.hosts)})"
        lines.append(
            f"{'  ' * (depth - 1)}{node.level} {node.name}: "
            f"{_cores(node.free)} of {_cores(node.total)} vCPUs free{count}"
        )
    return lines


# -- the figure --------------------------------------------------------------

#: Rows of the figure, in boxes: one per level, the hosts' taller for upright names.
ROW = 1.0
HOST_ROW = 1.8


def draw(root: Domain, levels: Sequence[str], path: str) -> None:
    """The tree as nested boxes: a row per level, each box as wide as its hosts.

    Each box says its domain and its free / total vCPUs and is coloured by
    the fraction free (green: free). Written whole or not at all.
    """
    import matplotlib

    # Its first run logs at INFO that it built its font cache: not the reader's concern.
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    from matplotlib import colormaps, colors, pyplot
    from matplotlib.patches import Rectangle

    kinds = (*levels, topology.HOST_LEVEL)
    count = max(root.hosts, 1)
    width = min(max(0.75 * count + 2.0, 6.0), 60.0)
    height = ROW * len(levels) + HOST_ROW + 1.4
    figure, axis = pyplot.subplots(figsize=(width, height))
    palette = colormaps["RdYlGn"]
    scale = colors.Normalize(0.0, 1.0)
    # Box width in inches of one host, to leave out labels that cannot fit.
    inch = (width * 0.85) / count
    tops = [0.0]
    for kind in kinds:
        tops.append(tops[-1] - (HOST_ROW if kind == topology.HOST_LEVEL else ROW))

    def place(node: Domain, depth: int, left: float) -> None:
        if depth >= 0:
            top, bottom = tops[depth], tops[depth + 1]
            share = node.free / node.total if node.total > 0 else None
            face = "lightgrey" if share is None else palette(scale(max(0.0, min(share, 1.0))))
            axis.add_patch(
                Rectangle(
                    (left + 0.04, bottom + 0.04),
                    node.hosts - 0.08,
                    top - bottom - 0.08,
                    facecolor=face,
                    edgecolor="black",
                    alpha=0.8,
                    linewidth=0.6,
                )
            )
            label = f"{node.name}\n{_cores(node.free)}/{_cores(node.total)}"
            # Upright where a host's box is narrow; left out where even that cannot fit.
            upright = node.level == topology.HOST_LEVEL and node.hosts * inch < 1.2
            if node.hosts * inch >= (0.22 if upright else 0.45):
                axis.text(
                    left + node.hosts / 2,
                    (top + bottom) / 2,
                    label,
                    ha="center",
                    va="center",
                    fontsize=7 if node.level == topology.HOST_LEVEL else 8,
                    rotation=90 if upright else 0,
                )
        offset = left
        for child in node.children:
            place(child, depth + 1, offset)
            offset += child.hosts

    place(root, -1, 0.0)
    axis.set_xlim(0, count)
    axis.set_ylim(tops[-1], 0)
    axis.set_yticks([(tops[i] + tops[i + 1]) / 2 for i in range(len(kinds))])
    axis.set_yticklabels(kinds)
    axis.set_xticks([])
    for side in ("top", "right", "bottom", "left"):
        axis.spines[side].set_visible(False)
    title = (
        f"{_hosts(root.hosts)}, {describe_levels(levels)}: "
        f"{_cores(root.free)} of {_cores(root.total)} vCPUs free (each box: free/total)"
    )
    if not root.hosts:
        title = "no compute hosts"
    axis.set_title(title, fontsize=10)
    bar = figure.colorbar(
        pyplot.cm.ScalarMappable(norm=scale, cmap=palette), ax=axis, fraction=0.03, pad=0.01
    )
    bar.set_label("fraction of vCPUs free", fontsize=8)
    figure.tight_layout()
    try:
        with atomicfile.replacing(path) as scratch:
            figure.savefig(scratch, format="png", dpi=100)
    finally:
        pyplot.close(figure)
