"""The discrete-event replay through the core engine."""

from __future__ import annotations

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.core.algorithm import PACKING_LEAST_FREE_PES, Policy
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.sim import settings, simulator
from tests.unit.sim.jobs import job

SHAPE = settings.ClusterShape(hosts=2, cores=4, ram_mb=4096)


class TestReplay(testtools.TestCase):
    def run_jobs(self, jobs, scenario=None, **kwargs) -> simulator.Result:
        sim = simulator.Simulator(SHAPE, scenario or settings.Scenario("mdobp"), **kwargs)
        return sim.run(jobs)

    def test_jobs_start_when_all_their_vms_fit(self) -> None:
        result = self.run_jobs([job(1, 0, 100, 6), job(2, 10, 50, 4)])
        by_id = {o.job_id: o for o in result.outcomes}
        self.assertEqual((0, 100), (by_id[1].start, by_id[1].end))
        self.assertEqual((100, 150), (by_id[2].start, by_id[2].end))  # gang start
        self.assertEqual(150, result.makespan)
        self.assertEqual(1, result.completed_by(120))

    def test_fcfs_blocks_and_backfilling_does_not(self) -> None:
        jobs = [job(1, 0, 100, 6), job(2, 1, 100, 4), job(3, 2, 10, 2)]
        fcfs = {o.job_id: o.start for o in self.run_jobs(jobs).outcomes}
        self.assertEqual(100, fcfs[3])
        backfilled = {o.job_id: o.start for o in self.run_jobs(jobs, backfill=True).outcomes}
        self.assertEqual(2, backfilled[3])

    def test_backfill_depth_n_tries_n_jobs_behind_the_head(self) -> None:
        # All 8 cores busy until 50, when 2 free up; the head (4 cores) waits
        # and four 1-core jobs queue behind it meanwhile.
        jobs = [job(1, 0, 100, 6), job(2, 0, 50, 2), job(3, 1, 100, 4)]
        jobs += [job(i, 2, 10, 1) for i in range(4, 8)]
        for depth, started in ((1, {4}), (2, {4, 5}), (3, {4, 5})):
            result = self.run_jobs(jobs, backfill=True, backfill_depth=depth)
            at_50 = {o.job_id for o in result.outcomes if o.start == 50}
            self.assertEqual(started, at_50, depth)

    def test_easy_backfilling_never_delays_the_head(self) -> None:
        # 4 + 2 of 8 cores busy; the head needs 6, which free up at 100 when
        # the 4-core job ends (requested 100). Behind it: a long 2-core job,
        # which would hold the head's cores until 502, and a short one.
        jobs = [
            job(1, 0, 100, 4, requested=100),
            job(2, 0, 1000, 2, requested=1000),
            job(3, 1, 100, 6, requested=100),
            job(4, 2, 500, 2, requested=500),
            job(5, 2, 50, 2, requested=50),
        ]
        greedy = {o.job_id: o.start for o in self.run_jobs(jobs, backfill="greedy").outcomes}
        easy = {o.job_id: o.start for o in self.run_jobs(jobs, backfill="easy").outcomes}
        # Greedy lets the long job in first and the head waits for it.
        self.assertEqual((2, 502), (greedy[4], greedy[3]))
        # EASY starts only the short job, which ends before the reservation.
        self.assertEqual((2, 100), (easy[5], easy[3]))
        self.assertGreaterEqual(easy[4], 100)

    def test_easy_uses_cores_the_head_does_not_need(self) -> None:
        # The head needs 4 of the 6 cores free at 100: 2 are spare then, so a
        # long 2-core job may start now although it ends after the reservation.
        jobs = [
            job(1, 0, 100, 6, requested=100),
            job(2, 1, 100, 4, requested=100),
            job(3, 2, 1000, 2, requested=1000),
        ]
        easy = {o.job_id: o.start for o in self.run_jobs(jobs, backfill="easy").outcomes}
        self.assertEqual((2, 100), (easy[3], easy[2]))

    def test_easy_trusts_requests_not_run_times(self) -> None:
        # The short job asks for 200 s, past the reservation at 100, and the
        # head leaves no spare core: it waits, although it would run 50 s.
        jobs = [
            job(1, 0, 100, 4, requested=100),
            job(2, 0, 1000, 2, requested=1000),
            job(3, 1, 100, 6, requested=100),
            job(4, 2, 50, 2, requested=200),
        ]
        easy = {o.job_id: o.start for o in self.run_jobs(jobs, backfill="easy").outcomes}
        self.assertEqual(100, easy[3])
        self.assertGreaterEqual(easy[4], 100)

    def test_jobs_that_can_never_fit_are_reported(self) -> None:
        result = self.run_jobs(
            [job(1, 0, 10, 9), job(2, 0, 10, 1, memory_mb=8192), job(3, 0, 10, 1)]
        )
        self.assertEqual([1, 2], result.never_fit)
        self.assertEqual([3], [o.job_id for o in result.outcomes])

    def test_jobs_that_fit_no_idle_cloud_do_not_block_the_queue(self) -> None:
        # Three VMs of 3 GB: cores and per-VM memory fit, but each 4 GB host
        # holds one of them and there are two hosts.
        result = self.run_jobs([job(1, 0, 10, 3, 9216), job(2, 1, 10, 1)])
        self.assertEqual(([1], [2]), (result.never_fit, [o.job_id for o in result.outcomes]))
        self.assertEqual(0, result.unfinished)

    def test_jobs_the_thresholds_never_admit_do_not_block_the_queue(self) -> None:
        scenario = settings.Scenario(
            "beta=40",
            Policy(classes=False, topology=False, homogeneity=False, interference_table=False),
            Thresholds(200, 40),
            AppClass.SYNC_HPC,
        )
        # Score 25: one VM per host under beta = 40, so three VMs never fit two hosts.
        sim = simulator.Simulator(SHAPE, scenario, cache_scores=(25, 25))
        result = sim.run([job(1, 0, 10, 3), job(2, 1, 10, 2)])
        self.assertEqual(([1], [2]), (result.never_fit, [o.job_id for o in result.outcomes]))

    def test_memory_decides_placement(self) -> None:
        # Two 2-VM jobs of 1.5 GB per VM, then a 4-VM job of 256 MB per VM:
        # they all run at once only if the big ones do not fill one host's RAM.
        jobs = [job(1, 0, 100, 2, 3072), job(2, 0, 100, 2, 3072), job(3, 0, 100, 4, 1024)]
        result = self.run_jobs(jobs)
        self.assertEqual([0, 0, 0], sorted(o.start for o in result.outcomes))

    def test_memory_scale(self) -> None:
        # Two VMs of 1 GB share a 4 GB host; of 3 GB each needs a host of its own.
        jobs = [job(1, 0, 100, 2, 2048), job(2, 0, 100, 2, 2048), job(3, 0, 100, 1, 2000)]
        plain = self.run_jobs(jobs)
        self.assertEqual(([0, 0, 0], []), ([o.start for o in plain.outcomes], plain.never_fit))
        scaled = self.run_jobs(jobs, memory_scale=3)
        self.assertEqual(([0, 100], [3]), ([o.start for o in scaled.outcomes], scaled.never_fit))

    def test_all_at_once_and_runtime_factor(self) -> None:
        scenario = settings.Scenario("fast", runtime_factor=0.9)
        result = self.run_jobs([job(1, 500, 100, 1)], scenario, all_at_once=True)
        self.assertEqual((0, 90), (result.outcomes[0].start, result.outcomes[0].end))

    def test_cache_scores_are_deterministic_per_seed(self) -> None:
        scenario = settings.Scenario(
            "cache",
            app_class=AppClass.SYNC_HPC,
            thresholds=Thresholds(100, 40),
        )
        jobs = [job(i, 0, 100, 1) for i in range(1, 9)]
        first = [
            o.start for o in self.run_jobs(jobs, scenario, seed=7, cache_scores=(0, 30)).outcomes
        ]
        again = [
            o.start for o in self.run_jobs(jobs, scenario, seed=7, cache_scores=(0, 30)).outcomes
        ]
        self.assertEqual(first, again)
        other = [
            o.start for o in self.run_jobs(jobs, scenario, seed=8, cache_scores=(0, 30)).outcomes
        ]
        self.assertNotEqual(first, other)

    def test_metrics(self) -> None:
        result = self.run_jobs(
            [job(1, 0, 100, 8), job(2, 0, 100, 8)],
            settings.Scenario("lfp", Policy.nova_like(PACKING_LEAST_FREE_PES)),
        )
        self.assertEqual(200, result.makespan)
        self.assertEqual(50, result.mean_wait())
        self.assertAlmostEqual(1.0, result.utilisation())
        self.assertEqual(1.5, result.mean_bounded_slowdown())

    def test_a_short_job_that_did_not_wait_has_a_bounded_slowdown_of_one(self) -> None:
        # 5 s alone, no wait: (0 + 5) / max(5, 10) is 0.5 without the max with 1.
        short = simulator.Outcome(1, 0.0, 0.0, 5.0, 1, 5.0)
        result = simulator.Result("s", [short], [], 0, 4)
        self.assertEqual(1.0, result.mean_bounded_slowdown())
        waited = simulator.Outcome(2, 0.0, 25.0, 30.0, 1, 5.0)
        result = simulator.Result("s", [short, waited], [], 0, 4)
        self.assertEqual((1.0 + 3.0) / 2, result.mean_bounded_slowdown())

    @given(
        st.lists(
            st.tuples(
                st.floats(0, 1e6, allow_nan=False),
                st.floats(0, 1e6, allow_nan=False),
                st.floats(0, 1e6, allow_nan=False),
            ),
            min_size=1,
            max_size=20,
        )
    )
    def test_bounded_slowdown_is_never_below_one(self, jobs) -> None:
        outcomes = [
            simulator.Outcome(i, submit, submit + wait, submit + wait + run, 1, run)
            for i, (submit, wait, run) in enumerate(jobs)
        ]
        result = simulator.Result("s", outcomes, [], 0, 4)
        self.assertGreaterEqual(result.mean_bounded_slowdown(), 1.0)

    def test_shape_from_total_cores(self) -> None:
        shape = settings.ClusterShape.from_total_cores(1024, 4, 2048, cpu_groups=2)
        hosts = shape.build().hosts()
        self.assertEqual((256, 1024), (len(hosts), shape.total_cores))
        self.assertEqual({"group-0", "group-1"}, {h.cpu_group for h in hosts})


class TestHeterogeneousCloud(testtools.TestCase):
    FAST_AND_SLOW = settings.ClusterShape.of_kinds(
        [settings.HostKind(1, 4, 4096), settings.HostKind(1, 4, 4096, speed=0.5)]
    )

    def test_host_kinds_parse(self) -> None:
        self.assertEqual(
            settings.HostKind(64, 8, 16384, 0.8), settings.HostKind.parse(" 64:8:16384:0.8")
        )
        self.assertEqual(settings.HostKind(2, 4, 2048), settings.HostKind.parse("2:4:2048"))
        for bad in ("2:4", "a:4:2048", "2:4:2048:0", "0:4:2048", "1:2:3:4:5"):
            error = self.assertRaises(ValueError, settings.HostKind.parse, bad)
            self.assertIn("COUNT:CORES:RAM_MB[:SPEED]", str(error))

    def test_kinds_are_processor_groups_with_their_own_shape(self) -> None:
        shape = settings.ClusterShape.of_kinds(
            [settings.HostKind(2, 4, 2048), settings.HostKind(1, 8, 16384, 0.7)]
        )
        hosts = shape.build().hosts()
        self.assertEqual(
            [("kind-0", 4), ("kind-0", 4), ("kind-1", 8)],
            [(h.cpu_group, h.capacity.vcpus) for h in hosts],
        )
        self.assertEqual((16, [1.0, 1.0, 0.7]), (shape.total_cores, shape.speeds()))
        # 4 GB VMs: none on the 2 GB hosts, four on the 16 GB one.
        self.assertEqual(4, shape.idle_capacity(4096))

    def test_a_job_split_over_fast_and_slow_hosts_runs_at_the_slow_pace(self) -> None:
        sim = simulator.Simulator(self.FAST_AND_SLOW, settings.Scenario("mdobp"))
        result = sim.run([job(1, 0, 100, 6)])
        self.assertEqual([200.0], [o.end for o in result.outcomes])
        self.assertEqual(2.0, result.mean_interference())

    def test_the_hpc_aware_policy_keeps_a_job_on_one_kind(self) -> None:
        hpc = settings.Scenario("hpc-aware", Policy(), app_class=None)
        result = simulator.Simulator(self.FAST_AND_SLOW, hpc).run(
            [job(1, 0, 100, 6), job(2, 1, 100, 4)]
        )
        # Six VMs fit no single kind: refused rather than split; four fit the fast host.
        self.assertEqual([1], result.never_fit)
        self.assertEqual([(2, 101.0)], [(o.job_id, o.end) for o in result.outcomes])
