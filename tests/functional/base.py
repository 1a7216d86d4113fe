"""Base for tests that run the plugin inside Nova's own functional harness.

The harness runs the real nova-api (WSGI), conductor, scheduler and
fake-driver computes in one process, with real Placement.
"""

from __future__ import annotations

import os
import sysconfig

from nova.tests.functional import integrated_helpers

HPC_FILTERS = "hpc_nova_scheduler.scheduler.filters.all_filters"
HPC_WEIGHERS = "hpc_nova_scheduler.scheduler.weights.all_weighers"


def api_paste_config() -> str:
    """The api-paste.ini that the nova wheel installs under ``etc/nova``."""
    path = os.path.join(sysconfig.get_path("data"), "etc", "nova", "api-paste.ini")
    if not os.path.isfile(path):
        raise RuntimeError(f"nova's api-paste.ini is not at {path}; is nova installed here?")
    return path


class NovaTestCase(integrated_helpers._IntegratedTestBase):
    """Nova with the plugin's filters and weighers available next to Nova's."""

    compute_driver = "fake.MediumFakeDriver"
    microversion = "latest"
    ADMIN_API = True
    #: Extra filters to enable, after Nova's defaults.
    EXTRA_FILTERS: tuple[str, ...] = ()

    def _setup_services(self) -> None:
        self.flags(api_paste_config=api_paste_config(), group="wsgi")
        self.flags(
            available_filters=["nova.scheduler.filters.all_filters", HPC_FILTERS],
            weight_classes=["nova.scheduler.weights.all_weighers", HPC_WEIGHERS],
            group="filter_scheduler",
        )
        if self.EXTRA_FILTERS:
            from nova import conf as nova_conf

            enabled = list(nova_conf.CONF.filter_scheduler.enabled_filters)
            self.flags(enabled_filters=enabled + list(self.EXTRA_FILTERS), group="filter_scheduler")
        super()._setup_services()

    def boot(
        self,
        flavor_id: str,
        *,
        hints: dict | None = None,
        min_count: int = 1,
        expected_state: str = "ACTIVE",
    ) -> dict:
        """Boot through the API; hints go in ``os:scheduler_hints``."""
        body: dict = {"server": self._build_server(flavor_id=flavor_id, networks="none")}
        if min_count > 1:
            body["server"]["min_count"] = min_count
        if hints:
            body["os:scheduler_hints"] = hints
        server = self.api.post_server(body)
        return self._wait_for_state_change(server, expected_state)
