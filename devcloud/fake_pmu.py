"""Cycles and instructions of the fake computes' guests, for their collectors' CPI.

``hpc-scheduler-collector`` counts each guest's CPI with ``perf_event_open``
on the guest's cgroup (:class:`hpc_nova_scheduler.collector.perf.CgroupCPI`).
The devcloud's guests have no QEMU and no cgroup of their own, and this
machine may have no PMU: :mod:`devcloud.measured_collector` runs the real
collector with this module's three stand-ins for the kernel's calls, as
:mod:`devcloud.measured_compute` runs nova-compute with a fake driver.

* A guest's cgroup is ``<cgroup_root>/<domain name>``, a folder that
  :mod:`devcloud.counters` makes and keeps: ``cycles`` and
  ``instructions``, each the 24 bytes a perf counter reads as (value, time
  enabled, time running), rewritten in place every tick.
* Opening a counter opens that file; the collector's check that the host
  can count at all (no cgroup) opens ``/dev/null``.
* Reading a counter reads the file from its start.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from hpc_nova_scheduler.collector.domains import Domain
from hpc_nova_scheduler.collector.perf import PERF_TYPE_HARDWARE

#: perf's generic hardware events, by config.
EVENTS = {0: "cycles", 1: "instructions"}
_LAYOUT = "<QQQ"


def cgroup(domain: Domain, cgroup_root: Path) -> Path | None:
    """The guest's cgroup, there from its start as QEMU's is (its counters at 0
    until :mod:`devcloud.counters` runs it)."""
    folder = cgroup_root / domain.name
    folder.mkdir(parents=True, exist_ok=True)
    for event in EVENTS.values():
        if not (folder / event).exists():
            write_counter(folder / event, 0, 0.0)
    return folder


def open_counter(kind: int, config: int, cgroup_fd: int, cpu: int, flags: int) -> int:
    if kind != PERF_TYPE_HARDWARE or config not in EVENTS:
        raise OSError(95, "the fake PMU counts cycles and instructions only")
    if cgroup_fd < 0:
        return os.open(os.devnull, os.O_RDONLY)
    return os.open(EVENTS[config], os.O_RDONLY, dir_fd=cgroup_fd)


def read_counter(fd: int) -> float:
    data = os.pread(fd, struct.calcsize(_LAYOUT), 0)
    if len(data) < struct.calcsize(_LAYOUT):
        return 0.0
    value, _enabled, _running = struct.unpack(_LAYOUT, data)
    return float(value)


def write_counter(path: Path, value: float, seconds: float) -> None:
    """Set a counter file in place (a reader holding it open sees the new value)."""
    data = struct.pack(_LAYOUT, int(value), int(seconds * 1e9), int(seconds * 1e9))
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)
