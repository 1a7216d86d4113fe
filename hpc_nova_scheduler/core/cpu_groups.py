"""Processor groups from a compute node's ``cpu_info``, without Nova.

The placement filter (``scheduler/host_view.py``) and the fair-share
allocator (``fairshare/platforms.py``) name a host's processor group the
same way: its ``hpc:cpu_group`` aggregate key, else this reading of the
``cpu_info`` Nova stores for the compute node.
"""

from __future__ import annotations

import functools
import json
from typing import Any

CPU_GROUP_KEY = "hpc:cpu_group"
UNKNOWN_CPU_GROUP = "unknown"


@functools.lru_cache(maxsize=1024)
def _cpu_group_from_text(cpu_info: str) -> str:
    try:
        info = json.loads(cpu_info) if cpu_info.strip() else {}
    except ValueError:
        info = {}
    return cpu_group_from_cpu_info(info)


def cpu_group_from_cpu_info(cpu_info: Any) -> str:
    """A processor group name from a compute node's ``cpu_info``.

    Vendor, model and, where the driver reports one, frequency; hosts whose
    driver reports nothing share the group ``unknown``.
    """
    if isinstance(cpu_info, str):
        # A cloud has a handful of distinct processor descriptions.
        return _cpu_group_from_text(cpu_info)
    info: Any = cpu_info
    if not isinstance(info, dict):
        return UNKNOWN_CPU_GROUP
    parts = [str(info[key]) for key in ("vendor", "model") if info.get(key)]
    for key in ("frequency", "mhz", "cpu_mhz", "max_frequency"):
        if info.get(key):
            parts.append(f"{info[key]}MHz")
            break
    return "/".join(parts) if parts else UNKNOWN_CPU_GROUP
