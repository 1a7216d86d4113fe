"""Turning Nova's view of a host and a request into the core's terms."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import nova.conf
import os_resource_classes as orc
from nova.scheduler import utils as scheduler_utils
from oslo_log import log as logging

from hpc_nova_scheduler.core.cluster import Host, Resources, RunningVM
from hpc_nova_scheduler.core.cpu_groups import (  # noqa: F401 (the filter's names)
    CPU_GROUP_KEY,
    UNKNOWN_CPU_GROUP,
    cpu_group_from_cpu_info,
)
from hpc_nova_scheduler.db.api import host_key as db_host_key
from hpc_nova_scheduler.topology.levels import DEFAULT_LEVELS, metadata_key

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

RACK_KEY = "hpc:rack"


def _metadata_values(
    host_state: Any, keys: tuple[str, ...], tags: Mapping | None = None
) -> list[str | None]:
    """The host's value of each metadata key (None where it has none).

    One pass over the host's aggregates for all the keys: a request reads
    every candidate host, and a cloud of 10,000 hosts pays for each pass.
    """
    found: dict[str, set[str]] = {}
    if tags is not None:
        by_key = tags.get(host_state.host, {})
        for key in keys:
            if key in by_key:
                found[key] = set(by_key[key])
    else:
        wanted = _wanted(keys)
        for aggregate in getattr(host_state, "aggregates", None) or []:
            # An aggregate carries a key or two: walk its metadata, not the keys.
            for key, value in (getattr(aggregate, "metadata", None) or {}).items():
                if key in wanted and isinstance(value, str):
                    value = value.strip()
                    if value:
                        found.setdefault(key, set()).add(value)
    chosen: list[str | None] = []
    for key in keys:
        values = found.get(key)
        if values is not None and len(values) == 1:
            chosen.extend(values)
        else:
            chosen.append(_one_value(host_state, key, values))
    return chosen


@functools.lru_cache(maxsize=16)
def _wanted(keys: tuple[str, ...]) -> frozenset[str]:
    return frozenset(keys)


def _one_value(host_state: Any, key: str, values: set[str] | None) -> str | None:
    if not values:
        return None
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
    return next(iter(values))


def topology(
    host_state: Any, tags: Mapping | None = None, levels: Sequence[str] = DEFAULT_LEVELS
) -> tuple[str, str]:
    """``(rack, cpu_group)`` from aggregate metadata, else ``cpu_info``.

    ``tags`` is :meth:`AggregateTags.current`, read from Nova's database;
    without it the host state's aggregates (Nova's cache) are read. The
    rack is the innermost of the topology ``levels`` (``hpc:rack`` by default).
    """
    rack, group, _ = place_of(host_state, tags, levels)
    return rack, group


@functools.lru_cache(maxsize=16)
def _keys_of(levels: tuple[str, ...]) -> tuple[str, ...]:
    """The metadata keys :func:`place_of` reads: rack, processor group, outer levels."""
    return (metadata_key(levels[-1]), CPU_GROUP_KEY, *map(metadata_key, levels[:-1]))


def place_of(
    host_state: Any, tags: Mapping | None = None, levels: Sequence[str] = DEFAULT_LEVELS
) -> tuple[str, str, tuple[str, ...]]:
    """``(rack, cpu_group, outer)``: :func:`topology` and the host's values at
    the levels outside the rack, outermost first ("" for none), in one read."""
    rack, group, *outer = _metadata_values(host_state, _keys_of(tuple(levels)), tags)
    if group is None:
        group = cpu_group_from_cpu_info(getattr(host_state, "cpu_info", None))
    return rack or "", group, tuple(value or "" for value in outer)


def _ratio(value: Any) -> float:
    return float(value) if value else 1.0


def _placement_count(total: float, reserved: float, ratio: Any, used: float) -> tuple[float, float]:
    """``(capacity, free)`` of one resource class as Placement counts it."""
    capacity = max(0.0, total - reserved) * _ratio(ratio)
    return capacity, capacity - max(0.0, used)


def reservations() -> tuple[float, float, float]:
    """``reserved_host_cpus``, ``reserved_host_memory_mb``, ``reserved_host_disk_mb``.

    Read once per request: an option lookup costs more than the arithmetic
    of a host, and a request reads thousands of hosts.
    """
    return (
        float(CONF.reserved_host_cpus),
        float(CONF.reserved_host_memory_mb),
        float(CONF.reserved_host_disk_mb),
    )


def resources(
    host_state: Any, reserved: tuple[float, float, float] | None = None
) -> tuple[Resources, Resources]:
    """``(capacity, free)`` of a host, counted as Placement counts them.

    Placement's capacity of a resource class is ``(total - reserved) x
    allocation_ratio`` and its free amount is that capacity less what the
    instances use. Nova's ``HostState`` carries the resource tracker's
    numbers, which fold the host's reservation into the usage (see
    ``ResourceTracker._update_usage_from_instances``: ``vcpus_used``,
    ``memory_mb_used`` and ``local_gb_used`` start from the
    ``reserved_host_*`` options, and ``free_ram_mb = memory_mb -
    memory_mb_used``); the reservation is taken back out of the usage here
    and out of the total instead, as the virt drivers report it to Placement
    (``reserved`` of each inventory, see ``FakeDriver.update_provider_tree``).
    The ``reserved_host_*`` options are read from the scheduler's own
    ``nova.conf``: they must match the computes'.

    * VCPU: ``vcpus_total``, instances use ``vcpus_used - reserved_host_cpus``.
    * MEMORY_MB: ``total_usable_ram_mb``, instances use ``total_usable_ram_mb
      - free_ram_mb - reserved_host_memory_mb``.
    * DISK_GB: ``total_usable_disk_gb``, instances use ``disk_mb_used`` less
      the reservation the resource tracker put there; Placement reserves
      ``reserved_host_disk_mb`` rounded up to whole GB.

    ``free_disk_mb`` is not read: Nova derives it from the driver's
    ``disk_available_least``, which Placement never counts (Nova's fake
    drivers report 0, shared storage reports the pool, a boot-from-volume
    server needs none). The cost: the scheduler lowers ``free_ram_mb`` and
    raises ``vcpus_used`` at once for the VMs it has just placed
    (``HostState.consume_from_request``) but lowers only ``free_disk_mb`` for
    their disk, mixed with ``disk_available_least`` beyond telling apart, so
    their disk counts from the moment their compute reports them (it does
    when it claims them, seconds later). Until then the estimate may offer a
    host more disk than Placement has; Placement then refuses the claim and
    Nova fails the request as a whole, which never splits it.

    Allocation ratios are the compute node's, which are Placement's unless
    an operator changed the inventory in Placement directly and left
    ``[DEFAULT] *_allocation_ratio`` unset; :func:`to_host` never lets such
    a difference refuse a host Placement offers.
    """
    reserved_cpus, reserved_ram_mb, reserved_disk_mb = reserved or reservations()
    vcpus_total = float(host_state.vcpus_total or 0)
    vcpus = _placement_count(
        vcpus_total,
        reserved_cpus,
        host_state.cpu_allocation_ratio,
        (host_state.vcpus_used or 0) - reserved_cpus,
    )
    ram_total = float(host_state.total_usable_ram_mb or 0)
    ram = _placement_count(
        ram_total,
        reserved_ram_mb,
        host_state.ram_allocation_ratio,
        ram_total - (host_state.free_ram_mb or 0) - reserved_ram_mb,
    )
    # ComputeNode.local_gb_used is an integer field: the resource tracker's
    # reservation is truncated to whole GB, Placement's is rounded up.
    tracker_reserved_gb = int(reserved_disk_mb / 1024)
    disk = _placement_count(
        float(host_state.total_usable_disk_gb or 0),
        math.ceil(reserved_disk_mb / 1024),
        host_state.disk_allocation_ratio,
        (host_state.disk_mb_used or 0) / 1024 - tracker_reserved_gb,
    )
    return (
        Resources(vcpus[0], ram[0], disk[0]),
        Resources(vcpus[1], ram[1], disk[1]),
    )


def _flavor_demand(spec_obj: Any) -> Resources:
    """Nova's arithmetic for a flavor without extra specs (swap counts as disk)."""
    flavor = spec_obj.flavor
    disk = (flavor.ephemeral_gb or 0) + math.ceil((flavor.swap or 0) / 1024)
    if not getattr(spec_obj, "is_bfv", False):
        disk += flavor.root_gb or 0
    return Resources(float(flavor.vcpus), float(flavor.memory_mb), float(disk))


def demand(spec_obj: Any) -> Resources:
    """One VM's demand, as Nova asks Placement for it.

    Nova's own ``ResourceRequest.from_request_spec`` builds the request, so
    ``resources:*`` flavor overrides, boot-from-volume (no ``DISK_GB``) and
    swap rounded up to GB count exactly as in ``GET
    /allocation_candidates``. Dedicated CPUs (``PCPU``) count in the vCPU
    dimension with shared ones: the host side has a single vCPU count.
    A spec Nova's code cannot read (a partial one, in tests) falls back to
    the flavor's arithmetic.
    """
    try:
        amounts = scheduler_utils.ResourceRequest.from_request_spec(
            spec_obj, enable_pinning_translate=True
        ).merged_resources()
    except Exception as error:
        # A real RequestSpec Nova itself could not read deserves a word.
        log = LOG.warning if hasattr(spec_obj, "obj_name") else LOG.debug
        log(
            "hpc-nova-scheduler: cannot build Placement's request from this %s (%s); "
            "counting the flavor",
            type(spec_obj).__name__,
            error,
        )
        return _flavor_demand(spec_obj)
    return Resources(
        float(amounts.get(orc.VCPU, 0) + amounts.get(orc.PCPU, 0)),
        float(amounts.get(orc.MEMORY_MB, 0)),
        float(amounts.get(orc.DISK_GB, 0)),
    )


def disk_is_per_host(host_state: Any, vm: Resources) -> bool:
    """Whether the host's own disk limits how many VMs of demand ``vm`` it takes.

    Not when the request asks Placement for no disk (boot from volume,
    ``resources:DISK_GB=0``), when the compute reports no local disk, or when
    the allocation candidate Nova will claim (the first, see
    ``SchedulerManager._schedule``) takes ``DISK_GB`` from a provider other
    than the compute node: shared storage, which Placement counts once for
    all the hosts sharing it.
    """
    if vm.disk_gb <= 0 or not (host_state.total_usable_disk_gb or 0) > 0:
        return False
    candidates = getattr(host_state, "allocation_candidates", None) or []
    if not candidates:
        # No word from Placement (a rebuild, tests): the local disk counts.
        return True
    own = (candidates[0].get("allocations") or {}).get(getattr(host_state, "uuid", None)) or {}
    return orc.DISK_GB in (own.get("resources") or {})


def _as_placement_answers(
    host_state: Any, capacity: Resources, free: Resources, vm: Resources
) -> tuple[Resources, Resources]:
    """``capacity`` and ``free`` adjusted to what Placement said of this host."""
    free_values = list(free.as_tuple())
    if getattr(host_state, "allocation_candidates", None):
        # Placement found room for one VM here: the estimate only decides
        # how many more fit, never that none does.
        free_values = [
            max(f, d) if d > 0 else f for f, d in zip(free_values, vm.as_tuple(), strict=True)
        ]
    if vm.disk_gb > 0 and not disk_is_per_host(host_state, vm):
        # Enough disk for as many VMs as the other dimensions allow, so
        # that disk never decides here.
        others = Resources(vm.vcpus, vm.ram_mb, 0.0).copies_that_fit(Resources(*free_values))
        free_values[2] = vm.disk_gb * max(others, 1)
    free = Resources(*free_values)
    capacity = Resources(
        *(max(c, f) for c, f in zip(capacity.as_tuple(), free.as_tuple(), strict=True))
    )
    return capacity, free


def host_key(host_state: Any) -> str:
    """A unique name for a host state: the host, with the node if it differs."""
    return db_host_key(host_state.host, getattr(host_state, "nodename", None))


def listed_node(host_state: Any, instance_uuid: str) -> str | None:
    """The node the host state's copy of an instance names, if it names one.

    Nova reads a host state's instances by host (``HostManager.
    _get_instance_info``), so each node of a compute service that manages
    several (Ironic's) lists every instance of the service. The computes
    send whole instances, node included; instances Nova reads back by uuid
    (after a restart) name none.
    """
    listed = (getattr(host_state, "instances", None) or {}).get(instance_uuid)
    is_set = getattr(listed, "obj_attr_is_set", None)
    if is_set is None or not is_set("node"):
        return None
    return listed.node or None


def node_of(
    host_state: Any, instance_uuid: str, recorded: tuple[str | None, str | None]
) -> str | None:
    """The node an instance that ``host_state`` lists runs on.

    The node :func:`listed_node` names, else the one ``recorded`` (a
    record's or Nova's cell database's ``(host, node)``) names on the same
    host, else the host state's own (a host with one node).
    """
    listed = listed_node(host_state, instance_uuid)
    if listed is not None:
        return listed
    host, node = recorded
    if host == host_state.host and node:
        return node
    return getattr(host_state, "nodename", None)


def key_of(host_state: Any, instance_uuid: str, recorded: tuple[str | None, str | None]) -> str:
    """The host key of the node an instance that ``host_state`` lists runs on (:func:`node_of`)."""
    return db_host_key(host_state.host, node_of(host_state, instance_uuid, recorded))


def to_host(
    host_state: Any,
    vms: Iterable[RunningVM],
    demand: Resources | None = None,
    reserved: tuple[float, float, float] | None = None,
    tags: Mapping | None = None,
    levels: Sequence[str] = DEFAULT_LEVELS,
    taken_cores: float = 0.0,
) -> Host:
    """The core's view of a host; with the request's ``demand``, as Placement answered.

    Placement's answer is authoritative: a host with allocation candidates
    for this request has room for one of its VMs, whatever Nova's host
    state says, and a disk Placement does not count per host (see
    :func:`disk_is_per_host`) never limits the count. ``reserved`` is
    :func:`reservations`, read once for all hosts. ``taken_cores``: cores
    that concurrent plans hold here and neither Nova's host state nor the
    Placement answer (read when the request started) counts yet.
    """
    capacity, free = resources(host_state, reserved)
    if demand is not None:
        capacity, free = _as_placement_answers(host_state, capacity, free, demand)
    if taken_cores > 0:
        vcpus, ram_mb, disk_gb = free.as_tuple()
        free = Resources(max(0.0, vcpus - taken_cores), ram_mb, disk_gb)
    rack, group, outer = place_of(host_state, tags, levels)
    return Host(
        name=host_key(host_state),
        capacity=capacity,
        free=free,
        rack=rack,
        cpu_group=group,
        vms=tuple(vms),
        outer=outer,
    )
