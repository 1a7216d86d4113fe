"""Whether one host may take VMs of a request, judged from what runs there.

:func:`~hpc_nova_scheduler.core.algorithm.plan` decides over every candidate
host at once from a snapshot. Between that snapshot and the moment a plan is
claimed, other schedulers (threads or processes) may have placed VMs on the
same hosts; the claim step asks this module again, host by host, with what
the database says runs there now. The rules are Algorithm 1's line 6 and
``meetsInterferenceCriteria``, as the planner applies them:

* ExtremeHPC hosts are dedicated both ways: an ExtremeHPC VM only joins VMs
  of its own application, and nothing joins another application's
  ExtremeHPC VMs;
* no two applications recorded as harmful to each other share a host;
* the cache scores stay within alpha, and within beta where SyncHPC runs or
  arrives (ExtremeHPC requests are exempt: they have the host to
  themselves); or, when an interference model is chosen, every
  application there keeps its predicted slowdown within the tolerance
  (a :class:`~hpc_nova_scheduler.core.judge.HostJudge`, such as
  :class:`hpc_nova_scheduler.interference.rule.ModelRule`).

Capacity is not judged here: Placement claims CPU, RAM and disk atomically.
"""

from __future__ import annotations

from collections.abc import Iterable

from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.columns import ordered_sum
from hpc_nova_scheduler.core.criteria import EPSILON, InterferenceTable, Thresholds
from hpc_nova_scheduler.core.judge import HostJudge, residents
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile


def refusal(
    vms: Iterable[RunningVM],
    profile: ApplicationProfile,
    application_id: str,
    adding: int,
    thresholds: Thresholds,
    table: InterferenceTable | None = None,
    rule: HostJudge | None = None,
    host_type: str | None = None,
) -> str | None:
    """Why ``adding`` VMs of the request may not join ``vms``; None if they may.

    ``host_type`` (the host's processor group) is for models that tell host
    types apart.

    ``vms`` are the VMs on the host other than the ones being added; those
    whose ``application_id`` is ``application_id`` belong to the requesting
    application itself.
    """
    if adding <= 0:
        return None
    vms = list(vms)
    foreign = [vm for vm in vms if vm.application_id != application_id]
    if any(vm.app_class is AppClass.EXTREME_HPC for vm in foreign):
        return "dedicated to another application's ExtremeHPC VMs"
    extreme = profile.app_class is AppClass.EXTREME_HPC
    if extreme and foreign:
        return "ExtremeHPC needs a host without other applications"
    if table is not None and profile.app_name is not None:
        for vm in foreign:
            if table.conflicts(profile.app_name, vm.app_name):
                return f"{profile.app_name} and {vm.app_name} are a harmful pair"
    if extreme:
        return None
    if rule is not None:
        return rule.refusal(residents(vms, application_id, profile.app_name, adding), host_type)
    total = ordered_sum(vm.cache_score for vm in vms) + adding * profile.cache_score
    if total > thresholds.alpha + EPSILON:
        return f"cache score {total:g} would exceed alpha {thresholds.alpha:g}"
    sync = profile.app_class is AppClass.SYNC_HPC or any(
        vm.app_class is AppClass.SYNC_HPC for vm in vms
    )
    if sync and total > thresholds.beta + EPSILON:
        return f"cache score {total:g} would exceed beta {thresholds.beta:g} next to SyncHPC"
    return None
