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

This module decides; ``agent/idle_traits.py`` reads Nova and Placement and
writes. Nothing here imports Nova.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from hpc_nova_scheduler.core.profile import SPEC_APP_CLASS, AppClass, ProfileError

#: The trait the agent keeps on idle compute-node providers.
IDLE_TRAIT = "CUSTOM_HPC_IDLE"
#: The flavor extra spec that makes Placement offer idle hosts only.
IDLE_SPEC = f"trait:{IDLE_TRAIT}"
REQUIRED = "required"
FORBIDDEN = "forbidden"
#: Nova's trait extra specs, with or without a granular group suffix.
_TRAIT_SPEC = re.compile(r"trait([a-zA-Z0-9_-]{1,64})?:(.+)")


def idle_spec_keys(extra_specs: Mapping[str, Any]) -> list[str]:
    """The keys of ``extra_specs`` that require :data:`IDLE_TRAIT`, granular groups too."""
    keys = []
    for name, value in extra_specs.items():
        match = _TRAIT_SPEC.fullmatch(name)
        if match and match.group(2) == IDLE_TRAIT and str(value).strip().lower() == REQUIRED:
            keys.append(name)
    return sorted(keys)


def check_idle_spec(extra_specs: Mapping[str, Any]) -> None:
    """Raise :class:`ProfileError` if a flavor that is not ExtremeHPC requires idle hosts.

    Idle hosts are what ExtremeHPC cannot do without; any other class
    placed on them would take them from it, and would be refused once none
    is idle although busy hosts have room. ``hpc:app_class`` must itself be
    valid (it is parsed here).
    """
    keys = idle_spec_keys(extra_specs)
    if not keys:
        return
    value = extra_specs.get(SPEC_APP_CLASS)
    app_class = AppClass.parse(value) if value is not None else AppClass.NON_HPC
    if app_class is not AppClass.EXTREME_HPC:
        raise ProfileError(
            keys[0],
            f"only an ExtremeHPC flavor may require {IDLE_TRAIT} "
            f"({SPEC_APP_CLASS} is {app_class.value}); it narrows Placement's "
            "candidates to hosts that hold no instance",
        )


@dataclasses.dataclass(frozen=True)
class NodeUse:
    """One compute node as Nova's cell database records it."""

    #: The compute node's UUID, which is its resource provider's.
    uuid: str
    running_vms: int
    vcpus_used: int

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


def changes(nodes: Iterable[NodeUse], tagged: Iterable[str], *, complete: bool) -> Changes:
    """The providers whose :data:`IDLE_TRAIT` must change for it to mark idle nodes exactly.

    ``nodes`` are the compute nodes of the cells that answered; ``tagged``
    the providers that carry the trait now, per Placement. ``complete``
    says every cell answered: only then is a tagged provider that is no
    compute node of theirs known to be no idle node (it may belong to the
    cell that did not answer, and stays as it is).
    """
    tagged = frozenset(tagged)
    idle: set[str] = set()
    busy: set[str] = set()
    for node in nodes:
        (idle if node.idle else busy).add(node.uuid)
    # A node listed twice (a cell read twice) is busy if any record says so.
    idle -= busy
    remove = tagged & busy
    if complete:
        remove |= tagged - idle
    return Changes(add=frozenset(idle - tagged), remove=frozenset(remove))


def placement_idle(usages: Mapping[str, Any]) -> bool:
    """Whether Placement's usages of a provider show nothing allocated there."""
    return all(not amount for amount in usages.values())
