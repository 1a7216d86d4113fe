"""The operator's side: API clients, host aggregates, flavors and an image.

Everything goes through the public APIs with openstacksdk, as
``openstack aggregate set --property`` and ``openstack flavor set
--property`` would. The cloud has no Keystone: the session sends the
identity headers Nova's ``keystonecontext`` reads, and Placement's
``noauth2`` token.
"""

from __future__ import annotations

import dataclasses
import time

import openstack
from keystoneauth1 import noauth
from keystoneauth1 import session as ks_session

from devcloud.config import compute_host
from devcloud.layout import Run

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


def rack_of(index: int) -> str:
    return f"rack-{index // RACK_SIZE}"


def group_of(index: int) -> str:
    return CPU_GROUPS[(index % RACK_SIZE) // 2]


def topology(computes: int) -> dict[str, tuple[str, str]]:
    """Each compute's (rack, processor group)."""
    return {compute_host(i): (rack_of(i), group_of(i)) for i in range(computes)}


def tag_hosts(conn, computes: int) -> None:
    members: dict[tuple[str, str], list[str]] = {}
    for host, (rack, group) in topology(computes).items():
        members.setdefault(("hpc:rack", rack), []).append(host)
        members.setdefault(("hpc:cpu_group", group), []).append(host)
    for (key, value), hosts in sorted(members.items()):
        aggregate = conn.compute.create_aggregate(name=f"{key.split(':')[1]}-{value}")
        conn.compute.set_aggregate_metadata(aggregate, {key: value})
        for host in hosts:
            conn.compute.add_host_to_aggregate(aggregate, host)


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
