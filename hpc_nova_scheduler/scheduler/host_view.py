"""Turning Nova's view of a host and a request into the core's terms."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any

from oslo_log import log as logging
from oslo_serialization import jsonutils

from hpc_nova_scheduler.core.cluster import Host, Resources, RunningVM

LOG = logging.getLogger(__name__)

RACK_KEY = "hpc:rack"
CPU_GROUP_KEY = "hpc:cpu_group"
UNKNOWN_CPU_GROUP = "unknown"


def _metadata_value(host_state: Any, key: str) -> str | None:
    values = set()
    for aggregate in getattr(host_state, "aggregates", None) or []:
        value = (getattr(aggregate, "metadata", None) or {}).get(key)
        if isinstance(value, str) and value.strip():
            values.add(value.strip())
    if len(values) > 1:
        chosen = sorted(values)[0]
        LOG.warning(
            "hpc-nova-scheduler: host %s has conflicting %s values %s in its aggregates; using %s",
            host_state.host,
            key,
            sorted(values),
            chosen,
        )
        return chosen
    return values.pop() if values else None


@functools.lru_cache(maxsize=1024)
def _cpu_group_from_text(cpu_info: str) -> str:
    try:
        info = jsonutils.loads(cpu_info) if cpu_info.strip() else {}
    except ValueError:
        info = {}
    return cpu_group_from_cpu_info(info)


def cpu_group_from_cpu_info(cpu_info: Any) -> str:
    """A processor group name from a compute node's ``cpu_info``.

    Vendor, model and, where the driver reports one, frequency; hosts whose
    driver reports nothing share the group ``unknown``.
    """
    if isinstance(cpu_info, str):
        # A cloud has a handful of distinct processor descriptions.
        return _cpu_group_from_text(cpu_info)
    info: Any = cpu_info
    if not isinstance(info, dict):
        return UNKNOWN_CPU_GROUP
    parts = [str(info[key]) for key in ("vendor", "model") if info.get(key)]
    for key in ("frequency", "mhz", "cpu_mhz", "max_frequency"):
        if info.get(key):
            parts.append(f"{info[key]}MHz")
            break
    return "/".join(parts) if parts else UNKNOWN_CPU_GROUP


def topology(host_state: Any) -> tuple[str, str]:
    """``(rack, cpu_group)`` from aggregate metadata, else ``cpu_info``."""
    rack = _metadata_value(host_state, RACK_KEY) or ""
    group = _metadata_value(host_state, CPU_GROUP_KEY)
    if group is None:
        group = cpu_group_from_cpu_info(getattr(host_state, "cpu_info", None))
    return rack, group


def _ratio(value: Any) -> float:
    return float(value) if value else 1.0


def resources(host_state: Any) -> tuple[Resources, Resources]:
    """``(capacity, free)`` with Nova's allocation ratios applied."""
    vcpus = host_state.vcpus_total * _ratio(host_state.cpu_allocation_ratio)
    ram_total = host_state.total_usable_ram_mb
    ram = ram_total * _ratio(host_state.ram_allocation_ratio)
    disk_total = host_state.total_usable_disk_gb
    disk = disk_total * _ratio(host_state.disk_allocation_ratio)
    capacity = Resources(vcpus, ram, disk)
    used_ram = ram_total - host_state.free_ram_mb
    used_disk = disk_total - host_state.free_disk_mb / 1024.0
    free = Resources(vcpus - host_state.vcpus_used, ram - used_ram, disk - used_disk)
    return capacity, free


def demand(spec_obj: Any) -> Resources:
    """One VM's demand, as Placement counts it (swap counts as disk)."""
    flavor = spec_obj.flavor
    disk = (flavor.root_gb or 0) + (flavor.ephemeral_gb or 0) + math.ceil((flavor.swap or 0) / 1024)
    return Resources(float(flavor.vcpus), float(flavor.memory_mb), float(disk))


def host_key(host_state: Any) -> str:
    """A unique name for a host state: the host, with the node if it differs."""
    node = getattr(host_state, "nodename", None)
    return host_state.host if node in (None, host_state.host) else f"{host_state.host}/{node}"


def to_host(host_state: Any, vms: Iterable[RunningVM]) -> Host:
    capacity, free = resources(host_state)
    rack, group = topology(host_state)
    return Host(
        name=host_key(host_state),
        capacity=capacity,
        free=free,
        rack=rack,
        cpu_group=group,
        vms=tuple(vms),
    )
