"""What Algorithm 1 needs of the topology: levels, a request's constraints, a domain order.

Seed 003 knows one level, the rack, and orders racks by room. The topology
system (``topology/``) adds levels above it, the tenant's constraints and
BestFit over nested domains. Algorithm 1 (:mod:`.algorithm`) plans with
them without importing that system: it reads the names and the request's
constraints defined here, and orders domains through a :class:`DomainOrder`,
found by the entry point ``hpc_nova_scheduler.domain_orders`` (``bestfit``,
the topology system's :class:`~hpc_nova_scheduler.topology.arrangement.BestFit`).
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Sequence

import numpy as np

from hpc_nova_scheduler import plugins
from hpc_nova_scheduler.core.profile import TOPOLOGY_SPECS, ProfileError

#: The innermost level, always present: every host is a domain of its own.
HOST_LEVEL = "host"
#: Seed 003's single level; clouds that name none keep exactly its behaviour.
DEFAULT_LEVELS: tuple[str, ...] = ("rack",)

SPECS = TOPOLOGY_SPECS
SPEC_REQUIRED, SPEC_PREFERRED, SPEC_SEGMENT, SPEC_SEGMENT_LEVEL = SPECS

#: Rooms are whole numbers of VMs or segments held as floats; a fit is a
#: comparison with this slack so that a sum of weights never misses by a hair.
SLACK = 1e-9

#: Per level, the codes of the domains the application holds (or None).
Held = Sequence[np.ndarray | None] | None


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


def domain_rooms(
    codes: np.ndarray,
    room: np.ndarray,
    own: np.ndarray,
    idx: np.ndarray,
    held: np.ndarray | None = None,
):
    """(domains, room of each, whether each holds the application) over ``idx``.

    ``held``: codes of this level's domains the application holds VMs in,
    also where none of its hosts is among ``idx`` (a full host is no
    candidate, but its rack still holds the application).
    """
    # Codes are small dense integers: counting beats sorting at 10,000 hosts.
    found = codes[idx]
    size = int(found.max()) + 1 if found.size else 0
    domains = np.flatnonzero(np.bincount(found, minlength=size))
    rooms = np.bincount(found, weights=room[idx], minlength=size)[domains]
    owned = np.bincount(found, weights=own[idx], minlength=size)[domains] > 0
    if held is not None and len(held):
        owned |= np.isin(domains, held)
    return domains, rooms, owned


class DomainOrder(abc.ABC):
    """The order in which a request fills nested domains (hosts by position).

    ``codes`` holds one row per level, outermost first, of every position's
    domain code; ``room`` and ``own`` are per position: how many VMs each
    host can take, and whether it holds the application already.
    """

    @abc.abstractmethod
    def arrange(
        self,
        codes: np.ndarray,
        room: np.ndarray,
        own: np.ndarray,
        idx: np.ndarray,
        need: float,
        fit_items: bool = False,
        held: Held = None,
    ) -> np.ndarray:
        """``idx`` in the order that fills the fewest, tightest domains with ``need``."""

    @abc.abstractmethod
    def tightest_first(
        self,
        codes: np.ndarray,
        room: np.ndarray,
        own: np.ndarray,
        idx: np.ndarray,
        level: int,
        need: float,
        held: Held = None,
    ) -> list[int]:
        """The domains of ``level`` under ``idx`` that can hold ``need``, best first."""


#: The entry-point namespace of domain orders, and the one Algorithm 1 uses.
NAMESPACE = "hpc_nova_scheduler.domain_orders"
ORDER = "bestfit"


@functools.cache
def domain_order(name: str = ORDER) -> DomainOrder:
    """The domain order registered as ``name`` (loaded once per process)."""
    return plugins.Registry(NAMESPACE, DomainOrder, "domain order").load(name)
