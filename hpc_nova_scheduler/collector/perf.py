"""Cycles per instruction of each domain's cgroup, from the kernel's perf counters.

Each QEMU process runs in a cgroup of its own (libvirt's
``machine.slice/machine-qemu...scope``). ``perf_event_open(2)`` counts a
cgroup's CPU cycles and retired instructions with ``PERF_FLAG_PID_CGROUP``:
one counter per CPU and event, opened on the cgroup's folder. The CPI of an
interval is the growth of cycles over the growth of instructions.

What the host does not allow is said once, and CPI is left out, never
recorded as zero: no hardware counters (most virtual machines, where the
hypervisor exposes no PMU: ``perf_event_open`` fails with ENOENT or
EOPNOTSUPP), no permission (``kernel.perf_event_paranoid`` above 0 for a
collector without ``CAP_PERFMON``), or no cgroup folder for a domain (cgroup
v1 without the ``perf_event`` controller mounted). Python has no binding of
the system call in its standard library or in a library the project uses;
this is the one place it is called, through ``ctypes``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from hpc_nova_scheduler.collector.domains import Domain
from hpc_nova_scheduler.collector.once import SayOnce

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_FLAG_PID_CGROUP = 1 << 2
PERF_FLAG_FD_CLOEXEC = 1 << 3
#: A read gives the count with the times the event was enabled and running:
#: with more events than the PMU has counters, the kernel multiplexes them,
#: and a count is scaled by enabled / running.
PERF_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 1
READ_FORMAT = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
#: ``perf_event_open``'s number, by machine.
SYSCALL = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331}
#: The events of a CPI: (type, config) of cycles, then of instructions.
CPI_EVENTS = (
    (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
    (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS),
)


class _Attr(ctypes.Structure):
    """``struct perf_event_attr`` up to ``config1`` (``PERF_ATTR_SIZE_VER0``, 64 bytes)."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
    ]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def open_counter(kind: int, config: int, pid: int, cpu: int, flags: int) -> int:
    """A counting perf event's file descriptor; OSError with the kernel's errno."""
    number = SYSCALL.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, f"perf_event_open on {platform.machine()}")
    attr = _Attr(type=kind, size=ctypes.sizeof(_Attr), config=config, read_format=READ_FORMAT)
    fd = _libc.syscall(
        ctypes.c_long(number),
        ctypes.byref(attr),
        ctypes.c_int(pid),
        ctypes.c_int(cpu),
        ctypes.c_int(-1),
        ctypes.c_ulong(flags | PERF_FLAG_FD_CLOEXEC),
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return fd


def read_counter(fd: int) -> float:
    """The event's count, scaled up for the time the kernel multiplexed it out."""
    value, enabled, running = struct.unpack("<QQQ", os.read(fd, 24))
    if running == 0:
        return 0.0
    return value * (enabled / running) if running < enabled else float(value)


def online_cpus(path: Path = Path("/sys/devices/system/cpu/online")) -> list[int]:
    """Every online CPU (``0-3,8-11``): a cgroup's tasks may run on any, not
    only on the collector's own (HPC hosts keep it off the guests' cores)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return sorted(os.sched_getaffinity(0))
    found: list[int] = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        found.extend(range(int(first), int(last or first) + 1))
    return found


def _scope(path: str) -> str:
    """The domain's own cgroup: on cgroup v2 libvirt puts QEMU's emulator
    thread in ``<scope>/libvirt/emulator`` and each vCPU in a sibling
    ``<scope>/libvirt/vcpuN``; the scope above holds them all."""
    parts = path.strip("/").split("/")
    if "libvirt" in parts[1:]:
        parts = parts[: parts.index("libvirt", 1)]
    return "/".join(parts)


def cgroup_of(pid: int, cgroup_root: Path) -> Path | None:
    """The folder of process ``pid``'s perf cgroup: cgroup v2's, or v1's ``perf_event``."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        number, controllers, path = [*line.split(":", 2), "", ""][:3]
        if number == "0" and controllers == "":
            folder = cgroup_root / _scope(path)
        elif "perf_event" in controllers.split(","):
            folder = cgroup_root / "perf_event" / _scope(path)
        else:
            continue
        if folder.is_dir():
            return folder
    return None


def domain_cgroup(domain: Domain, cgroup_root: Path) -> Path | None:
    """The perf cgroup folder of ``domain``: its QEMU process's."""
    return cgroup_of(domain.pid, cgroup_root)


#: A domain's cgroup folder, its counters' fds per event, their last counts.
_Counters = tuple[Path, list[list[int]], tuple[int, ...] | None]


class CgroupCPI:
    """CPI of each domain's cgroup, interval after interval."""

    def __init__(
        self,
        cgroup_root: Path,
        say: Callable[[str], None],
        *,
        events: tuple[tuple[int, int], tuple[int, int]] = CPI_EVENTS,
        cpus: Iterable[int] | None = None,
        opener: Callable[[int, int, int, int, int], int] = open_counter,
        cgroup: Callable[[Domain, Path], Path | None] = domain_cgroup,
    ) -> None:
        self.cgroup_root = Path(cgroup_root)
        self._once = SayOnce(say)
        self._events = events
        self._cpus = online_cpus() if cpus is None else sorted(cpus)
        self._open = opener
        self._cgroup = cgroup
        #: instance -> (its cgroup folder, fds per event, the last counts):
        #: two events on every online CPU for every domain, so a host of
        #: many cores and domains needs a high ``LimitNOFILE``.
        self._counters: dict[str, _Counters] = {}
        self.problem = self._check()
        if self.problem is not None:
            self._once(f"{self.problem}: no CPI measured")

    def _check(self) -> str | None:
        """Why no CPI can be counted on this host at all; None if it can."""
        for kind, config in self._events:
            try:
                fd = self._open(kind, config, -1, self._cpus[0], 0)
            except OSError as error:
                if error.errno in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV):
                    return (
                        "perf: this processor exposes no cycle and instruction counters "
                        f"(perf_event_open: {error.strerror})"
                    )
                if error.errno in (errno.EACCES, errno.EPERM):
                    return (
                        "perf: not allowed to count cycles and instructions (run the "
                        "collector as root or with CAP_PERFMON, or lower "
                        "kernel.perf_event_paranoid)"
                    )
                return f"perf: perf_event_open failed: {error.strerror}"
            os.close(fd)
        return None

    def _opened(
        self, domain: Domain
    ) -> tuple[Path, list[list[int]], tuple[int, int] | None] | None:
        folder = self._cgroup(domain, self.cgroup_root)
        known = self._counters.get(domain.uuid)
        if known is not None and known[0] == folder:
            return known
        if known is not None:
            self._close(domain.uuid)
        if folder is None:
            self._once(
                f"perf: no cgroup folder of instance {domain.uuid} under {self.cgroup_root} "
                "(cgroup v1 needs the perf_event controller mounted); its CPI is left out",
                kind=("no-cgroup",),
            )
            return None
        fds: list[list[int]] = []
        try:
            directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                for kind, config in self._events:
                    # Each fd is kept as soon as it is open, so that a
                    # failure on a later CPU closes the ones before it.
                    row: list[int] = []
                    fds.append(row)
                    for cpu in self._cpus:
                        row.append(self._open(kind, config, directory, cpu, PERF_FLAG_PID_CGROUP))
            finally:
                os.close(directory)
        except OSError as error:
            for fd in (fd for row in fds for fd in row):
                os.close(fd)
            self._once(
                f"perf: cannot count the cgroup of instance {domain.uuid}: {error.strerror}; "
                "its CPI is left out",
                kind=("cgroup-open", error.errno),
            )
            return None
        self._counters[domain.uuid] = (folder, fds, None)
        return self._counters[domain.uuid]

    def _close(self, uuid: str) -> None:
        _, fds, _ = self._counters.pop(uuid)
        for fd in (fd for row in fds for fd in row):
            os.close(fd)

    def sample(self, domains: Iterable[Domain]) -> Mapping[str, float]:
        """The CPI of each domain since the last call (none on its first)."""
        if self.problem is not None:
            return {}
        running = {domain.uuid: domain for domain in domains}
        for uuid in set(self._counters) - set(running):
            self._close(uuid)
        found = {}
        for uuid, domain in sorted(running.items()):
            opened = self._opened(domain)
            if opened is None:
                continue
            folder, fds, last = opened
            counts = tuple(sum(read_counter(fd) for fd in row) for row in fds)
            self._counters[uuid] = (folder, fds, counts)
            if last is None:
                continue
            cycles, instructions = counts[0] - last[0], counts[1] - last[1]
            if instructions > 0 and cycles >= 0:
                found[uuid] = cycles / instructions
        return found

    def close(self) -> None:
        for uuid in list(self._counters):
            self._close(uuid)
