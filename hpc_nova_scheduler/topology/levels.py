"""Network topology beyond one rack: levels, domains and the tenant's constraints.

Seed 003 knows one level, the rack. An operator names more, outermost
first (``[hpc_scheduler] topology_levels = block,rack``); the host is always
the innermost level. :func:`configured` is the one reader of that option,
for nova-api's validators, nova-scheduler and the commands alike. Each host
has one value per level, read from the aggregate metadata ``hpc:<level>``;
a host without a value at some level is a domain of its own at that level,
as a host without a rack always was.

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

from oslo_config import cfg

from hpc_nova_scheduler import conf

# What core defines of the topology, re-exported: the level model reads whole here.
from hpc_nova_scheduler.core.domains import DEFAULT_LEVELS as DEFAULT_LEVELS
from hpc_nova_scheduler.core.domains import HOST_LEVEL as HOST_LEVEL
from hpc_nova_scheduler.core.domains import SPEC_PREFERRED as SPEC_PREFERRED
from hpc_nova_scheduler.core.domains import SPEC_REQUIRED as SPEC_REQUIRED
from hpc_nova_scheduler.core.domains import SPEC_SEGMENT as SPEC_SEGMENT
from hpc_nova_scheduler.core.domains import SPEC_SEGMENT_LEVEL as SPEC_SEGMENT_LEVEL
from hpc_nova_scheduler.core.domains import SPECS as SPECS
from hpc_nova_scheduler.core.domains import TopologySpec as TopologySpec
from hpc_nova_scheduler.core.domains import host_domain as host_domain
from hpc_nova_scheduler.core.domains import path_of as path_of
from hpc_nova_scheduler.core.profile import ProfileError

#: ``hpc:`` aggregate keys that mean something else and cannot name a level.
RESERVED_LEVELS = frozenset({HOST_LEVEL, "cpu_group", "platform", "app_class", "app_name"})
_LEVEL_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")

#: The largest segment accepted: far beyond any request Nova takes.
MAX_SEGMENT = 100_000


class TopologyError(ValueError):
    """The operator's list of levels is wrong; the message says which name."""


def parse_levels(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """The configured levels, outermost first, checked; None means seed 003's rack.

    An empty list, or an empty name in it (``block,,rack``, a trailing
    comma), is refused: it is a typing mistake, and a cloud that wants seed
    003's single level says ``rack`` or leaves the option out.
    """
    if value is None:
        return DEFAULT_LEVELS
    items = value.split(",") if isinstance(value, str) else list(value)
    if not any(str(item).strip() for item in items):
        raise TopologyError("no topology level is named; name at least one (the default is rack)")
    levels = tuple(str(item).strip().lower() for item in items)
    if "" in levels:
        raise TopologyError(
            f"topology level {levels.index('') + 1} of {len(levels)} is empty "
            "(two commas in a row, or one at an end)"
        )
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


#: The option the cloud's levels are read from.
OPTION = f"[{conf.GROUP_NAME}] topology_levels"


class LevelsOptionError(TopologyError):
    """``topology_levels`` is wrong; the message names the option, ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{OPTION}: {reason}")
        self.reason = reason


def configured(config: cfg.ConfigOpts | None = None) -> tuple[str, ...]:
    """The cloud's levels from ``[hpc_scheduler] topology_levels`` (of ``config``,
    by default the process's CONF): the one reader of the option, for
    nova-api's validators, nova-scheduler and the commands alike.

    Raises :class:`LevelsOptionError` naming the option.
    """
    try:
        return parse_levels((config or conf.CONF)[conf.GROUP_NAME].topology_levels)
    except (ValueError, cfg.Error) as error:
        raise LevelsOptionError(" ".join(str(error).split())) from None


def metadata_key(level: str) -> str:
    """The aggregate metadata key that places a host in a domain of ``level``."""
    return f"hpc:{level}"


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
