"""Batch planners by name, through a stevedore namespace.

Other packages add planners by registering a class derived from
:class:`~hpc_nova_scheduler.planners.base.Planner` in the
``hpc_nova_scheduler.planners`` entry-point namespace.
"""

from __future__ import annotations

from typing import Any

from hpc_nova_scheduler.planners.base import Planner
from hpc_nova_scheduler.plugins import Registry

NAMESPACE = "hpc_nova_scheduler.planners"


class UnknownPlanner(Exception):
    pass


PLANNERS: Registry[Planner] = Registry(NAMESPACE, Planner, "planner", UnknownPlanner)


def names() -> list[str]:
    """The registered planners, sorted."""
    return PLANNERS.names()


def load(name: str, **params: Any) -> Planner:
    """The planner called ``name``, built with ``params``."""
    return PLANNERS.load(name, **params)
