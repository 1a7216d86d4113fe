"""Host filters of the plugin, for nova.conf's ``available_filters``.

``[filter_scheduler] available_filters`` may name
``hpc_nova_scheduler.scheduler.filters.all_filters``; Nova's loader calls it
and gets every filter class registered under the
``hpc_nova_scheduler.filters`` entry point namespace.
"""

from __future__ import annotations

from nova.scheduler import filters as nova_filters

from hpc_nova_scheduler.scheduler import loading


def all_filters() -> list[type[nova_filters.BaseHostFilter]]:
    return loading.load_classes(loading.FILTERS_NAMESPACE, nova_filters.BaseHostFilter)
