"""A small cloud in one process: Nova's functional harness with the plugin.

:class:`NovaCloud` is a ``testtools`` test case because Nova's harness is
one; the functional tests subclass it, and the demo drives it directly
(``start()`` / ``stop()``).
"""

from __future__ import annotations

import collections
import os
import sysconfig
import time

import fixtures
from nova.tests.functional import integrated_helpers

from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.demo import fake_driver

# Nova's harness makes os.uname raise inside a test, and numpy calls it when
# first imported; the scheduler plugin (which uses numpy) is therefore
# imported with the cloud, before any cloud starts, rather than when Nova
# loads it.
from hpc_nova_scheduler.scheduler import placement_filter as _placement_filter  # noqa: F401
from hpc_nova_scheduler.scheduler import plan_weigher as _plan_weigher  # noqa: F401

HPC_FILTERS = "hpc_nova_scheduler.scheduler.filters.all_filters"
HPC_WEIGHERS = "hpc_nova_scheduler.scheduler.weights.all_weighers"
# Nova loads drivers from nova.virt only: the test driver is grafted onto
# nova.virt.fake for the test's duration.
FAKE_DRIVER = "fake.HpcFakeDriver"
MULTI_NODE_DRIVER = "fake.HpcMultiNodeFakeDriver"


def api_paste_config() -> str:
    """The api-paste.ini that the nova wheel installs under ``etc/nova``."""
    path = os.path.join(sysconfig.get_path("data"), "etc", "nova", "api-paste.ini")
    if not os.path.isfile(path):
        raise RuntimeError(f"nova's api-paste.ini is not at {path}; is nova installed here?")
    return path


class NovaCloud(integrated_helpers._IntegratedTestBase):
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
        """Boot one server through the API; hints go in ``os:scheduler_hints``."""
        body: dict = {"server": self._build_server(flavor_id=flavor_id, networks="none")}
        if min_count > 1:
            body["server"]["min_count"] = min_count
        if hints:
            body["os:scheduler_hints"] = hints
        server = self.api.post_server(body)
        return self._wait_for_state_change(server, expected_state)


class HpcCloud(NovaCloud):
    """A small cloud of shaped hosts, racks and processor groups, with the plugin on.

    ``HOSTS`` maps host names to :class:`fake_driver.Shape` (only the names
    count with ``STOCK_DRIVER``); ``RACKS``, ``CPU_GROUPS`` and ``TAGS`` map
    aggregate metadata values to host names.
    """

    EXTRA_FILTERS = ("HpcPlacementFilter",)
    HOSTS: dict[str, fake_driver.Shape] = {f"n{i}": fake_driver.Shape() for i in range(1, 5)}
    RACKS: dict[str, list[str]] = {}
    CPU_GROUPS: dict[str, list[str]] = {}
    #: Further aggregate metadata: key -> value -> host names (``{"hpc:block":
    #: {"b1": [...]}}`` for a topology level besides the rack).
    TAGS: dict[str, dict[str, list[str]]] = {}
    HPC_FLAGS: dict = {}
    #: The plugin database; a throw-away SQLite file when unset.
    DB_URL: str | None = None
    #: One of Nova's own drivers (``"fake.MediumFakeDriver"``) to run instead
    #: of the shaped one; ``HOSTS`` then only names the computes.
    STOCK_DRIVER: str | None = None
    #: Placement's cpu_allocation_ratio: HPC hosts are not overcommitted.
    CPU_RATIO: float = 1.0
    #: Compute services that manage several nodes each, as one Ironic
    #: compute does: host -> node name -> shape (``HOSTS`` is then unused).
    #: Aggregates (``RACKS``, ``CPU_GROUPS``, ``TAGS``) name the hosts.
    NODES: dict[str, dict[str, fake_driver.Shape]] = {}

    def _setup_services(self) -> None:
        if self.STOCK_DRIVER:
            self.flags(compute_driver=self.STOCK_DRIVER)
        elif self.NODES:
            self.useFixture(fixtures.MonkeyPatch(f"{fake_driver.__name__}.NODES", dict(self.NODES)))
            self.useFixture(
                fixtures.MonkeyPatch(
                    "nova.virt.fake.HpcMultiNodeFakeDriver", fake_driver.HpcMultiNodeFakeDriver
                )
            )
            self.flags(compute_driver=MULTI_NODE_DRIVER)
        else:
            self.useFixture(
                fixtures.MonkeyPatch(f"{fake_driver.__name__}.SHAPES", dict(self.HOSTS))
            )
            self.useFixture(
                fixtures.MonkeyPatch("nova.virt.fake.HpcFakeDriver", fake_driver.HpcFakeDriver)
            )
            self.flags(compute_driver=FAKE_DRIVER)
        self.flags(instances=-1, cores=-1, ram=-1, group="quota")
        # HPC hosts are not overcommitted; "initial" ratios apply to the
        # compute node records created when the computes first start.
        self.flags(
            cpu_allocation_ratio=self.CPU_RATIO,
            ram_allocation_ratio=1.0,
            disk_allocation_ratio=1.0,
            initial_cpu_allocation_ratio=self.CPU_RATIO,
            initial_ram_allocation_ratio=1.0,
            initial_disk_allocation_ratio=1.0,
            reserved_host_memory_mb=0,
            reserved_host_disk_mb=0,
        )
        directory = self.useFixture(fixtures.TempDir()).path
        if self.DB_URL:
            self.db_url = self.DB_URL
        else:
            self.db_url = f"sqlite:///{os.path.join(directory, 'hpc.sqlite')}"
        self.fallback_url = f"sqlite:///{os.path.join(directory, 'hpc-fallback.sqlite')}"
        self.flags(fallback_connection=self.fallback_url, group="hpc_scheduler")
        self.database = db_api.Database(self.db_url)
        self.addCleanup(self.database.dispose)
        self.database.sync()
        self.flags(connection=self.db_url, group="hpc_scheduler")
        if self.HPC_FLAGS:
            self.flags(group="hpc_scheduler", **self.HPC_FLAGS)
        super()._setup_services()
        layouts = [("hpc:rack", self.RACKS), ("hpc:cpu_group", self.CPU_GROUPS)]
        for key, layout in [*layouts, *self.TAGS.items()]:
            for value, members in layout.items():
                self.tag_hosts(f"{key}={value}", {key: value}, members)

    def _setup_compute_service(self):
        for name in self.NODES or self.HOSTS:
            self._start_compute(name)

    def tag_hosts(self, name: str, metadata: dict, hosts: list[str]) -> None:
        aggregate = self.admin_api.post_aggregate({"aggregate": {"name": name}})
        self.admin_api.post_aggregate_action(
            aggregate["id"], {"set_metadata": {"metadata": metadata}}
        )
        for host in hosts:
            self.admin_api.add_host_to_aggregate(aggregate["id"], host)

    def hpc_flavor(self, *, vcpus: int = 1, ram: int = 1024, disk: int = 1, **specs: str) -> str:
        """A flavor whose ``hpc:`` specs are given as keyword arguments."""
        flavor_id = self._create_flavor(memory_mb=ram, vcpu=vcpus, disk=disk, ephemeral=0)
        extra = {f"hpc:{key}": str(value) for key, value in specs.items()}
        if extra:
            self.admin_api.post_extra_spec(flavor_id, {"extra_specs": extra})
        return flavor_id

    def launch(
        self, flavor_id: str, count: int = 1, *, hints: dict | None = None, group: str | None = None
    ) -> list[dict]:
        """Boot ``count`` servers in one request; return them all, final state."""
        body: dict = {"server": self._build_server(flavor_id=flavor_id, networks="none")}
        body["server"]["min_count"] = count
        body["server"]["return_reservation_id"] = True
        scheduler_hints = dict(hints or {})
        if group:
            scheduler_hints["group"] = group
        if scheduler_hints:
            body["os:scheduler_hints"] = scheduler_hints
        reservation = self.api.post_server(body)["reservation_id"]
        for _ in range(100):
            servers = self.api.get_servers(detail=True, search_opts={"reservation_id": reservation})
            if servers and all(s["status"] != "BUILD" for s in servers):
                return servers
            time.sleep(0.1)
        self.fail(f"servers of {reservation} still building: {servers}")

    @staticmethod
    def hosts_of(servers: list[dict]) -> dict[str, int]:
        """VMs per host of ACTIVE servers."""
        return dict(
            collections.Counter(
                s["OS-EXT-SRV-ATTR:host"] for s in servers if s["status"] == "ACTIVE"
            )
        )

    def assert_refused(self, servers: list[dict]) -> None:
        self.assertTrue(servers)
        self.assertEqual({"ERROR"}, {s["status"] for s in servers})
        for server in servers:
            fault = self.api.get_server(server["id"]).get("fault", {})
            self.assertIn("No valid host", fault.get("message", ""))

    def start(self) -> None:
        """Start the cloud outside a test runner."""
        self.setUp()

    def stop(self) -> None:
        self.doCleanups()

    def server_group(self, policy: str = "affinity") -> str:
        # Seed 003's application identity: any policy works; soft-affinity
        # keeps Nova's own group filters out of the way.
        return self.api.post_server_groups({"name": "app", "policy": policy})["id"]
