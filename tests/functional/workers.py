"""Two nova-scheduler services in one harness, requests alternating between them."""

from __future__ import annotations

import copy
import itertools
import threading

import fixtures
from nova.scheduler import rpcapi as scheduler_rpcapi
from nova.tests import fixtures as nova_fixtures

SECOND_TOPIC = "scheduler-2"


class _Routed:
    """An RPC client whose calls go to one topic."""

    def __init__(self, client_: object, topic: str) -> None:
        self._client, self._topic = client_, topic

    def __getattr__(self, name: str) -> object:
        return getattr(self._client, name)

    def prepare(self, **kwargs: object) -> object:
        return self._client.prepare(topic=self._topic, **kwargs)


class TwoSchedulers:
    """Mixin: a second scheduler service; ``select_destinations`` alternates."""

    def _setup_services(self) -> None:
        super()._setup_services()
        # Nova's start_service refuses a second scheduler; its fixture does
        # not. On one topic the first service would take every message (the
        # fake transport's listeners poll one queue), so the second listens
        # on a topic of its own and requests alternate between the two, as a
        # message queue spreads them over nova-scheduler workers.
        self.second_scheduler = self.useFixture(
            nova_fixtures.ServiceFixture("scheduler", topic=SECOND_TOPIC)
        )
        topics = itertools.cycle([scheduler_rpcapi.RPC_TOPIC, SECOND_TOPIC])
        lock = threading.Lock()
        original = scheduler_rpcapi.SchedulerAPI.select_destinations

        def alternating(api, *args, **kwargs):
            with lock:
                topic = next(topics)
            routed = copy.copy(api)
            routed.client = _Routed(api.client, topic)
            return original(routed, *args, **kwargs)

        self.useFixture(
            fixtures.MonkeyPatch(
                "nova.scheduler.rpcapi.SchedulerAPI.select_destinations", alternating
            )
        )

    def plugin_filters(self) -> list:
        """The plugin's filter in each scheduler service."""
        return [
            next(f for f in svc.manager.host_manager.enabled_filters if hasattr(f, "_entitlements"))
            for svc in (self.scheduler, self.second_scheduler.service)
        ]
