"""A fake virt driver whose hosts differ in size and processor model.

``SHAPES`` maps a host name to its shape before the compute service starts;
Nova loads the driver by its dotted path from ``compute_driver``.
``FAIL_SPAWN_ONCE_ON`` names hosts whose first spawn of each instance fails
the way a real hypervisor's does when it runs short, which makes Nova retry
the build on the request's alternate hosts.
"""

from __future__ import annotations

import dataclasses

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
            status["cpu_info"] = jsonutils.dumps(info)
        return status
