"""The VMs this scheduler service placed lately, which Nova's host states already count."""

from __future__ import annotations

import threading
import time


class PlacedHere:
    """The VMs this scheduler service placed lately.

    Nova's host manager keeps its host states between requests and takes
    each VM it places off them at once (``consume_from_request``): this
    service's own VMs are counted there until their compute reports, and
    must not be taken off the free cores a second time. Another service's
    are not. Kept for :data:`KEEP` seconds, far longer than a compute takes
    to report a VM.
    """

    KEEP = 600.0

    def __init__(self) -> None:
        self._placed: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, instance_uuid: str) -> None:
        now = time.monotonic()
        with self._lock:
            self._placed[instance_uuid] = now
            if len(self._placed) > 4096:
                self._placed = {
                    uuid: at for uuid, at in self._placed.items() if now - at < self.KEEP
                }

    def __contains__(self, instance_uuid: object) -> bool:
        with self._lock:
            at = self._placed.get(instance_uuid)  # type: ignore[arg-type]
        return at is not None and time.monotonic() - at < self.KEEP
