"""The cloud's domains as a tree, and where the operator's tags do not form one.

:class:`Cloud` is plain data (each compute host's vCPUs and free vCPUs,
and the ``hpc:<level>`` values its aggregates give it), read from Nova by
``hpc-nova-scheduler topology`` or built by a test. :func:`problems` checks
it with :func:`~.levels.inconsistencies`; :func:`tree` builds the domains,
outermost level first, down to the hosts, with their free and total vCPUs.

A domain is its path from the outermost level down, as the placement sees
it: two racks called ``r1`` in two blocks are two domains. A host without a
value at a level is a domain of its own there (``host:<name>``). A host that
two aggregates give two values at one level sits under the first in sorted
order, as the scheduler reads a conflicting ``hpc:rack``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence

from hpc_nova_scheduler.topology import levels as topology

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


def problems(cloud: Cloud, levels: Sequence[str]) -> list[topology.Inconsistency]:
    """Where the compute hosts' tags do not form a tree, each with its hosts."""
    return topology.inconsistencies(cloud.values(levels), levels)


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
