"""Fair share inside nova-scheduler (seed 002): the filter's reading side.

A **project** with a share (``fairshare share set``) is governed: its HPC
requests are held to its entitlements. Projects without a share, and
requests without ``hpc:`` extra specs or hint, are placed as before, but
for preemptible ones (``hpc:preemptible``): those of every project take
idle cores only, as loans the agent may take back.

nova-scheduler only reads: ``hpc-scheduler-agent`` (:mod:`hpc_nova_scheduler.agent`)
runs seed 002's two levels and writes the generations. Here,
:class:`Entitlements` is the filter's view of the latest generation, read
at most every :data:`REFRESH_SECONDS` per process; the platforms a request
may go to, and the check of its claim, come from
:mod:`hpc_nova_scheduler.fairshare.in_force`.

Entitlements expire: a generation older than two intervals (no allocator
ran for one whole interval: the agent is down or late) no longer holds,
and the filter places as if ``fairness_policy`` were ``none``, saying so
once in its log. Placement never waits for the agent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare.in_force import (
    Choice,
    InForce,
    choices,
    describe_no_idle_cores,
    describe_refusal,
)
from hpc_nova_scheduler.fairshare.platforms import cloud_from_json

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF

#: What the filter reads of a generation (the placement filter names them here).
__all__ = [
    "Choice",
    "Entitlements",
    "InForce",
    "choices",
    "describe_no_idle_cores",
    "describe_refusal",
    "settings",
    "warn_stale",
]

#: Seconds a read of the latest generation serves one process's requests.
REFRESH_SECONDS = 2.0

_REPORTED: set[str] = set()
_REPORTED_LOCK = threading.Lock()


def once(message: str, level: int = logging.ERROR) -> None:
    """Log ``message`` once per process."""
    with _REPORTED_LOCK:
        if message in _REPORTED:
            return
        _REPORTED.add(message)
    LOG.log(level, "hpc-nova-scheduler: %s", message)


def settings() -> hpc_conf.FairnessSettings | None:
    """The fair-share options; None when off, or when one is bad (logged once)."""
    try:
        return hpc_conf.fairness_settings(CONF)
    except hpc_conf.ConfigurationError as error:
        once(f"{error}; fair share stays off, HPC placement goes on without it")
        return None


def warn_stale(in_force: InForce) -> None:
    once(
        f"fair-share generation {in_force.generation} of {in_force.created_at:%Y-%m-%d %H:%M:%S} "
        "is stale (no allocator ran for two intervals: is hpc-scheduler-agent running?); "
        "placing without fair share until a new one is written",
        logging.WARNING,
    )


class Entitlements:
    """The generation in force, read at most every :data:`REFRESH_SECONDS` per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: dict[str, tuple[float, InForce | None]] = {}

    def current(self, database: db_api.Database) -> InForce | None:
        now = time.monotonic()
        cached = self._cached.get(database.url)
        if cached is not None and now - cached[0] < REFRESH_SECONDS:
            return cached[1]
        with self._lock:
            cached = self._cached.get(database.url)
            if cached is not None and now - cached[0] < REFRESH_SECONDS:
                return cached[1]
            found = self._read(database)
            self._cached[database.url] = (time.monotonic(), found)
            return found

    @staticmethod
    def _read(database: db_api.Database) -> InForce | None:
        latest = database.latest_generation()
        if latest is None:
            return None
        stored = latest.templates if isinstance(latest.templates, Mapping) else {}
        return InForce(
            generation=latest.number,
            created_at=latest.created_at,
            allocation=latest.allocation,
            templates=stored.get("templates", {}),
            affinity=stored.get("affinity", {}),
            governed=frozenset(database.shares()),
            cloud=cloud_from_json(stored.get("cloud", {"platforms": [], "hosts": {}})),
        )
