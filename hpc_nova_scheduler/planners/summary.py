"""What ``plan`` reports of a placement: each host's load and interference, and their totals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.planners.base import Batch, Placement, host_level


def summarise(
    placement: Placement,
    batch: Batch,
    model: InterferenceModel,
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Hosts used, summed and worst interference by ``model``, feasibility,
    and per host its applications, CPU and memory (``names``: the hosts'
    names, by position)."""
    hosts = []
    for host, apps in placement.groups().items():
        level = host_level(model, [batch.apps[a] for a in apps])
        hosts.append(
            {
                "host": names[host] if names else host,
                "applications": [batch.apps[a].name for a in apps],
                "cpu": round(sum(batch.apps[a].cpu for a in apps), 6),
                "mem": round(sum(batch.apps[a].mem for a in apps), 6),
                "interference": round(level, 4),
            }
        )
    return {
        "hosts_used": placement.hosts_used,
        "interference": round(sum(h["interference"] for h in hosts), 4),
        "worst_host": max(h["interference"] for h in hosts),
        "feasible": placement.feasible(batch),
        "hosts": hosts,
    }
