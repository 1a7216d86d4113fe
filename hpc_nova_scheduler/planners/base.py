"""A batch of applications to place at once, and what a batch planner returns.

Seeds 004, 001 and 000 plan a whole batch together, which a scheduler that
sees one request at a time cannot do. Here, as in seed 004, the unit
placed is one application: all its VMs go to one host, and its demand is
given as a fraction of one host's CPU and memory (the hosts are identical).
Nothing here knows about Nova.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference.base import InterferenceModel, Tenant

#: Room for rounding when loads are summed.
SLACK = 1e-9
#: The options every planner is built with, as keywords (``--alpha``,
#: ``--multistart``, ``--seed``, ``--time-limit`` and ``--runtime-model`` of
#: ``plan`` and ``rebalance``): a planner uses those it knows and passes the others on
#: to :class:`Planner`, so that a command never names the planner it builds.
OPTIONS = frozenset({"alpha", "multistart", "seed", "time_limit", "runtime_model"})


@dataclasses.dataclass(frozen=True)
class BatchApp:
    """One application of a batch: its profile and its demand, as a fraction
    of one host's CPU and memory."""

    profile: ProfileRecord
    cpu: float
    mem: float

    def __post_init__(self) -> None:
        for name, value in (("cpu", self.cpu), ("mem", self.mem)):
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{self.profile.name}: {name} demand must be a number >= 0")

    @property
    def name(self) -> str:
        return self.profile.name


@dataclasses.dataclass(frozen=True)
class Batch:
    """Applications to place on up to ``hosts`` identical empty hosts."""

    apps: tuple[BatchApp, ...]
    hosts: int

    def __post_init__(self) -> None:
        if self.hosts < 1:
            raise ValueError("a batch needs at least one host to be placed on")


@dataclasses.dataclass(frozen=True)
class Placement:
    """Which host (0, 1, ...) each application of the batch goes to."""

    host_of: tuple[int, ...]

    def groups(self) -> dict[int, list[int]]:
        """Applications by host, hosts in increasing order."""
        found: dict[int, list[int]] = {}
        for app, host in enumerate(self.host_of):
            found.setdefault(host, []).append(app)
        return dict(sorted(found.items()))

    @property
    def hosts_used(self) -> int:
        return len(set(self.host_of))

    def overload(self, batch: Batch) -> float:
        """CPU and memory beyond the hosts' capacity, as a share of the cloud's."""
        extra = 0.0
        for apps in self.groups().values():
            cpu = math.fsum(batch.apps[a].cpu for a in apps)
            mem = math.fsum(batch.apps[a].mem for a in apps)
            # Twice the planners' slack: sums in another order differ in the last bit.
            extra += sum(load - 1.0 for load in (cpu, mem) if load - 1.0 > 2 * SLACK)
        return extra / batch.hosts

    def feasible(self, batch: Batch) -> bool:
        return self.overload(batch) == 0.0 and all(0 <= h < batch.hosts for h in self.host_of)


def host_level(model: InterferenceModel, apps: Sequence[BatchApp]) -> float:
    """The model's interference score of a host holding ``apps``, one VM group each."""
    return model.predict([Tenant.of(app.profile) for app in apps]).score


def check_alpha(alpha: float) -> float:
    """Seed 004's weight of interference against hosts, which ILS, the MILP
    and the rebalancer's valuing of moves share; ValueError outside [0, 1]."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha weighs interference against hosts: from 0 to 1")
    return alpha


def omega(batch: Batch, model: InterferenceModel) -> float:
    """The level of a full host: n copies of the batch's most aggressive application.

    Seed 004's weight of interference against hosts in its objective f,
    shared by ILS and by the rebalancer, which values moves as ILS values
    placements.

    n is the model's most applications on a host (12 on the thesis's
    testbed, where a host ran up to twelve one-VM applications). Counting
    only the copies that would fit the batch's demands instead makes omega
    small, and then the interference term outweighs a host: ILS opened
    extra hosts in half the cases, where seed 004 never uses more hosts
    than the best heuristic.
    """
    copies = getattr(model, "max_apps", 12)
    most = max((host_level(model, [app] * copies) for app in batch.apps), default=0.0)
    return most if most > 0 else 1.0


class Planner(abc.ABC):
    """Places a whole batch at once."""

    #: The name ``plan --planner`` selects it by.
    name: ClassVar[str]
    summary: ClassVar[str] = ""

    def __init__(self, **options: Any) -> None:
        """Take the shared :data:`OPTIONS` a planner has no use for; refuse any other."""
        unknown = sorted(set(options) - OPTIONS)
        if unknown:
            raise TypeError(f"planner {self.name} has no option {', '.join(unknown)}")

    @abc.abstractmethod
    def place(self, batch: Batch) -> Placement:
        """A placement of every application of the batch."""
