"""A fake virt driver whose hosts differ in size and processor model.

``SHAPES`` maps a host name to its shape before the compute service starts;
Nova loads the driver by its dotted path from ``compute_driver``.
``FAIL_SPAWN_ONCE_ON`` names hosts whose first spawn of each instance fails
the way a real hypervisor's does when it runs short, which makes Nova retry
the build on the request's alternate hosts.
"""

from __future__ import annotations

import dataclasses
import json
import uuid

from nova import conf as nova_conf
from nova import exception
from nova.virt import fake
from oslo_serialization import jsonutils

CONF = nova_conf.CONF


@dataclasses.dataclass(frozen=True)
class Shape:
    vcpus: int = 4
    memory_mb: int = 8192
    local_gb: int = 100
    cpu_model: str = "Nehalem"
    #: Nova's fake driver reports Intel; a cloud of two vendors names them.
    cpu_vendor: str = "Intel"


SHAPES: dict[str, Shape] = {}

#: Hosts whose spawn of each instance fails once with
#: ``ComputeResourcesUnavailable`` (Nova's ``FakeRescheduleDriver``, on these
#: hosts only); read at each spawn, so tests patch it with
#: ``fixtures.MonkeyPatch`` before or after the computes start.
FAIL_SPAWN_ONCE_ON: set[str] = set()


class HpcFakeDriver(fake.FakeDriver):
    def __init__(self, virtapi, read_only=False):
        # The compute service starts its driver with CONF.host set to its host.
        self.host_name: str = CONF.host
        #: Instances whose spawn failed here on purpose.
        self.failed_spawns: list[str] = []
        self.shape = SHAPES.get(CONF.host, Shape())
        self.vcpus = self.shape.vcpus
        self.memory_mb = self.shape.memory_mb
        self.local_gb = self.shape.local_gb
        super().__init__(virtapi, read_only)

    def spawn(
        self,
        context,
        instance,
        image_meta,
        injected_files,
        admin_password,
        allocations,
        network_info=None,
        block_device_info=None,
        power_on=True,
        accel_info=None,
    ):
        if self.host_name in FAIL_SPAWN_ONCE_ON and instance.uuid not in self.failed_spawns:
            self.failed_spawns.append(instance.uuid)
            raise exception.ComputeResourcesUnavailable(
                reason=f"spawn on {self.host_name} fails once (FAIL_SPAWN_ONCE_ON)"
            )
        super().spawn(
            context,
            instance,
            image_meta,
            injected_files,
            admin_password,
            allocations,
            network_info=network_info,
            block_device_info=block_device_info,
            power_on=power_on,
            accel_info=accel_info,
        )

    def get_available_resource(self, nodename):
        status = super().get_available_resource(nodename)
        if status:
            # Nova's fake driver says no disk is left; a real one reports
            # the free space.
            status["disk_available_least"] = self.shape.local_gb
            info = jsonutils.loads(status["cpu_info"])
            info["model"] = self.shape.cpu_model
            info["vendor"] = self.shape.cpu_vendor
            status["cpu_info"] = jsonutils.dumps(info)
        return status


#: Hosts whose compute service manages several nodes, the way one Ironic
#: compute manages many bare-metal machines: host -> node name -> shape.
#: Read when the service starts (``init_host``); a host not named here has
#: one node of its own name, shaped by ``SHAPES``.
NODES: dict[str, dict[str, Shape]] = {}


def node_uuid(host: str, nodename: str) -> str:
    """A node's provider UUID, the same at every start of its service.

    Nova's fake driver draws node UUIDs per process; a restarted compute
    would then report new nodes under the old names.
    """
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"hpc-fake-node:{host}/{nodename}"))


def load_nodes(path: str) -> dict[str, dict[str, Shape]]:
    """``NODES`` from a JSON file: ``{host: {node: {"vcpus": .., "cpu_model": ..}}}``
    (the fields of :class:`Shape`).

    Raises ``ValueError``, one line naming the file and the host, node or
    field at fault.
    """
    try:
        with open(path, encoding="utf-8") as stream:
            # The standard parser: oslo's jsonutils.load wants a byte stream.
            data = json.load(stream)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a JSON object of hosts is expected")
    layout: dict[str, dict[str, Shape]] = {}
    for host, nodes in data.items():
        if not host.strip():
            raise ValueError(f"{path}: a host has an empty name")
        if not isinstance(nodes, dict) or not nodes:
            raise ValueError(f"{path}: host {host!r} needs an object of one or more nodes")
        layout[host] = {}
        for name, fields in nodes.items():
            where = f"{path}: node {name!r} of {host!r}"
            if not name.strip():
                raise ValueError(f"{path}: host {host!r} has a node with an empty name")
            try:
                layout[host][name] = Shape(**fields)
            except TypeError as error:
                raise ValueError(f"{where}: {error}") from None
            problem = _shape_problem(layout[host][name])
            if problem:
                raise ValueError(f"{where}: {problem}")
    return layout


def _shape_problem(shape: Shape) -> str | None:
    """What is wrong with a shape read from a file; None when nothing is."""
    for field in ("vcpus", "memory_mb", "local_gb"):
        value = getattr(shape, field)
        # bool is an int to Python, not to the file's author.
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            return f"{field} must be a whole number above 0, not {value!r}"
    if not isinstance(shape.cpu_model, str) or not shape.cpu_model.strip():
        return f"cpu_model must be a non-empty string, not {shape.cpu_model!r}"
    return None


class HpcMultiNodeFakeDriver(HpcFakeDriver):
    """Several shaped nodes behind one compute service (``NODES``).

    Nova's host manager keeps a host state per (host, node), as it does for
    Ironic: every node is a resource provider of its own, with its own
    cores, memory and processor model, while aggregates, which Nova keeps per
    compute service host, tag all the nodes of the service at once.
    """

    def init_host(self, host):
        super().init_host(host)
        self.node_shapes = dict(NODES.get(host) or {host: SHAPES.get(host, Shape())})
        self._set_nodes(list(self.node_shapes))

    def get_nodenames_by_uuid(self, refresh=False):
        return {node_uuid(self._host, name): name for name in self.get_available_nodes()}

    def get_available_resource(self, nodename):
        status = super().get_available_resource(nodename)
        if not status:
            return status
        shape = self.node_shapes[nodename]
        status.update(
            vcpus=shape.vcpus,
            memory_mb=shape.memory_mb,
            local_gb=shape.local_gb,
            disk_available_least=shape.local_gb,
            uuid=node_uuid(self._host, nodename),
        )
        info = jsonutils.loads(status["cpu_info"])
        info["model"] = shape.cpu_model
        info["vendor"] = shape.cpu_vendor
        status["cpu_info"] = jsonutils.dumps(info)
        return status

    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        super().update_provider_tree(provider_tree, nodename, allocations)
        shape = self.node_shapes[nodename]
        inventory = provider_tree.data(nodename).inventory
        for resource_class, total in (
            ("VCPU", shape.vcpus),
            ("MEMORY_MB", shape.memory_mb),
            ("DISK_GB", shape.local_gb),
        ):
            inventory[resource_class] = {
                **inventory[resource_class],
                "total": total,
                "max_unit": total,
            }
        provider_tree.update_inventory(nodename, inventory)
