"""The instances running on this host, as libvirt's status files tell them.

libvirtd keeps one status file per running QEMU domain
(``/run/libvirt/qemu/<name>.xml``): ``<domstatus pid="...">`` around the
domain's definition, whose ``<uuid>`` is the Nova instance's UUID and whose
``<name>`` is ``instance-0000000x``. Reading them needs no connection to
libvirtd and no Nova database access, which a compute host does not have.

A file that cannot be read or parsed (libvirtd writing it at that moment,
a domain of someone else's) is skipped and named once by the caller; it
never stops the others.
"""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

#: libvirt's default folder of QEMU domains' status files.
LIBVIRT_QEMU_RUN = Path("/run/libvirt/qemu")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclasses.dataclass(frozen=True)
class Domain:
    """One running domain: libvirt's name, Nova's instance UUID, QEMU's process."""

    name: str
    uuid: str
    pid: int


@dataclasses.dataclass
class Found:
    domains: list[Domain] = dataclasses.field(default_factory=list)
    #: Files skipped, and why, one line each.
    skipped: list[str] = dataclasses.field(default_factory=list)


def read_status(path: Path) -> Domain:
    """One status file; ValueError naming what is missing or wrong."""
    try:
        root = ElementTree.fromstring(path.read_text())
    except (OSError, ElementTree.ParseError) as error:
        raise ValueError(f"{path}: {error}") from None
    if root.tag != "domstatus":
        raise ValueError(f"{path}: not a libvirt status file (root <{root.tag}>)")
    pid = root.get("pid", "")
    domain = root.find("domain")
    name = domain.findtext("name") if domain is not None else None
    uuid = (domain.findtext("uuid") or "").strip().lower() if domain is not None else ""
    if not pid.isdigit() or int(pid) <= 0:
        raise ValueError(f"{path}: pid {pid!r} is not a process id")
    if not name:
        raise ValueError(f"{path}: the domain has no <name>")
    if not _UUID.match(uuid):
        raise ValueError(f"{path}: <uuid> {uuid!r} is not a UUID")
    return Domain(name.strip(), uuid, int(pid))


def running(folder: Path = LIBVIRT_QEMU_RUN) -> Found:
    """Every domain with a status file in ``folder`` (none if it does not exist)."""
    found = Found()
    for path in sorted(folder.glob("*.xml")) if folder.is_dir() else ():
        try:
            found.domains.append(read_status(path))
        except ValueError as error:
            found.skipped.append(str(error))
    return found
