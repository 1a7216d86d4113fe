"""What core asks of a fair-share system: platforms, claimants, entitlements, node templates.

A cloud of several platforms (groups of identical nodes) is shared among
claimants (users, for Nova projects), each running a many-task
application: a queue of one-core tasks that pilots keep fetching. A fair-
share system decides in two levels:

* a :class:`FirstLevel` policy decides how many cores of each platform
  each claimant gets (its entitlement, an :data:`Allocation`);
* a :class:`SecondLevel` policy decides, platform by platform, which
  claimants share a node: a list of :class:`NodeTemplate`.

The simulator (``sim/``-style drivers inside a system) and nova-scheduler
call the same policies through this protocol and the entry-point
namespaces :data:`FIRST_LEVEL_NAMESPACE` and :data:`SECOND_LEVEL_NAMESPACE`.
Core defines the values and the contract; systems (``fairshare/``)
implement them.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping, Sequence
from typing import Protocol

FIRST_LEVEL_NAMESPACE = "hpc_nova_scheduler.fairshare.first_level"
SECOND_LEVEL_NAMESPACE = "hpc_nova_scheduler.fairshare.second_level"

#: claimant -> platform -> cores
Allocation = dict[str, dict[str, int]]
#: claimant -> platform -> value (affinity, or seconds)
ClaimantTable = Mapping[str, Mapping[str, float]]


class SharingError(ValueError):
    """A sharing problem that cannot be posed: bad units, weights or platforms."""


@dataclasses.dataclass(frozen=True)
class Platform:
    """A group of identical nodes."""

    name: str
    nodes: int
    cores_per_node: int

    def __post_init__(self) -> None:
        if self.nodes < 0:
            raise SharingError(f"platform {self.name}: nodes must be >= 0, not {self.nodes}")
        if self.cores_per_node < 1:
            raise SharingError(
                f"platform {self.name}: cores per node must be >= 1, not {self.cores_per_node}"
            )

    @property
    def cores(self) -> int:
        return self.nodes * self.cores_per_node


@dataclasses.dataclass(frozen=True)
class Claimant:
    """A user (a Nova project) and the many-task application it runs."""

    name: str
    application: str
    #: One-core tasks still waiting for a core: more cores than this are useless.
    demand: int
    #: Its share weight (Slurm's fairshare, Kueue's weight); the paper's users weigh 1.
    weight: float = 1.0
    #: Its decayed past usage, in the units its policy charges (0: no history).
    usage: float = 0.0

    def __post_init__(self) -> None:
        if self.demand < 0:
            raise SharingError(f"{self.name}: demand must be >= 0, not {self.demand}")
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise SharingError(f"{self.name}: weight must be > 0, not {self.weight}")
        if not (math.isfinite(self.usage) and self.usage >= 0):
            raise SharingError(f"{self.name}: usage must be >= 0, not {self.usage}")


@dataclasses.dataclass(frozen=True)
class ShareRequest:
    """One invocation of the first level.

    ``affinity`` is the platform affinity of each claimant with demand
    (the metric chosen by the operator, already computed over the claimants
    that still have tasks, as seed 002's line 6 does); ``solo`` each
    claimant's solo task run time per platform, for policies that weigh
    cores by speed. Both may lack a platform: neutral affinity then.
    """

    claimants: tuple[Claimant, ...]
    platforms: tuple[Platform, ...]
    affinity: ClaimantTable
    solo: ClaimantTable
    #: Last invocation's allocation: PAF keeps a user on its platforms.
    previous: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for kind, names in (
            ("claimant", [c.name for c in self.claimants]),
            ("platform", [p.name for p in self.platforms]),
        ):
            if len(set(names)) != len(names):
                raise SharingError(f"a {kind} is named twice: {', '.join(sorted(names))}")


class FirstLevel(Protocol):
    """Cores of each platform per claimant."""

    #: What past usage is charged in: "best-equivalent" core-seconds (a
    #: core-second scaled by the claimant's speed there against its fastest
    #: platform) or plain "core-seconds" (what production schedulers charge).
    usage_charge: str

    def allocate(self, request: ShareRequest) -> Allocation:
        """Every claimant's cores per platform: none twice, none beyond its demand."""


@dataclasses.dataclass(frozen=True)
class NodeTemplate:
    """``nodes`` nodes of a platform, each running the same claimants on the same cores.

    ``slots`` pairs each claimant with its cores on one node. The policies'
    combinations split a node equally (AllCore, TwoApp, FourApp); the last
    leftovers of a platform may split one unequally (seed 002, Alg. 3 lines
    12-15).
    """

    platform: str
    slots: tuple[tuple[str, int], ...]
    nodes: int

    @property
    def claimants(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.slots)

    @property
    def cores(self) -> int:
        """Cores used on each of its nodes."""
        return sum(cores for _, cores in self.slots)


class CombinationTimes(Protocol):
    """A task's run time on a platform beside a set of co-running applications."""

    def solo_runtime(self, application: str, platform: str) -> float | None:
        """Seconds for one task of ``application`` alone on a node of ``platform`` (None:
        never measured)."""

    def runtime(self, application: str, platform: str, applications: frozenset[str]) -> float:
        """Seconds for one task of ``application`` on a node shared by ``applications``."""

    def combinations(self, platform: Platform, applications: Sequence[str]) -> list[frozenset[str]]:
        """The legal co-runner sets of ``applications`` on a node of ``platform``."""


class SecondLevel(Protocol):
    """Which claimants share a node, on one platform."""

    def map(
        self,
        platform: Platform,
        shares: Mapping[str, int],
        applications: Mapping[str, str],
        times: CombinationTimes,
        rng: random.Random,
    ) -> list[NodeTemplate]:
        """Node templates covering ``shares`` (claimant -> cores on ``platform``).

        Each claimant's cores over the templates add up to its share, and
        the templates' nodes to at most the platform's.
        """
