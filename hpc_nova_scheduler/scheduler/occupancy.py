"""Who holds resources on a host, as Placement says: the earliest trace of a VM.

A request without ``hpc:`` specs is left to Nova's weighers, so the plugin
never learns where it goes until its compute reports it. Placement knows as
soon as Nova claims the resources, before any compute does. An ExtremeHPC
plan asks it whether its hosts are really empty: once right after the claim
is written (requests that had read the database before then may already
have claimed), and again before its last VM is placed (requests that read
it before the claim but claimed after the first look).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from nova import context as nova_context
from nova.scheduler.client import report
from oslo_log import log as logging

from hpc_nova_scheduler.scheduler.host_view import host_key

LOG = logging.getLogger(__name__)


class PlacementOccupancy:
    """Consumers of each host's resource provider."""

    def __init__(self) -> None:
        self._warned = threading.Event()

    def _client(self) -> Any:
        return report.report_client_singleton()

    def consumers(self, host_states: Iterable[Any]) -> dict[str, set[str]] | None:
        """Consumer uuids per host key; None where Placement cannot be asked."""
        found: dict[str, set[str]] = {}
        try:
            client = self._client()
            ctxt = nova_context.get_admin_context()
            for hs in host_states:
                uuid = getattr(hs, "uuid", None)
                if not uuid:
                    continue
                info = client.get_allocations_for_resource_provider(ctxt, uuid)
                found[host_key(hs)] = set(info.allocations)
        except Exception as error:
            if not self._warned.is_set():
                self._warned.set()
                LOG.warning(
                    "hpc-nova-scheduler: cannot read allocations from Placement (%s); "
                    "ExtremeHPC hosts are judged from the plugin database and Nova's "
                    "host states only",
                    error,
                )
            return None
        return found

    def foreign(self, host_states: Iterable[Any], allowed: set[str]) -> set[str]:
        """Host keys where a consumer other than ``allowed`` holds resources."""
        found = self.consumers(host_states)
        if not found:
            return set()
        return {key for key, consumers in found.items() if consumers - allowed}
