"""A compute host's instances as ``hpc-scheduler-collector`` finds them, without RDT or libvirt.

The collector reads two folders on a compute host: libvirt's status files
of the running QEMU domains (``[hpc_collector] libvirt_run_dir``) and the
resctrl mount (``[hpc_collector] resctrl_root``). :class:`MeasuredHost` lays
both out under one folder, as libvirtd and the kernel lay them out, and
lets a caller start and stop instances and drive what each one holds of
the last-level cache and how many bytes it has moved. The functional tests
and the devcloud's fake computes point a real collector at it.
"""

from __future__ import annotations

from pathlib import Path

from hpc_nova_scheduler import atomicfile
from hpc_nova_scheduler.demo.resctrl_tree import ResctrlTree

#: The XML namespace of the fake hypervisor's ``<workload>`` in a domain's
#: ``<metadata>``, where Nova's libvirt driver keeps ``<nova:instance>``.
WORKLOAD_NS = "https://opendev.org/hpc-nova-scheduler/fake-workload"


def status_xml(
    name: str, uuid: str, pid: int | str, vcpus: int = 4, cache_score: float | None = None
) -> str:
    """A domain's status file as libvirtd writes it, shortened to what is read.

    ``cache_score``: how the fake hypervisor's guest really uses the cache
    (what :mod:`devcloud.counters` makes its counters show), kept in the
    domain's metadata; the collector does not read it.
    """
    metadata = ""
    if cache_score is not None:
        metadata = (
            "    <metadata>\n"
            f"      <fake:workload xmlns:fake='{WORKLOAD_NS}' cache_score='{cache_score:g}'/>\n"
            "    </metadata>\n"
        )
    return (
        f"<domstatus state='running' reason='booted' pid='{pid}'>\n"
        "  <taint flag='high-privileges'/>\n"
        "  <domain type='kvm' id='7'>\n"
        f"    <name>{name}</name>\n"
        f"    <uuid>{uuid}</uuid>\n"
        f"{metadata}"
        f"    <vcpu placement='static'>{vcpus}</vcpu>\n"
        "  </domain>\n"
        "</domstatus>\n"
    )


class MeasuredHost:
    """libvirt's run folder and a resctrl mount of one host, under ``folder``."""

    def __init__(self, folder: Path, **tree) -> None:
        folder = Path(folder)
        self.run_dir = folder / "qemu"
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.tree = ResctrlTree(folder / "resctrl", **tree).lay_out()
        self._names: dict[str, str] = {}
        self._moved: dict[str, int] = {}

    @property
    def llc_bytes(self) -> int:
        """The host's LLC, every cache domain together."""
        return self.tree.llc_bytes_per_domain * len(self.tree.domains)

    def group(self, uuid: str) -> Path:
        return self.tree.root / "mon_groups" / uuid

    def start(self, uuid: str, pid: int) -> None:
        """Instance ``uuid`` runs, in QEMU process ``pid``, holding nothing yet
        (one already running goes on as it was)."""
        if uuid in self._names:
            return
        name = f"instance-{len(self._names) + 1:08x}"
        self._names[uuid] = name
        with atomicfile.open_replacing(str(self.run_dir / f"{name}.xml")) as stream:
            stream.write(status_xml(name, uuid, pid))
        # The kernel fills a monitoring group's files at mkdir; done here
        # first, so the collector's mkdir finds the group made.
        if not self.group(uuid).exists():
            self.tree.add_monitoring_group(uuid)
        self._moved[uuid] = 0

    def stop(self, uuid: str) -> None:
        """Instance ``uuid`` no longer runs (libvirtd removes its status file)."""
        name = self._names.pop(uuid, None)
        if name is not None:
            (self.run_dir / f"{name}.xml").unlink(missing_ok=True)
        self._moved.pop(uuid, None)

    def occupy(self, uuid: str, occupancy: int) -> None:
        """Instance ``uuid`` holds ``occupancy`` bytes of the LLC, spread over the domains."""
        self.tree.set_total(self.group(uuid), "llc_occupancy", occupancy)

    def move(self, uuid: str, nbytes: int) -> None:
        """Instance ``uuid`` moves ``nbytes`` more to and from memory (all local)."""
        self._moved[uuid] = self._moved.get(uuid, 0) + nbytes
        for counter in ("mbm_total_bytes", "mbm_local_bytes"):
            self.tree.set_total(self.group(uuid), counter, self._moved[uuid])
