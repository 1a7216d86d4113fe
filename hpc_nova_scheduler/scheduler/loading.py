"""Discovery of the plugin's scheduler classes through stevedore."""

from __future__ import annotations

from oslo_log import log as logging
from stevedore import extension

LOG = logging.getLogger(__name__)

FILTERS_NAMESPACE = "hpc_nova_scheduler.filters"
WEIGHERS_NAMESPACE = "hpc_nova_scheduler.weighers"


def load_classes(namespace: str, base: type) -> list[type]:
    """Every class registered under ``namespace`` that subclasses ``base``.

    A plugin that fails to import, or is not a ``base``, is logged and left
    out rather than taking nova-scheduler down with it.
    """

    def _report(manager: extension.ExtensionManager, entry_point: object, error: Exception) -> None:
        LOG.error(
            "hpc-nova-scheduler: cannot load %s from %s: %s",
            entry_point,
            namespace,
            error,
        )

    manager = extension.ExtensionManager(
        namespace, invoke_on_load=False, on_load_failure_callback=_report
    )
    classes = []
    for ext in sorted(manager, key=lambda e: e.name):
        if isinstance(ext.plugin, type) and issubclass(ext.plugin, base):
            classes.append(ext.plugin)
        else:
            LOG.error(
                "hpc-nova-scheduler: %s in %s is not a %s subclass; ignored",
                ext.name,
                namespace,
                base.__name__,
            )
    return classes
