"""What the live cloud holds, read through Nova's and Placement's APIs.

Read with openstacksdk as an admin would with ``openstack server list
--all-projects --long``, ``openstack aggregate show`` and ``openstack
resource provider inventory list``: each compute host's capacity is what
Placement will allocate on it ((total - reserved) x allocation ratio),
its rack and processor group come from aggregate metadata, and each
server carries its flavor (microversion 2.47 and later embed it).
"""

from __future__ import annotations

import dataclasses
import functools

#: Aggregate metadata keys of the product (see doc/source/admin/hosts.rst).
RACK_KEY = "hpc:rack"
CPU_GROUP_KEY = "hpc:cpu_group"


class CloudUnreadable(Exception):
    """The cloud's APIs could not be read; nothing was planned."""


@dataclasses.dataclass(frozen=True)
class ComputeNode:
    """One compute node: ``name`` is its service host, ``nodename`` its
    hypervisor (and Placement resource provider) name."""

    name: str
    nodename: str
    vcpus: float
    memory_mb: float
    cpu_group: str | None = None
    rack: str | None = None
    #: The compute service is enabled and up: it can send and receive servers.
    usable: bool = True


@dataclasses.dataclass(frozen=True)
class Server:
    id: str
    name: str
    host: str | None
    status: str
    task_state: str | None
    vcpus: int
    ram_mb: int
    project_id: str | None = None
    extra_specs: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class CloudView:
    hosts: tuple[ComputeNode, ...]
    servers: tuple[Server, ...]

    def host(self, name: str) -> ComputeNode | None:
        return next((h for h in self.hosts if h.name == name), None)

    @functools.cached_property
    def _by_host(self) -> dict[str | None, list[Server]]:
        # Asked once per host by the pools: index the servers once.
        found: dict[str | None, list[Server]] = {}
        for server in self.servers:
            found.setdefault(server.host, []).append(server)
        return found

    def on(self, host: str) -> list[Server]:
        return list(self._by_host.get(host, ()))


def _capacity(inventories: dict, resource_class: str) -> float:
    inventory = inventories.get(resource_class)
    if not inventory:
        return 0.0
    usable = (inventory.get("total") or 0) - (inventory.get("reserved") or 0)
    return max(0.0, usable * float(inventory.get("allocation_ratio") or 1.0))


def placement_json(conn, url: str) -> dict:
    """The JSON body of a GET of ``url`` from Placement."""
    # Placement's REST API through the session's adapter: plain requests
    # that any Placement since Pike answers.
    return conn.placement.get(url, microversion="1.0", raise_exc=True).json()


def _tags(conn) -> dict[str, dict[str, str]]:
    """Each host's ``hpc:rack`` and ``hpc:cpu_group`` from aggregate metadata."""
    tags: dict[str, dict[str, str]] = {}
    for aggregate in conn.compute.aggregates():
        metadata = aggregate.metadata or {}
        for key in (RACK_KEY, CPU_GROUP_KEY):
            if key in metadata:
                for host in aggregate.hosts or []:
                    tags.setdefault(host, {})[key] = metadata[key]
    return tags


def _hypervisors(conn):
    """Each hypervisor's node name and service host, all pages.

    Microversion 2.53 names the service host and pages the list; 2.88 and
    later also report each hypervisor's uptime, which nova-api asks every
    compute for over RPC, one call per host, for a field this never reads.
    A next page is asked for by marker on the API's own path: the link
    nova-api returns is absolute and may name an address only it knows.
    """
    url: str | None = "/os-hypervisors/detail"
    while url:
        body = conn.compute.get(url, microversion="2.53", raise_exc=True).json()
        hypervisors = body["hypervisors"]
        for hypervisor in hypervisors:
            service = hypervisor.get("service") or {}
            name = hypervisor["hypervisor_hostname"]
            yield name, service.get("host") or name
        more = any(link.get("rel") == "next" for link in body.get("hypervisors_links", []))
        url = (
            f"/os-hypervisors/detail?marker={hypervisors[-1]['id']}"
            if more and hypervisors
            else None
        )


def _server(server) -> Server:
    flavor = server.flavor
    specs = dict(getattr(flavor, "extra_specs", None) or {})
    return Server(
        id=server.id,
        name=server.name or "",
        host=server.compute_host,
        status=server.status or "",
        task_state=server.task_state,
        vcpus=int(flavor.vcpus or 0),
        ram_mb=int(flavor.ram or 0),
        project_id=server.project_id,
        extra_specs=tuple(sorted(specs.items())),
    )


def read(conn) -> CloudView:
    """Every compute host and every server of the cloud behind ``conn``."""
    from keystoneauth1 import exceptions as auth_exceptions
    from openstack import exceptions

    try:
        services = {
            s.host: s.status == "enabled" and s.state == "up"
            for s in conn.compute.services(binary="nova-compute")
        }
        providers = {
            rp["name"]: rp["uuid"]
            for rp in placement_json(conn, "/resource_providers")["resource_providers"]
        }
        tags = _tags(conn)
        hosts = []
        for nodename, name in _hypervisors(conn):
            provider = providers.get(nodename)
            if provider is None:
                continue  # not reporting to Placement: nothing can be allocated there
            inventories = placement_json(conn, f"/resource_providers/{provider}/inventories")[
                "inventories"
            ]
            hosts.append(
                ComputeNode(
                    name=name,
                    nodename=nodename,
                    vcpus=_capacity(inventories, "VCPU"),
                    memory_mb=_capacity(inventories, "MEMORY_MB"),
                    cpu_group=tags.get(name, {}).get(CPU_GROUP_KEY),
                    rack=tags.get(name, {}).get(RACK_KEY),
                    usable=services.get(name, False),
                )
            )
        servers = [_server(s) for s in conn.compute.servers(details=True, all_projects=True)]
    except (exceptions.SDKException, auth_exceptions.ClientException, ValueError) as error:
        # ValueError: a body that is not the JSON asked for (a proxy's error page).
        raise CloudUnreadable(f"cannot read the cloud: {error}") from None
    return CloudView(tuple(sorted(hosts, key=lambda h: h.name)), tuple(servers))


def empty_hosts(view: CloudView, cpu_group: str | None = None) -> tuple[ComputeNode, ...]:
    """The largest set of identical empty hosts that can receive servers:
    same capacity and processor group (``cpu_group`` only, if given), the
    batch planners' cloud. Ties go to the group named first."""
    groups: dict[tuple, list[ComputeNode]] = {}
    for host in view.hosts:
        if not host.usable or view.on(host.name) or host.vcpus <= 0 or host.memory_mb <= 0:
            continue
        if cpu_group is not None and host.cpu_group != cpu_group:
            continue
        groups.setdefault((host.cpu_group or "", host.vcpus, host.memory_mb), []).append(host)
    if not groups:
        return ()
    best = max(sorted(groups), key=lambda key: len(groups[key]))
    return tuple(groups[best])
