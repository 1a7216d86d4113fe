"""Network topology beyond one rack: levels, domains and the tenant's constraints.

Seed 003 knows one level, the rack. An operator names more, outermost
first (``[hpc_scheduler] topology_levels = block,rack``); the host is always
the innermost level. Each host has one value per level, read from the
aggregate metadata ``hpc:<level>``; a host without a value at some level is
a domain of its own at that level, as a host without a rack always was.

A domain is identified by its path from the outermost level down, so two
racks called ``r1`` in two blocks are two domains: the placement always
sees a tree. ``hpc-nova-scheduler topology check`` reports the names an
operator reused by mistake (:func:`inconsistencies`).

Tenants constrain a request through flavor extra specs (:class:`TopologySpec`):
``hpc:topology_required``, ``hpc:topology_preferred``, and segments
(``hpc:topology_segment`` with ``hpc:topology_segment_level``), as Kueue's
required, preferred and slice topology and Slurm's ``--segment`` do.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hpc_nova_scheduler.core.profile import TOPOLOGY_SPECS, ProfileError

#: The innermost level, always present: every host is a domain of its own.
HOST_LEVEL = "host"
#: Seed 003's single level; clouds that name none keep exactly its behaviour.
DEFAULT_LEVELS: tuple[str, ...] = ("rack",)
#: ``hpc:`` aggregate keys that mean something else and cannot name a level.
RESERVED_LEVELS = frozenset({HOST_LEVEL, "cpu_group", "platform", "app_class", "app_name"})
_LEVEL_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")

SPECS = TOPOLOGY_SPECS
SPEC_REQUIRED, SPEC_PREFERRED, SPEC_SEGMENT, SPEC_SEGMENT_LEVEL = SPECS
#: The largest segment accepted: far beyond any request Nova takes.
MAX_SEGMENT = 100_000


class TopologyError(ValueError):
    """The operator's list of levels is wrong; the message says which name."""


def parse_levels(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """The configured levels, outermost first, checked; empty means seed 003's rack."""
    if value is None:
        return DEFAULT_LEVELS
    items = value.split(",") if isinstance(value, str) else list(value)
    levels = tuple(item.strip().lower() for item in items if item.strip())
    if not levels:
        return DEFAULT_LEVELS
    seen: set[str] = set()
    for level in levels:
        if not _LEVEL_NAME.match(level):
            raise TopologyError(
                f"topology level {level!r} is not a name (lower-case letters, digits, - and _)"
            )
        if level in RESERVED_LEVELS:
            raise TopologyError(
                f"topology level {level!r} is reserved"
                + (" (the host is always the innermost level)" if level == HOST_LEVEL else "")
            )
        if level in seen:
            raise TopologyError(f"topology level {level!r} is named twice")
        seen.add(level)
    return levels


def metadata_key(level: str) -> str:
    """The aggregate metadata key that places a host in a domain of ``level``."""
    return f"hpc:{level}"


def host_domain(name: str) -> str:
    """The domain of a host that has no value at some level: itself."""
    return f"host:{name}"


def path_of(name: str, values: Sequence[str]) -> tuple[str, ...]:
    """A host's domain at each level (its values, a missing one replaced by itself)."""
    return tuple(value or host_domain(name) for value in values)


@dataclasses.dataclass(frozen=True)
class TopologySpec:
    """A request's topology constraints (all optional), as levels by name.

    ``required``: every VM in one domain of that level, or the request is
    refused whole. ``preferred``: as few domains of that level as possible,
    never refused for it. ``segment`` VMs per ``segment_level`` domain: the
    request splits into segments of that many VMs, each inside one domain.
    """

    required: str | None = None
    preferred: str | None = None
    segment: int | None = None
    segment_level: str | None = None

    @property
    def empty(self) -> bool:
        return self.required is None and self.preferred is None and self.segment is None

    def check_count(self, count: int) -> None:
        """Refuse a request whose VM count the segment size does not divide."""
        if self.segment is not None and count % self.segment:
            raise ProfileError(
                SPEC_SEGMENT,
                f"segments of {self.segment} VMs do not divide a request of {count} VMs",
            )

    def describe(self) -> str:
        parts = []
        if self.required:
            parts.append(f"required {self.required}")
        if self.preferred:
            parts.append(f"preferred {self.preferred}")
        if self.segment is not None:
            parts.append(f"segments of {self.segment} per {self.segment_level}")
        return ", ".join(parts) or "none"


def _level(key: str, value: Any, levels: Sequence[str]) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(key, f"expected a topology level, got {value!r}")
    level = value.strip().lower()
    known = (*levels, HOST_LEVEL)
    if level not in known:
        raise ProfileError(
            key, f"unknown topology level {value!r}; this cloud's levels are {', '.join(known)}"
        )
    return level


def parse_segment(value: Any, key: str = SPEC_SEGMENT) -> int:
    """A segment size: a whole number from 1 to :data:`MAX_SEGMENT`."""
    if isinstance(value, bool):
        raise ProfileError(key, f"expected a whole number of VMs, got {value!r}")
    text = value.strip() if isinstance(value, str) else value
    try:
        size = int(text)
    except (TypeError, ValueError):
        raise ProfileError(key, f"{value!r} is not a whole number of VMs") from None
    if isinstance(value, float) and not value.is_integer():
        raise ProfileError(key, f"{value!r} is not a whole number of VMs")
    if size < 1:
        raise ProfileError(key, f"{value!r} is below 1; a segment holds at least one VM")
    if size > MAX_SEGMENT:
        raise ProfileError(key, f"{value!r} is above {MAX_SEGMENT}")
    return size


def validate_spec(name: str, value: Any, levels: Sequence[str]) -> None:
    """Validate one topology extra spec on its own (what nova-api can check)."""
    if name == SPEC_SEGMENT:
        parse_segment(value, name)
    else:
        _level(name, value, levels)


def depth(level: str, levels: Sequence[str]) -> int:
    """0 for the outermost level; the host is the deepest."""
    return len(levels) if level == HOST_LEVEL else list(levels).index(level)


def spec_from_extra_specs(
    extra_specs: Mapping[str, Any] | None, levels: Sequence[str]
) -> TopologySpec:
    """The request's constraints, every key checked alone and together.

    Raises :class:`ProfileError` naming the offending key: an unknown
    level, a segment below 1, a segment without its level (or a level
    without a segment), a preferred level not inside the required one, and
    a segment level outside the required one.
    """
    specs = extra_specs or {}
    required = (
        _level(SPEC_REQUIRED, specs[SPEC_REQUIRED], levels) if SPEC_REQUIRED in specs else None
    )
    preferred = (
        _level(SPEC_PREFERRED, specs[SPEC_PREFERRED], levels) if SPEC_PREFERRED in specs else None
    )
    segment = parse_segment(specs[SPEC_SEGMENT]) if SPEC_SEGMENT in specs else None
    segment_level = (
        _level(SPEC_SEGMENT_LEVEL, specs[SPEC_SEGMENT_LEVEL], levels)
        if SPEC_SEGMENT_LEVEL in specs
        else None
    )
    if segment is not None and segment_level is None:
        raise ProfileError(SPEC_SEGMENT, f"needs {SPEC_SEGMENT_LEVEL} to say where a segment fits")
    if segment_level is not None and segment is None:
        raise ProfileError(SPEC_SEGMENT_LEVEL, f"needs {SPEC_SEGMENT} to give the segment size")
    if (
        required is not None
        and preferred is not None
        and depth(preferred, levels) <= depth(required, levels)
    ):
        raise ProfileError(
            SPEC_PREFERRED,
            f"level {preferred!r} is not inside the required level {required!r}; "
            "every VM is already in one of its domains",
        )
    if (
        required is not None
        and segment_level is not None
        and depth(segment_level, levels) < depth(required, levels)
    ):
        raise ProfileError(
            SPEC_SEGMENT_LEVEL,
            f"level {segment_level!r} is outside the required level {required!r}",
        )
    return TopologySpec(required, preferred, segment, segment_level)


@dataclasses.dataclass(frozen=True)
class Inconsistency:
    """One place where the hierarchy is not a tree, for ``topology check``."""

    level: str
    domain: str
    detail: str
    hosts: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.level} {self.domain}: {self.detail} ({', '.join(self.hosts)})"


def inconsistencies(
    hosts: Mapping[str, Mapping[str, Iterable[str]]], levels: Sequence[str]
) -> list[Inconsistency]:
    """Where the operator's tags do not form a hierarchy.

    ``hosts``: each host's values per level (a set, since two aggregates
    may give a host two values). Found: a host with two values at one
    level, and a domain whose hosts sit in two domains of the level above
    (a rack in two blocks), each with the hosts named.
    """
    found: list[Inconsistency] = []
    single: dict[str, dict[str, str]] = {}
    for host in sorted(hosts):
        by_level = hosts[host]
        for level in levels:
            values = sorted(set(by_level.get(level, ())))
            if len(values) > 1:
                found.append(
                    Inconsistency(level, host, f"host has {len(values)} values {values}", (host,))
                )
            if values:
                single.setdefault(host, {})[level] = values[0]
    for outer, inner in itertools.pairwise(levels):
        parents: dict[str, dict[str, list[str]]] = {}
        for host, values in single.items():
            if inner in values:
                parent = values.get(outer, host_domain(host))
                parents.setdefault(values[inner], {}).setdefault(parent, []).append(host)
        for domain in sorted(parents):
            split = parents[domain]
            if len(split) > 1:
                where = "; ".join(f"{outer} {p}: {', '.join(split[p])}" for p in sorted(split))
                found.append(
                    Inconsistency(
                        inner,
                        domain,
                        f"hosts sit in {len(split)} {outer}s ({where})",
                        tuple(sorted(h for hs in split.values() for h in hs)),
                    )
                )
    return found
