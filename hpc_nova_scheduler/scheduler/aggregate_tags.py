"""Racks and processor groups as Nova's API database holds them.

Nova's scheduler caches host aggregates in each worker: it loads them when
the nova-scheduler parent starts and then follows changes it is told of by
fanout RPC. A worker that oslo.service starts again after one died is
forked from the parent and inherits the parent's cache as it was at start,
often before the operator tagged any host, and no one tells it of the
earlier changes: its hosts would have no rack and no processor group, and
an application could span groups. The plugin therefore reads the ``hpc:``
metadata of every aggregate itself, at most every :data:`REFRESH` seconds
per process, and uses Nova's cached aggregates only when that read fails.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from nova import context as nova_context
from nova import objects
from oslo_log import log as logging

from hpc_nova_scheduler.scheduler import domains

LOG = logging.getLogger(__name__)

#: Seconds a read of the aggregates serves requests in one process.
REFRESH = 5.0
KEYS = ("hpc:rack", "hpc:cpu_group", "hpc:platform")

#: host name -> metadata key -> the values its aggregates give it
Tags = Mapping[str, Mapping[str, frozenset[str]]]


class AggregateTags:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tags: Tags | None = None
        self._read_at = float("-inf")
        self._pid: int | None = None
        self._failing = False

    def _fresh(self) -> bool:
        return self._pid == os.getpid() and time.monotonic() - self._read_at < REFRESH

    def current(self) -> Tags | None:
        """Every host's ``hpc:`` metadata; None when Nova's database is unreadable."""
        if self._fresh():
            return self._tags
        with self._lock:
            if not self._fresh():
                self._tags = self._read()
                self._read_at = time.monotonic()
                self._pid = os.getpid()
        return self._tags

    def _read(self) -> Tags | None:
        try:
            aggregates = objects.AggregateList.get_all(nova_context.get_admin_context())
        except Exception as error:
            if not self._failing:
                LOG.warning(
                    "hpc-nova-scheduler: cannot read host aggregates from Nova's API "
                    "database (%s); using the scheduler's cached aggregates",
                    error,
                )
            self._failing = True
            return None
        self._failing = False
        # The topology's levels besides the rack (hpc:block, ...).
        return metadata_of(aggregates, dict.fromkeys((*KEYS, *domains.metadata_keys())))


def tags_of(aggregates: Iterable[Any]) -> dict[str, dict[str, frozenset[str]]]:
    """Every host's ``hpc:`` metadata, from Nova's aggregates."""
    return metadata_of(aggregates, KEYS)


def metadata_of(
    aggregates: Iterable[Any], keys: Iterable[str]
) -> dict[str, dict[str, frozenset[str]]]:
    """Every host's values of the metadata ``keys``, read as :func:`tags_of` reads its keys.

    Values are stripped; an empty one counts as none. A host that several
    aggregates tag differently keeps every value, for the caller to judge.
    """
    keys = tuple(keys)
    tags: dict[str, dict[str, set[str]]] = {}
    for aggregate in aggregates:
        metadata = aggregate.metadata or {}
        for key in keys:
            value = metadata.get(key)
            if isinstance(value, str) and value.strip():
                for host in aggregate.hosts or []:
                    tags.setdefault(host, {}).setdefault(key, set()).add(value.strip())
    return {
        host: {key: frozenset(values) for key, values in by_key.items()}
        for host, by_key in tags.items()
    }
