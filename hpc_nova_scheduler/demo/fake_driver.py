"""A fake virt driver whose hosts differ in size and processor model.

``SHAPES`` maps a host name to its shape before the compute service starts;
Nova loads the driver by its dotted path from ``compute_driver``.
"""

from __future__ import annotations

import dataclasses

from nova import conf as nova_conf
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


class HpcFakeDriver(fake.FakeDriver):
    def __init__(self, virtapi, read_only=False):
        self.shape = SHAPES.get(CONF.host, Shape())
        self.vcpus = self.shape.vcpus
        self.memory_mb = self.shape.memory_mb
        self.local_gb = self.shape.local_gb
        super().__init__(virtapi, read_only)

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
