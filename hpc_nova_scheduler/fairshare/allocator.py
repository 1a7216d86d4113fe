"""Both levels in one call: the allocator the simulator and nova-scheduler share.

:class:`TwoLevel` builds a first-level and a second-level policy by name
(entry points :data:`~hpc_nova_scheduler.core.sharing.FIRST_LEVEL_NAMESPACE`
and ``SECOND_LEVEL_NAMESPACE``), computes the platform affinity of the
claimants that still have tasks (seed 002's line 6: RPA depends on who is
left), and returns a :class:`Plan`: cores per claimant and platform, and
each platform's node templates.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
from collections.abc import Mapping, Sequence

from hpc_nova_scheduler import plugins
from hpc_nova_scheduler.core.sharing import (
    FIRST_LEVEL_NAMESPACE,
    SECOND_LEVEL_NAMESPACE,
    Allocation,
    Claimant,
    NodeTemplate,
    Platform,
    ShareRequest,
    SharingError,
)
from hpc_nova_scheduler.fairshare import affinity as metrics
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.first_level import (
    FirstLevelPolicy,
    check_allocation,
    check_percent,
    check_unit,
)
from hpc_nova_scheduler.fairshare.second_level import TaskMapping
from hpc_nova_scheduler.fairshare.usage import charge, decay  # noqa: F401 (the drivers' API)

PLATFORM_METRICS = ("throughput", "epa", "rpa")
CORUNNER_METRICS = ("raw", "normalised")

FIRST_LEVEL = plugins.Registry(
    FIRST_LEVEL_NAMESPACE, FirstLevelPolicy, "first-level policy", SharingError
)
SECOND_LEVEL = plugins.Registry(
    SECOND_LEVEL_NAMESPACE, TaskMapping, "second-level policy", SharingError
)


@dataclasses.dataclass(frozen=True)
class Plan:
    """One invocation's entitlements and node templates."""

    allocation: Allocation
    #: platform -> its node templates
    templates: dict[str, list[NodeTemplate]]


def platform_affinity(
    metric: str,
    claimants: Sequence[Claimant],
    platforms: Sequence[Platform],
    times: CombinationTable,
) -> dict[str, dict[str, float]]:
    """Each claimant's affinity to each platform, over the applications of ``claimants``.

    Throughput of a pair never measured is the application's mean over its
    measured platforms (neither for nor against); EPA and RPA are neutral (1.0).
    """
    if metric not in PLATFORM_METRICS:
        raise SharingError(
            f"unknown platform affinity {metric!r}; known: {', '.join(PLATFORM_METRICS)}"
        )
    applications = list(dict.fromkeys(c.application for c in claimants))
    names = [p.name for p in platforms]
    solo = {
        (app, platform): seconds
        for app in applications
        for platform in names
        if (seconds := times.solo_runtime(app, platform)) is not None
    }
    if metric == "epa":
        table = metrics.egocentric(solo, applications, names)
    elif metric == "rpa":
        table = metrics.reciprocal(solo, applications, names)
    else:
        table = {}
        for app in applications:
            rates = {
                p: metrics.SECONDS_PER_HOUR / solo[(app, p)] for p in names if (app, p) in solo
            }
            fill = sum(rates.values()) / len(rates) if rates else metrics.NEUTRAL
            table[app] = {p: rates.get(p, fill) for p in names}
    return {c.name: dict(table[c.application]) for c in claimants}


class TwoLevel:
    """A first-level and a second-level policy, run together."""

    def __init__(
        self,
        first: str = "pa-rr",
        second: str = "maf",
        metric: str = "rpa",
        corunner: str = "normalised",
        top_percent: int = 50,
        core_unit: int = 1,
        node_unit: int = 1,
        seed: int = 0,
    ) -> None:
        if metric not in PLATFORM_METRICS:
            raise SharingError(
                f"unknown platform affinity {metric!r}; known: {', '.join(PLATFORM_METRICS)}"
            )
        if corunner not in CORUNNER_METRICS:
            raise SharingError(
                f"unknown co-runner affinity {corunner!r}; known: {', '.join(CORUNNER_METRICS)}"
            )
        check_percent(top_percent)
        check_unit("core_unit (D_unit)", core_unit)
        check_unit("node_unit (P_unit)", node_unit)
        self.names = (first, second)
        self.metric = metric
        self.first = FIRST_LEVEL.load(first, top_percent=top_percent, core_unit=core_unit)
        self.second = _second_level(second, corunner_metric=corunner, node_unit=node_unit)
        self.usage_charge: str = self.first.usage_charge
        self._rng = random.Random(seed)

    def plan(
        self,
        claimants: Sequence[Claimant],
        platforms: Sequence[Platform],
        times: CombinationTable,
        previous: Plan | Mapping[str, Mapping[str, int]] | None = None,
    ) -> Plan:
        """Both levels for ``claimants`` on ``platforms``: entitlements, then node templates.

        ``previous`` is the last invocation's plan (or its allocation): PAF
        keeps a user on the platforms it had.
        """
        if isinstance(previous, Plan):
            previous = previous.allocation
        active = [c for c in claimants if c.demand > 0]
        request = ShareRequest(
            claimants=tuple(claimants),
            platforms=tuple(platforms),
            affinity=platform_affinity(self.metric, active, platforms, times) if active else {},
            solo={
                c.name: {
                    p.name: s
                    for p in platforms
                    if (s := times.solo_runtime(c.application, p.name)) is not None
                }
                for c in claimants
            },
            previous=dict(previous or {}),
        )
        allocation = self.first.allocate(request)
        check_allocation(request, allocation)
        applications = {c.name: c.application for c in claimants}
        templates = {}
        for platform in platforms:
            shares = {
                name: cores[platform.name]
                for name, cores in allocation.items()
                if cores.get(platform.name, 0) > 0
            }
            templates[platform.name] = (
                self.second.map(platform, shares, applications, times, self._rng) if shares else []
            )
        return Plan(allocation=allocation, templates=templates)


def _second_level(name: str, **options):
    """The second-level policy ``name``, given the options its constructor takes."""
    cls = SECOND_LEVEL.plugin(name)
    accepted = inspect.signature(cls).parameters
    return cls(**{key: value for key, value in options.items() if key in accepted})


def first_level_names() -> list[str]:
    return FIRST_LEVEL.names()


def second_level_names() -> list[str]:
    return SECOND_LEVEL.names()
