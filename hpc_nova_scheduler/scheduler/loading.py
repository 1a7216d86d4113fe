"""Discovery of the plugin's scheduler classes through stevedore."""

from __future__ import annotations

from oslo_log import log as logging

from hpc_nova_scheduler.plugins import Registry

LOG = logging.getLogger(__name__)

FILTERS_NAMESPACE = "hpc_nova_scheduler.filters"
WEIGHERS_NAMESPACE = "hpc_nova_scheduler.weighers"


def load_classes(namespace: str, base: type) -> list[type]:
    """Every class registered under ``namespace`` that subclasses ``base``.

    A plugin that fails to import, or is not a ``base``, is logged and left
    out rather than taking nova-scheduler down with it.
    """
    registry = Registry(namespace, base, base.__name__)
    return registry.classes(lambda problem: LOG.error("hpc-nova-scheduler: %s", problem))
