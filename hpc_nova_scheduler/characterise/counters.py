"""What the kernel lets us measure of a process: perf, resctrl, and the rest.

Three sources, best first:

* ``perf stat``: hardware events (cycles, instructions, cache misses, ...)
  where the CPU's counters are exposed, software events (page faults,
  context switches, CPU migrations, task clock) wherever perf runs. perf
  prints ``<not supported>`` for an event it cannot count; those are
  reported once and left out, never recorded as zero.
* resctrl (``/sys/fs/resctrl`` mounted, Intel RDT or AMD QoS): last-level
  cache occupancy and memory bandwidth of a monitoring group.
* what every Linux kernel gives: the child's resource usage (``wait4``)
  and wall time.

Counter names follow seed 001's generic set where they match
(``page_faults``, ``context_switches``, ``cpu_migrations``,
``cache_references``, ``cache_misses``, ``CPU_usage``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

#: perf events, by the counter name we record them under.
PERF_EVENTS = {
    "cycles": "cycles",
    "instructions": "instructions",
    "branch_instructions": "branch-instructions",
    "branch_misses": "branch-misses",
    "cache_references": "cache-references",
    "cache_misses": "cache-misses",
    "page_faults": "page-faults",
    "context_switches": "context-switches",
    "cpu_migrations": "cpu-migrations",
}
RESCTRL = Path("/sys/fs/resctrl")


@dataclasses.dataclass
class PerfResult:
    values: dict[str, float]
    unsupported: list[str]


def perf_available() -> bool:
    return shutil.which("perf") is not None


def perf_command(output: str, events: Mapping[str, str] = PERF_EVENTS) -> list[str]:
    """The ``perf stat`` prefix that writes CSV to ``output``."""
    return ["perf", "stat", "-x", ",", "-o", output, "-e", ",".join(events.values()), "--"]


def parse_perf(text: str, events: Mapping[str, str] = PERF_EVENTS) -> PerfResult:
    """Read ``perf stat -x ,`` output: value, unit, event, run time, percentage, ..."""
    by_event = {event: name for name, event in events.items()}
    values: dict[str, float] = {}
    unsupported: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3:
            continue
        value, event = fields[0].strip(), fields[2].strip()
        # perf may add a modifier (cycles:u) to the event's name.
        name = by_event.get(event) or by_event.get(event.split(":")[0])
        if name is None:
            continue
        if value.startswith("<"):  # <not supported>, <not counted>
            unsupported.append(name)
            continue
        try:
            values[name] = float(value)
        except ValueError:
            unsupported.append(name)
    return PerfResult(values, unsupported)


def rusage_counters(usage: Mapping[str, float], wall: float) -> dict[str, float]:
    """What ``wait4`` said of a finished command (``ru_*`` fields), as counters."""
    cpu = usage["ru_utime"] + usage["ru_stime"]
    return {
        "user_seconds": float(usage["ru_utime"]),
        "system_seconds": float(usage["ru_stime"]),
        "CPU_usage": 100.0 * cpu / wall if wall > 0 else 0.0,
        "max_rss_kb": float(usage["ru_maxrss"]),
        "minor_faults": float(usage["ru_minflt"]),
        "major_faults": float(usage["ru_majflt"]),
        "voluntary_switches": float(usage["ru_nvcsw"]),
        "involuntary_switches": float(usage["ru_nivcsw"]),
        "blocks_in": float(usage["ru_inblock"]),
        "blocks_out": float(usage["ru_oublock"]),
    }


class ResctrlGroup:
    """A resctrl monitoring group for one process: LLC occupancy and memory bandwidth."""

    def __init__(self, root: Path, name: str) -> None:
        self.path = root / "mon_groups" / name

    @staticmethod
    def available(root: Path = RESCTRL) -> bool:
        return (root / "mon_groups").is_dir()

    def create(self) -> None:
        self.path.mkdir()

    def add(self, pid: int) -> None:
        (self.path / "tasks").write_text(f"{pid}\n")

    def read(self) -> dict[str, float]:
        """Sum over the cache domains: llc_occupancy (bytes), mbm_*_bytes."""
        totals: dict[str, float] = {}
        data = self.path / "mon_data"
        for domain in sorted(data.iterdir()) if data.is_dir() else ():
            for name in ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"):
                file = domain / name
                if file.is_file():
                    text = file.read_text().strip()
                    if text.isdigit():
                        totals[name] = totals.get(name, 0.0) + float(text)
        return totals

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.rmdir(self.path)


def mean_counters(samples: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each counter present in every sample."""
    if not samples:
        return {}
    shared = set(samples[0])
    for sample in samples[1:]:
        shared &= set(sample)
    return {name: sum(s[name] for s in samples) / len(samples) for name in sorted(shared)}


#: A block in ``ru_inblock`` / ``ru_oublock`` is 512 bytes on Linux.
BLOCK_BYTES = 512


def solo_metrics(found: Mapping[str, float], runtime: float) -> dict[str, float]:
    """Seed 000's solo-run metrics from what the kernel's resource usage gave.

    CPU user and idle time in percent of the run, disk reads and writes in
    MB/s. Network traffic has no per-process count here (it belongs to the
    network namespace), so it is left out rather than guessed.
    """
    if runtime <= 0:
        return {}
    busy = min(100.0, found.get("CPU_usage", 0.0))
    return {
        "cpu_user": round(100.0 * found.get("user_seconds", 0.0) / runtime, 6),
        "cpu_idle": round(100.0 - busy, 6),
        "disk_read": round(found.get("blocks_in", 0.0) * BLOCK_BYTES / 1e6 / runtime, 6),
        "disk_write": round(found.get("blocks_out", 0.0) * BLOCK_BYTES / 1e6 / runtime, 6),
    }
