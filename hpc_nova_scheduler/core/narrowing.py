"""Narrowing Placement's sample: the ``CUSTOM_HPC_IDLE`` trait and who carries it.

nova-scheduler asks Placement for at most ``[scheduler]
max_placement_results`` allocation candidates (1000 by default), and
Placement keeps that many of all the providers with room for one VM of the
flavor. Once those hold VMs of others, an ExtremeHPC request, which needs a
host to its application alone, sees no empty host although thousands may
exist beyond the sample. ``hpc-scheduler-agent`` therefore keeps the trait
:data:`IDLE_TRAIT` on exactly the compute-node providers that hold no
instance, and an ExtremeHPC flavor requires it (the flavor extra spec
``trait:CUSTOM_HPC_IDLE=required``): Placement's sample then holds idle
hosts only.

SyncHPC needs the other thing a sample hides: whole racks. Placement's
"first" candidates come from a set in hash order, a pseudo-random sample of
the hosts with room, so a rack shows only some of its hosts; in a
fragmented cloud no rack may show room for a request that one rack holds.
With :data:`ROOMY_TRAIT` the agent marks every host of the roomiest racks,
as many whole racks as fit in ``max_placement_results`` hosts, and a
SyncHPC flavor that requires it is offered those racks whole.

This module decides; ``agent/idle_traits.py`` reads Nova and Placement and
writes. Nothing here imports Nova.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hpc_nova_scheduler.core.profile import SPEC_APP_CLASS, AppClass, ProfileError

#: The trait the agent keeps on idle compute-node providers.
IDLE_TRAIT = "CUSTOM_HPC_IDLE"
#: The flavor extra spec that makes Placement offer idle hosts only.
IDLE_SPEC = f"trait:{IDLE_TRAIT}"
#: The trait the agent keeps on every host of the roomiest racks.
ROOMY_TRAIT = "CUSTOM_HPC_ROOMY_RACK"
ROOMY_SPEC = f"trait:{ROOMY_TRAIT}"
#: Each narrowing trait and the one class that may require it.
TRAIT_CLASSES = {IDLE_TRAIT: AppClass.EXTREME_HPC, ROOMY_TRAIT: AppClass.SYNC_HPC}
REQUIRED = "required"
FORBIDDEN = "forbidden"
#: Nova's trait extra specs, with or without a granular group suffix.
_TRAIT_SPEC = re.compile(r"trait([a-zA-Z0-9_-]{1,64})?:(.+)")


def required_keys(extra_specs: Mapping[str, Any], trait: str) -> list[str]:
    """The keys of ``extra_specs`` that require ``trait``, granular groups too."""
    keys = []
    for name, value in extra_specs.items():
        match = _TRAIT_SPEC.fullmatch(name)
        if match and match.group(2) == trait and str(value).strip().lower() == REQUIRED:
            keys.append(name)
    return sorted(keys)


def check_narrowing_specs(extra_specs: Mapping[str, Any]) -> None:
    """Raise :class:`ProfileError` if a flavor requires a narrowing trait not meant for its class.

    Idle hosts are what ExtremeHPC cannot do without; any other class
    placed on them would take them from it, and would be refused once none
    is idle although busy hosts have room. The roomiest racks are for
    SyncHPC's single-rack requests; ExtremeHPC confined to them would be
    refused while idle hosts exist elsewhere. ``hpc:app_class`` must itself
    be valid (it is parsed here).
    """
    for trait, allowed in TRAIT_CLASSES.items():
        keys = required_keys(extra_specs, trait)
        if not keys:
            continue
        value = extra_specs.get(SPEC_APP_CLASS)
        app_class = AppClass.parse(value) if value is not None else AppClass.NON_HPC
        if app_class is not allowed:
            raise ProfileError(
                keys[0],
                f"only {allowed.value} flavors may require {trait} "
                f"({SPEC_APP_CLASS} is {app_class.value}); it narrows Placement's candidates",
            )


@dataclasses.dataclass(frozen=True)
class NodeUse:
    """One compute node as Nova's cell database records it."""

    #: The compute node's UUID, which is its resource provider's.
    uuid: str
    running_vms: int
    vcpus_used: int
    #: ``host`` or ``host/node`` (several nodes behind one compute service).
    key: str = ""
    vcpus: int = 0
    cpu_allocation_ratio: float = 1.0

    @property
    def free_vcpus(self) -> int:
        return max(0, int(self.vcpus * self.cpu_allocation_ratio) - self.vcpus_used)

    @property
    def idle(self) -> bool:
        # Both counters: running_vms counts the instances on the node,
        # vcpus_used also the claims of migrations coming in.
        return self.running_vms == 0 and self.vcpus_used == 0


@dataclasses.dataclass(frozen=True)
class Changes:
    """What a run of the keeper writes: providers to tag, providers to untag."""

    add: frozenset[str]
    remove: frozenset[str]

    def __bool__(self) -> bool:
        return bool(self.add or self.remove)


def diff(
    wanted: Iterable[str], known: Iterable[str], tagged: Iterable[str], *, complete: bool
) -> Changes:
    """What to write so that exactly ``wanted`` carries a trait that ``tagged`` carry now.

    ``known`` are the providers whose state was read (``wanted`` among
    them); a tagged provider outside them is untagged only when the read
    was ``complete``.
    """
    wanted, known, tagged = frozenset(wanted), frozenset(known), frozenset(tagged)
    remove = (tagged & known) - wanted
    if complete:
        remove |= tagged - wanted
    return Changes(add=wanted - tagged, remove=remove)


def changes(nodes: Iterable[NodeUse], tagged: Iterable[str], *, complete: bool) -> Changes:
    """The providers whose :data:`IDLE_TRAIT` must change for it to mark idle nodes exactly.

    ``nodes`` are the compute nodes of the cells that answered; ``tagged``
    the providers that carry the trait now, per Placement. ``complete``
    says every cell answered: only then is a tagged provider that is no
    compute node of theirs known to be no idle node (it may belong to the
    cell that did not answer, and stays as it is).
    """
    idle: set[str] = set()
    busy: set[str] = set()
    for node in nodes:
        (idle if node.idle else busy).add(node.uuid)
    # A node listed twice (a cell read twice) is busy if any record says so.
    idle -= busy
    return diff(idle, idle | busy, tagged, complete=complete)


def roomiest(
    nodes: Iterable[NodeUse],
    rack_of: Callable[[str], str],
    budget: int,
    *,
    held: Iterable[str] = (),
    tagged: Iterable[str] = (),
) -> frozenset[str]:
    """The providers of the roomiest whole racks, as many racks as fit in ``budget`` hosts.

    A rack's room is the free vCPUs of its hosts, less those of hosts
    another application holds as ExtremeHPC (``held``, host keys): no
    SyncHPC VM goes there. Racks are taken roomiest first; one whose hosts
    would exceed the budget is passed over for smaller ones after it. On
    equal room a rack already ``tagged`` comes first, so that a run moves
    no rack for nothing. Racks without room are never taken.
    """
    held, tagged = frozenset(held), frozenset(tagged)
    members: dict[str, list[str]] = {}
    room: dict[str, int] = {}
    kept: dict[str, bool] = {}
    for node in nodes:
        rack = rack_of(node.key)
        members.setdefault(rack, []).append(node.uuid)
        free = 0 if node.key in held else node.free_vcpus
        room[rack] = room.get(rack, 0) + free
        kept[rack] = kept.get(rack, False) or node.uuid in tagged
    chosen: list[str] = []
    for rack in sorted(members, key=lambda r: (-room[r], not kept[r], r)):
        if room[rack] <= 0:
            break
        if len(chosen) + len(members[rack]) <= budget:
            chosen.extend(members[rack])
    return frozenset(chosen)


def placement_idle(usages: Mapping[str, Any]) -> bool:
    """Whether Placement's usages of a provider show nothing allocated there."""
    return all(not amount for amount in usages.values())
