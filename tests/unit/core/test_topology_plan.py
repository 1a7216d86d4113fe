"""Plans on clouds of several topology levels: BestFit and the tenant's constraints."""

from __future__ import annotations

import collections
import contextlib

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import NoPlacement, PlacementRequest
from hpc_nova_scheduler.core.cluster import Resources, RunningVM
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.domains import TopologySpec
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.state import ClusterState

LEVELS = ("block", "rack")
VM = Resources(1, 1024, 0)
THRESHOLDS = Thresholds(200, 60)


def cloud(blocks: int = 2, racks: int = 2, hosts: int = 4, cores: int = 4) -> ClusterState:
    state = ClusterState(LEVELS)
    for b in range(blocks):
        for r in range(racks):
            for h in range(hosts):
                state.add_host(
                    f"b{b}r{r}h{h}",
                    Resources(cores, cores * 2048, 0),
                    rack=f"r{r}",
                    cpu_group="x",
                    outer=(f"b{b}",),
                )
    return state


def request(
    count: int,
    spec: TopologySpec = algorithm.NO_TOPOLOGY,
    cls: AppClass = AppClass.SYNC_HPC,
    app: str = "app",
    score: float = 0.0,
    held: frozenset[str] = frozenset(),
) -> PlacementRequest:
    return PlacementRequest(ApplicationProfile(cls, score, app), VM, count, app, spec, held)


def plan(state: ClusterState, req: PlacementRequest) -> algorithm.Plan:
    return algorithm.plan(req, state.columns(), THRESHOLDS)


def place(state: ClusterState, req: PlacementRequest) -> algorithm.Plan:
    found = plan(state, req)
    state.apply(found, req)
    return found


def group_in_one_rack(state: ClusterState) -> tuple[TopologySpec, algorithm.Plan, tuple]:
    """A group's first 4 VMs placed under ``required=rack``: the spec, the
    plan, and the domains it holds (block, rack, hosts) for its later members."""
    spec = TopologySpec(required="rack")
    first = place(state, request(4, spec, app="group"))
    return spec, first, (frozenset({"b0"}), frozenset(first.racks), frozenset(first.hosts))


def rack_of(host: str) -> str:
    return f"{host[:2]}/{host[2:4]}"


class TestBestFit(testtools.TestCase):
    def test_a_partly_used_rack_holds_the_request_before_an_empty_one(self) -> None:
        state = cloud()
        first = place(state, request(10, app="first"))
        self.assertEqual((("b0",), ("b0/r0",)), first.domains)
        # b0/r0 has 6 cores left: 6 VMs fit there and the other racks stay whole.
        second = plan(state, request(6, app="second"))
        self.assertEqual(("b0/r0",), second.racks)

    def test_equal_racks_go_to_the_tighter_block(self) -> None:
        state = cloud()
        place(state, request(16, app="first"))  # b0/r0 full
        # Three empty racks of 16: the one in b0 keeps b1 whole.
        self.assertEqual(("b0/r1",), plan(state, request(16, app="second")).racks)

    def test_spill_takes_the_largest_block_then_the_tightest_for_the_rest(self) -> None:
        state = cloud()
        place(state, request(4, app="first"))
        found = plan(state, request(40, app="second"))
        blocks = collections.Counter(host[:2] for host in found.hosts)
        # b1 (32 free) whole, the rest in b0.
        self.assertEqual({"b1": 32, "b0": 8}, dict(blocks))

    def test_single_level_keeps_seed_003_largest_rack_first(self) -> None:
        state = ClusterState()
        for r, size in ((0, 2), (1, 4)):
            for h in range(size):
                state.add_host(f"r{r}h{h}", Resources(4, 8192, 0), rack=f"r{r}", cpu_group="x")
        found = algorithm.plan(request(4), state.columns(), THRESHOLDS)
        # The rack with the most room, though the smaller one holds 4 VMs too.
        self.assertEqual(("r1",), found.racks)


class TestRequired(testtools.TestCase):
    def test_refused_whole_when_no_rack_holds_it(self) -> None:
        state = cloud()
        self.assertEqual(1, len(plan(state, request(16, TopologySpec(required="rack"))).racks))
        error = self.assertRaises(
            NoPlacement, plan, state, request(17, TopologySpec(required="rack"))
        )
        self.assertIn("hpc:topology_required=rack", error.reason)

    def test_a_late_member_joins_its_rack_even_when_its_hosts_are_full(self) -> None:
        state = cloud(hosts=2)
        spec, first, held = group_in_one_rack(state)
        # The group's hosts are not among the candidates any more: only the
        # held domains say where it runs.
        hosts = [host for host in state.hosts() if host.name not in first.hosts]
        found = algorithm.plan(
            request(4, spec, app="group", held=held), hosts, THRESHOLDS, levels=LEVELS
        )
        self.assertEqual(first.racks, found.racks)
        self.assertRaises(
            NoPlacement,
            algorithm.plan,
            request(5, spec, app="group", held=held),
            hosts,
            THRESHOLDS,
            levels=LEVELS,
        )

    def test_a_late_member_is_refused_when_its_rack_has_no_candidate_left(self) -> None:
        state = cloud(hosts=2, cores=2)
        spec, first, held = group_in_one_rack(state)
        # Its rack is full: Nova's filters leave none of its hosts, and the
        # other racks, though empty, are not the application's.
        rack = first.racks[0]
        hosts = [host for host in state.hosts() if rack_of(host.name) != rack]
        error = self.assertRaises(
            NoPlacement,
            algorithm.plan,
            request(2, spec, app="group", held=held),
            hosts,
            THRESHOLDS,
            levels=LEVELS,
        )
        self.assertIn("holds the application", error.reason)

    def test_a_moved_vm_of_a_segment_stays_in_its_own_rack(self) -> None:
        state = cloud(hosts=2)
        segmented = TopologySpec(segment=4, segment_level="rack")
        first = place(state, request(12, segmented, app="seg"))
        racks = collections.Counter(rack_of(host) for host in first.hosts)
        self.assertEqual([4, 8], sorted(racks.values()))
        full = next(rack for rack, vms in racks.items() if vms == 8)
        moved = next(host for host in first.hosts if rack_of(host) == full)
        held = (frozenset({moved[:2]}), frozenset({full}), frozenset({moved}))
        # Its segment's rack is full: the other rack of the application has
        # room, but going there would break both segments.
        self.assertRaises(NoPlacement, plan, state, request(1, segmented, app="seg", held=held))
        other = next(host for host in first.hosts if rack_of(host) != full)
        held = (frozenset({other[:2]}), frozenset({rack_of(other)}), frozenset({other}))
        found = plan(state, request(1, segmented, app="seg", held=held))
        self.assertEqual((rack_of(other),), found.racks)

    def test_an_unknown_level_is_refused_naming_the_key(self) -> None:
        error = self.assertRaises(
            NoPlacement, plan, cloud(), request(2, TopologySpec(required="pod"))
        )
        self.assertIn("hpc:topology_required", error.reason)

    def test_alternates_stay_in_the_required_rack(self) -> None:
        state = cloud()
        req = request(6, TopologySpec(required="rack"))
        found = plan(state, req)
        spares = algorithm.alternates(req, state.columns(), found, THRESHOLDS, limit=5)
        self.assertTrue(spares)
        self.assertEqual({found.racks[0]}, {rack_of(host) for host in spares})


class TestSegments(testtools.TestCase):
    def test_segments_never_straddle_racks(self) -> None:
        state = cloud()
        place(state, request(2, app="other"))  # b0/r0 keeps 14
        found = plan(state, request(24, TopologySpec(segment=4, segment_level="rack")))
        per_rack = collections.Counter(rack_of(host) for host in found.hosts)
        self.assertEqual(24, sum(per_rack.values()))
        self.assertTrue(all(vms % 4 == 0 for vms in per_rack.values()), per_rack)

    def test_a_count_the_segment_does_not_divide_is_refused(self) -> None:
        error = self.assertRaises(
            NoPlacement, plan, cloud(), request(6, TopologySpec(segment=4, segment_level="rack"))
        )
        self.assertIn("hpc:topology_segment", error.reason)


SPECS = st.sampled_from(
    [
        TopologySpec(),
        TopologySpec(required="rack"),
        TopologySpec(required="block"),
        TopologySpec(required="host"),
        TopologySpec(preferred="rack"),
        TopologySpec(preferred="block"),
        TopologySpec(required="block", preferred="rack"),
        TopologySpec(segment=2, segment_level="rack"),
        TopologySpec(segment=2, segment_level="host"),
        TopologySpec(required="block", segment=2, segment_level="rack"),
    ]
)


@st.composite
def scenarios(draw):
    blocks = draw(st.integers(1, 3))
    racks = draw(st.integers(1, 3))
    hosts = draw(st.integers(1, 3))
    cores = draw(st.integers(1, 6))
    state = cloud(blocks, racks, hosts, cores)
    # Some cores already taken, by NonHPC VMs of other applications.
    for index, name in enumerate(sorted(h.name for h in state.hosts())):
        used = draw(st.integers(0, cores))
        for i in range(used):
            state.columns().place(
                index,
                RunningVM(uuid=f"{name}-{i}", application_id=f"busy-{name}"),
                VM,
            )
    cls = draw(st.sampled_from([AppClass.SYNC_HPC, AppClass.EXTREME_HPC, AppClass.ASYNC_HPC]))
    spec = draw(SPECS)
    count = draw(st.integers(1, 24))
    if spec.segment:
        count = max(spec.segment, count - count % spec.segment)
    return state, request(count, spec, cls)


def room_by_domain(state: ClusterState, req: PlacementRequest, level: int) -> dict[str, int]:
    """VMs of ``req`` each domain holds, by free cores and dedication."""
    columns = state.columns()
    room: dict[str, int] = collections.Counter()
    for row, name in enumerate(columns.names):
        free = int(columns.free[row][0] + 1e-9)
        if req.app_class is AppClass.EXTREME_HPC and columns.vms[row]:
            free = 0
        domain = (
            name
            if level == len(LEVELS)
            else columns.domain_names[level][columns.domain[level][row]]
        )
        room[domain] += free
    return room


class TestProperties(testtools.TestCase):
    @settings(max_examples=150, deadline=None)
    @given(scenarios())
    def test_constraints_hold_and_refusals_are_honest(self, scenario) -> None:
        state, req = scenario
        spec = req.topology
        depth = {"block": 0, "rack": 1, "host": 2}
        try:
            found = plan(state, req)
        except NoPlacement:
            found = None
        unconstrained = None
        with contextlib.suppress(NoPlacement):
            unconstrained = plan(state, request(req.count, TopologySpec(), req.app_class))
        if found is None:
            if spec.required is not None and spec.segment is None:
                # Refused only when no domain of the level has the room.
                rooms = room_by_domain(state, req, depth[spec.required])
                self.assertLess(max(rooms.values()), req.count, rooms)
            if spec.required is None and spec.segment is None:
                # Preferences never refuse what the plain plan places.
                self.assertIsNone(unconstrained)
            return
        self.assertEqual(req.count, len(found.hosts))
        columns = state.columns()
        for host, vms in found.vms_per_host().items():
            self.assertLessEqual(vms, columns.free[columns.index[host]][0] + 1e-9)
        if spec.required is not None:
            level = depth[spec.required]
            spans = len(set(found.hosts)) if level == 2 else len(found.domains[level])
            self.assertEqual(1, spans, found)
        if spec.segment is not None:
            level = depth[spec.segment_level]
            per = collections.Counter(
                host
                if level == 2
                else columns.domain_names[level][columns.domain[level][columns.index[host]]]
                for host in found.hosts
            )
            self.assertTrue(all(v % spec.segment == 0 for v in per.values()), per)

    @settings(max_examples=100, deadline=None)
    @given(scenarios())
    def test_best_fit_takes_the_tightest_rack_that_holds_the_request(self, scenario) -> None:
        state, req = scenario
        req = request(req.count, TopologySpec(), AppClass.EXTREME_HPC)
        rooms = room_by_domain(state, req, 1)
        fitting = {rack: room for rack, room in rooms.items() if room >= req.count}
        if not fitting:
            return
        found = plan(state, req)
        self.assertEqual(1, len(found.racks), found)
        self.assertEqual(min(fitting.values()), fitting[found.racks[0]])
