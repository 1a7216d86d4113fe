"""Why a host was left out, in the log, as Nova's own filters say it.

For every host a request's plan leaves out, one debug line names the host,
the rule that kept it out and the value against its limit::

    hpc-nova-scheduler: compute-07: cache 118 > alpha 100
    hpc-nova-scheduler: compute-03: ExtremeHPC host of IS.B.4

and a request the plugin refuses (Nova answers NoValidHost) ends with one
INFO line that counts the hosts each rule refused. Explaining re-plans
(:func:`~hpc_nova_scheduler.core.algorithm.left_out`), so it runs only when
debug logging is on, or for a refused request: a placed request at INFO
level costs nothing more.
"""

from __future__ import annotations

import logging as std_logging
from collections.abc import Collection, Mapping, Sequence

from oslo_log import log as logging

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.cluster import Host, RunningVM
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.judge import HostJudge, Refusal, summary
from hpc_nova_scheduler.topology.levels import DEFAULT_LEVELS

LOG = logging.getLogger(__name__)


def _debug(refusals: Sequence[Refusal]) -> None:
    for refusal in refusals:
        LOG.debug("hpc-nova-scheduler: %s: %s", refusal.host, refusal.detail)


def left_out(
    request: algorithm.PlacementRequest,
    hosts: Sequence[Host],
    plan: algorithm.Plan,
    thresholds: Thresholds,
    table: InterferenceTable,
    rule: HostJudge | None,
    spares: Collection[str] = (),
    levels: Sequence[str] = DEFAULT_LEVELS,
) -> None:
    """Debug: why each host outside ``plan`` and its alternates takes none of its VMs."""
    if not LOG.isEnabledFor(std_logging.DEBUG):
        return
    refusals = _explained(request, hosts, plan, thresholds, table, rule, levels)
    _debug([refusal for refusal in refusals or () if refusal.host not in spares])


def refused(
    request: algorithm.PlacementRequest,
    hosts: Sequence[Host],
    thresholds: Thresholds,
    table: InterferenceTable,
    rule: HostJudge | None,
    reason: str,
    levels: Sequence[str] = DEFAULT_LEVELS,
) -> None:
    """Debug: why each host was refused; then INFO: the reason, and hosts by rule."""
    refusals = _explained(request, hosts, None, thresholds, table, rule, levels)
    profile = request.profile
    application = profile.app_name or request.application_id
    if refusals is None:
        LOG.info(
            "hpc-nova-scheduler: no placement for %d x %s VM(s) of %s: %s",
            request.count,
            profile.app_class,
            application,
            reason,
        )
        return
    _debug(refusals)
    LOG.info(
        "hpc-nova-scheduler: no placement for %d x %s VM(s) of %s: %s; %d host(s) refused: %s",
        request.count,
        profile.app_class,
        application,
        reason,
        len(refusals),
        summary(refusals) or "no candidate hosts",
    )


def _explained(
    request: algorithm.PlacementRequest,
    hosts: Sequence[Host],
    plan: algorithm.Plan | None,
    thresholds: Thresholds,
    table: InterferenceTable,
    rule: HostJudge | None,
    levels: Sequence[str] = DEFAULT_LEVELS,
) -> list[Refusal] | None:
    """:func:`~hpc_nova_scheduler.core.algorithm.left_out`, or None if it fails.

    Explaining is for the log: a fault there must never change what the
    filter decides, so it is logged and the decision stands.
    """
    try:
        return algorithm.left_out(request, hosts, plan, thresholds, table, rule=rule, levels=levels)
    except Exception:
        LOG.debug("hpc-nova-scheduler: cannot explain the refused hosts", exc_info=True)
        return None


def avoided(dedicated: Mapping[str, Sequence[RunningVM]]) -> None:
    """Debug, for a request left to Nova: the hosts other applications hold as ExtremeHPC."""
    if not LOG.isEnabledFor(std_logging.DEBUG):
        return
    for host, vms in sorted(dedicated.items()):
        owners = sorted({vm.app_name or vm.application_id or vm.uuid for vm in vms})
        LOG.debug("hpc-nova-scheduler: %s: ExtremeHPC host of %s", host, ", ".join(owners))
