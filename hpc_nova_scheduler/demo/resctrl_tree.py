"""A folder laid out as the kernel lays out a mounted resctrl file system.

Hosts without Intel RDT or AMD QoS (this machine, CI, the devcloud's fake
computes) have no ``/sys/fs/resctrl``. Tests and the devcloud point the
readers at a :class:`ResctrlTree` instead, and drive its counters over
time: the same files, names and formats as the kernel's (see the kernel's
``Documentation/arch/x86/resctrl.rst``), ``Unavailable`` and ``Error``
included. Each counter file is replaced whole, as a read of the kernel's
file is whole, so a reader never sees half a number.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from hpc_nova_scheduler import atomicfile
from hpc_nova_scheduler.characterise.counters import RESCTRL_COUNTERS

#: What the kernel writes into a counter it cannot read.
UNAVAILABLE = "Unavailable"
ERROR = "Error"


def _write(path: Path, text: str) -> None:
    """Replace ``path`` whole (several processes may write one file: the
    devcloud's counters and a compute's driver)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomicfile.open_replacing(str(path)) as stream:
        stream.write(text)


class ResctrlTree:
    """A resctrl mount of ``domains`` L3 cache domains, monitoring ``features``."""

    def __init__(
        self,
        root: Path,
        *,
        domains: int = 2,
        features: Sequence[str] = RESCTRL_COUNTERS,
        cache_ways: int = 11,
        rmids: int = 176,
        llc_bytes_per_domain: int = 30 * 2**20,
    ) -> None:
        self.root = Path(root)
        self.domains = [f"mon_L3_{index:02d}" for index in range(domains)]
        self.features = list(features)
        self.cache_ways = cache_ways
        self.rmids = rmids
        self.llc_bytes_per_domain = llc_bytes_per_domain

    def lay_out(self) -> ResctrlTree:
        """The mount's own files and the default group; returns self."""
        mask = format((1 << self.cache_ways) - 1, "x")
        info = self.root / "info"
        _write(info / "last_cmd_status", "ok\n")
        for name, text in {
            "cbm_mask": mask,
            "min_cbm_bits": "1",
            "num_closids": "16",
            "shareable_bits": "0",
            "sparse_masks": "0",
        }.items():
            _write(info / "L3" / name, f"{text}\n")
        if self.features:
            monitor = info / "L3_MON"
            _write(monitor / "mon_features", "".join(f"{f}\n" for f in self.features))
            _write(monitor / "num_rmids", f"{self.rmids}\n")
            _write(monitor / "max_threshold_occupancy", "270336\n")
        (self.root / "mon_groups").mkdir(parents=True, exist_ok=True)
        self._group_files(self.root, control=True)
        return self

    def _group_files(self, path: Path, *, control: bool) -> None:
        for name in ("tasks", "cpus", "cpus_list"):
            _write(path / name, "")
        if control:
            schemata = ";".join(
                f"{i}={format((1 << self.cache_ways) - 1, 'x')}" for i in range(len(self.domains))
            )
            _write(path / "schemata", f"L3:{schemata}\n")
            _write(path / "mode", "shareable\n")
            size = ";".join(f"{i}={self.llc_bytes_per_domain}" for i in range(len(self.domains)))
            _write(path / "size", f"L3:{size}\n")
            (path / "mon_groups").mkdir(exist_ok=True)
        for domain in self.domains:
            for feature in self.features:
                _write(path / "mon_data" / domain / feature, "0\n")

    def add_control_group(self, name: str) -> Path:
        """A control group beside the default one (libvirt's ``<cachetune>`` makes one)."""
        path = self.root / name
        path.mkdir()
        self._group_files(path, control=True)
        return path

    def add_monitoring_group(self, name: str, control: str | None = None) -> Path:
        """A monitoring group, populated as the kernel populates one at ``mkdir``."""
        parent = self.root if control is None else self.root / control
        path = parent / "mon_groups" / name
        path.mkdir()
        self.populate(path)
        return path

    def ensure_monitoring_group(self, name: str) -> Path:
        """Monitoring group ``name`` of the default group, populated, made
        whole in one rename so that a reader never finds it without its
        files (the kernel fills a group at ``mkdir``); one that is there,
        made by the collector a moment before, is filled in place."""
        path = self.root / "mon_groups" / name
        if (path / "mon_data").is_dir():
            return path
        scratch = path.with_name(f".{name}.new")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        self.populate(scratch)
        try:
            os.rename(scratch, path)
        except OSError:
            # The collector made it and wrote its tasks meanwhile.
            shutil.rmtree(scratch, ignore_errors=True)
            self.populate(path)
        return path

    def populate(self, path: Path) -> None:
        """The files the kernel gives a monitoring group someone else made with ``mkdir``."""
        self._group_files(path, control=False)

    def set(self, group: Path, counter: str, values: Sequence[int | str]) -> None:
        """``counter`` of ``group`` in each cache domain: a number, or what the kernel writes."""
        if len(values) != len(self.domains):
            raise ValueError(f"{len(self.domains)} domains, {len(values)} values")
        for domain, value in zip(self.domains, values, strict=True):
            _write(group / "mon_data" / domain / counter, f"{value}\n")

    def set_total(self, group: Path, counter: str, total: int) -> None:
        """``counter`` of ``group`` summing to ``total`` over the cache domains,
        spread evenly (what a reader sums back)."""
        share, rest = divmod(int(total), len(self.domains))
        self.set(group, counter, [share + (index < rest) for index in range(len(self.domains))])

    def read(self, group: Path, counter: str) -> list[int]:
        """``counter`` of ``group`` per domain as this tree holds it (numbers only)."""
        return [int((group / "mon_data" / d / counter).read_text()) for d in self.domains]
