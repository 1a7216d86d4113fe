"""``HpcPlanWeigher`` inside Nova's own weight handler and weighers."""

from __future__ import annotations

import datetime
import uuid

import testtools
from nova import conf as nova_conf
from nova import objects
from nova.scheduler import host_manager
from nova.scheduler import weights as nova_weights

from hpc_nova_scheduler.core.algorithm import Plan
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.scheduler import request
from hpc_nova_scheduler.scheduler.plan_weigher import HpcPlanWeigher

CONF = nova_conf.CONF


def host_state(name: str, free_ram_mb: int) -> host_manager.HostState:
    state = host_manager.HostState(name, name, "cell-1")
    state.uuid = str(uuid.uuid5(uuid.NAMESPACE_DNS, name))
    state.vcpus_total, state.vcpus_used = 32, 0
    state.total_usable_ram_mb, state.free_ram_mb = 131072, free_ram_mb
    state.total_usable_disk_gb, state.free_disk_mb = 1000, 1000 * 1024
    state.cpu_allocation_ratio = state.ram_allocation_ratio = 1.0
    state.disk_allocation_ratio = 1.0
    state.num_instances = state.num_io_ops = 0
    state.failed_builds = 0
    state.hypervisor_version = 8000000
    state.aggregates = []
    state.instances = {}
    state.service = {"last_seen_up": datetime.datetime.now(datetime.UTC), "disabled": False}
    return state


class TestPlanWeigher(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        objects.register_all()
        self.handler = nova_weights.HostWeightHandler()
        self.nova_weighers = [
            cls()
            for cls in self.handler.get_matching_classes(["nova.scheduler.weights.all_weighers"])
        ]
        # Free RAM decides Nova's order: e first, a last.
        self.hosts = [host_state(name, 1000 * (i + 1)) for i, name in enumerate("abcde")]
        self.spec = objects.RequestSpec(
            flavor=objects.Flavor(vcpus=1, memory_mb=512, root_gb=1, extra_specs={}),
            num_instances=1,
            image=objects.ImageMeta.from_dict({}),
            instance_group=None,
            scheduler_hints={},
            project_id="p",
            user_id="u",
        )

    def weigh(self, weighers: list) -> list[tuple[str, float]]:
        weighed = self.handler.get_weighed_objects(weighers, self.hosts, self.spec)
        return [(w.obj.host, w.weight) for w in weighed]

    def test_a_request_it_did_not_plan_keeps_nova_weights_and_order(self) -> None:
        alone = self.weigh(self.nova_weighers)
        self.assertEqual(list("edcba"), [host for host, _ in alone])
        request.remember(self.spec, request.RequestState(ApplicationProfile(), "x"))
        self.assertEqual(alone, self.weigh([*self.nova_weighers, HpcPlanWeigher()]))
        self.assertEqual(alone, self.weigh([HpcPlanWeigher(), *self.nova_weighers]))

    def test_planned_hosts_then_alternates_in_plan_order(self) -> None:
        plan = Plan(("a", "b"), "g", ("r",))
        state = request.RequestState(
            ApplicationProfile(),
            "app",
            plan=plan,
            remaining=plan.vms_per_host(),
            planned_now=frozenset({"a", "b"}),
            spares=("c", "d"),
        )
        request.remember(self.spec, state)
        order = [host for host, _ in self.weigh([*self.nova_weighers, HpcPlanWeigher()])]
        # Between planned hosts Nova's weighers decide (b has more free RAM);
        # the alternates follow in the plan's order, whatever Nova prefers.
        self.assertEqual(["b", "a", "c", "d", "e"], order)
