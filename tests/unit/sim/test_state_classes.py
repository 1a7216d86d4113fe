"""State classes and their greedy (sim/class_greedy.py) plan exactly what
plan() plans over every host."""

from __future__ import annotations

import dataclasses

import fixtures
import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import (
    PACKING_COSINE,
    PACKING_LEAST_FREE_PES,
    PACKING_MOST_FREE_RAM,
    PACKING_NOVA_WEIGHERS,
    NoPlacement,
    PlacementRequest,
    Policy,
)
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.core.state import ClusterState
from hpc_nova_scheduler.interference.cache_pressure import CachePressureModel
from hpc_nova_scheduler.interference.rule import ModelRule
from hpc_nova_scheduler.sim import class_greedy, scenarios, state_classes
from hpc_nova_scheduler.sim.state_classes import StateClasses
from hpc_nova_scheduler.topology.levels import TopologySpec

POLICIES = [
    Policy(),
    Policy(packing=PACKING_LEAST_FREE_PES),
    Policy(packing=PACKING_MOST_FREE_RAM),
    Policy(classes=False, topology=False, homogeneity=False, interference_table=False),
    Policy(homogeneity=False),
    Policy(cache_criteria=False),
    Policy.nova_like(PACKING_NOVA_WEIGHERS),
    Policy.nova_like(PACKING_COSINE),
    Policy(classes=False, packing=PACKING_NOVA_WEIGHERS),
]


@st.composite
def clouds(draw) -> ClusterState:
    """A few racks of hosts of one or two shapes, in one or two processor
    groups, the racks in blocks of two or not."""
    blocks = draw(st.booleans())
    state = ClusterState(("block", "rack") if blocks else ("rack",))
    racks = draw(st.integers(1, 5))
    groups = draw(st.integers(1, 2))
    row = 0
    for rack in range(racks):
        for _ in range(draw(st.integers(1, 4))):
            cores = draw(st.sampled_from([2, 4, 4, 8]))
            ram = draw(st.sampled_from([2048.0, 4096.0, 8192.0]))
            state.add_host(
                f"h{row:03d}",
                Resources(cores, ram, 20),
                rack=f"r{rack}",
                cpu_group=f"g{rack % groups}",
                outer=(f"b{rack // 2}",) if blocks else (),
            )
            row += 1
    return state


requests = st.tuples(
    st.sampled_from([AppClass.SYNC_HPC, AppClass.ASYNC_HPC, AppClass.NON_HPC]),
    st.integers(1, 12),
    st.sampled_from([0.0, 100.0, 512.0, 700.5, 1500.0]),
    st.sampled_from([0.0, 7.5, 15.0, 29.9, 30.0]),
    st.sampled_from([1.0, 1.0, 2.0]),
    st.sampled_from(
        [
            TopologySpec(),
            TopologySpec(),
            TopologySpec(required="rack"),
            TopologySpec(required="block"),
            TopologySpec(preferred="rack"),
            TopologySpec(preferred="block"),
            TopologySpec(required="block", preferred="rack"),
        ]
    ),
)


class TestSamePlans(testtools.TestCase):
    def same_then_apply(
        self, cloud, classes, request, expected, rows, running, finish, segments=None
    ) -> None:
        """The same hosts in the same order (or both refused); then the plan
        applied to both (to the classes as ``segments`` where given), and
        with ``finish`` one running application released."""
        got = None if rows is None else tuple(classes.names[r] for r in rows)
        self.assertEqual(None if expected is None else expected.hosts, got, request.application_id)
        if expected is not None:
            cloud.apply(expected, request)
            if segments is not None:
                classes.apply_segments(segments, request)
            else:
                classes.apply(rows, request)
            running.append(request.application_id)
        if finish and running:
            gone = running.pop(len(running) // 2)
            cloud.release([gone])
            classes.release(gone)

    def room_is_the_most_that_fits(self, cloud, policy, thresholds, request, refusal) -> None:
        """A refusal's room: plan() over every host holds that many of the
        request's VMs and refuses one more (the simulator waits for releases
        that could free what a refused job lacked, trusting it)."""
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

    @settings(max_examples=300, deadline=None)
    @given(
        clouds(),
        st.sampled_from(POLICIES),
        st.sampled_from([Thresholds(200, 60), Thresholds(40, 30), Thresholds(1e9, 1e9)]),
        st.lists(st.tuples(requests, st.booleans()), min_size=1, max_size=25),
        st.sampled_from([0, 1000]),
        st.sampled_from([1, 1000]),
        st.sampled_from([1, 1000]),
        st.sampled_from([0, 1000]),
        st.booleans(),
        st.sampled_from([0.0, 0.5]),
    )
    def test_plans_and_hosts_agree(
        self, cloud, policy, thresholds, steps, few, fill, merge, one_by_one, segmented, disk
    ) -> None:
        """Request by request, the same hosts in the same order, and the
        same free vectors and cache totals after every placement and release,
        with classes scored and hosts grouped in numpy (few = 0) or in Python, hosts that
        fill up planned at once (fill = 1) or VM by VM, hosts of equal keys
        merged at once (merge = 1) or one by one, and hosts joining and
        leaving classes, cut into a plan's segments, written to the
        classes' arrays and counted over every host one by one or in one
        pass (one_by_one = 0), plans applied as their segments or VM by VM.
        Without disk, VMs of one core and a memory the precheck was asked
        of are planned from the one-core fits the classes keep for it (as
        in the simulator), else from their free vectors."""
        if StateClasses.serves(policy):
            return  # a policy no request of it can plan on classes
        classes = StateClasses(cloud.columns(), policy, thresholds)
        classes.few_slots = classes.few_hosts = few
        classes.filling_from = fill
        classes.merging_from = merge
        classes.one_by_one = classes.flush_one_by_one = one_by_one
        classes.counting_share = 1e-9 if one_by_one else 1e9
        running: list[str] = []
        for number, ((app_class, count, memory, score, vcpus, spec), finish) in enumerate(steps):
            request = PlacementRequest(
                ApplicationProfile(app_class, score, f"app{number % 3}"),
                Resources(vcpus, memory, disk),
                count,
                f"job{number}",
                spec,
            )
            if StateClasses.serves(policy, app_class, spec):
                self.assertRaises(ValueError, classes.plan, request)
                continue
            try:
                expected = algorithm.plan(request, cloud.columns(), thresholds, policy=policy)
            except NoPlacement:
                expected = None
            # Every count up to the most the classes tell plans, none beyond.
            most = classes.most_vms(request)
            if most is not None:
                self.assertEqual(expected is not None, count <= most, (count, most))
            try:
                rows = classes.plan(request)
            except NoPlacement as refusal:
                rows = None
                if refusal.room is not None:
                    self.room_is_the_most_that_fits(cloud, policy, thresholds, request, refusal)
            segments = classes.plan_segments(request) if segmented and rows else None
            self.same_then_apply(cloud, classes, request, expected, rows, running, finish, segments)
            columns = cloud.columns()
            for row in range(len(columns)):
                self.assertEqual(tuple(columns.free[row].tolist()), classes.free_of(row))
                self.assertEqual(float(columns.cache_total[row]), classes.cache_of(row))
                self.assertEqual(
                    [(vm.application_id, vm.cache_score) for vm in cloud.vms_on(row)],
                    [(vm.application_id, vm.cache_score) for vm in classes.vms_on(row)],
                )
            self.assertEqual(float(columns.free[:, 0].sum()), classes.free_cores())
            # The simulator's cheap precheck counts what the hosts' columns count.
            for need in (memory, 0.0, 1500.0):
                self.assertEqual(
                    state_classes.one_core_vms(columns.free, need), classes.one_core_room(need)
                )
                # What one host can come to add to it: as much as it holds idle.
                self.assertEqual(
                    max(
                        state_classes.one_core_vms(columns.capacity[row : row + 1], need)
                        for row in range(len(columns))
                    ),
                    classes.most_one_core(need),
                )

    @settings(max_examples=150, deadline=None)
    @given(
        clouds(),
        st.sampled_from(POLICIES),
        st.sampled_from([2.0, 10.0, 40.0]),
        st.lists(st.tuples(requests, st.booleans()), min_size=1, max_size=20),
        st.sampled_from([0, 1000]),
        st.sampled_from([1, 1000]),
        st.sampled_from([0.0, 0.5]),
    )
    def test_a_judge_of_co_runners_sees_what_plan_shows_it(
        self, cloud, policy, tolerance, steps, few, fill, disk
    ) -> None:
        """Under an interference model as admission, the same plans, and the
        model asked about the same hosts in the same order. Without disk,
        one-core VMs of a memory the precheck was asked of are judged with
        the one-core fits the classes keep (as in the simulator)."""
        thresholds = Thresholds(200, 60)
        profiles = {
            f"app{i}": ProfileRecord(f"app{i}", cache_score=score)
            for i, score in enumerate((5.0, 20.0, 35.0))
        }
        asked: dict[str, list] = {"plan": [], "classes": []}

        def judge(who: str) -> ModelRule:
            class Counting(CachePressureModel):
                def predict_many(self, hosts):
                    asked[who].append([[(t.name, t.vms) for t in tenants] for tenants in hosts])
                    return super().predict_many(hosts)

            return ModelRule(Counting(30.0, 1.0), tolerance, profiles)

        by_plan, by_classes = judge("plan"), judge("classes")
        if StateClasses.serves(policy):
            return
        classes = StateClasses(cloud.columns(), policy, thresholds, judged=True)
        classes.few_slots = few
        classes.filling_from = fill
        running: list[str] = []
        for number, ((app_class, count, memory, _, vcpus, spec), finish) in enumerate(steps):
            name = f"app{number % 3}"
            request = PlacementRequest(
                ApplicationProfile(app_class, profiles[name].cache_score, name),
                Resources(vcpus, memory, disk),
                count,
                f"job{number}",
                spec,
            )
            if StateClasses.serves(policy, app_class, spec):
                continue
            classes.one_core_room(memory)  # the simulator's precheck, as it asks
            try:
                expected = algorithm.plan(
                    request, cloud.columns(), thresholds, policy=policy, rule=by_plan
                )
            except NoPlacement:
                expected = None
            try:
                rows = classes.plan(request, by_classes)
            except NoPlacement:
                rows = None
            self.assertEqual(asked["plan"], asked["classes"], number)
            self.same_then_apply(cloud, classes, request, expected, rows, running, finish)

    def test_idle_hosts_are_one_class_per_rack(self) -> None:
        cloud = ClusterState()
        for row in range(64):
            cloud.add_host(f"h{row:03d}", Resources(4, 2048, 0), rack=f"r{row // 32}")
        self.assertEqual(
            2, StateClasses(cloud.columns(), Policy(), Thresholds(200, 60)).class_count()
        )
        blind_to_racks = Policy(classes=False, topology=False)
        classes = StateClasses(cloud.columns(), blind_to_racks, Thresholds(200, 60))
        self.assertEqual(1, classes.class_count())
        request = PlacementRequest(
            ApplicationProfile(AppClass.SYNC_HPC, 10.0), Resources(1, 100, 0), 6, "a"
        )
        rows = classes.plan(request)
        classes.apply(rows, request)
        # Hosts that took as many VMs are alike again; the idle ones stay one class.
        loads = {rows.count(row) for row in rows}
        self.assertEqual(len(loads) + 1, classes.class_count())
        classes.release("a")
        self.assertEqual(1, classes.class_count())

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(
            st.tuples(st.lists(st.integers(0, 40), min_size=1, max_size=12), st.integers(1, 5)),
            min_size=1,
            max_size=6,
        )
    )
    def test_a_plans_hosts_are_counted_alike_every_way(self, segments) -> None:
        """A plan's hosts and the VMs each takes in all (a host may come
        back in a segment or a later one): the same in Python, sorted in
        numpy and counted over every host."""
        expected: dict[int, int] = {}
        for rows, vms in segments:
            for row in rows:
                expected[row] = expected.get(row, 0) + vms
        for few, counted_from in ((1000, 0), (0, 1e9), (0, 0)):
            hosts, counts = state_classes._per_host(segments, few, counted_from)
            got = dict(zip(list(hosts), [int(c) for c in counts], strict=True))
            self.assertEqual(sorted(expected), [int(h) for h in hosts], (few, counted_from))
            self.assertEqual(expected, got, (few, counted_from))

    def test_a_class_moved_whole_is_renamed_and_ids_no_host_holds_are_forgotten(self) -> None:
        """A wide job takes a whole class: the class keeps its hosts under
        its new state; a request of nothing leaves it in its own state; and
        once the jobs finish, the VMs' ids no host holds are forgotten."""
        cloud = ClusterState()
        for row in range(8):
            cloud.add_host(f"h{row}", Resources(4, 2048, 0), rack=f"r{row // 4}")
        policy = Policy(classes=False, topology=True, cache_criteria=False, homogeneity=False)
        classes = StateClasses(cloud.columns(), policy, Thresholds(200, 60))
        self.assertEqual(2, classes.class_count())
        slot = classes._row_slot[0]

        def job(name: str, cores: float) -> PlacementRequest:
            return PlacementRequest(
                ApplicationProfile(AppClass.NON_HPC, 1.0), Resources(cores, 0, 0), 4, name
            )

        classes.apply_segments([([0, 1, 2, 3], 1)], job("wide", 1))
        self.assertEqual(2, classes.class_count())
        self.assertEqual(slot, classes._row_slot[0])
        self.assertEqual([0, 1, 2, 3], classes._members[slot])
        self.assertEqual((3.0, 2048.0, 0.0), classes.free_of(3))
        classes.apply_segments([([0, 1, 2, 3], 1)], job("nothing", 0))
        self.assertEqual(2, classes.class_count())
        self.assertEqual(["wide", "nothing"], [vm.application_id for vm in classes.vms_on(2)])
        self.assertEqual((3.0, 2048.0, 0.0), classes.free_of(2))
        classes.release("wide")
        classes.release("nothing")
        self.assertEqual(2, classes.class_count())
        self.assertEqual({0}, set(classes._runs_by_id))
        self.assertEqual((4.0, 2048.0, 0.0), classes.free_of(0))

    def test_hosts_that_come_to_run_the_same_vms_share_their_id(self) -> None:
        """A job placed over two classes, then the job that made them
        differ released: both hosts now run the same VMs and hold one id,
        so that the next release moves them as one group."""
        cloud = ClusterState()
        for row in range(4):
            cloud.add_host(f"h{row}", Resources(4, 2048, 0), rack="r0")
        classes = StateClasses(cloud.columns(), Policy(), Thresholds(200, 60))

        def job(name: str, score: float) -> PlacementRequest:
            return PlacementRequest(
                ApplicationProfile(AppClass.NON_HPC, score), Resources(1, 0, 0), 1, name
            )

        classes.apply_segments([([0], 1)], job("first", 5.0))
        classes.apply_segments([([0, 1], 1)], job("second", 7.0))
        self.assertNotEqual(classes._row_runs[0], classes._row_runs[1])
        classes.release("first")
        self.assertEqual(classes._row_runs[0], classes._row_runs[1])
        self.assertEqual(classes._row_slot[0], classes._row_slot[1])
        self.assertEqual(1, len(classes._groups([0, 1], None).keys))
        classes.release("second")
        self.assertEqual({0}, set(classes._runs_by_id))
        self.assertEqual({(): 0}, classes._id_of_runs)
        self.assertEqual({0: ()}, classes._runs_key)
        self.assertEqual(1, classes.class_count())

    def test_hosts_leave_a_long_class_in_every_way(self) -> None:
        """Hosts taken from one class of 256: a stretch, a few scattered
        ones, many scattered ones (bisected out, or filtered once most of
        the list goes); every class then lists exactly its hosts, counts
        them and knows its first, and their free resources are right."""
        cloud = ClusterState()
        for row in range(256):
            cloud.add_host(f"h{row:03d}", Resources(4, 2048, 0), rack="r0")
        blind_to_racks = Policy(classes=False, topology=False)
        takes = [
            list(range(10, 60)),  # a stretch
            [3, 70, 200],  # a few, one by one
            list(range(61, 250, 9)),  # 21 scattered: bisected out
            [row for row in range(256) if row % 3 == 1 and row not in range(10, 60)],  # most
        ]
        for one_by_one in (0, 16):
            classes = StateClasses(cloud.columns(), blind_to_racks, Thresholds(200, 60))
            classes.one_by_one = one_by_one
            taken: set[int] = set()
            for number, rows in enumerate(takes):
                rows = [row for row in rows if row not in taken]
                taken.update(rows)
                request = PlacementRequest(
                    ApplicationProfile(AppClass.NON_HPC, 1.0),
                    Resources(1, 100, 0),
                    len(rows),
                    f"job{number}",
                )
                classes.apply(rows, request)
                classes._flush()  # (as any reader of the arrays does first)
                for slot, members in enumerate(classes._members):
                    if classes._name_of[slot] is None:
                        continue
                    expected = [r for r in range(256) if classes._row_slot[r] == slot]
                    self.assertEqual(expected, members, (one_by_one, number))
                    self.assertEqual(len(members), classes._s_hosts[slot])
                    self.assertEqual(members[0], classes._s_first[slot])
                for row in range(256):
                    free = (3.0, 1948.0, 0.0) if row in taken else (4.0, 2048.0, 0.0)
                    self.assertEqual(free, classes.free_of(row))

    def test_a_wide_job_over_many_classes_is_planned_from_their_chains(self) -> None:
        """Hosts made different by earlier jobs (each its own cache total):
        a wide job reaches many classes and is planned from their chains at
        once, the same plan as VM by VM and plan(); under hpc-aware every
        host fills up in one chain, under mdobp-cache hosts fall behind
        (their key rises) and come back for a second chain."""
        mdobp_cache = scenarios.build("mdobp-cache", alpha=200, beta=60, runtime_factor=1).policy
        for policy, comes_back in ((Policy(), False), (mdobp_cache, True)):
            self.wide_job_from_chains(policy, comes_back)

    def wide_job_from_chains(self, policy: Policy, comes_back: bool) -> None:
        cloud = ClusterState()
        for row in range(48):
            cloud.add_host(f"h{row:03d}", Resources(4, 8192, 0), rack=f"r{row // 16}")
        thresholds = Thresholds(200, 60)
        at_once = StateClasses(cloud.columns(), policy, thresholds)
        by_vm = StateClasses(cloud.columns(), policy, thresholds)
        by_vm.filling_from = by_vm.merging_from = 10**9
        # VM by VM, but hosts of equal keys merged by row taken at once.
        merged = StateClasses(cloud.columns(), policy, thresholds)
        merged.filling_from, merged.merging_from = 10**9, 1
        # One small job on each of 40 hosts: each host its own cache total.
        for row in range(40):
            small = PlacementRequest(
                ApplicationProfile(AppClass.ASYNC_HPC, 1.0 + row / 2, f"s{row}"),
                Resources(1, 1024 * (1 + row % 3), 0),
                1 + row % 3,
                f"small{row}",
            )
            hosts = (cloud.columns().names[row],) * small.count
            cloud.apply(algorithm.Plan(hosts, None, ()), small)
            for classes in (at_once, by_vm, merged):
                classes.apply([row] * small.count, small)
        self.assertGreater(at_once.class_count(), 20)
        wide = PlacementRequest(
            ApplicationProfile(AppClass.SYNC_HPC, 5.0, "wide"), Resources(1, 512, 0), 90, "wide"
        )
        expected = algorithm.plan(wide, cloud.columns(), thresholds, policy=policy).hosts
        filled, chains, bulks = [], [], []
        greedy = class_greedy.ClassGreedy
        original_filled, original_trajectories = greedy.filled, greedy.trajectories
        original_take_merged = greedy._take_merged

        def watched_take_merged(*args):
            bulks.append(original_take_merged(*args))
            return bulks[-1]

        def watched_filled(self, *ranked):
            filled.append(original_filled(self, *ranked))
            return filled[-1]

        def watched_trajectories(self, at):
            found = original_trajectories(self, at)
            chains.append((len(at), len(found[0])))
            return found

        name = f"{class_greedy.__name__}.ClassGreedy"
        with (
            fixtures.MonkeyPatch(f"{name}.filled", watched_filled),
            fixtures.MonkeyPatch(f"{name}.trajectories", watched_trajectories),
            fixtures.MonkeyPatch(f"{name}._take_merged", staticmethod(watched_take_merged)),
        ):
            for classes in (at_once, by_vm, merged):
                rows = classes.plan(wide)
                self.assertEqual(expected, tuple(classes.names[r] for r in rows), policy)
        # Planned at once, once: the VM-by-VM classes never tried.
        self.assertEqual(1, len(filled))
        # Hosts of equal keys (another cache total each) were merged by row
        # and taken several at once.
        self.assertTrue(any(len(rows) > 1 for bulk in bulks for rows, _ in bulk), bulks)
        self.assertIsNotNone(filled[0])
        # More chains than classes where hosts come back for more.
        self.assertEqual(comes_back, any(found > classes for classes, found in chains), chains)

    def test_what_it_does_not_serve(self) -> None:
        flat = ClusterState()
        flat.add_host("h0", Resources(4, 2048, 0), rack="r0")
        classes = StateClasses(flat.columns(), Policy(), Thresholds(200, 60))
        demand = Resources(1, 100, 0)
        extreme = PlacementRequest(ApplicationProfile(AppClass.EXTREME_HPC), demand, 1, "x")
        self.assertRaisesRegex(ValueError, "ExtremeHPC", classes.plan, extreme)
        for spec, why in (
            (TopologySpec(segment=2, segment_level="rack"), "segments"),
            (TopologySpec(required="host"), "host level"),
        ):
            constrained = PlacementRequest(
                ApplicationProfile(AppClass.SYNC_HPC), demand, 2, "y", spec
            )
            self.assertRaisesRegex(ValueError, why, classes.plan, constrained)
        plain = PlacementRequest(ApplicationProfile(AppClass.SYNC_HPC), demand, 1, "z")
        classes.apply(classes.plan(plain), plain)
        self.assertRaisesRegex(ValueError, "already runs", classes.plan, plain)
        weighed = Policy(packing=PACKING_NOVA_WEIGHERS)
        self.assertRaisesRegex(
            ValueError, "weighers", StateClasses, flat.columns(), weighed, Thresholds(200, 60)
        )
