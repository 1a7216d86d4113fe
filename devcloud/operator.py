"""The operator's side: API clients, host aggregates, flavors and an image.

Everything goes through the public APIs with openstacksdk, as
``openstack aggregate set --property`` and ``openstack flavor set
--property`` would. The cloud has no Keystone: the session sends the
identity headers Nova's ``keystonecontext`` reads, and Placement's
``noauth2`` token.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence

import openstack
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session

from devcloud import config, racks
from devcloud.config import compute_host
from devcloud.layout import Run
from hpc_nova_scheduler.core import cpu_groups

#: Hosts per rack, and processor groups alternating by pairs within a rack,
#: so that racks mix groups and homogeneity is a real constraint.
RACK_SIZE = 4
CPU_GROUPS = ("xeon", "epyc")


def connect(run: Run, project: str = "admin", user: str = "admin", admin: bool = True):
    roles = "admin,member,reader" if admin else "member,reader"
    session = ks_session.Session(
        auth=noauth.NoAuth(),
        additional_headers={
            "X-User-Id": user,
            "X-Project-Id": project,
            "X-Roles": roles,
            # Placement's noauth2 reads the user from the token.
            "X-Auth-Token": user if admin else f"{user}:{project}",
        },
    )
    return openstack.connection.Connection(
        session=session,
        compute_endpoint_override=f"{run.url('nova')}/v2.1",
        image_endpoint_override=run.url("glance"),
        placement_endpoint_override=run.url("placement"),
        compute_api_version="2.96",
    )


def group_of(index: int) -> str:
    return CPU_GROUPS[(index % RACK_SIZE) // 2]


def shape(topology: Sequence[tuple[str, int]] = ()) -> tuple[tuple[str, int], ...]:
    """The levels and their sizes (``up --topology``); by default racks of
    :data:`RACK_SIZE` hosts, the one level of seed 003."""
    return tuple((level, int(n)) for level, n in topology) or (("rack", RACK_SIZE),)


def level_values(index: int, topology: Sequence[tuple[str, int]] = ()) -> dict[str, str]:
    """A compute's value at each level, as its ``hpc:<level>`` aggregate says.

    Hosts fill the domains in order, as ``simulate --topology`` fills them:
    with ``block=2,rack=2`` hosts 0-1 are rack-0, hosts 0-3 block-0. Values
    are numbered across the cloud, so each names one domain.
    """
    levels = shape(topology)
    values = {}
    for depth, (level, _) in enumerate(levels):
        span = math.prod(n for _, n in levels[depth:])
        values[level] = f"{level}-{index // span}"
    return values


def topology(computes: int, shape_: Sequence[tuple[str, int]] = ()) -> dict[str, tuple[str, str]]:
    """Each compute's (rack, processor group); the rack is its innermost domain."""
    found = {}
    for i in range(computes):
        innermost = list(level_values(i, shape_).values())[-1]
        found[compute_host(i)] = (innermost, group_of(i))
    return found


def _paths(index: int, shape_: Sequence[tuple[str, int]]) -> dict[str, str]:
    path: list[str] = []
    mine = {}
    for level, value in level_values(index, shape_).items():
        path.append(value)
        mine[level] = "/".join(path)
    return mine


def domains(
    computes: int,
    shape_: Sequence[tuple[str, int]] = (),
    hosts: Sequence[str] | None = None,
) -> dict[str, dict[str, str]]:
    """Each compute's domain at every level, named by its path from the
    outermost level down (``block-0/rack-1``), as the placement names it.
    ``hosts``: the computes' names, if not ``compute-00`` onwards."""
    names = hosts or [compute_host(i) for i in range(computes)]
    return {names[i]: _paths(i, shape_) for i in range(computes)}


def tag_hosts(
    conn,
    computes: int,
    shape_: Sequence[tuple[str, int]] = (),
    hosts: Sequence[str] | None = None,
    tag_cpu_groups: bool = True,
) -> None:
    """An aggregate per domain of every level (``hpc:<level>``) and, with
    ``tag_cpu_groups``, per processor group (``hpc:cpu_group``; without it the
    plugin reads the group from each node's ``cpu_info``)."""
    names = hosts or [compute_host(i) for i in range(computes)]
    members: dict[tuple[str, str], list[str]] = {}
    for i in range(computes):
        host = names[i]
        for level, value in level_values(i, shape_).items():
            members.setdefault((f"hpc:{level}", value), []).append(host)
        if tag_cpu_groups:
            members.setdefault(("hpc:cpu_group", group_of(i)), []).append(host)
    for (key, value), hosts_ in sorted(members.items()):
        aggregate = conn.compute.create_aggregate(name=f"{key.split(':')[1]}-{value}")
        conn.compute.set_aggregate_metadata(aggregate, {key: value})
        for host in hosts_:
            conn.compute.add_host_to_aggregate(aggregate, host)


@dataclasses.dataclass(frozen=True)
class NodePlace:
    """Where a node of the run is and what it is, as the plugin sees it."""

    #: Its compute service host (a rack's, under ``up --nodes``).
    host: str
    #: level -> domain path as the plugin names it (``block-0/rack-3``).
    domains: dict[str, str]
    #: The processor group the plugin derives: the ``hpc:cpu_group``
    #: aggregate's value, else ``cpu_group_from_cpu_info`` of the node.
    cpu_group: str
    vcpus: int
    memory_mb: int


def node_places(run: Run) -> dict[str, NodePlace]:
    """nodename -> :class:`NodePlace` for every node of the run.

    Without ``--nodes`` each compute is one node of its own name, on
    ``fake.MediumFakeDriver``, with its ``hpc:cpu_group`` aggregate.
    """
    if not run.nodes:
        return {
            host: NodePlace(host, mine, group_of(i), config.MEDIUM_VCPUS, config.MEDIUM_MEMORY_MB)
            for i, (host, mine) in enumerate(domains(run.computes, run.topology).items())
        }
    places = {}
    for index, (host, nodes) in enumerate(racks.layout(run.nodes, run.rack_size).items()):
        mine = _paths(index, run.topology)
        for name, fields in nodes.items():
            places[name] = NodePlace(
                host,
                dict(mine),
                cpu_groups.cpu_group_from_cpu_info(
                    {"vendor": fields["cpu_vendor"], "model": fields["cpu_model"]}
                ),
                int(fields["vcpus"]),
                int(fields["memory_mb"]),
            )
    return places


@dataclasses.dataclass(frozen=True)
class FlavorSpec:
    name: str
    vcpus: int
    ram: int
    extra_specs: dict[str, str]


def create_flavor(conn, spec: FlavorSpec) -> str:
    flavor = conn.compute.create_flavor(name=spec.name, vcpus=spec.vcpus, ram=spec.ram, disk=1)
    if spec.extra_specs:
        conn.compute.create_flavor_extra_specs(flavor, spec.extra_specs)
    return flavor.id


def upload_image(conn) -> str:
    image = conn.image.create_image(
        name="cirros-fake",
        data=b"\0" * 1024,
        disk_format="raw",
        container_format="bare",
    )
    deadline = time.monotonic() + 60
    while conn.image.get_image(image.id).status != "active":
        if time.monotonic() > deadline:
            raise RuntimeError(f"image {image.id} did not become active")
        time.sleep(0.5)
    return image.id
