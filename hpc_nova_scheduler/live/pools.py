"""From the live cloud and the plugin's records to pools a planner may re-plan.

A host joins a pool only if everything on it may move: each server is an
ACTIVE HPC server the plugin placed (it has an ``app_running`` row), of an
application whose profile the model can judge, not ExtremeHPC (its hosts
stay dedicated to it), with no task under way; and the host's compute
service is enabled and up. Any other host is left out whole, neither
source nor target, and the reason is told. Hosts pool with the hosts of
the same capacity, processor group and rack, so that a move keeps an
application on identical processors and close to its peers; an untagged
host pools with the untagged hosts of its rack (the scheduler still
checks each move, see :mod:`.migrate`).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping, Sequence

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.db.api import RunningRecord
from hpc_nova_scheduler.interference.base import InterferenceModel, MissingFeatures, Tenant
from hpc_nova_scheduler.live.view import CloudView, ComputeNode
from hpc_nova_scheduler.planners.rebalance import Pool, Unit

#: Statuses a server may be moved in, by kind of migration.
MOVABLE = {"live": ("ACTIVE",), "cold": ("ACTIVE", "SHUTOFF")}


@dataclasses.dataclass(frozen=True)
class Pooled:
    pools: tuple[Pool, ...]
    #: Hosts left out, with why.
    left_out: tuple[tuple[str, str], ...]


def _label(host: ComputeNode) -> str:
    return (
        f"{host.cpu_group or 'untagged'}/{host.rack or host.name}/"
        f"{host.vcpus:g}vcpu-{host.memory_mb:g}MB"
    )


def _why_not(
    host: ComputeNode,
    view: CloudView,
    rows: Mapping[str, RunningRecord],
    profiles: Mapping[str, ProfileRecord],
    model: InterferenceModel,
    statuses: Sequence[str],
) -> str | None:
    if not host.usable:
        return "its compute service is disabled or down"
    if host.vcpus <= 0 or host.memory_mb <= 0:
        return "Placement reports no VCPU or MEMORY_MB on it"
    for server in view.on(host.name):
        row = rows.get(server.id)
        if row is None:
            return f"server {server.id} is not an HPC server the plugin placed"
        if row.app_class is AppClass.EXTREME_HPC:
            return f"it is dedicated to ExtremeHPC application {row.app_name or server.id}"
        if server.status not in statuses or server.task_state:
            state = server.task_state or server.status
            return f"server {server.id} is {state}"
        profile = profiles.get(row.app_name or "")
        if profile is None:
            return f"server {server.id} has no profile ({row.app_name or 'no application name'})"
        try:
            model.check([Tenant.of(profile)])
        except MissingFeatures as error:
            return str(error)
    return None


def build(
    view: CloudView,
    running: Sequence[RunningRecord],
    profiles: Mapping[str, ProfileRecord],
    model: InterferenceModel,
    migration: str = "live",
) -> Pooled:
    """The pools of ``view``, units made of the plugin's ``running`` rows."""
    rows = {row.instance_uuid: row for row in running}
    statuses = MOVABLE[migration]
    members: dict[tuple, list[ComputeNode]] = collections.defaultdict(list)
    left_out = []
    for host in view.hosts:
        reason = _why_not(host, view, rows, profiles, model, statuses)
        if reason is not None:
            left_out.append((host.name, reason))
            continue
        key = (host.cpu_group, host.rack or host.name, host.vcpus, host.memory_mb)
        members[key].append(host)
    pools = []
    for hosts in members.values():
        grouped: dict[tuple[str, str], list] = collections.defaultdict(list)
        for host in hosts:
            for server in view.on(host.name):
                row = rows[server.id]
                grouped[(row.request_id or server.id, host.name)].append(server)
        # A pool's hosts have one capacity (it is part of the pool's key).
        vcpus, memory_mb = hosts[0].vcpus, hosts[0].memory_mb
        units = []
        for (key, host_name), servers in sorted(grouped.items()):
            name = rows[servers[0].id].app_name
            units.append(
                Unit(
                    key=f"{key}@{host_name}",
                    profile=profiles[name],
                    host=host_name,
                    servers=tuple(sorted(s.id for s in servers)),
                    cpu=sum(s.vcpus for s in servers) / vcpus,
                    mem=sum(s.ram_mb for s in servers) / memory_mb,
                )
            )
        pools.append(Pool(_label(hosts[0]), tuple(h.name for h in hosts), tuple(units)))
    pools.sort(key=lambda p: p.label)
    return Pooled(tuple(pools), tuple(left_out))
