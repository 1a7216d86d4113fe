"""Batch files: the applications to plan at once and the cloud to plan them on.

A YAML file::

    cloud: {hosts: 20, vcpus: 12, ram_mb: 49152}
    batch:
      - {application: PTRANS.I1.P6, count: 2, vcpus: 6, ram_mb: 24576}
      - {application: DGEMM.I1.P4, vcpus: 4, ram_mb: 16384}

Each entry is ``count`` instances (default 1) of an application from the
profile database, each needing ``vcpus`` and ``ram_mb`` on one host (all
its VMs together). The cloud is ``hosts`` identical empty hosts of
``vcpus`` and ``ram_mb`` each; a file planned on the live cloud (``plan
--live``) leaves ``cloud:`` out. Every problem in the file is reported
with its line; a file with any is refused whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import yaml

from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.core.profile import ProfileError, parse_app_name
from hpc_nova_scheduler.core.records import ProfileRecord, parse_float
from hpc_nova_scheduler.datafiles import DataFileError, RowError
from hpc_nova_scheduler.planners.base import Batch, BatchApp

ENTRY_FIELDS = ("application", "count", "vcpus", "ram_mb")
CLOUD_FIELDS = ("hosts", "vcpus", "ram_mb")


@dataclasses.dataclass(frozen=True)
class Entry:
    application: str
    count: int
    vcpus: float
    ram_mb: float
    line: int | None


@dataclasses.dataclass(frozen=True)
class BatchFile:
    #: The cloud, None where the file has no ``cloud:``.
    hosts: int | None
    vcpus: float | None
    ram_mb: float | None
    entries: tuple[Entry, ...]

    @property
    def has_cloud(self) -> bool:
        return self.hosts is not None

    def batch(self, profiles: Mapping[str, ProfileRecord], path: str) -> Batch:
        """The batch, each application's demand a share of one host."""
        if self.hosts is None or self.vcpus is None or self.ram_mb is None:
            raise DataFileError([RowError(path, None, "no 'cloud:' to plan on")])
        errors = []
        apps = []
        for entry in self.entries:
            profile = profiles.get(entry.application)
            if profile is None:
                errors.append(RowError(path, entry.line, f"no profile of {entry.application}"))
                continue
            cpu, mem = entry.vcpus / self.vcpus, entry.ram_mb / self.ram_mb
            if cpu > 1 or mem > 1:
                errors.append(
                    RowError(path, entry.line, f"{entry.application} needs more than one host")
                )
                continue
            apps += [BatchApp(profile, cpu, mem)] * entry.count
        if errors:
            raise DataFileError(errors)
        return Batch(tuple(apps), self.hosts)


def _whole(value: Any, key: str) -> int:
    number = parse_float(value, key, minimum=1)
    if number != int(number):
        raise ProfileError(key, f"{value!r} is not a whole number")
    return int(number)


def _cloud(cloud: Any, path: str) -> tuple[int, float, float]:
    if not isinstance(cloud, dict):
        raise DataFileError([RowError(path, None, "'cloud' must be a mapping")])
    line = cloud.pop("__line__", None)
    try:
        unknown = sorted(set(cloud) - set(CLOUD_FIELDS))
        if unknown:
            raise ProfileError(f"cloud.{unknown[0]}", "unknown; known: " + ", ".join(CLOUD_FIELDS))
        hosts = _whole(cloud.get("hosts"), "cloud.hosts")
        vcpus = parse_float(cloud.get("vcpus"), "cloud.vcpus", minimum=0, exclusive_minimum=True)
        ram = parse_float(cloud.get("ram_mb"), "cloud.ram_mb", minimum=0, exclusive_minimum=True)
    except ProfileError as error:
        raise DataFileError([RowError(path, line, str(error))]) from None
    return hosts, vcpus, ram


def read(path: str, *, cloud: bool = True) -> BatchFile:
    """Read and check a batch file; ``cloud``: whether ``cloud:`` is required."""
    text = datafiles.read_text(path)
    try:
        document = yaml.load(text, Loader=datafiles.LineLoader)  # a SafeLoader subclass: safe
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise DataFileError(
            [RowError(path, mark.line + 1 if mark else None, "not valid YAML")]
        ) from None
    if not isinstance(document, dict) or "batch" not in document:
        raise DataFileError([RowError(path, None, "expected a 'batch:' section")])
    if cloud and "cloud" not in document:
        raise DataFileError([RowError(path, None, "expected 'cloud:' and 'batch:' sections")])
    if not cloud and "cloud" in document:
        raise DataFileError(
            [RowError(path, None, "'cloud:' describes another cloud than the live one")]
        )
    errors: list[RowError] = []
    hosts, vcpus, ram = None, None, None
    if cloud:
        hosts, vcpus, ram = _cloud(document["cloud"], path)
    items = document["batch"]
    if not isinstance(items, list) or not items:
        raise DataFileError([RowError(path, None, "'batch' must be a list of applications")])
    entries = []
    for item in items:
        if not isinstance(item, dict):
            errors.append(RowError(path, None, f"each entry must be a mapping, got {item!r}"))
            continue
        line = item.pop("__line__", None)
        try:
            unknown = sorted(set(item) - set(ENTRY_FIELDS))
            if unknown:
                raise ProfileError(unknown[0], "unknown field; known: " + ", ".join(ENTRY_FIELDS))
            entries.append(
                Entry(
                    parse_app_name(item.get("application"), key="application"),
                    _whole(item.get("count", 1), "count"),
                    parse_float(item.get("vcpus"), "vcpus", minimum=0, exclusive_minimum=True),
                    parse_float(item.get("ram_mb"), "ram_mb", minimum=0),
                    line,
                )
            )
        except ProfileError as error:
            errors.append(RowError(path, line, str(error)))
    if errors:
        raise DataFileError(errors)
    return BatchFile(hosts, vcpus, ram, tuple(entries))
