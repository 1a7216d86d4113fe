"""Placement's sample narrowed to idle hosts (issue 46), in Nova's harness with the real Placement.

nova-scheduler asks Placement for ``[scheduler] max_placement_results``
candidates; here 2 of 6 hosts. Once plain VMs sit on the two sampled
hosts, an ExtremeHPC request is refused although four hosts are empty.
With one run of the agent's ``idle-traits`` task and the flavor requiring
``CUSTOM_HPC_IDLE``, Placement samples idle hosts only and the request is
placed. The agent reaches Placement through Nova's report client, which
the harness routes to the Placement it runs in process.
"""

from __future__ import annotations

import logging

import fixtures
from nova import context as nova_context
from nova import objects

from hpc_nova_scheduler.agent import idle_traits
from hpc_nova_scheduler.agent.tasks import Agent
from hpc_nova_scheduler.core.narrowing import IDLE_SPEC, IDLE_TRAIT, ROOMY_SPEC, ROOMY_TRAIT
from hpc_nova_scheduler.demo.fake_driver import Shape
from tests.functional import base

#: Placement's sample in these tests.
SAMPLE = 2


class NarrowingCloud(base.HpcTestCase):
    HOSTS = {f"n{i}": Shape() for i in range(1, 7)}
    HPC_FLAGS = {"idle_trait_interval": 10}

    def setUp(self) -> None:
        super().setUp()
        self.flags(max_placement_results=SAMPLE, group="scheduler")
        self.plain = self.hpc_flavor()
        # The same resources as the plain flavor: Placement orders the
        # candidates of one resource request alike for both.
        self.extreme = self.hpc_flavor(app_class="ExtremeHPC", app_name="IS.B.8")

    # -- Placement, as the test reads it ------------------------------------------

    def providers(self) -> dict[str, str]:
        """Host name -> its compute node's resource provider."""
        body = self.placement.get("/resource_providers", version="1.14").body
        return {rp["name"]: rp["uuid"] for rp in body["resource_providers"]}

    def traits(self, host: str) -> set[str]:
        url = f"/resource_providers/{self.providers()[host]}/traits"
        return set(self.placement.get(url, version="1.6").body["traits"])

    def idle_hosts(self) -> set[str]:
        """Hosts whose provider carries the trait now."""
        return {host for host in self.providers() if IDLE_TRAIT in self.traits(host)}

    # -- the agent ----------------------------------------------------------------

    def keep(self) -> idle_traits.Run:
        """One run of the agent's idle-traits task."""
        run = self.agent().idle_traits()
        self.assertIsNotNone(run)
        return run

    def fill_the_sample(self) -> set[str]:
        """Plain VMs, one at a time, until both sampled hosts hold one."""
        used: dict[str, int] = {}
        for _ in range(4):
            for host, count in self.hosts_of(self.launch(self.plain)).items():
                used[host] = used.get(host, 0) + count
            if len(used) == SAMPLE:
                break
        # Nova's weighers spread plain VMs over the two hosts Placement offers.
        self.assertEqual(SAMPLE, len(used), used)
        return set(used)

    def require_idle(self, flavor: str) -> None:
        self.admin_api.post_extra_spec(flavor, {"extra_specs": {IDLE_SPEC: "required"}})


class TestIdleTraitNarrowing(NarrowingCloud):
    def test_an_extreme_request_finds_an_idle_host_beyond_the_sample(self) -> None:
        sampled = self.fill_the_sample()
        # Without the trait: Placement offers the two busy hosts only.
        self.assert_refused(self.launch(self.extreme))
        run = self.keep()
        idle = set(self.HOSTS) - sampled
        providers = self.providers()
        self.assertEqual({providers[host] for host in idle}, set(run.added))
        self.assertEqual(([], 0), (run.removed, run.left))
        self.assertEqual(idle, self.idle_hosts())
        # Nova's own traits stay as they were.
        for host in self.HOSTS:
            self.assertIn("COMPUTE_NODE", self.traits(host))
        self.require_idle(self.extreme)
        servers = self.launch(self.extreme, 4)
        hosts = self.hosts_of(servers)
        self.assertEqual([4], list(hosts.values()), hosts)
        (dedicated,) = hosts
        self.assertIn(dedicated, idle)
        # The next run takes the trait off the host ExtremeHPC now holds, only.
        run = self.keep()
        self.assertEqual(([], [providers[dedicated]]), (run.added, run.removed))
        self.assertEqual(idle - {dedicated}, self.idle_hosts())
        # And a run with nothing to change writes nothing.
        run = self.keep()
        self.assertEqual(([], [], 0), (run.added, run.removed, run.conflicts))

    def test_a_freed_host_is_tagged_at_the_next_run(self) -> None:
        (server,) = self.launch(self.plain)
        (host,) = self.hosts_of([server])
        self.keep()
        self.assertEqual(set(self.HOSTS) - {host}, self.idle_hosts())
        self._delete_server(server)
        run = self.keep()
        self.assertEqual([self.providers()[host]], run.added)
        self.assertEqual(set(self.HOSTS), self.idle_hosts())

    def test_nova_compute_keeps_the_trait_it_does_not_own(self) -> None:
        self.keep()
        ctxt = nova_context.get_admin_context()
        # nova-compute's periodic update of its provider, and a trait it owns
        # written on a disabled service: CUSTOM_HPC_IDLE stays on.
        for compute in self.computes.values():
            compute.manager.update_available_resource(ctxt)
        (service,) = self.admin_api.get_services(binary="nova-compute", host="n6")
        self.admin_api.put_service(service["id"], {"status": "disabled"})
        for compute in self.computes.values():
            compute.manager.update_available_resource(ctxt)
        self.assertLessEqual({"COMPUTE_STATUS_DISABLED", IDLE_TRAIT}, self.traits("n6"))
        # A service disabled behind nova-compute's back: its periodic task
        # adds COMPUTE_STATUS_DISABLED from a provider cache read before the
        # keeper wrote. Placement refuses the stale generation (409), and
        # nova-compute reads the provider again before it writes.
        before = self.placement.get(
            f"/resource_providers/{self.providers()['n5']}", version="1.14"
        ).body["generation"]
        record = objects.Service.get_by_compute_host(ctxt, "n5")
        record.disabled = True
        record.save()
        self.computes["n5"].manager.update_available_resource(ctxt)
        self.assertLessEqual({"COMPUTE_STATUS_DISABLED", IDLE_TRAIT}, self.traits("n5"))
        after = self.placement.get(
            f"/resource_providers/{self.providers()['n5']}", version="1.14"
        ).body["generation"]
        self.assertGreater(after, before)
        self.assertEqual(set(self.HOSTS), self.idle_hosts())
        # The keeper's next write keeps nova-compute's trait in turn.
        server = self.launch(self.plain)
        self.admin_api.put_service(service["id"], {"status": "enabled"})
        self.keep()
        (host,) = self.hosts_of(server)
        self.assertNotIn(IDLE_TRAIT, self.traits(host))
        self.assertIn("COMPUTE_NODE", self.traits(host))

    def test_only_the_holder_of_the_lease_writes(self) -> None:
        self.keep()
        other = Agent(name="functional-test:1")
        self.addCleanup(other.close)
        self.assertIsNone(other.idle_traits())
        # An agent that stops lets the lease go: the other one takes it at once.
        self.agent().close()
        self.launch(self.plain)
        self.assertIsNotNone(other.idle_traits())
        self.assertEqual(len(self.HOSTS) - 1, len(self.idle_hosts()))

    def test_another_class_that_requires_idle_hosts_is_refused(self) -> None:
        # The class stored by an earlier call than the trait: nova-api could
        # not see both; the scheduler refuses, naming the key in its log.
        logs = self.useFixture(fixtures.FakeLogger(name="hpc_nova_scheduler", level=logging.ERROR))
        sync = self.hpc_flavor(app_class="SyncHPC")
        self.require_idle(sync)
        self.keep()
        self.assert_refused(self.launch(sync))
        self.assertIn(f"invalid {IDLE_SPEC} (only ExtremeHPC flavors may require", logs.output)


class TestRoomyRacks(NarrowingCloud):
    """Three racks of two hosts; Placement offers 2 hosts, or one whole rack with the trait."""

    RACKS = {"r1": ["n1", "n2"], "r2": ["n3", "n4"], "r3": ["n5", "n6"]}
    HPC_FLAGS = {"idle_trait_interval": 10, "roomy_rack_trait": True}

    def roomy_hosts(self) -> set[str]:
        return {host for host in self.providers() if ROOMY_TRAIT in self.traits(host)}

    def test_a_synchpc_request_is_offered_a_whole_rack(self) -> None:
        sampled = self.fill_the_sample()
        sync = self.hpc_flavor(app_class="SyncHPC", cache_score=5, topology_required="rack")
        # Eight VMs fit in a rack the plain VMs left empty, not in the two
        # hosts Placement offers (six places left).
        self.assert_refused(self.launch(sync, 8))
        run = self.keep()
        untouched = sorted(rack for rack, hosts in self.RACKS.items() if not set(hosts) & sampled)
        self.assertTrue(untouched)
        # The roomiest rack that fits in max_placement_results hosts: of two
        # empty racks, the first by name.
        roomy = set(self.RACKS[untouched[0]])
        self.assertEqual(roomy, self.roomy_hosts())
        self.assertEqual(SAMPLE, run.roomy_hosts)
        self.admin_api.post_extra_spec(sync, {"extra_specs": {ROOMY_SPEC: "required"}})
        hosts = self.hosts_of(self.launch(sync, 8))
        self.assertEqual({host: 4 for host in roomy}, hosts)
        # That rack is now full: the next run moves the trait to the roomiest other.
        self.keep()
        self.assertFalse(self.roomy_hosts() & roomy)
        self.assertEqual(SAMPLE, len(self.roomy_hosts()))
