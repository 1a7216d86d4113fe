"""Topology levels beyond the rack, in Nova's harness: two blocks of two racks.

Every rack has two hosts of 4 cores (8 one-core VMs); a block holds 16.
"""

from __future__ import annotations

import collections

from hpc_nova_scheduler.demo.fake_driver import Shape
from tests.functional import base
from tests.functional.test_concurrency import BurstMixin
from tests.functional.workers import TwoSchedulers

RACK_OF = {
    "h1": "b1/r1",
    "h2": "b1/r1",
    "h3": "b1/r2",
    "h4": "b1/r2",
    "h5": "b2/r1",
    "h6": "b2/r1",
    "h7": "b2/r2",
    "h8": "b2/r2",
}


class TwoLevelCloud(base.HpcTestCase):
    HOSTS = {name: Shape() for name in RACK_OF}
    # Rack names repeat across blocks on purpose: a rack is known by its path.
    RACKS = {
        "r1": ["h1", "h2", "h5", "h6"],
        "r2": ["h3", "h4", "h7", "h8"],
    }
    TAGS = {"hpc:block": {"b1": ["h1", "h2", "h3", "h4"], "b2": ["h5", "h6", "h7", "h8"]}}
    HPC_FLAGS = {"topology_levels": ["block", "rack"]}

    def flavor(self, **topology: str) -> str:
        specs = {f"topology_{key}": value for key, value in topology.items()}
        return self.hpc_flavor(app_class="SyncHPC", cache_score=1, **specs)

    @staticmethod
    def racks(hosts: dict[str, int]) -> collections.Counter:
        found: collections.Counter = collections.Counter()
        for host, vms in hosts.items():
            found[RACK_OF[host]] += vms
        return found

    def blocks(self, hosts: dict[str, int]) -> set[str]:
        return {rack.split("/")[0] for rack in self.racks(hosts)}

    def pin(self, host: str) -> None:
        """A plain 4-core server on ``host``, placed by the administrator."""
        flavor = self._create_flavor(memory_mb=1024, vcpu=4, disk=1, ephemeral=0)
        body: dict = {"server": self._build_server(flavor_id=flavor, networks="none")}
        body["server"]["availability_zone"] = f"nova:{host}"
        server = self.api.post_server(body)
        self._wait_for_state_change(server, "ACTIVE")

    def placed(self, servers: list[dict]) -> dict[str, int]:
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers}, servers)
        return self.hosts_of(servers)


class TestRequired(TwoLevelCloud):
    def test_required_rack_fits_in_one_rack_or_is_refused_whole(self) -> None:
        hosts = self.placed(self.launch(self.flavor(required="rack"), 8))
        self.assertEqual([8], list(self.racks(hosts).values()), hosts)
        # Three racks have room for 8 each, the whole cloud for 24, but no
        # rack for 9: refused, not split.
        self.assert_refused(self.launch(self.flavor(required="rack"), 9))

    def test_required_block_keeps_the_application_in_one_block(self) -> None:
        hosts = self.placed(self.launch(self.flavor(required="block"), 12))
        self.assertEqual(1, len(self.blocks(hosts)), hosts)
        self.assert_refused(self.launch(self.flavor(required="block"), 17))


class TestPreferred(TwoLevelCloud):
    def test_one_block_when_it_fits_two_when_it_must(self) -> None:
        first = self.placed(self.launch(self.flavor(preferred="block"), 12))
        self.assertEqual(1, len(self.blocks(first)), first)
        # 20 VMs: 4 + 16 cores left, no block holds them; never refused.
        second = self.placed(self.launch(self.flavor(preferred="block"), 20))
        self.assertEqual(2, len(self.blocks(second)), second)

    def test_async_hpc_follows_a_preferred_rack(self) -> None:
        flavor = self.hpc_flavor(app_class="AsyncHPC", cache_score=1, topology_preferred="rack")
        hosts = self.placed(self.launch(flavor, 6))
        self.assertEqual(1, len(self.racks(hosts)), hosts)


class TestSegments(TwoLevelCloud):
    def test_segments_of_four_each_in_one_rack(self) -> None:
        # Two VMs of another application take a quarter of b1/r1: its 6 free
        # cores hold one segment, and the next segment must not straddle racks.
        self.placed(self.launch(self.flavor(required="host"), 2))
        segmented = self.flavor(segment="4", segment_level="rack")
        hosts = self.placed(self.launch(segmented, 12))
        racks = self.racks(hosts)
        self.assertEqual(12, sum(racks.values()))
        self.assertTrue(all(vms % 4 == 0 for vms in racks.values()), racks)

    def test_a_count_the_segment_does_not_divide_is_refused(self) -> None:
        self.assert_refused(self.launch(self.flavor(segment="4", segment_level="rack"), 6))


class TestServerGroup(TwoLevelCloud):
    def test_later_members_stay_in_the_rack_or_are_refused(self) -> None:
        group = self.server_group("soft-affinity")
        flavor = self.flavor(required="rack")
        first = self.placed(self.launch(flavor, 4, group=group))
        (rack,) = self.racks(first)
        second = self.placed(self.launch(flavor, 4, group=group))
        self.assertEqual({rack}, set(self.racks(second)), second)
        # The rack is full now; another rack has room, but the group may not go there.
        self.assert_refused(self.launch(flavor, 1, group=group))

    def test_later_members_stay_in_the_block_when_preferred(self) -> None:
        group = self.server_group("soft-affinity")
        flavor = self.flavor(preferred="block")
        first = self.blocks(self.placed(self.launch(flavor, 4, group=group)))
        self.assertEqual({"b1"}, first)
        # Fill the group's rack and most of the other block by hand: b1 keeps
        # 8 free cores (rack r2), b2 only 4 (h8), the tighter fit for 4 VMs.
        for host in ("h2", "h5", "h6", "h7"):
            self.pin(host)
        second = self.blocks(self.placed(self.launch(flavor, 4, group=group)))
        self.assertEqual(first, second)


class TestBestFit(TwoLevelCloud):
    def test_a_partly_used_rack_is_used_before_an_empty_one(self) -> None:
        taken = self.racks(self.placed(self.launch(self.flavor(required="rack"), 4)))
        hosts = self.placed(self.launch(self.flavor(), 4))
        # The same rack holds it; the other three racks stay whole.
        self.assertEqual(set(taken), set(self.racks(hosts)), hosts)
        used = {rack for rack in RACK_OF.values()} - set(taken)
        free = self.api.get_servers(detail=True)
        self.assertFalse(
            {RACK_OF[s["OS-EXT-SRV-ATTR:host"]] for s in free} & used,
            "an empty rack was broken into",
        )

    def test_the_tighter_block_is_chosen(self) -> None:
        # b?/r? takes 4: its block has 12 left, the other 16.
        taken = self.racks(self.placed(self.launch(self.flavor(required="rack"), 4)))
        (rack,) = taken
        # 8 VMs: no partly used rack holds them; of the three empty racks
        # the one in the partly used block is the best fit.
        hosts = self.placed(self.launch(self.flavor(required="rack"), 8))
        (landed,) = self.racks(hosts)
        self.assertNotEqual(rack, landed)
        self.assertEqual(rack.split("/")[0], landed.split("/")[0])


class TestTwoWorkers(TwoSchedulers, BurstMixin, TwoLevelCloud):
    """Two scheduler services and concurrent requests keep required racks whole."""

    def test_concurrent_requests_keep_their_constraints(self) -> None:
        required = self.flavor(required="rack")
        preferred = self.flavor(preferred="block")
        segmented = self.flavor(segment="2", segment_level="rack")
        # Eight requests of 4 VMs race for four racks of 8 cores: every placed
        # one keeps its constraint and no rack is overbooked.
        burst = [(required, 4), (preferred, 4), (segmented, 4), (required, 4)] * 2
        reservations = self.post_burst(burst)
        found = self.wait_for_burst(reservations, [count for _, count in burst])
        outcomes: collections.Counter = collections.Counter()
        per_rack: collections.Counter = collections.Counter()
        for (flavor, _), reservation in zip(burst, reservations, strict=True):
            servers = found[reservation]
            outcome = self.outcome(servers)
            outcomes[outcome] += 1
            if outcome != "placed":
                continue
            racks = self.racks(self.hosts_of(servers))
            per_rack.update(racks)
            if flavor == required:
                self.assertEqual(1, len(racks), racks)
            elif flavor == preferred:
                self.assertEqual(1, len(self.blocks(self.hosts_of(servers))), racks)
            else:
                self.assertTrue(all(vms % 2 == 0 for vms in racks.values()), racks)
        self.assertTrue(all(vms <= 8 for vms in per_rack.values()), per_rack)
        # All eight fit exactly; a race lost five times over, or a preferred
        # request spread over two racks, may leave a few without room.
        self.assertGreaterEqual(outcomes["placed"], 5, outcomes)
        # Both services planned some of the burst (each read the aggregates).
        self.assertTrue(all(f._tags._tags is not None for f in self.plugin_filters()))

    def test_concurrent_members_of_one_group_share_a_rack(self) -> None:
        group = self.server_group("soft-affinity")
        flavor = self.flavor(required="rack")
        posted = self.post_burst([(flavor, 2)] * 3, hints={"group": group})
        found = self.wait_for_burst(posted, [2] * 3)
        racks: set[str] = set()
        for servers in found.values():
            if self.outcome(servers) == "placed":
                racks |= set(self.racks(self.hosts_of(servers)))
        self.assertEqual(1, len(racks), racks)
