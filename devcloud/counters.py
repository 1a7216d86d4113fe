"""The fake computes' cache counters: resctrl files driven by what the guests really do.

``python -m devcloud.counters --folder <run>/measured [--tick 1]``

Under ``up --measured`` each compute host has ``<folder>/<host>/qemu``
(libvirt's status files, written by
:class:`~hpc_nova_scheduler.demo.measured_driver.MeasuredFakeDriver`) and
``<folder>/<host>/resctrl`` (laid out as the kernel lays out resctrl, by
``up``), which that host's ``hpc-scheduler-collector`` reads. This process
stands for the processors: every tick it gives each running guest's
monitoring group the occupancy and memory traffic its workload has on its
host, with the cache-pressure ground truth
(:mod:`hpc_nova_scheduler.interference.cache_pressure`):

* a host's last-level cache holds a total cache score of ``knee`` (60); a
  guest of score ``s`` wants ``s / knee`` of it, and when the guests of a
  host want more than it holds, each holds its share in proportion, so
  occupancy saturates at the cache's size;
* seed 003's cache score counts last-level cache misses in units of
  100,000 a second, each moving a 64-byte line: a guest moves
  ``s * 100,000 * 64`` bytes a second, times the model's slowdown factor
  past the knee (a thrashed cache misses more).

A guest's score is its status file's workload (the server's
``fake_cache_score`` or its flavor's ``hpc:cache_score``), unless
``<folder>/phases.json`` (``{instance uuid: score}``, written by the stress)
says its application has entered another phase; the phase follows the
instance from host to host.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import signal
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from devcloud import fake_pmu
from hpc_nova_scheduler import atomicfile
from hpc_nova_scheduler.characterise.counters import ResctrlMount
from hpc_nova_scheduler.demo.measured_host import WORKLOAD_NS
from hpc_nova_scheduler.demo.resctrl_tree import ResctrlTree
from hpc_nova_scheduler.interference.cache_pressure import CachePressureModel, pressure_factor

#: Seed 003's unit of cache score: last-level cache misses a second.
MISSES_PER_SCORE = 100_000
CACHE_LINE_BYTES = 64
PHASES_FILE = "phases.json"
#: Every guest's vCPUs are busy at this clock, with this CPI alone on a host.
CLOCK_HZ, BASE_CPI = 2.5e9, 1.0
TICK = 1.0


@dataclasses.dataclass(frozen=True)
class Guest:
    uuid: str
    cache_score: float
    #: libvirt's name of the domain (its fake cgroup's folder) and its vCPUs.
    name: str = ""
    vcpus: int = 1


@dataclasses.dataclass(frozen=True)
class Counters:
    """What one guest holds and moves on its host, and how fast it runs."""

    occupancy: int
    bytes_per_second: float
    #: Cycles per instruction: the application's own, times the slowdown.
    cpi: float = BASE_CPI


def read_guests(run_dir: Path) -> list[Guest]:
    """The guests with a status file and a workload in ``run_dir``; a file
    being replaced or of someone else's is skipped."""
    guests = []
    for path in sorted(run_dir.glob("*.xml")) if run_dir.is_dir() else ():
        try:
            domain = ElementTree.parse(path).getroot().find("domain")
        except (OSError, ElementTree.ParseError):
            continue
        if domain is None:
            continue
        uuid = (domain.findtext("uuid") or "").strip().lower()
        workload = domain.find(f"metadata/{{{WORKLOAD_NS}}}workload")
        if not uuid or workload is None:
            continue
        try:
            score = float(workload.get("cache_score", ""))
            vcpus = int(domain.findtext("vcpu") or 1)
        except ValueError:
            continue
        guests.append(Guest(uuid, score, (domain.findtext("name") or "").strip(), vcpus))
    return guests


def host_counters(
    guests: Sequence[Guest], llc_bytes: int, model: CachePressureModel
) -> dict[str, Counters]:
    """Each guest's occupancy and memory traffic on a host of ``llc_bytes``."""
    total = sum(g.cache_score for g in guests)
    # Past the knee the cache is full: each holds its share of it.
    fill = min(1.0, model.knee / total) if total > 0 else 1.0
    found = {}
    for g in guests:
        slowdown = pressure_factor(g.cache_score, total, model.knee, model.gain)
        found[g.uuid] = Counters(
            occupancy=int(llc_bytes * (g.cache_score / model.knee) * fill),
            bytes_per_second=g.cache_score * MISSES_PER_SCORE * CACHE_LINE_BYTES * slowdown,
            cpi=BASE_CPI * slowdown,
        )
    return found


def read_phases(path: Path) -> dict[str, float]:
    """``phases.json``: instance uuid -> the cache score of its current phase."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(uuid).lower(): float(score)
        for uuid, score in data.items()
        if isinstance(score, int | float) and score >= 0
    }


def write_phases(folder: Path, phases: Mapping[str, float]) -> None:
    """Replace ``phases.json`` whole (the stress: applications change phase)."""
    with atomicfile.open_replacing(str(folder / PHASES_FILE)) as stream:
        json.dump(dict(phases), stream)


class Host:
    """One fake compute's status files and resctrl mount, and the bytes each guest moved."""

    def __init__(self, folder: Path) -> None:
        self.name = folder.name
        self.run_dir = folder / "qemu"
        self.mount = ResctrlMount(folder / "resctrl")
        domains = sorted((folder / "resctrl" / "mon_data").glob("mon_L3_*"))
        self.tree = ResctrlTree(folder / "resctrl", domains=len(domains))
        self.llc_bytes = self.mount.llc_bytes() or 0
        self.moved: dict[str, float] = {}
        #: The host's own counter, which never goes back as guests leave.
        self.host_moved = 0.0
        #: The guests' cgroups for the fake PMU, and what each executed.
        self.cgroups = folder / "cgroup"
        self.executed: dict[str, tuple[float, float, float]] = {}

    def tick(self, phases: Mapping[str, float], seconds: float, model: CachePressureModel) -> int:
        """Advance the counters by ``seconds``; the guests measured."""
        guests = [
            dataclasses.replace(g, cache_score=phases.get(g.uuid, g.cache_score))
            for g in read_guests(self.run_dir)
        ]
        counted = 0
        measured = host_counters(guests, self.llc_bytes, model)
        for uuid, counters in measured.items():
            group = self.tree.root / "mon_groups" / uuid
            if not group.is_dir():
                continue  # the group is made with the guest; being removed
            self.moved[uuid] = self.moved.get(uuid, 0.0) + counters.bytes_per_second * seconds
            moved = int(self.moved[uuid])
            try:
                self._set(group, counters.occupancy, moved)
            except OSError:
                continue  # the collector removed the group meanwhile
            counted += 1
        for guest in guests:
            self._run(guest, measured[guest.uuid], seconds)
        # A control group's counters include its monitoring groups': the
        # default group's are the host's totals.
        self.host_moved += sum(c.bytes_per_second for c in measured.values()) * seconds
        moved_here = int(self.host_moved)
        occupied = sum(c.occupancy for c in measured.values())
        with contextlib.suppress(OSError):
            self._set(self.tree.root, occupied, moved_here)
        running = {g.uuid for g in guests}
        for uuid in [u for u in self.moved if u not in running]:
            del self.moved[uuid]
        for uuid in [u for u in self.executed if u not in running]:
            del self.executed[uuid]
        return counted

    def _set(self, group: Path, occupancy: int, moved: int) -> None:
        """A group's occupancy, and the bytes it moved (all to local memory)."""
        self.tree.set_total(group, "llc_occupancy", occupancy)
        for counter in ("mbm_total_bytes", "mbm_local_bytes"):
            self.tree.set_total(group, counter, moved)

    def _run(self, guest: Guest, counters: Counters, seconds: float) -> None:
        """The guest's cycles and instructions of ``seconds`` (:mod:`devcloud.fake_pmu`)."""
        if not guest.name:
            return
        cycles, instructions, elapsed = self.executed.get(guest.uuid, (0.0, 0.0, 0.0))
        ran = guest.vcpus * CLOCK_HZ * seconds
        cycles, instructions, elapsed = (
            cycles + ran,
            instructions + ran / counters.cpi,
            elapsed + seconds,
        )
        self.executed[guest.uuid] = (cycles, instructions, elapsed)
        folder = self.cgroups / guest.name
        folder.mkdir(parents=True, exist_ok=True)
        fake_pmu.write_counter(folder / "cycles", cycles, elapsed)
        fake_pmu.write_counter(folder / "instructions", instructions, elapsed)


def hosts_under(folder: Path) -> Iterable[Path]:
    return sorted(p for p in folder.iterdir() if (p / "resctrl" / "info").is_dir())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devcloud.counters",
        description="Drive the fake computes' resctrl counters from their guests' workloads.",
    )
    parser.add_argument("--folder", type=Path, required=True, help="<run>/measured")
    parser.add_argument("--tick", type=float, default=TICK, help=f"seconds (default {TICK:g})")
    args = parser.parse_args(argv)
    if not args.folder.is_dir() or args.tick <= 0:
        print(f"counters: --folder {args.folder}: not a folder, or --tick <= 0", file=sys.stderr)
        return 2
    hosts = [Host(path) for path in hosts_under(args.folder)]
    bad = [h.name for h in hosts if h.llc_bytes <= 0]
    if not hosts or bad:
        what = f"no cache size in {', '.join(bad)}" if bad else "no resctrl tree"
        print(f"counters: --folder {args.folder}: {what}", file=sys.stderr)
        return 2
    model = CachePressureModel()
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    print(f"counters: {len(hosts)} hosts every {args.tick:g} s ({model.describe()})", flush=True)
    last = time.monotonic()
    while not stopping.wait(args.tick):
        now = time.monotonic()
        phases = read_phases(args.folder / PHASES_FILE)
        for host in hosts:
            host.tick(phases, now - last, model)
        last = now
    print("counters: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
