"""Batch planners by name, through a stevedore namespace.

Other packages add planners by registering a class derived from
:class:`~hpc_nova_scheduler.planners.base.Planner` in the
``hpc_nova_scheduler.planners`` entry-point namespace.
"""

from __future__ import annotations

from typing import Any

from stevedore import driver, extension

from hpc_nova_scheduler.planners.base import Planner

NAMESPACE = "hpc_nova_scheduler.planners"


class UnknownPlanner(Exception):
    pass


def names() -> list[str]:
    """The registered planners, sorted."""
    return sorted(extension.ExtensionManager(NAMESPACE).names())


def load(name: str, **params: Any) -> Planner:
    """The planner called ``name``, built with ``params``."""
    known = names()
    if name not in known:
        raise UnknownPlanner(f"unknown planner {name!r}; known: {', '.join(known)}")
    planner = driver.DriverManager(NAMESPACE, name, invoke_on_load=False).driver(**params)
    if not isinstance(planner, Planner):
        raise UnknownPlanner(f"{name!r} in {NAMESPACE} is not a Planner")
    return planner
