"""The RequestSpec read once, at the filter's entry."""

from __future__ import annotations

import types
import uuid

import testtools
from nova import objects
from nova.exception import ObjectActionError

from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.scheduler import placement_filter
from hpc_nova_scheduler.scheduler.request import Request

INSTANCE = str(uuid.uuid4())
GROUP = str(uuid.uuid4())


def spec(extra_specs: dict, **fields) -> objects.RequestSpec:
    flavor = objects.Flavor(
        vcpus=2, memory_mb=2048, root_gb=10, ephemeral_gb=0, swap=0, extra_specs=extra_specs
    )
    return objects.RequestSpec(flavor=flavor, instance_uuid=INSTANCE, is_bfv=False, **fields)


class TestRequest(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        objects.register_all()

    def test_an_hpc_request_with_its_group_and_demand(self) -> None:
        group = objects.InstanceGroup(uuid=GROUP, members=["a", "b"])
        request = Request.from_spec(
            spec(
                {"hpc:app_class": "SyncHPC"},
                project_id="p",
                num_instances=3,
                scheduler_hints={"hpc_app_name": ["LU"]},
                instance_group=group,
            ),
            planning=True,
        )
        self.assertTrue(request.hpc)
        self.assertEqual(
            (INSTANCE, "p", 3, GROUP),
            (request.instance_uuid, request.project_id, request.num_instances, request.group_uuid),
        )
        self.assertEqual(frozenset({"a", "b"}), request.members)
        self.assertEqual({"hpc_app_name": ["LU"]}, request.hints)
        self.assertEqual(Resources(2, 2048, 10), request.demand)

    def test_a_plain_request_reads_no_demand_and_needs_no_count(self) -> None:
        request = Request.from_spec(spec({}), planning=True)
        self.assertTrue(request.plain)
        self.assertIsNone(request.demand)
        self.assertEqual(
            (None, 1, None), (request.project_id, request.num_instances, request.group_uuid)
        )

    def test_a_hint_alone_makes_a_request_hpc(self) -> None:
        request = Request.from_spec(
            spec({}, num_instances=1, scheduler_hints={"hpc_app_name": ["LU"]})
        )
        self.assertTrue(request.hpc)
        self.assertIsNone(request.demand)  # read only when planning

    def test_an_unreadable_flavor_counts_as_hpc(self) -> None:
        broken = objects.RequestSpec(instance_uuid=INSTANCE)
        request = Request.of_flavor(broken)
        self.assertIsNone(request.extra_specs)
        self.assertTrue(request.hpc)

    def test_an_hpc_request_without_its_count_is_not_read(self) -> None:
        # Planned for one VM, a request of several would be placed wrongly.
        self.assertRaises(ObjectActionError, Request.from_spec, spec({"hpc:app_class": "SyncHPC"}))

    def test_a_plain_request_whatever_else_its_spec_lacks_is_left_to_nova(self) -> None:
        # Nova's legacy group info builds a group without a uuid, which
        # raises when read: the plugin must still hand a plain request back.
        spec_obj = spec({}, instance_group=objects.InstanceGroup(members=["a"]))
        self.assertRaises(ObjectActionError, Request.from_spec, spec_obj)
        self.assertTrue(Request.of_flavor(spec_obj).plain)
        hosts = [types.SimpleNamespace(host=n, nodename=n) for n in "ab"]
        kept = placement_filter.HpcPlacementFilter().filter_all(hosts, spec_obj)
        self.assertEqual(hosts, kept)

    def test_an_hpc_request_whose_spec_cannot_be_read_is_refused(self) -> None:
        spec_obj = spec(
            {"hpc:app_class": "SyncHPC"},
            num_instances=2,
            instance_group=objects.InstanceGroup(members=["a"]),
        )
        hosts = [types.SimpleNamespace(host=n, nodename=n) for n in "ab"]
        self.assertEqual([], placement_filter.HpcPlacementFilter().filter_all(hosts, spec_obj))
