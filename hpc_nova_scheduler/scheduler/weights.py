"""Host weighers of the plugin, for nova.conf's ``weight_classes``.

``[filter_scheduler] weight_classes`` may name
``hpc_nova_scheduler.scheduler.weights.all_weighers``; Nova's loader calls it
and gets every weigher class registered under the
``hpc_nova_scheduler.weighers`` entry point namespace.
"""

from __future__ import annotations

from nova.scheduler import weights as nova_weights

from hpc_nova_scheduler.scheduler import loading


def all_weighers() -> list[type[nova_weights.BaseHostWeigher]]:
    return loading.load_classes(loading.WEIGHERS_NAMESPACE, nova_weights.BaseHostWeigher)
