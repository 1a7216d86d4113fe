"""``MeasuredBandwidthWeigher``: hosts with more memory bandwidth headroom first.

Under ``[hpc_scheduler] cache_pressure_source`` ``measured`` or ``max``, the
compute hosts' collectors report the memory bandwidth their instances move
(resctrl's MBM, every group of the host together). A host's headroom is its
memory bandwidth less what is used; with one memory system per host model,
Nova's normalisation of each weigher's weights to [0, 1] makes ranking by
headroom the same as ranking by bandwidth used, lowest first, so the weight
is the bandwidth used, negated, in GB/s. A host without a fresh report
(never reported, stale after ``measured_stale_after``, or no MBM) weighs
as the mean of those that have one: neither preferred nor avoided.

Under ``declared`` (the default) it reads nothing and weighs nothing, and so
does a request whose read fails (the failure is logged: the weigher never
stops a request). The HPC plan weigher's order comes first: this one ranks
hosts the plan leaves equal, and the hosts of requests left to Nova.
"""

from __future__ import annotations

import statistics
from typing import Any

from nova.scheduler import weights
from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.measured import pressure
from hpc_nova_scheduler.scheduler.fallback import DATABASE_ERRORS

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF
METRIC = "mbm_total_bps"


class MeasuredBandwidthWeigher(weights.BaseHostWeigher):
    def __init__(self) -> None:
        super().__init__()
        self._database = db_api.ConfiguredDatabase(CONF)

    def weight_multiplier(self, host_state: Any) -> float:
        return CONF.hpc_scheduler.measured_bandwidth_weight_multiplier

    def _weigh_object(self, host_state: Any, weight_properties: Any) -> float:
        found = self.weigh_objects([_Weighed(host_state)], weight_properties)
        return found[0] if found else 0.0

    def weigh_objects(self, weighed_obj_list: list, weight_properties: Any) -> list[float]:
        try:
            return self._weights(weighed_obj_list)
        except Exception:
            # Weighing helps; it must never fail a request.
            LOG.exception(
                "hpc-nova-scheduler: MeasuredBandwidthWeigher failed; weighing without it"
            )
            return []

    def _weights(self, weighed_obj_list: list) -> list[float]:
        settings = pressure.Settings.of(CONF.hpc_scheduler)
        if settings.source == pressure.DECLARED or not self.weight_multiplier(None):
            # No weights: Nova leaves every host's weight as it was (see
            # HpcPlanWeigher.weigh_objects).
            return []
        names = sorted({weighed.obj.host for weighed in weighed_obj_list})
        try:
            reports = self._database().measured_hosts(hosts=names)
        except DATABASE_ERRORS as error:
            LOG.warning(
                "hpc-nova-scheduler: cannot read the hosts' measured memory bandwidth, "
                "weighing without it: %s",
                error,
            )
            return []
        used = fresh_bandwidth(reports, settings, timeutils.utcnow())
        if not used:
            return []
        neutral = statistics.fmean(used.values())
        return [-used.get(weighed.obj.host, neutral) / 1e9 for weighed in weighed_obj_list]


def fresh_bandwidth(reports, settings: pressure.Settings, now) -> dict[str, float]:
    """Bytes per second each host with a fresh report moves, by host."""
    found = {}
    for report in reports:
        if settings.fresh(report.reported_at, now) and METRIC in report.totals:
            found[report.host] = report.totals[METRIC]
    return found


class _Weighed:
    def __init__(self, obj: Any) -> None:
        self.obj = obj
