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


#: A resctrl group's monitoring counters, as the kernel names their files.
RESCTRL_COUNTERS = ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes")


@dataclasses.dataclass
class ResctrlSample:
    """One read of a group's ``mon_data``: each counter summed over the cache domains."""

    #: llc_occupancy in bytes now; mbm_*_bytes counted since the group was made.
    values: dict[str, float]
    #: Counters left out of ``values`` and why, naming the file and what it held.
    unreadable: dict[str, str]


def read_mon_data(mon_data: Path) -> ResctrlSample:
    """Sum each counter over ``mon_data/mon_L3_*``.

    A counter is summed only if every domain that has its file gives a
    number: the kernel writes ``Unavailable`` (no free RMID, or the counter
    not yet read by hardware) or ``Error`` instead, and a sum over some
    domains would understate the group without saying so. Such a counter is
    left out and named in ``unreadable``; it is never recorded as zero.
    """
    values: dict[str, float] = {}
    unreadable: dict[str, str] = {}
    domains = (
        sorted(d for d in mon_data.iterdir() if d.is_dir() and d.name.startswith("mon_"))
        if mon_data.is_dir()
        else []
    )
    for name in RESCTRL_COUNTERS:
        total, found, why = 0, False, None
        for domain in domains:
            file = domain / name
            try:
                text = file.read_text().strip()
            except FileNotFoundError:
                continue  # a counter this hardware lacks is absent from every domain
            except OSError as error:
                why = f"{file}: {error.strerror or error}"
                break
            if not text.isdigit():
                why = f"{file}: {text!r}"
                break
            total += int(text)
            found = True
        if why is not None:
            unreadable[name] = why
        elif found:
            values[name] = float(total)
    return ResctrlSample(values, unreadable)


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

    def sample(self) -> ResctrlSample:
        """The counters summed over the cache domains, and those that could not be read."""
        return read_mon_data(self.path / "mon_data")

    def read(self) -> dict[str, float]:
        """Sum over the cache domains: llc_occupancy (bytes), mbm_*_bytes."""
        return self.sample().values

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.rmdir(self.path)


def add_samples(samples: Sequence[ResctrlSample]) -> ResctrlSample:
    """The sum of several groups' samples: a counter unreadable in one is unreadable."""
    unreadable: dict[str, str] = {}
    for sample in samples:
        for name, why in sample.unreadable.items():
            unreadable.setdefault(name, why)
    values: dict[str, float] = {}
    for sample in samples:
        for name, value in sample.values.items():
            if name not in unreadable:
                values[name] = values.get(name, 0.0) + value
    return ResctrlSample(values, unreadable)


#: Entries of a control group's folder that are not control groups of their own.
_NOT_GROUPS = frozenset({"info", "mon_groups", "mon_data"})


@dataclasses.dataclass(frozen=True)
class ResctrlMount:
    """A resctrl file system (``/sys/fs/resctrl``, or a tree laid out as the kernel lays it out).

    The root is the default control group; each folder beside ``info``,
    ``mon_groups`` and ``mon_data`` is another control group (libvirt makes
    one for a domain's ``<cachetune>``). Each control group's ``mon_data``
    counts all its tasks, those of its monitoring groups (``mon_groups/*``)
    included, so the control groups together count the whole host.
    """

    root: Path = RESCTRL

    def features(self) -> list[str]:
        """The counters the hardware monitors (``info/L3_MON/mon_features``)."""
        try:
            text = (self.root / "info" / "L3_MON" / "mon_features").read_text()
        except OSError:
            return []
        return [line.strip() for line in text.splitlines() if line.strip()]

    def problem(self) -> str | None:
        """Why nothing can be measured here, in one line; None when something can."""
        if not (self.root / "info").is_dir():
            return f"resctrl is not mounted at {self.root}"
        if not (self.root / "info" / "L3_MON").is_dir():
            return (
                f"resctrl at {self.root} has no L3 monitoring "
                "(no info/L3_MON: the processor has no RDT or AMD QoS monitoring)"
            )
        if not set(self.features()) & set(RESCTRL_COUNTERS):
            return f"resctrl at {self.root} monitors none of {', '.join(RESCTRL_COUNTERS)}"
        return None

    def llc_bytes(self) -> int | None:
        """The whole last-level cache, every domain together, from the default
        group's ``size`` (``L3:0=<bytes>;1=<bytes>``, the bytes its full mask
        covers); None where the kernel gives no ``size`` (no cache allocation)."""
        try:
            text = (self.root / "size").read_text()
        except OSError:
            return None
        for line in text.splitlines():
            resource, _, domains = line.strip().partition(":")
            if resource.strip() != "L3":
                continue
            total = 0
            for part in domains.split(";"):
                _, _, value = part.partition("=")
                if not value.strip().isdigit():
                    return None
                total += int(value)
            return total or None
        return None

    def control_groups(self) -> list[Path]:
        """The default group (the root) and every other control group."""
        others = (
            sorted(
                entry
                for entry in self.root.iterdir()
                if entry.is_dir() and entry.name not in _NOT_GROUPS
            )
            if self.root.is_dir()
            else []
        )
        return [self.root, *others]

    def monitoring_groups(self) -> dict[str, Path]:
        """Every monitoring group, by name: ``name`` under the root's ``mon_groups``,
        ``control/name`` under another control group's."""
        found: dict[str, Path] = {}
        for control in self.control_groups():
            folder = control / "mon_groups"
            prefix = "" if control == self.root else f"{control.name}/"
            for entry in sorted(folder.iterdir()) if folder.is_dir() else ():
                if entry.is_dir():
                    found[prefix + entry.name] = entry
        return found

    def totals(self) -> ResctrlSample:
        """The whole host: every control group's ``mon_data`` added up."""
        return add_samples([read_mon_data(c / "mon_data") for c in self.control_groups()])


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
