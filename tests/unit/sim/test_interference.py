"""Interference models and the simulator's changing pace of co-located jobs."""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.core.algorithm import PACKING_COSINE, Policy
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.sim import interference, settings, simulator
from tests.unit.sim.jobs import job


class TestCachePressure(testtools.TestCase):
    def test_formula(self) -> None:
        model = interference.CachePressure()
        self.assertEqual(1.0, model.slowdown(30, []))  # alone
        self.assertEqual(1.0, model.slowdown(15, [15, 15, 15]))  # at the knee
        self.assertAlmostEqual(1 + (25 / 60) * (40 / 60), model.slowdown(25, [25, 25, 25]))
        self.assertEqual(1.0, model.slowdown(0, [30, 30, 30]))  # does not use the cache

    def test_bad_parameters(self) -> None:
        self.assertRaises(ValueError, interference.CachePressure, knee=0)
        self.assertRaises(ValueError, interference.CachePressure, gain=-1)
        self.assertRaises(ValueError, interference.CachePressure, knee=float("inf"))

    def test_models_are_plugins(self) -> None:
        self.assertEqual(["cache-pressure", "none"], interference.names())
        self.assertEqual(
            interference.CachePressure(40, 2), interference.load("cache-pressure", knee=40, gain=2)
        )
        self.assertEqual(1.0, interference.load("none").slowdown(30, [30, 30]))
        error = self.assertRaises(ValueError, interference.load, "magic")
        self.assertIn("unknown interference model 'magic'", str(error))
        error = self.assertRaises(ValueError, interference.load, "cache-pressure", kne=3)
        self.assertIn("kne", str(error))


ONE_HOST = settings.ClusterShape(hosts=1, cores=4, ram_mb=4096)
PRESSURE = interference.CachePressure(knee=40, gain=1)
#: Each of two VMs of score 25 on one host: 1 + (25/40) * (10/40).
PAIR = 1 + (25 / 40) * (10 / 40)


class TestPace(testtools.TestCase):
    def run_jobs(self, jobs, shape=ONE_HOST, scenario=None, **kwargs) -> simulator.Result:
        sim = simulator.Simulator(
            shape,
            scenario or settings.Scenario("mdobp", Policy.nova_like(PACKING_COSINE)),
            cache_scores=(25, 25),
            interference=PRESSURE,
            **kwargs,
        )
        return sim.run(jobs)

    def test_co_runners_slow_each_other_down(self) -> None:
        result = self.run_jobs([job(1, 0, 100), job(2, 0, 100)])
        self.assertEqual([100 * PAIR] * 2, [o.end for o in result.outcomes])
        self.assertAlmostEqual(PAIR, result.mean_interference())

    def test_pace_recovers_when_a_co_runner_leaves(self) -> None:
        result = self.run_jobs([job(1, 0, 100), job(2, 0, 50)])
        ends = {o.job_id: o.end for o in result.outcomes}
        self.assertAlmostEqual(50 * PAIR, ends[2])
        # Job 1 did 50 s of work by then and runs the other 50 s alone.
        self.assertAlmostEqual(50 * PAIR + 50, ends[1])

    def test_a_parallel_job_keeps_the_pace_of_its_slowest_vm(self) -> None:
        two_hosts = settings.ClusterShape(hosts=2, cores=2, ram_mb=4096)
        result = self.run_jobs(
            [job(1, 0, 100, 1), job(2, 0, 100, 2), job(3, 0, 100, 1)], shape=two_hosts
        )
        ends = {o.job_id: o.end for o in result.outcomes}
        # The cosine puts job 2's VMs together on the empty host and job 3
        # with job 1: jobs 1 and 3 pair up, job 2 is slowed by its own VMs.
        self.assertAlmostEqual(100 * PAIR, ends[1])
        self.assertAlmostEqual(100 * PAIR, ends[2])
        self.assertAlmostEqual(100 * PAIR, ends[3])

    def test_thresholds_trade_idle_cores_for_speed(self) -> None:
        jobs = [job(i, 0, 100) for i in range(1, 9)]
        shape = settings.ClusterShape(hosts=2, cores=4, ram_mb=4096)
        loose = self.run_jobs(jobs, shape=shape)
        self.assertGreater(loose.mean_interference(), 1.0)
        cautious = settings.Scenario(
            "beta=40",
            Policy(classes=False, topology=False, homogeneity=False, interference_table=False),
            Thresholds(200, 40),
            AppClass.SYNC_HPC,
        )
        tight = self.run_jobs(jobs, shape=shape, scenario=cautious)
        # One VM of 25 per host (two would pass the knee): no slowdown, but jobs wait.
        self.assertEqual(1.0, tight.mean_interference())
        self.assertGreater(tight.mean_wait(), loose.mean_wait())

    def test_without_a_model_nothing_changes(self) -> None:
        sim = simulator.Simulator(
            ONE_HOST,
            settings.Scenario("mdobp"),
            cache_scores=(25, 25),
            interference=interference.NoInterference(),
        )
        result = sim.run([job(1, 0, 100), job(2, 0, 100)])
        self.assertEqual([100, 100], [o.end for o in result.outcomes])
