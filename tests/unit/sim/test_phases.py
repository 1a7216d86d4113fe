"""Drifting phases and measured cache scores, in the model and in the replay."""

from __future__ import annotations

import dataclasses
import math

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler import conf
from hpc_nova_scheduler.interference.cache_pressure import CachePressureModel
from hpc_nova_scheduler.sim import phases, scenarios, simulator
from hpc_nova_scheduler.sim import settings as sim_settings
from hpc_nova_scheduler.sim.interference import CachePressure
from tests.unit.sim.jobs import job

ONE_HOST = sim_settings.ClusterShape(hosts=1, cores=4, ram_mb=4096)
SOURCES = ("declared", "measured", "max")


def cache_aware(beta: float, source: str = "declared") -> sim_settings.Scenario:
    """mdobp-cache: every job SyncHPC, so beta bounds the host's total."""
    built = scenarios.build("mdobp-cache", alpha=200.0, beta=beta, runtime_factor=1.0)
    return dataclasses.replace(built, cache_source=source)


def replay(
    jobs, scenario, shape=ONE_HOST, **kwargs
) -> tuple[simulator.Simulator, simulator.Result]:
    sim = simulator.Simulator(shape, scenario, **kwargs)
    return sim, sim.run(jobs)


def starts(result: simulator.Result) -> dict[int, float]:
    return {o.job_id: o.start for o in result.outcomes}


class TestDriftModel(testtools.TestCase):
    def test_the_lag_and_saturation_are_the_products_defaults(self) -> None:
        samples = next(o for o in conf.measured_opts if o.name == "measured_min_samples")
        interval = next(o for o in conf.collector_opts if o.name == "interval")
        self.assertEqual(samples.default * interval.default, phases.product_lag())
        measuring = phases.Measuring.of_product()
        self.assertEqual(phases.product_lag(), measuring.lag)
        self.assertEqual(60.0, measuring.full_llc_score)
        self.assertEqual(42.0, phases.Measuring.of_product(42.0).lag)

    def test_a_measured_score_saturates_at_the_whole_llc(self) -> None:
        measuring = phases.Measuring(lag=60.0, full_llc_score=60.0)
        self.assertEqual(20.0, measuring.measured(20.0))
        self.assertEqual(60.0, measuring.measured(90.0))

    def test_bad_settings_are_refused(self) -> None:
        for bad in (
            {"share": -0.1},
            {"share": 1.5},
            {"factors": (0.0, 2.0)},
            {"factors": (3.0, 1.0)},
            {"factors": (1.0, math.inf)},
            {"cap": 0.0},
        ):
            self.assertRaises(ValueError, phases.PhaseDrift, **bad)
        self.assertRaises(ValueError, phases.Measuring, lag=-1.0, full_llc_score=60.0)
        self.assertRaises(ValueError, phases.Measuring, lag=1.0, full_llc_score=math.nan)

    @given(
        st.integers(min_value=-(2**31), max_value=2**31),
        st.floats(min_value=0.0, max_value=1.0),
        st.lists(st.floats(min_value=0.0, max_value=60.0), min_size=1, max_size=40),
    )
    def test_draws_repeat_for_a_seed_and_stay_in_range(self, seed, share, declared) -> None:
        drift = phases.PhaseDrift(share)
        once, again = phases.PhaseDraws(drift, seed), phases.PhaseDraws(drift, seed)
        first = [once.next(score) for score in declared]
        self.assertEqual(first, [again.next(score) for score in declared])
        low, high = drift.factors
        for score, phase in zip(declared, first, strict=True):
            if phase is None:
                continue
            self.assertTrue(0.0 <= phase.point < 1.0)
            self.assertLessEqual(phase.score, drift.cap)
            self.assertLessEqual(phase.score, score * high * (1 + 1e-9))
            self.assertGreaterEqual(phase.score, min(drift.cap, score * low) * (1 - 1e-9))

    @given(st.integers(min_value=0, max_value=1000), st.floats(min_value=0.05, max_value=0.95))
    def test_a_jobs_phase_does_not_depend_on_the_others(self, seed, share) -> None:
        # More drifting jobs before it change nothing of a job's own draw.
        few, many = (phases.PhaseDraws(phases.PhaseDrift(s), seed) for s in (share, 1.0))
        for _ in range(10):
            found, every = few.next(10.0), many.next(10.0)
            if found is not None:
                self.assertEqual(every, found)


class TestDriftInTheReplay(testtools.TestCase):
    def test_without_drift_declared_is_the_replay_as_it_was(self) -> None:
        jobs = [job(i, i * 5, 100 + 10 * i, 1 + i % 3) for i in range(1, 12)]
        shape = sim_settings.ClusterShape(hosts=2, cores=4, ram_mb=4096)
        kwargs = {"cache_scores": (0.0, 30.0), "interference": CachePressure()}
        plain_sim, plain = replay(jobs, cache_aware(60.0), shape, **kwargs)
        off_sim, off = replay(
            jobs,
            cache_aware(60.0, "declared"),
            shape,
            drift=phases.PhaseDrift(0.0),
            measuring=phases.Measuring(lag=5.0, full_llc_score=1.0),
            **kwargs,
        )
        self.assertEqual(plain.outcomes, off.outcomes)
        self.assertEqual(plain_sim.engine, off_sim.engine)
        self.assertNotEqual("hosts", plain_sim.engine)

    def test_drift_or_measuring_replays_on_every_host(self) -> None:
        drifting = simulator.Simulator(ONE_HOST, cache_aware(60.0), drift=phases.PhaseDrift(0.5))
        measuring = simulator.Simulator(ONE_HOST, cache_aware(60.0, "measured"))
        self.assertEqual(("hosts", "hosts"), (drifting.engine, measuring.engine))
        error = self.assertRaises(
            ValueError,
            simulator.Simulator,
            ONE_HOST,
            cache_aware(60.0, "max"),
            host_classes=True,
        )
        self.assertIn("host classes", str(error))
        error = self.assertRaises(
            ValueError, simulator.Simulator, ONE_HOST, cache_aware(60.0, "guessed")
        )
        self.assertIn("cache source 'guessed'", str(error))

    @settings(max_examples=25, deadline=None)
    @given(st.integers(min_value=0, max_value=10_000))
    def test_every_source_replays_the_same_phases(self, seed) -> None:
        jobs = [job(i, i * 3, 50 + 7 * i, 1 + i % 2) for i in range(1, 15)]
        drift = phases.PhaseDrift(0.5)
        found = []
        for source in SOURCES:
            sim, result = replay(
                jobs,
                cache_aware(60.0, source),
                seed=seed,
                cache_scores=(0.0, 30.0),
                interference=CachePressure(),
                drift=drift,
            )
            found.append(sim.phase_of)
            self.assertEqual(0, result.unfinished)
        self.assertEqual(found[0], found[1])
        self.assertEqual(found[0], found[2])

    def test_the_truth_slows_co_runners_when_a_phase_drifts(self) -> None:
        # Two one-VM jobs of score 30 share the host: at the knee (60), no
        # slowdown. Job 1's score tripled puts the host past it: both slow
        # down, job 2 too although it does not drift (its host was judged
        # again at job 1's drift).
        jobs = [job(1, 0, 1000), job(2, 0, 1000)]
        drift = phases.PhaseDrift(0.5, (3.0, 3.0))
        seed = next(s for s in range(100) if first_alone_drifts(drift, s))
        mdobp = scenarios.build("mdobp", alpha=0, beta=0, runtime_factor=1.0)
        for truth in (CachePressure(), CachePressureModel()):
            kwargs = {"seed": seed, "cache_scores": (30.0, 30.0), "interference": truth}
            _, steady = replay(jobs, mdobp, **kwargs)
            self.assertEqual([1000.0, 1000.0], [o.end for o in steady.outcomes])
            sim, drifted = replay(jobs, mdobp, drift=drift, **kwargs)
            self.assertEqual(["1"], list(sim.phase_of))
            ends = {o.job_id: o.end for o in drifted.outcomes}
            # From the drift on, job 2 runs at 1 / (1 + (30/60)(120-60)/60) = 2/3.
            drift_at = sim.phase_of["1"].point * 1000.0
            self.assertGreater(ends[1], 1000.0)
            self.assertAlmostEqual(drift_at + (1000.0 - drift_at) * 1.5, ends[2], delta=1e-6)


def first_alone_drifts(drift: phases.PhaseDrift, seed: int) -> bool:
    """Whether, of two jobs of score 30, only the first drifts under ``seed``."""
    draws = phases.PhaseDraws(drift, seed)
    return draws.next(30.0) is not None and draws.next(30.0) is None


class TestMeasuredPlanning(testtools.TestCase):
    """One host, beta = 50: a job of score 30 leaves no room for another."""

    JOBS = [job(1, 0, 1000), job(2, 10, 100)]

    def measured_at(self, source: str, lag: float, full_llc: float) -> dict[int, float]:
        _, result = replay(
            self.JOBS,
            cache_aware(50.0, source),
            cache_scores=(30.0, 30.0),
            measuring=phases.Measuring(lag, full_llc),
        )
        return starts(result)

    def test_declared_waits_for_the_first_job_to_end(self) -> None:
        self.assertEqual({1: 0.0, 2: 1000.0}, self.measured_at("declared", 100.0, 10.0))

    def test_measured_counts_the_measured_score_only_after_the_lag(self) -> None:
        # Measured at 10 (saturated), job 1 leaves room from t = 100 on.
        self.assertEqual({1: 0.0, 2: 100.0}, self.measured_at("measured", 100.0, 10.0))
        self.assertEqual({1: 0.0, 2: 400.0}, self.measured_at("measured", 400.0, 10.0))

    def test_max_is_never_below_the_declared_score(self) -> None:
        self.assertEqual({1: 0.0, 2: 1000.0}, self.measured_at("max", 100.0, 10.0))

    def test_a_downward_drift_wakes_a_queued_job_that_then_fits(self) -> None:
        # Job 1 drifts from 30 to 10 part-way: once that is measured, job 2
        # fits. Were the drop not counted as a release, job 2 would wait
        # for job 1 to end (1000 s).
        lag = 20.0
        for source, woken in (("measured", True), ("max", False), ("declared", False)):
            sim, result = replay(
                self.JOBS,
                cache_aware(50.0, source),
                cache_scores=(30.0, 30.0),
                drift=phases.PhaseDrift(1.0, (1 / 3, 1 / 3)),
                measuring=phases.Measuring(lag, 60.0),
            )
            drift_at = sim.phase_of["1"].point * 1000.0
            expected = max(10.0, drift_at + lag) if woken else 1000.0
            self.assertAlmostEqual(expected, starts(result)[2], places=6, msg=source)
            self.assertEqual(0, result.unfinished)

    def test_an_upward_drift_keeps_out_what_it_would_slow(self) -> None:
        # Job 1 (10) drifts to 30; measured, job 2 (three VMs of 10) no
        # longer fits beside it, and waits for it to end.
        jobs = [job(1, 0, 1000), job(2, 990, 100, 3)]
        for source, waits in (("declared", False), ("measured", True), ("max", True)):
            sim, result = replay(
                jobs,
                cache_aware(50.0, source),
                cache_scores=(10.0, 10.0),
                drift=phases.PhaseDrift(1.0, (3.0, 3.0)),
                measuring=phases.Measuring(0.0, 60.0),
            )
            self.assertLess(sim.phase_of["1"].point * 1000.0, 990.0)
            self.assertEqual(1000.0 if waits else 990.0, starts(result)[2], source)

    def test_an_admission_model_judges_by_what_the_scheduler_knows(self) -> None:
        # Admission by cache-pressure within 0 %: a host is admitted while
        # its total stays at the knee (60). On a host of two cores (the model
        # judges the request with all the VMs the host could take), job 1
        # (30) has tripled when job 2 (30) arrives: the truth would refuse
        # it; declared knows 30 and admits it, measured knows 60 (saturated)
        # and refuses.
        jobs = [job(1, 0, 1000), job(2, 990, 100)]
        two_cores = sim_settings.ClusterShape(hosts=1, cores=2, ram_mb=4096)
        for source, start in (("declared", 990.0), ("measured", 1000.0)):
            scenario = scenarios.build(
                "hpc-aware",
                alpha=200.0,
                beta=60.0,
                runtime_factor=1.0,
                admission=CachePressureModel(),
                tolerance=0.0,
            )
            sim, result = replay(
                jobs,
                dataclasses.replace(scenario, cache_source=source),
                two_cores,
                cache_scores=(30.0, 30.0),
                drift=phases.PhaseDrift(1.0, (3.0, 3.0)),
                measuring=phases.Measuring(0.0, 60.0),
            )
            self.assertLess(sim.phase_of["1"].point * 1000.0, 990.0)
            self.assertEqual(start, starts(result)[2], source)


class RetryingEveryTime(simulator.Simulator):
    """The oracle: every queued job is tried at every event, not only after
    a release that may let it in."""

    def _may_fit_again(self, releases, hosts_freed, shortfall) -> bool:
        return True


JOB_STREAMS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=300),
        st.integers(min_value=10, max_value=600),
        st.integers(min_value=1, max_value=4),
    ),
    min_size=1,
    max_size=14,
)


class TestNoJobWaitsWhenItCouldFit(testtools.TestCase):
    @settings(max_examples=60, deadline=None)
    @given(
        JOB_STREAMS,
        st.sampled_from(SOURCES),
        st.sampled_from([0.0, 0.5, 1.0]),
        st.sampled_from([(0.25, 1.0), (0.5, 3.0)]),
        st.sampled_from([0.0, 30.0]),
        st.integers(min_value=0, max_value=50),
    )
    def test_skipping_retries_changes_no_start(
        self, stream, source, share, factors, lag, seed
    ) -> None:
        # The queue skips a refused job until something may let it in; were
        # a drop of a counted score not among those, a job would wait here
        # that the oracle starts.
        jobs = [job(i, submit, run, procs) for i, (submit, run, procs) in enumerate(stream, 1)]
        shape = sim_settings.ClusterShape(hosts=2, cores=4, ram_mb=4096)
        kwargs = {
            "seed": seed,
            # Scores that fill a host's beta with few VMs, measured far
            # lower (saturated at 10): drops of counted scores are frequent.
            "cache_scores": (20.0, 40.0),
            "interference": CachePressure(),
            "drift": phases.PhaseDrift(share, factors),
            "measuring": phases.Measuring(lag, 10.0),
        }
        scenario = cache_aware(60.0, source)
        found = simulator.Simulator(shape, scenario, **kwargs).run(jobs)
        oracle = RetryingEveryTime(shape, scenario, **kwargs).run(jobs)
        self.assertEqual(starts(oracle), starts(found))
        self.assertEqual(0, found.unfinished)
