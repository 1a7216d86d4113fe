"""The live cloud's platforms: which compute node is on which, and their cores.

A **platform** is a processor group (``hpc:cpu_group``, or the group of a
compute node's ``cpu_info``); the aggregate key ``hpc:platform`` overrides
it. The agent's allocator (``agent/allocator.py``) reads the compute nodes
from Nova and hands them here as :class:`Node`; a generation stores its
cloud (:func:`cloud_as_json`), so that the filter reads no compute nodes.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from hpc_nova_scheduler.core.cpu_groups import CPU_GROUP_KEY, cpu_group_from_cpu_info
from hpc_nova_scheduler.core.sharing import Platform
from hpc_nova_scheduler.db import api as db_api

PLATFORM_KEY = "hpc:platform"


class FairshareError(ValueError):
    """The cloud cannot be shared as it is tagged: one line naming the host or platform."""


def _one(host: str, key: str, values: Iterable[str]) -> str | None:
    found = sorted(set(values))
    if len(found) > 1:
        raise FairshareError(f"host {host} is in two platforms by {key}: {', '.join(found)}")
    return found[0] if found else None


def platform_of(host: str, tags: Mapping | None, cpu_info: Any) -> str:
    """A host's platform: ``hpc:platform``, else ``hpc:cpu_group``, else its ``cpu_info``."""
    mine = (tags or {}).get(host, {})
    for key in (PLATFORM_KEY, CPU_GROUP_KEY):
        value = _one(host, key, mine.get(key, ()))
        if value is not None:
            return value
    return cpu_group_from_cpu_info(cpu_info)


@dataclasses.dataclass(frozen=True)
class Node:
    """A compute node as the allocator counts it."""

    host: str
    nodename: str | None
    vcpus: int
    cpu_info: Any = None

    @property
    def key(self) -> str:
        return db_api.host_key(self.host, self.nodename)


@dataclasses.dataclass(frozen=True)
class Cloud:
    """The platforms and which host is on which."""

    platforms: tuple[Platform, ...]
    #: host key -> platform
    platform_of: Mapping[str, str]
    #: platform -> its host names (what claims lock and count)
    hosts: Mapping[str, tuple[str, ...]]
    #: platform -> its host keys
    keys: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        # Derived here, once per cloud: requests ask for a platform's hosts.
        members: dict[str, set[str]] = collections.defaultdict(set)
        for key, platform in self.platform_of.items():
            members[platform].add(key)
        object.__setattr__(self, "keys", {p: frozenset(k) for p, k in members.items()})

    def cores(self, platform: str) -> int:
        return next((p.cores for p in self.platforms if p.name == platform), 0)


def build_cloud(nodes: Iterable[Node], tags: Mapping | None) -> Cloud:
    """Group the compute nodes into platforms; FairshareError for a host in two
    platforms or a platform with no cores.

    A platform's nodes should be identical; where their vCPUs differ it
    counts as that many nodes of the most common size, so its cores are
    what its nodes hold (:class:`Platform` has one node size).
    """
    members: dict[str, list[Node]] = collections.defaultdict(list)
    for node in nodes:
        members[platform_of(node.host, tags, node.cpu_info)].append(node)
    platforms = []
    for name, found in sorted(members.items()):
        total = sum(max(node.vcpus, 0) for node in found)
        if total <= 0:
            raise FairshareError(f"platform {name} has no cores ({len(found)} hosts, 0 vCPUs)")
        size = statistics.mode(node.vcpus for node in found if node.vcpus > 0)
        platforms.append(Platform(name, nodes=max(total // size, 1), cores_per_node=size))
    return Cloud(
        platforms=tuple(platforms),
        platform_of={node.key: name for name, found in members.items() for node in found},
        hosts={
            name: tuple(sorted({node.host for node in found})) for name, found in members.items()
        },
    )


def cloud_as_json(cloud: Cloud) -> dict:
    """The platforms of a generation, stored with it: the filter reads no compute nodes."""
    return {
        "platforms": [[p.name, p.nodes, p.cores_per_node] for p in cloud.platforms],
        "hosts": dict(sorted(cloud.platform_of.items())),
    }


def cloud_from_json(stored: Mapping) -> Cloud:
    platforms = tuple(Platform(name, nodes, size) for name, nodes, size in stored["platforms"])
    platform_of = dict(stored["hosts"])
    hosts: dict[str, set[str]] = collections.defaultdict(set)
    for key, platform in platform_of.items():
        # A host key is the host's name, with "/node" where they differ.
        hosts[platform].add(key.split("/", 1)[0])
    return Cloud(platforms, platform_of, {p: tuple(sorted(h)) for p, h in hosts.items()})
