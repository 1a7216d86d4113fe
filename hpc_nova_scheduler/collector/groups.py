"""A resctrl monitoring group for every running instance.

Where libvirt monitors a domain itself (a ``<cachetune>`` with a
``<monitor>``, which makes a control group ``qemu-<id>-<name>-vcpus_<list>``
holding monitoring groups), the collector reads libvirt's groups: a task
belongs to one control group, and moving it out would undo libvirt's
cache allocation. Otherwise it makes ``mon_groups/<instance uuid>`` under
the default group and writes every thread of the domain's QEMU process
into its ``tasks`` (vCPUs, emulator and I/O threads: all of them load the
cache on the VM's behalf). The threads are written again when they change
(a vCPU hot-plugged, a new I/O thread). Groups of this naming whose domain
is gone are removed: the kernel has a limited number of RMIDs.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from hpc_nova_scheduler.characterise.counters import ResctrlMount
from hpc_nova_scheduler.collector.domains import Domain
from hpc_nova_scheduler.collector.once import SayOnce

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def process_threads(pid: int) -> set[int]:
    """The thread ids of process ``pid`` (none if it is gone)."""
    try:
        return {int(entry) for entry in os.listdir(f"/proc/{pid}/task") if entry.isdigit()}
    except OSError:
        return set()


class MonitoringGroups:
    """The monitoring group(s) of each running instance, made and removed as domains come and go."""

    def __init__(
        self,
        mount: ResctrlMount,
        say: Callable[[str], None],
        threads: Callable[[int], set[int]] = process_threads,
    ) -> None:
        self.mount = mount
        self._once = SayOnce(say)
        self._threads = threads
        #: Threads written into each of our groups, by instance.
        self._written: dict[str, set[int]] = {}

    def _libvirt_groups(self, domains: Sequence[Domain]) -> dict[str, list[Path]]:
        """libvirt's monitoring groups of each domain, by instance uuid."""
        found: dict[str, list[Path]] = {}
        controls = [c for c in self.mount.control_groups()[1:] if c.name.startswith("qemu-")]
        for domain in domains:
            marker = f"-{domain.name}-"
            for control in controls:
                if marker not in control.name:
                    continue
                folder = control / "mon_groups"
                for group in sorted(folder.iterdir()) if folder.is_dir() else ():
                    if group.is_dir():
                        found.setdefault(domain.uuid, []).append(group)
        return found

    def sync(self, domains: Sequence[Domain]) -> dict[str, list[Path]]:
        """Every running instance's monitoring groups, made where missing."""
        groups = self._libvirt_groups(domains)
        ours = self.mount.root / "mon_groups"
        for domain in domains:
            if domain.uuid in groups:
                continue
            path = ours / domain.uuid
            try:
                path.mkdir(exist_ok=True)
            except OSError as error:
                # ENOSPC: the kernel has no free RMID for another group.
                self._once(
                    f"cannot make monitoring group {path}: {error.strerror or error}; "
                    "its instance is not measured (said once)",
                    kind=("mkdir", error.errno),
                )
                continue
            threads = self._threads(domain.pid)
            if threads and threads != self._written.get(domain.uuid):
                self._write_tasks(path, threads)
                self._written[domain.uuid] = threads
            groups[domain.uuid] = [path]
        running = {d.uuid for d in domains}
        for path in sorted(ours.iterdir()) if ours.is_dir() else ():
            if _UUID.match(path.name) and path.name not in running:
                self.remove(path)
        return groups

    def _write_tasks(self, path: Path, threads: set[int]) -> None:
        with open(path / "tasks", "a") as tasks:
            for tid in sorted(threads):
                try:
                    # One thread a write: the kernel takes one id at a time.
                    tasks.write(f"{tid}\n")
                    tasks.flush()
                except OSError as error:
                    if error.errno != errno.ESRCH:  # a thread that ended meanwhile
                        raise

    def remove(self, path: Path) -> None:
        self._written.pop(path.name, None)
        try:
            path.rmdir()
        except OSError as error:
            if error.errno == errno.ENOTEMPTY:
                # The kernel removes a group's files with it; a folder laid
                # out as resctrl (tests, the devcloud) holds real files.
                shutil.rmtree(path, ignore_errors=True)
                return
            self._once(
                f"cannot remove monitoring group {path}: {error.strerror or error} (said once)",
                kind=("rmdir", error.errno),
            )
