"""Batch arrivals: windows, planning on empty hosts, fallback to the queue."""

from __future__ import annotations

import dataclasses
import random

import testtools

from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.core.algorithm import PACKING_MOST_FREE_PES, Policy
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.planners import planner_registry
from hpc_nova_scheduler.planners.base import Batch, BatchApp
from hpc_nova_scheduler.sim import batches, scenarios, settings, simulator
from hpc_nova_scheduler.sim.cloud import PlannedCloud
from hpc_nova_scheduler.topology.levels import TopologySpec
from tests.unit.sim import test_cloud
from tests.unit.sim.jobs import job

SHAPE = settings.ClusterShape(hosts=3, cores=4, ram_mb=4096)
MDOBP = settings.Scenario("mdobp")


def arrivals(planner: str = "ffd", window: float = 60.0) -> batches.BatchArrivals:
    return batches.BatchArrivals(window, planner_registry.load(planner))


def ivmp_profiles() -> list[ProfileRecord]:
    path = resources.example_profiles_dir() / "seed-applications.yaml"
    return [p for p in datafiles.read_profiles(str(path)) if p.sllc_score is not None]


def app(cpu: float, mem: float = 0.0, name: str = "a") -> BatchApp:
    return BatchApp(ProfileRecord(name), cpu, mem)


def starts(result: simulator.Result) -> dict[int, float]:
    return {o.job_id: o.start for o in result.outcomes}


def random_jobs(seed: int, count: int, submit_span: float = 0.0, run: float = 0.0) -> list:
    """Seeded jobs of 1 to 6 cores and various memory, in submit order;
    ``run`` fixes every run time (else 10 to 500 s)."""
    rng = random.Random(seed)
    drawn = []
    for _ in range(count):
        procs = rng.choice([1, 1, 1, 2, 3, 4, 6])
        memory = rng.choice([None, 256.0 * procs, 1024.0 * procs, 1800.0 * procs])
        drawn.append((rng.uniform(0, submit_span), run or rng.uniform(10, 500), procs, memory))
    drawn.sort(key=lambda d: d[0])
    return [job(i, *d) for i, d in enumerate(drawn, start=1)]


class TestWindows(testtools.TestCase):
    def test_an_arrival_is_planned_at_the_end_of_its_window(self) -> None:
        self.assertEqual(
            [60.0, 60.0, 120.0, 120.0, 180.0],
            [batches.boundary(t, 60.0) for t in (0.0, 59.9, 60.0, 119.0, 120.0)],
        )

    def test_the_replay_holds_each_window_until_its_end(self) -> None:
        jobs = [job(1, 0, 10, 1), job(2, 59, 10, 1), job(3, 60, 10, 1), job(4, 130, 10, 1)]
        result = simulator.Simulator(SHAPE, MDOBP, batches=arrivals()).run(jobs)
        self.assertEqual({1: 60.0, 2: 60.0, 3: 120.0, 4: 180.0}, starts(result))
        # The hold is waiting: submit times stay the arrivals.
        self.assertEqual({0.0, 59.0, 60.0, 130.0}, {o.submit for o in result.outcomes})

    def test_all_at_once_is_one_window(self) -> None:
        jobs = [job(i, 100 * i, 10, 1) for i in range(1, 6)]
        result = simulator.Simulator(SHAPE, MDOBP, all_at_once=True, batches=arrivals()).run(jobs)
        self.assertEqual({60.0}, set(starts(result).values()))

    def test_bad_windows_are_refused(self) -> None:
        for window in (0.0, -1.0, float("nan"), float("inf")):
            self.assertRaises(ValueError, arrivals, window=window)


class TestPlanning(testtools.TestCase):
    def test_the_longest_prefix_that_fits(self) -> None:
        ffd = planner_registry.load("ffd")
        apps = [app(0.75), app(0.5), app(0.5), app(0.75), app(0.25)]
        count, placement = batches.longest_prefix(ffd, apps, 2)
        # The first four need 2.5 hosts: three are planned (0.75 + 0.25 is not
        # reached), and on two hosts.
        self.assertEqual(3, count)
        self.assertTrue(placement.feasible(Batch(tuple(apps[:3]), 2)))
        self.assertEqual((0, None), batches.longest_prefix(ffd, [app(1.5)], 2))

    def test_bisection_when_the_volume_fits_but_the_packing_does_not(self) -> None:
        # Three 0.6s hold 1.8 <= 2 hosts by volume, yet only two fit.
        count, placement = batches.longest_prefix(planner_registry.load("ff"), [app(0.6)] * 3, 2)
        self.assertEqual(2, count)
        self.assertEqual(2, placement.hosts_used)

    def test_a_planned_batch_starts_on_the_planned_hosts(self) -> None:
        cloud = PlannedCloud(SHAPE, MDOBP)
        # Host 0 is busy: the batch gets hosts 1 and 2.
        busy = simulator.Simulator(SHAPE, MDOBP)._request(job(99, 0, 10, 1), 0.0)
        batches.start_on(cloud, busy, 0)
        procs = {1: 2, 2: 2, 3: 3, 4: 1}
        entries = [(job(i, 0, 10, n), 0.0, 0.0) for i, n in procs.items()]
        kinds = batches.kinds_of(SHAPE.host_kinds())

        def app_of(entry, kind):
            return app(entry[0].processors / 4, name=str(entry[0].job_id))

        planned, left = batches.plan_window(
            arrivals(), entries, kinds, batches.empty_rows(cloud), app_of
        )
        self.assertEqual([], left)
        # FFD: the 3-core job and the 1-core one share the first host, the two halves the next.
        ffd = planner_registry.load("ffd").place(Batch(tuple(app_of(e, None) for e in entries), 3))
        expected = {e[0].job_id: [1, 2][h] for e, h in zip(entries, ffd.host_of, strict=True)}
        self.assertEqual(expected, {entry[0].job_id: row for entry, row in planned})
        self.assertEqual({3: 1, 4: 1, 1: 2, 2: 2}, expected)
        for entry, row in planned:
            request = simulator.Simulator(SHAPE, MDOBP)._request(entry[0], 0.0)
            batches.start_on(cloud, request, row)
            self.assertEqual([row], cloud.rows_of(request.application_id))
        self.assertEqual(set(), batches.empty_rows(cloud))
        self.assertEqual([3.0, 0.0, 0.0], cloud.cluster.columns().free[:, 0].tolist())

    def test_chunks_take_the_hosts_the_previous_ones_left_empty(self) -> None:
        entries = [(job(i, 0, 10, 1), 0.0, 0.0) for i in range(1, 6)]
        kinds = batches.kinds_of(SHAPE.host_kinds())
        planned, left = batches.plan_window(
            batches.BatchArrivals(60.0, planner_registry.load("ffd"), max_batch=2),
            entries,
            kinds,
            {0, 1, 2},
            lambda entry, kind: app(0.25),
        )
        # Two jobs a plan, each plan on fresh hosts: FFD packs each pair on one.
        self.assertEqual([], left)
        self.assertEqual(
            {1: 0, 2: 0, 3: 1, 4: 1, 5: 2}, {entry[0].job_id: row for entry, row in planned}
        )

    def test_start_on_refuses_to_overfill_a_host(self) -> None:
        cloud = PlannedCloud(SHAPE, MDOBP)
        request = simulator.Simulator(SHAPE, MDOBP)._request(job(1, 0, 10, 5), 0.0)
        self.assertRaises(ValueError, batches.start_on, cloud, request, 0)
        self.assertEqual(3, len(batches.empty_rows(cloud)))

    def test_each_kind_plans_the_jobs_its_hosts_hold(self) -> None:
        shape = settings.ClusterShape.of_kinds(
            [settings.HostKind(1, 2, 4096), settings.HostKind(1, 8, 16384)]
        )
        # The 6-core job only fits the big host; the 2-core one takes the small.
        jobs = [job(1, 0, 100, 6), job(2, 1, 100, 2)]
        result = simulator.Simulator(shape, MDOBP, batches=arrivals()).run(jobs)
        self.assertEqual({1: 60.0, 2: 60.0}, starts(result))


class TestFallback(testtools.TestCase):
    def test_a_job_no_host_holds_alone_is_held_then_placed_online(self) -> None:
        jobs = [job(1, 0, 100, 2), job(2, 10, 100, 6), job(3, 20, 100, 2)]
        result = simulator.Simulator(SHAPE, MDOBP, batches=arrivals()).run(jobs)
        # The 6-core job waits for its window like the others, then spans
        # hosts online; FFD put the two 2-core jobs on one host.
        self.assertEqual({1: 60.0, 2: 60.0, 3: 60.0}, starts(result))

    def test_what_the_planner_cannot_place_runs_online(self) -> None:
        # Four 4-core jobs on three empty 4-core hosts: the fourth is left to
        # the online policy, which starts it when a host frees up.
        jobs = [job(i, 0, 100 + i, 4) for i in range(1, 5)]
        result = simulator.Simulator(SHAPE, MDOBP, batches=arrivals()).run(jobs)
        self.assertEqual({1: 60.0, 2: 60.0, 3: 60.0, 4: 161.0}, starts(result))
        self.assertEqual(0, result.unfinished)

    def test_a_window_does_not_overtake_a_waiting_job(self) -> None:
        # Job 1 takes two hosts at 60; job 2 needs two and waits. At 120 a
        # host is empty, but the next window's small job queues behind job 2
        # instead of being planned there.
        jobs = [job(1, 0, 100, 8), job(2, 1, 100, 8), job(3, 70, 10, 1)]
        result = simulator.Simulator(SHAPE, MDOBP, batches=arrivals()).run(jobs)
        self.assertEqual({1: 60.0, 2: 160.0, 3: 160.0}, starts(result))

    def test_leftovers_queue_in_arrival_order(self) -> None:
        # Job 9 leaves no host empty: job 1 cannot be planned at 120 and
        # queues ahead of job 2, which came after it; both wait for job 9.
        jobs = [job(9, 0, 1000, 10), job(1, 61, 10, 4), job(2, 62, 10, 10)]
        result = simulator.Simulator(SHAPE, MDOBP, batches=arrivals()).run(jobs)
        self.assertEqual({9: 60.0, 1: 1060.0, 2: 1070.0}, starts(result))


class TestReplay(testtools.TestCase):
    def invariant_checked(self, sim: simulator.Simulator, jobs) -> simulator.Result:
        """Run, checking at every settled job that no host holds more than it has."""
        seen = []

        def check(settled: int) -> None:
            cloud = sim._cloud
            lowest = min(min(cloud.room_of(row)[0]) for row in range(sim.shape.hosts))
            self.assertGreaterEqual(lowest, -1e-6)
            seen.append(settled)

        sim.progress = check
        result = sim.run(jobs)
        self.assertTrue(seen)
        return result

    def test_every_job_is_accounted_for_and_no_host_overfilled(self) -> None:
        jobs = random_jobs(seed=3, count=120, submit_span=2000.0)
        for planner in ("ffd", "wf", "bfd"):
            sim = simulator.Simulator(SHAPE, MDOBP, batches=arrivals(planner, window=120.0))
            result = self.invariant_checked(sim, jobs)
            done = [o.job_id for o in result.outcomes] + result.never_fit
            self.assertEqual(sorted(j.job_id for j in jobs), sorted(done), planner)
            self.assertEqual(0, result.unfinished)
            online = simulator.Simulator(SHAPE, MDOBP).run(jobs)
            self.assertEqual(online.never_fit, result.never_fit)
            for o in result.outcomes:
                self.assertGreaterEqual(o.start, o.submit)

    def test_ils_plans_with_drawn_profiles_and_is_deterministic(self) -> None:
        jobs = random_jobs(seed=5, count=40, submit_span=600.0)
        profiles = ivmp_profiles()

        shape = settings.ClusterShape(hosts=16, cores=4, ram_mb=4096)

        def run(seed: int) -> list:
            sim = simulator.Simulator(
                shape,
                MDOBP,
                seed=seed,
                batches=arrivals("ils", window=200.0),
                profiles=profiles,
                interference=registry_model("ivmp"),
            )
            result = self.invariant_checked(sim, jobs)
            self.assertEqual(40, len(result.outcomes) + len(result.never_fit))
            planned = [o for o in result.outcomes if o.start in (200.0, 400.0, 600.0)]
            self.assertGreater(len(planned), 10)
            return [(o.job_id, o.start, o.end) for o in result.outcomes]

        first = run(1)
        self.assertEqual(first, run(1))

    def test_ils_without_profiles_is_a_clear_error(self) -> None:
        error = self.assertRaises(
            ValueError, simulator.Simulator, SHAPE, MDOBP, batches=arrivals("ils")
        )
        self.assertIn("batch planner ils reads sllc_score", str(error))
        self.assertIn("profiles", str(error))

    def test_batches_replay_on_the_fast_engines_as_host_by_host(self) -> None:
        """The online part on the compiled kernel or on state classes, the
        batches applied to them: the same hosts job by job as plan() over
        every host."""
        shape = settings.ClusterShape(hosts=12, cores=4, ram_mb=4096, hosts_per_rack=4)
        hpc = scenarios.build("hpc-aware", alpha=200, beta=60, runtime_factor=1.0)
        for scenario, engine in (
            (scenarios.build("mdobp", alpha=200, beta=60, runtime_factor=1.0), "compiled hosts"),
            (hpc, "compiled hosts"),
            (dataclasses.replace(hpc, topology=TopologySpec(preferred="rack")), "state classes"),
        ):
            for seed in range(4):
                jobs = random_jobs(seed, 60, submit_span=900.0)
                sim = simulator.Simulator(shape, scenario, batches=arrivals())
                self.assertEqual(engine, sim.engine)
                placed = test_cloud.replay_both(
                    self, shape, scenario, jobs, batches=arrivals(), cache_scores=(0, 30)
                )
                self.assertGreater(len(placed), 40, (scenario.name, seed))

    def test_ffd_batches_use_no_more_hosts_than_spreading_online(self) -> None:
        # Everything arrives at once on more hosts than the jobs need. Online
        # most-free-pes puts each VM on the emptiest host, touching as many
        # hosts as there are VMs (or all); FFD's batch keeps each job on one
        # host and packs them, and cannot go below the cores' lower bound.
        shape = settings.ClusterShape(hosts=64, cores=4, ram_mb=8192)
        spread = settings.Scenario("spread", Policy.nova_like(PACKING_MOST_FREE_PES))
        for seed in range(3):
            # Long runs: nothing ends before the hosts are counted.
            jobs = [j for j in random_jobs(seed, 40, run=10_000.0) if j.processors <= 4]
            online = simulator.Simulator(shape, spread, all_at_once=True, host_classes=False)
            online.run(jobs, until=0.0)
            batch = simulator.Simulator(shape, spread, all_at_once=True, batches=arrivals())
            result = batch.run(jobs, until=60.0)
            self.assertEqual(len(jobs), result.unfinished)  # every job started, none ended
            used_online = 64 - len(batches.empty_rows(online._cloud))
            used_batch = 64 - len(batches.empty_rows(batch._cloud))
            cores = sum(j.processors for j in jobs)
            self.assertLessEqual(-(-cores // 4), used_batch, seed)
            self.assertLessEqual(used_batch, used_online, seed)


def registry_model(name: str):
    from hpc_nova_scheduler.interference import model_registry as models

    return models.load(name)
