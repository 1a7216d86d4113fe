"""Host arrays and their compiled kernel (sim/host_kernel.py) plan exactly
what plan() plans over every host."""

from __future__ import annotations

import collections
import dataclasses
import math

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import (
    PACKING_COSINE,
    PACKING_LEAST_FREE_PES,
    PACKING_NOVA_WEIGHERS,
    NoPlacement,
    PlacementRequest,
    Policy,
)
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.state import ClusterState
from hpc_nova_scheduler.sim import host_kernel, state_classes
from hpc_nova_scheduler.sim.host_arrays import HostArrays
from hpc_nova_scheduler.topology.levels import TopologySpec

#: The policies the kernel serves: cosine packing, with or without the
#: classes, racks, processor groups and thresholds; and Nova's weighers,
#: alone (nova-default) or with processor groups and thresholds.
POLICIES = [
    Policy(),
    Policy(homogeneity=False),
    Policy(cache_criteria=False),
    Policy(classes=False, topology=False, homogeneity=False, interference_table=False),
    Policy.nova_like(PACKING_COSINE),
    Policy(topology=False),
    Policy.nova_like(PACKING_NOVA_WEIGHERS),
    Policy(topology=False, packing=PACKING_NOVA_WEIGHERS),
]


@st.composite
def clouds(draw) -> ClusterState:
    """A few racks of hosts of several shapes, in one or two processor groups."""
    state = ClusterState(("rack",))
    racks = draw(st.integers(1, 5))
    groups = draw(st.integers(1, 2))
    row = 0
    for rack in range(racks):
        for _ in range(draw(st.integers(1, 5))):
            cores = draw(st.sampled_from([2, 4, 4, 8]))
            ram = draw(st.sampled_from([2048.0, 4096.0, 8192.0]))
            state.add_host(
                f"h{row:03d}",
                Resources(cores, ram, 20),
                rack=f"r{rack}",
                cpu_group=f"g{(rack + row) % groups}",
            )
            row += 1
    return state


requests = st.tuples(
    st.sampled_from([AppClass.SYNC_HPC, AppClass.ASYNC_HPC, AppClass.NON_HPC]),
    st.integers(1, 14),
    st.sampled_from([0.0, 100.0, 512.0, 700.5, 1500.0]),
    st.sampled_from([0.0, 7.5, 15.0, 29.9, 30.0, 0.1 + 0.2]),
    st.sampled_from([1.0, 1.0, 2.0]),
    st.sampled_from([0.0, 0.5]),
)


class TestSamePlans(testtools.TestCase):
    @settings(max_examples=300, deadline=None)
    @given(
        clouds(),
        st.sampled_from(POLICIES),
        st.sampled_from(
            [
                Thresholds(200, 60),
                Thresholds(40, 30),
                Thresholds(1e9, 1e9),
                Thresholds(math.inf, math.inf),
            ]
        ),
        st.lists(st.tuples(requests, st.booleans()), min_size=1, max_size=25),
    )
    def test_plans_and_hosts_agree(self, cloud, policy, thresholds, steps) -> None:
        """Request by request, the same hosts in the same order (or both
        refused, the refusal's room the most VMs that fit), then the same
        free vectors, cache totals, VMs on every host and one-core room
        after every placement and release."""
        arrays = HostArrays(cloud.columns(), policy, thresholds)
        running: list[str] = []
        for number, ((app_class, count, memory, score, vcpus, disk), finish) in enumerate(steps):
            request = PlacementRequest(
                ApplicationProfile(app_class, score, f"app{number % 3}"),
                Resources(vcpus, memory, disk),
                count,
                f"job{number}",
            )
            try:
                expected = algorithm.plan(request, cloud.columns(), thresholds, policy=policy)
            except NoPlacement:
                expected = None
            most = arrays.most_vms(request)
            if most is not None:
                self.assertEqual(expected is not None, count <= most, (count, most))
            try:
                rows = arrays.plan(request)
            except NoPlacement as refusal:
                rows = None
                self.room_is_the_most_that_fits(cloud, policy, thresholds, request, refusal)
            got = None if rows is None else tuple(arrays.names[r] for r in rows)
            self.assertEqual(None if expected is None else expected.hosts, got, number)
            if expected is not None:
                cloud.apply(expected, request)
                arrays.apply_segments(arrays.plan_segments(request), request)
                running.append(request.application_id)
            if finish and running:
                gone = running.pop(len(running) // 2)
                cloud.release([gone])
                self.assertEqual(len(cloud.rows_of(gone)) or None, None)
                arrays.release(gone)
            columns = cloud.columns()
            for row in range(len(columns)):
                self.assertEqual(tuple(columns.free[row].tolist()), arrays.free_of(row))
                self.assertEqual(float(columns.cache_total[row]), arrays.cache_of(row))
                self.assertEqual(
                    [(vm.application_id, vm.cache_score) for vm in cloud.vms_on(row)],
                    [(vm.application_id, vm.cache_score) for vm in arrays.vms_on(row)],
                )
            self.assertEqual(float(columns.free[:, 0].sum()), arrays.free_cores())
            # The simulator's precheck (for one-core VMs of the memory just
            # planned, from the copies the kernel keeps).
            for need in (memory, 0.0, 1500.0):
                self.assertEqual(
                    state_classes.one_core_vms(columns.free, need), arrays.one_core_room(need)
                )
            self.assertEqual(
                {row for row in range(len(columns)) if not cloud.vms_on(row)}, arrays.empty_rows()
            )
            self.states_are_kept(arrays)
            self.racks_held_are_kept(arrays)

    def racks_held_are_kept(self, arrays: HostArrays) -> None:
        """Each rack's kept held sum, where it is not stale, what its hosts
        hold of the request it is kept for, summed afresh host by host."""
        scratch = arrays._scratch
        held_for = scratch[host_kernel.HELD_FOR]
        if math.isnan(held_for[0]):
            return
        d0, d1, d2, score, sync, cache_rule, alpha, beta = held_for.tolist()
        asks = d0 > 0 or d1 > 0 or d2 > 0
        expected = [0.0] * arrays._racks
        for row in range(len(arrays)):
            f0, f1, f2 = arrays.free_of(row)
            copies = host_kernel.copies_of(f0, f1, f2, d0, d1, d2)
            if copies < 1 and asks:
                continue
            held = host_kernel._held(
                copies,
                arrays.cache_of(row),
                bool(arrays._sync_vms[row] > 0),
                score,
                sync > 0,
                cache_rule > 0,
                alpha,
                beta,
            )
            expected[arrays._rack[row]] += max(held, 0.0)
        stale = scratch[host_kernel.RACK_STALE]
        held = scratch[host_kernel.RACK_HELD]
        for rack in range(arrays._racks):
            if not stale[rack]:
                self.assertEqual(expected[rack], held[rack], rack)

    def states_are_kept(self, arrays: HostArrays) -> None:
        """The kernel's state table after every step: each host in the
        state of its own arrays, each state's host count and first-row
        bound, the live states exactly those with hosts, one state per key,
        each found by its hash."""
        states = arrays._states
        host_state, state_key, hosts_in = states[0], states[1], states[2]
        live = states[3][: states[5][0]].tolist()
        keys = []
        for row in range(len(arrays)):
            free = arrays.free_of(row)
            key = (
                *free,
                *arrays.capacity_of(row)[:2],
                arrays.cache_of(row),
                1.0 if arrays._sync_vms[row] > 0 else 0.0,
                float(arrays._group[row]),
            )
            self.assertEqual(key, tuple(state_key[host_state[row]].tolist()), row)
            keys.append(key)
        counted = collections.Counter(host_state.tolist())
        self.assertEqual(sorted(counted), sorted(live))
        # A one-VM plan reads a state's rows from its bound on: no host of
        # the state before it.
        first_row = states[host_kernel.FIRST_ROW]
        for row in range(len(arrays)):
            self.assertLessEqual(first_row[host_state[row]], row, row)
        for state, hosts in counted.items():
            self.assertEqual(hosts, hosts_in[state])
        self.assertEqual(len(set(keys)), len(live))
        table = states[7]
        self.assertEqual(sorted(live), sorted(table[table >= 0].tolist()))
        self.points_are_kept(states, live)

    def points_are_kept(self, states: tuple, live: list[int]) -> None:
        """Each live state at the point of its free resources, capacity and
        group, in that point's list, once; the live points exactly those
        with states, one per key, each found by its hash; each point's
        bounds at most the least cache total of its states (by SyncHPC)."""
        state_key = states[1]
        links, point_key, ints = (
            states[host_kernel.STATE_LINKS],
            states[host_kernel.POINT_KEY],
            states[host_kernel.POINT_INTS],
        )
        counters, low = states[host_kernel.COUNTERS], states[host_kernel.POINT_LOW]
        points = states[host_kernel.POINT_LIVE][: counters[2]].tolist()
        columns = list(host_kernel.POINT_COLUMNS)
        members: dict[int, list[int]] = {point: [] for point in points}
        for point in points:
            state = ints[point, host_kernel.POINT_FIRST]
            previous = -1
            while state >= 0:
                self.assertEqual(previous, links[state, host_kernel.LINK_PREVIOUS])
                members[point].append(int(state))
                previous, state = state, links[state, host_kernel.LINK_NEXT]
            self.assertEqual(len(members[point]), ints[point, host_kernel.POINT_STATES])
            self.assertEqual(point, points[ints[point, host_kernel.POINT_WHERE]])
        listed = [state for point in points for state in members[point]]
        self.assertEqual(sorted(live), sorted(listed))
        for point in points:
            for state in members[point]:
                self.assertEqual(point, links[state, host_kernel.LINK_POINT])
                self.assertEqual(state_key[state, columns].tolist(), point_key[point].tolist())
                synced = 1 if state_key[state, 6] > 0 else 0
                self.assertLessEqual(low[point, synced], state_key[state, 5])
        self.assertEqual(len(points), len({tuple(point_key[p].tolist()) for p in points}))
        table = states[host_kernel.POINT_TABLE]
        self.assertEqual(sorted(points), sorted(table[table >= 0].tolist()))

    @settings(max_examples=60, deadline=None)
    @given(
        st.integers(20, 120),
        st.sampled_from([Policy(), Policy(topology=False), Policy(cache_criteria=False)]),
        st.sampled_from([Thresholds(200, 60), Thresholds(40, 30), Thresholds(math.inf, 30)]),
        st.lists(
            st.tuples(
                st.sampled_from([AppClass.ASYNC_HPC, AppClass.NON_HPC, AppClass.SYNC_HPC]),
                st.sampled_from([1, 1, 1, 3, 8]),
                st.sampled_from([300.0, 1000.0, 1228.8, 2048.0]),
                st.floats(0.0, 30.0),
                st.integers(0, 3),
            ),
            min_size=10,
            max_size=120,
        ),
    )
    def test_one_vm_plans_by_point_on_busy_clouds(self, hosts, policy, thresholds, steps) -> None:
        """One-VM plans score points, not states (host_kernel._plan_one):
        on clouds of up to 120 hosts made busy by many jobs of drawn cache
        scores (so nearly every busy host is a state of its own, and many
        share a point), the same host as plan() over every host, and the
        point table kept through placements and releases."""
        cloud = ClusterState(("rack",))
        for row in range(hosts):
            cores, ram = ((8, 12288.0), (4, 4096.0))[row % 7 == 3]
            cloud.add_host(f"h{row:03d}", Resources(cores, ram, 0), rack=f"r{row // 16}")
        arrays = HostArrays(cloud.columns(), policy, thresholds)
        running: list[str] = []
        for number, (app_class, count, memory, score, finish) in enumerate(steps):
            request = PlacementRequest(
                ApplicationProfile(app_class, score, f"app{number}"),
                Resources(1, memory, 0),
                count,
                f"job{number}",
            )
            try:
                expected = algorithm.plan(request, cloud.columns(), thresholds, policy=policy)
            except NoPlacement:
                expected = None
            try:
                planned = arrays.plan_segments(request)
            except NoPlacement:
                planned = None
            got = None if planned is None else tuple(arrays.names[r] for r in planned.chosen)
            self.assertEqual(None if expected is None else expected.hosts, got, number)
            if expected is not None:
                cloud.apply(expected, request)
                arrays.apply_segments(planned, request)
                running.append(request.application_id)
            for _ in range(finish if number % 4 == 0 else 0):
                if running:
                    gone = running.pop(len(running) // 3)
                    cloud.release([gone])
                    arrays.release(gone)
        self.states_are_kept(arrays)

    def room_is_the_most_that_fits(self, cloud, policy, thresholds, request, refusal) -> None:
        """A refusal's room: plan() holds that many VMs and refuses one more."""
        for count, fits in ((refusal.room, True), (refusal.room + 1, False)):
            if count < 1:
                continue
            asked = dataclasses.replace(request, count=count)
            try:
                algorithm.plan(asked, cloud.columns(), thresholds, policy=policy)
                planned = True
            except NoPlacement:
                planned = False
            self.assertEqual(fits, planned, (count, refusal.reason))

    def test_what_the_kernel_does_not_serve(self) -> None:
        cloud = ClusterState(("block", "rack"))
        cloud.add_host("h0", Resources(4, 2048, 0), rack="r0", outer=("b0",))
        self.assertIn("several topology levels", HostArrays.serves(Policy(), ("block", "rack")))
        self.assertRaises(ValueError, HostArrays, cloud.columns(), Policy(), Thresholds(200, 60))
        flat = ("rack",)
        self.assertIn("cosine", HostArrays.serves(Policy(packing=PACKING_LEAST_FREE_PES), flat))
        self.assertIn("rack order", HostArrays.serves(Policy(packing=PACKING_NOVA_WEIGHERS), flat))
        self.assertEqual("", HostArrays.serves(Policy.nova_like(PACKING_NOVA_WEIGHERS), flat))
        self.assertIn("judge", HostArrays.serves(Policy(), flat, judged=True))
        self.assertIn("ExtremeHPC", HostArrays.serves(Policy(), flat, AppClass.EXTREME_HPC))
        spec = TopologySpec(required="rack")
        self.assertIn("constraints", HostArrays.serves(Policy(), flat, AppClass.SYNC_HPC, spec))
        # Blind to racks, a tenant's constraints are ignored as plan() ignores them.
        self.assertEqual("", HostArrays.serves(Policy(topology=False), flat, spec=spec))
        self.assertEqual("", HostArrays.serves(Policy(), flat, AppClass.SYNC_HPC))

    def test_a_running_application_and_an_empty_request_are_refused(self) -> None:
        cloud = ClusterState(("rack",))
        cloud.add_host("h0", Resources(4, 2048, 0), rack="r0")
        arrays = HostArrays(cloud.columns(), Policy(), Thresholds(200, 60))
        request = PlacementRequest(
            ApplicationProfile(AppClass.SYNC_HPC, 10.0), Resources(1, 100, 0), 2, "a"
        )
        arrays.apply_segments(arrays.plan_segments(request), request)
        self.assertEqual([0], arrays.rows_of("a"))
        self.assertRaises(ValueError, arrays.plan_segments, request)
        self.assertRaises(NoPlacement, arrays.plan, dataclasses.replace(request, count=0))
        self.assertEqual(1, arrays.release("a"))
        self.assertEqual(0, arrays.release("a"))
        self.assertEqual({0}, arrays.empty_rows())

    def test_a_host_of_many_applications_keeps_them_in_order(self) -> None:
        """More applications on a host than its runs' first columns hold:
        they widen, and a release sums what stays in placement order."""
        cloud = ClusterState(("rack",))
        cloud.add_host("h0", Resources(24, 16384, 0), rack="r0")
        thresholds = Thresholds(math.inf, math.inf)
        arrays = HostArrays(cloud.columns(), Policy(), thresholds)
        for number in range(12):
            request = PlacementRequest(
                ApplicationProfile(AppClass.ASYNC_HPC, 0.1 * (number + 1), f"app{number}"),
                Resources(1, 100, 0),
                1 + number % 2,
                f"job{number}",
            )
            plan = algorithm.plan(request, cloud.columns(), thresholds, policy=Policy())
            cloud.apply(plan, request)
            arrays.apply_segments(arrays.plan_segments(request), request)
        for gone in ("job3", "job0", "job11", "job7"):
            cloud.release([gone])
            self.assertEqual(1, arrays.release(gone))
            self.assertEqual(float(cloud.columns().cache_total[0]), arrays.cache_of(0))
            self.assertEqual(tuple(cloud.columns().free[0].tolist()), arrays.free_of(0))
            self.assertEqual(
                [vm.application_id for vm in cloud.vms_on(0)],
                [vm.application_id for vm in arrays.vms_on(0)],
            )
        self.assertEqual(8, len({vm.application_id for vm in arrays.vms_on(0)}))

    def test_hosts_alike_but_for_their_cache_are_judged_apart(self) -> None:
        """One VM, unranked: hosts read in a row that differ only by their
        cache total (or by SyncHPC) are each judged by the thresholds."""
        thresholds = Thresholds(40, 30)
        for runs in (
            ((AppClass.ASYNC_HPC, 30.0), (AppClass.ASYNC_HPC, 5.0)),
            ((AppClass.SYNC_HPC, 5.0), (AppClass.ASYNC_HPC, 5.0)),
        ):
            cloud = ClusterState(("rack",))
            for row in range(4):
                cloud.add_host(f"h{row}", Resources(4, 4096, 0), rack="r0")
            arrays = HostArrays(cloud.columns(), Policy(), thresholds)
            # A VM on h0 and one on h1: the same free resources, not the same
            # VMs; shaped so that the cosine packing prefers them to idle hosts.
            for row, (app_class, score) in enumerate(runs):
                request = PlacementRequest(
                    ApplicationProfile(app_class, score, f"app{row}"),
                    Resources(1, 3000, 0),
                    1,
                    f"job{row}",
                )
                cloud.apply(algorithm.Plan((f"h{row}",), "", ("r0",)), request)
                arrays.apply_segments([([row], 1)], request)
            for app_class, score in ((AppClass.ASYNC_HPC, 30.0), (AppClass.NON_HPC, 30.0)):
                request = PlacementRequest(
                    ApplicationProfile(app_class, score, "c"), Resources(1, 300, 0), 1, "c"
                )
                expected = algorithm.plan(request, cloud.columns(), thresholds, policy=Policy())
                got = tuple(arrays.names[row] for row in arrays.plan(request))
                self.assertEqual(expected.hosts, got, (runs, score))
                # The host that takes it is h1: h0 is refused by a threshold.
                self.assertEqual(("h1",), got)

    def test_few_and_many_reachable_hosts_plan_alike(self) -> None:
        """On a cloud of many hosts, requests reaching a few of them (their
        keys selected in a bounded heap) and many (all heaped) plan as
        plan() does, part-full hosts among idle ones."""
        cloud = ClusterState(("rack",))
        for row in range(96):
            cloud.add_host(f"h{row:03d}", Resources(4, 4096, 0), rack=f"r{row // 16}")
        thresholds = Thresholds(200, 60)
        for policy in (Policy(), Policy(classes=False, topology=False, homogeneity=False)):
            arrays = HostArrays(cloud.columns(), policy, thresholds)
            reference = ClusterState(("rack",))
            for row in range(96):
                reference.add_host(f"h{row:03d}", Resources(4, 4096, 0), rack=f"r{row // 16}")
            for number, count in enumerate((3, 40, 2, 70, 5, 1, 30, 2)):
                request = PlacementRequest(
                    ApplicationProfile(AppClass.SYNC_HPC, 7.5 * (number % 4), f"app{number}"),
                    Resources(1, 300 + 700 * (number % 3), 0),
                    count,
                    f"job{number}",
                )
                expected = algorithm.plan(request, reference.columns(), thresholds, policy=policy)
                planned = arrays.plan_segments(request)
                got = tuple(arrays.names[row] for row in planned.chosen.tolist())
                self.assertEqual(expected.hosts, got, (policy, number))
                reference.apply(expected, request)
                arrays.apply_segments(planned, request)
                if number % 3 == 2:
                    gone = f"job{number - 1}"
                    reference.release([gone])
                    arrays.release(gone)
