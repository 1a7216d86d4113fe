"""What ``hpc-nova-scheduler topology show | check`` print and draw, from plain data.

Nothing here reads Nova: :mod:`.topology` hands over a :class:`Cloud` (each
compute host's vCPUs and free vCPUs, and the ``hpc:<level>`` values its
aggregates give it), and this module checks it with
:func:`~hpc_nova_scheduler.core.topology.inconsistencies`, builds the tree of
domains, and renders it as indented text or as a PNG of nested boxes.

A domain is its path from the outermost level down, as the placement sees
it: two racks called ``r1`` in two blocks are two domains, each drawn under
its own block. A host without a value at a level is a domain of its own
there (``host:<name>``). A host that two aggregates give two values at one
level is drawn under the first in sorted order, as the scheduler reads a
conflicting ``hpc:rack``; ``topology check`` names it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping, Sequence

from hpc_nova_scheduler import atomicfile
from hpc_nova_scheduler.core import topology

#: host name -> metadata key -> the values its aggregates give it
Tags = Mapping[str, Mapping[str, frozenset[str]]]


@dataclasses.dataclass(frozen=True)
class HostCores:
    """A compute host's vCPUs as Placement counts them, and those free."""

    total: float
    free: float


@dataclasses.dataclass(frozen=True)
class Cloud:
    """What the commands read: the compute hosts and their aggregates' tags."""

    #: Each compute host (a service host; its nodes summed) -> its vCPUs.
    hosts: Mapping[str, HostCores]
    #: host -> ``hpc:<level>`` key -> values; hosts without a compute node are ignored.
    tags: Tags

    def values(self, levels: Sequence[str]) -> dict[str, dict[str, frozenset[str]]]:
        """Each compute host's values per level, as :func:`topology.inconsistencies` reads them."""
        found: dict[str, dict[str, frozenset[str]]] = {}
        for host in self.hosts:
            by_key = self.tags.get(host, {})
            found[host] = {
                level: frozenset(by_key[topology.metadata_key(level)])
                for level in levels
                if by_key.get(topology.metadata_key(level))
            }
        return found

    def path(self, host: str, levels: Sequence[str]) -> tuple[str, ...]:
        """The host's domain at each level, outermost first (the first value where two)."""
        by_key = self.tags.get(host, {})
        chosen = [min(by_key.get(topology.metadata_key(level)) or {""}) for level in levels]
        return topology.path_of(host, chosen)


def describe_levels(levels: Sequence[str]) -> str:
    return f"level{'s' if len(levels) > 1 else ''} {', '.join(levels)}"


def problems(cloud: Cloud, levels: Sequence[str]) -> list[topology.Inconsistency]:
    """Where the compute hosts' tags do not form a tree, each with its hosts."""
    return topology.inconsistencies(cloud.values(levels), levels)


def check_lines(
    cloud: Cloud, levels: Sequence[str], found: Sequence[topology.Inconsistency]
) -> list[str]:
    """One line per problem of ``found``; one line saying so when there is none."""
    if not found:
        return [f"topology: {_hosts(len(cloud.hosts))}, {describe_levels(levels)}: consistent"]
    return [str(problem) for problem in found]


# -- the tree ----------------------------------------------------------------


@dataclasses.dataclass
class Domain:
    """A domain at one level (the root: the whole cloud), with its free and total vCPUs."""

    level: str
    name: str
    total: float = 0.0
    free: float = 0.0
    hosts: int = 0
    children: list[Domain] = dataclasses.field(default_factory=list)

    @property
    def own(self) -> bool:
        """A host alone at this level, for want of a value."""
        return self.level != topology.HOST_LEVEL and self.name.startswith(topology.host_domain(""))

    def walk(self, depth: int = 0) -> Iterator[tuple[int, Domain]]:
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)


ROOT_LEVEL = "cloud"


def _order(domain: Domain) -> tuple[bool, str]:
    # Named domains first, hosts alone for want of a value after them.
    return (domain.own, domain.name)


def tree(cloud: Cloud, levels: Sequence[str]) -> Domain:
    """The cloud's domains, outermost level first, down to the hosts."""
    root = Domain(ROOT_LEVEL, "")
    index: dict[tuple[str, ...], Domain] = {(): root}
    for host in sorted(cloud.hosts):
        cores = cloud.hosts[host]
        path = (*cloud.path(host, levels), host)
        kinds = (*levels, topology.HOST_LEVEL)
        chain = [root]
        for depth in range(len(path)):
            key = path[: depth + 1]
            node = index.get(key)
            if node is None:
                node = Domain(kinds[depth], path[depth])
                index[key] = node
                index[key[:-1]].children.append(node)
            chain.append(node)
        for node in chain:
            node.total += cores.total
            node.free += cores.free
            node.hosts += 1
    for _, node in root.walk():
        node.children.sort(key=_order)
    return root


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
