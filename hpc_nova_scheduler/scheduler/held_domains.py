"""Where an application already is, in the topology, as the filter plans it.

A VM being moved runs somewhere (:func:`where_now`); the VMs of a server
group's other requests run or hold claims somewhere. The plan keeps them
together (:func:`held`), and the claim checks the required level again
under its locks (:func:`domain_check`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from oslo_log import log as logging

from hpc_nova_scheduler.core.columns import domain_ids
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import domains, host_view
from hpc_nova_scheduler.scheduler.aggregate_tags import Tags
from hpc_nova_scheduler.scheduler.request import Request, RequestState

LOG = logging.getLogger(__name__)


def where_now(existing, instance_uuid: str | None, hosts: list) -> tuple[str, str | None] | None:
    """Where the VM runs now, if it runs (it is being moved): its record's
    host, else the host Nova shows it on; None for a new VM.

    Every node of a compute service lists the service's instances: the
    node is the one Nova's copy of the instance names, when it names one.
    """
    if existing is not None:
        return existing.host, existing.nodename
    for hs in hosts:
        if instance_uuid in (getattr(hs, "instances", None) or {}):
            node = host_view.listed_node(hs, instance_uuid)
            return hs.host, node or getattr(hs, "nodename", None)
    return None


def held(
    state: RequestState, request: Request, levels: Sequence[str], tags: Tags | None
) -> tuple[frozenset[str], ...] | None:
    """Per level, then the host level: where the application already runs
    or holds claims (a server group's), or where the VM being moved runs
    now. None when that cannot be known and a level is required."""
    grouped = request.group_uuid is not None
    if not grouped and state.moving_from is None:
        return ()
    if len(levels) == 1 and state.topology.empty:
        return ()  # seed 003's single level reads its own VMs only
    if tags is None:
        return None if state.topology.required is not None else ()
    if state.moving_from is not None:
        # A moved VM stays in its own segment's domain, and so in the
        # application's required one.
        places = {state.moving_from}
    elif state.database is None:
        return None if state.topology.required is not None else ()
    else:
        try:
            places = state.database.application_hosts(state.application_id)
        except db_api.ERRORS as error:
            LOG.warning(
                "hpc-nova-scheduler: cannot read where %s runs: %s", state.application_id, error
            )
            return None if state.topology.required is not None else ()
    by_level: list[set[str]] = [set() for _ in range(len(levels) + 1)]
    for host, nodename in places:
        key = db_api.host_key(host, nodename)
        for level, domain in enumerate(domain_ids(key, domains.values_of(host, tags, levels))):
            by_level[level].add(domain)
        by_level[-1].add(key)
    if any(by_level):
        LOG.debug("hpc-nova-scheduler: %s already holds %s", state.application_id, by_level)
    return tuple(frozenset(level) for level in by_level)


def domain_check(
    state: RequestState, levels: Sequence[str], tags: Tags | None
) -> tuple[int, Callable[[str, str], str]] | None:
    """For the claim: ``(depth, domain of (host, key))`` at the required level, or None."""
    depth = domains.constraint_depth(state.topology, levels)
    if depth is None or tags is None:
        return None
    return depth, lambda host, key: domains.domain_of(host, key, tags, levels, depth)
