"""The topology's levels and each host's domains, as nova-scheduler reads them.

``[hpc_scheduler] topology_levels`` names the levels, outermost first; each
host's value at a level is the aggregate metadata ``hpc:<level>``
(:mod:`.aggregate_tags` reads them with the other ``hpc:`` keys). A wrong
option must not take placement down, nor place silently against the
tenant's constraints: it is said once in the log, racks alone are used
(seed 003's single level, from ``hpc:rack``), and requests that name
topology levels are refused until it is fixed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.algorithm import NO_TOPOLOGY
from hpc_nova_scheduler.core.columns import domain_ids
from hpc_nova_scheduler.core.profile import ProfileError
from hpc_nova_scheduler.topology import levels as topo

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF

_REPORTED: set[str] = set()
_LOCK = threading.Lock()


def levels() -> tuple[str, ...] | None:
    """The configured levels; None (said once per mistake) when the option is wrong."""
    try:
        return topo.configured(CONF)
    except topo.LevelsOptionError as error:
        text = error.reason
        with _LOCK:
            if text in _REPORTED:
                return None
            _REPORTED.add(text)
        LOG.error(
            "hpc-nova-scheduler: %s; placing by racks "
            "(hpc:rack) alone and refusing requests with hpc:topology_* extra specs until "
            "it is fixed",
            error,
        )
        return None


def in_force() -> tuple[str, ...]:
    """The levels placement uses: the configured ones, or seed 003's rack."""
    return levels() or topo.DEFAULT_LEVELS


def metadata_keys() -> tuple[str, ...]:
    """The aggregate metadata keys of the levels in force."""
    return tuple(topo.metadata_key(level) for level in in_force())


def values_of(
    host: str, tags: Mapping[str, Mapping[str, Iterable[str]]], levels_: Sequence[str]
) -> tuple[str, ...]:
    """A host's value at each level ("" where it has none; the first of
    conflicting values, as the placement does, ``topology check`` says which)."""
    by_key = tags.get(host, {})
    return tuple(min(by_key.get(topo.metadata_key(level), ()), default="") for level in levels_)


def domain_of(
    host: str,
    key: str,
    tags: Mapping[str, Mapping[str, Iterable[str]]],
    levels_: Sequence[str],
    depth: int,
) -> str:
    """The domain at ``depth`` of the compute node ``key`` on ``host`` (the
    node itself past the last level), named as the placement names it."""
    if depth >= len(levels_):
        return key
    return domain_ids(key, values_of(host, tags, levels_))[depth]


def domains_of_hosts(
    tags: Mapping[str, Mapping[str, Iterable[str]]] | None,
    levels_: Sequence[str] | None = None,
) -> Callable[[str], dict[str, str]]:
    """host key -> level -> domain, as placement names them.

    ``levels_``: the levels in force (:func:`in_force`) when None; a
    command passes those of its own configuration files. The agent's
    reclaim and ``fairshare reclaim plan`` both read domains here, so that
    the dry run names the domains the agent frees.
    """
    chosen = tuple(levels_) if levels_ is not None else in_force()
    known = tags or {}

    def domains_of(key: str) -> dict[str, str]:
        host = key.split("/", 1)[0]
        return {
            level: domain_of(host, key, known, chosen, depth) for depth, level in enumerate(chosen)
        }

    return domains_of


def spec_of(extra_specs: Mapping[str, str]) -> topo.TopologySpec:
    """The request's ``hpc:topology_*`` constraints, checked against the levels.

    Raises :class:`~hpc_nova_scheduler.core.profile.ProfileError` naming the
    key (or the option, when the levels themselves are wrong).
    """
    if not any(key in extra_specs for key in topo.SPECS):
        return NO_TOPOLOGY
    configured = levels()
    if configured is None:
        raise ProfileError(
            "[hpc_scheduler] topology_levels",
            "the option is wrong (see the error logged when it was read), so topology "
            "constraints cannot be honoured",
        )
    return topo.spec_from_extra_specs(extra_specs, configured)


def constraint_depth(spec: topo.TopologySpec, levels_: Sequence[str]) -> int | None:
    """The depth every VM of an application must share: the required level."""
    if spec.required is None:
        return None
    return topo.depth(spec.required, levels_)
