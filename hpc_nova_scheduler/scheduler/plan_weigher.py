"""``HpcPlanWeigher``: planned hosts first, then the alternates in their order.

``HpcPlacementFilter`` offers each round the hosts its plan still puts VMs
on, followed by alternate hosts for Nova's conductor to rebuild a failed VM
on. Nova claims the first host of its weighed list and takes the alternates
from the rest, so this weigher puts every planned host ahead of every
alternate, and the alternates in the order the plan ranked them. Between
planned hosts it gives no preference: Nova's own weighers choose the order
in which they fill, as before. Requests the filter did not plan get no
weight, at no cost per host (see :meth:`HpcPlanWeigher.weigh_objects`).

Loading it is what lets the filter offer alternates at all: without it
Nova's weighers could rank an alternate first and spread the application.
"""

from __future__ import annotations

from typing import Any

from nova.scheduler import weights

from hpc_nova_scheduler.scheduler import host_view, request

#: Far above any other weigher's reach (Nova's build-failure weigher uses
#: 1e6), so that the plan's order survives every other multiplier. An int:
#: Nova formats every host's score for its debug log, and ints format faster.
MULTIPLIER = 1_000_000_000


class HpcPlanWeigher(weights.BaseHostWeigher):
    def __init__(self) -> None:
        super().__init__()
        request.PLAN_WEIGHER.set()

    def weight_multiplier(self, host_state: Any) -> int:
        return MULTIPLIER

    def _weigh_object(self, host_state: Any, weight_properties: Any) -> float:
        return self.weigh_objects([_Weighed(host_state)], weight_properties)[0]

    def weigh_objects(self, weighed_obj_list: list, weight_properties: Any) -> list[float]:
        state = request.request_state(weight_properties)
        if state is None or state.plan is None:
            # No weights at all: Nova adds each weigher's weights host by
            # host, formatting each for its log, and an empty list leaves
            # every host's weight as it was without that pass, which on a
            # large cloud costs Nova more than any other step of the plugin
            # for a request it left alone.
            return []
        spares = {key: rank for rank, key in enumerate(state.spares)}
        # Alternates below 0.5 in their order, planned hosts at 1.
        step = 0.5 / (len(spares) + 1)
        found = []
        for weighed in weighed_obj_list:
            key = host_view.host_key(weighed.obj)
            if key in state.planned_now:
                found.append(1.0)
            elif key in spares:
                found.append(0.5 - step * spares[key])
            else:
                found.append(0.0)
        return found


class _Weighed:
    def __init__(self, obj: Any) -> None:
        self.obj = obj
