"""The class engine replays logs exactly as plan() over every host does."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import random

import testtools
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import Policy
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.sim import cloud as sim_cloud
from hpc_nova_scheduler.sim import host_classes, interference, scenarios, simulator, swf
from hpc_nova_scheduler.sim import settings as sim_settings
from hpc_nova_scheduler.sim.state_classes import StateClasses
from hpc_nova_scheduler.topology.levels import TopologySpec
from tests import traces
from tests.unit.sim.jobs import job


@st.composite
def job_streams(draw) -> list[swf.Job]:
    count = draw(st.integers(1, 60))
    submit = 0.0
    jobs = []
    for number in range(1, count + 1):
        submit += draw(st.sampled_from([0, 0, 1, 5, 30]))
        memory = draw(st.sampled_from([None, 0.0, 100.0, 700.0, 1500.5, 5000.0]))
        procs = draw(st.integers(1, 14))
        run = draw(st.sampled_from([1, 10, 60, 300]))
        requested = draw(st.sampled_from([-1, run, 2 * run, 1000]))
        jobs.append(job(number, submit, run, procs, memory, requested))
    return jobs


shapes = st.sampled_from(
    [
        sim_settings.ClusterShape(hosts=6, cores=4, ram_mb=2048),
        sim_settings.ClusterShape(hosts=3, cores=2, ram_mb=4096, disk_gb=10),
        sim_settings.ClusterShape.of_kinds(
            [sim_settings.HostKind(3, 4, 2048), sim_settings.HostKind(2, 8, 8192, 0.5)]
        ),
    ]
)


def outcome_of(result: simulator.Result) -> tuple:
    return (result.outcomes, result.never_fit, result.unfinished)


class TestSameReplay(testtools.TestCase):
    @settings(max_examples=200, deadline=None)
    @given(
        shapes,
        job_streams(),
        st.sampled_from(algorithm.BLIND_PACKINGS),
        st.sampled_from([False, "greedy", "easy"]),
        st.integers(1, 4),
    )
    def test_same_outcomes(self, shape, jobs, packing, backfill, depth) -> None:
        scenario = sim_settings.Scenario(packing, Policy.nova_like(packing))
        results = [
            simulator.Simulator(
                shape,
                scenario,
                backfill=backfill,
                backfill_depth=depth,
                cache_scores=(0, 30),
                host_classes=classes,
            ).run(jobs)
            for classes in (True, False)
        ]
        self.assertEqual(outcome_of(results[1]), outcome_of(results[0]))

    def test_same_outcomes_on_real_logs(self) -> None:
        cases = (("METACENTRUM-2009-2.swf.gz", 1024, 3000), ("RICC-2010-2.swf.gz", 8192, 3000))
        for (name, cores, count), packing in itertools.product(cases, ("mdobp", "least-free-pes")):
            path = traces.trace(self, name)
            report = swf.ReadReport(path, swf.MemorySemantics.AUTO)
            jobs = list(
                itertools.islice(
                    swf.read_jobs(path, report, swf.MemorySemantics.AUTO, swf.OnError.SKIP),
                    count,
                )
            )
            shape = sim_settings.ClusterShape.from_total_cores(cores, 4, 2048)
            scenario = scenarios.build(packing, alpha=200, beta=60, runtime_factor=1.0)
            results = [
                simulator.Simulator(shape, scenario, host_classes=classes).run(jobs)
                for classes in (True, False)
            ]
            self.assertEqual(outcome_of(results[1]), outcome_of(results[0]), (name, packing))
            self.assertGreater(len(results[0].outcomes), count // 2)


#: Scenarios beyond the blind ones: the papers' policies on state classes.
STATE_SCENARIOS = ("mdobp-cache", "hpc-aware", "nova-default")


class Recording(simulator.Simulator):
    """A replay that notes where each job's VMs went, job by job."""

    def _launch(self, job, arrival, now, app_id) -> None:
        cloud = self._cloud
        if isinstance(cloud, sim_cloud.ClassedCloud):
            per_host = collections.Counter()
            for row, vms in host_classes.runs(cloud._placed[app_id][0]):
                per_host[row] += vms
            hosts = tuple(sorted(per_host.items()))
        else:
            hosts = tuple(
                (row, sum(vm.application_id == app_id for vm in cloud.vms_on(row)))
                for row in cloud.rows_of(app_id)
            )
        self.placements.append((job.job_id, now, hosts))
        super()._launch(job, arrival, now, app_id)

    def _try_start(self, job, score, arrival, now) -> bool:
        self.attempts = getattr(self, "attempts", 0) + 1
        return super()._try_start(job, score, arrival, now)


def replay_both(test, shape, scenario, jobs, **options) -> list:
    """Replay on the engine the simulator picks and on plan() over every
    host; fail unless every job went to the same hosts at the same time."""
    found = []
    for classes in (None, False):
        sim = Recording(shape, scenario, host_classes=classes, **options)
        sim.placements = []
        found.append((sim.engine, sim.placements, outcome_of(sim.run(jobs))))
    (engine, placements, outcome), (reference, expected, outcome_expected) = found
    test.assertEqual("hosts", reference)
    for number, (got, want) in enumerate(zip(placements, expected, strict=True)):
        test.assertEqual(want, got, f"{scenario.name} on {engine}: job #{number}")
    test.assertEqual(outcome_expected, outcome)
    return placements


class TestSameStateReplay(testtools.TestCase):
    """State classes against plan() over every host, job by job."""

    @settings(max_examples=150, deadline=None)
    @given(
        st.sampled_from(
            [
                sim_settings.ClusterShape(hosts=6, cores=4, ram_mb=2048, hosts_per_rack=2),
                sim_settings.ClusterShape(hosts=8, cores=4, ram_mb=4096, cpu_groups=2),
                sim_settings.ClusterShape.of_kinds(
                    [sim_settings.HostKind(3, 4, 2048), sim_settings.HostKind(2, 8, 8192, 0.5)],
                    hosts_per_rack=2,
                ),
                sim_settings.ClusterShape(
                    hosts=12, cores=4, ram_mb=4096, topology=(("block", 2), ("rack", 3))
                ),
            ]
        ),
        job_streams(),
        st.sampled_from(STATE_SCENARIOS),
        st.sampled_from([(200, 60), (40, 30), (1000, 1000)]),
        st.sampled_from([False, "greedy", "easy"]),
        st.booleans(),
        st.sampled_from(
            [
                TopologySpec(),
                TopologySpec(required="rack"),
                TopologySpec(required="block"),
                TopologySpec(preferred="block"),
            ]
        ),
    )
    def test_same_placements(self, shape, jobs, name, limits, backfill, slowed, spec) -> None:
        scenario = scenarios.build(name, alpha=limits[0], beta=limits[1], runtime_factor=1.0)
        if "block" in shape.levels and name != "nova-default":
            scenario = dataclasses.replace(scenario, topology=spec)
        replay_both(
            self,
            shape,
            scenario,
            jobs,
            backfill=backfill,
            cache_scores=(0, 30),
            interference=interference.CachePressure(0.01) if slowed else None,
        )

    def test_sampled_windows_of_three_logs(self) -> None:
        """Every policy, on a window of each log from a seeded offset, on a
        cloud small enough that jobs wait for room."""
        logs = (
            ("METACENTRUM-2009-2.swf.gz", 1024),
            ("RICC-2010-2.swf.gz", 8192),
            ("LPC-EGEE-2004-1.2-cln.swf.gz", 32),
        )
        draw = random.Random(24)
        windows = {}
        for name, cores in logs:
            path = traces.trace(self, name)
            report = swf.ReadReport(path, swf.MemorySemantics.AUTO)
            every = swf.read_jobs(path, report, swf.MemorySemantics.AUTO, swf.OnError.SKIP)
            start = draw.randrange(20000)
            jobs = list(itertools.islice(every, start, start + 1500))
            shape = sim_settings.ClusterShape.from_total_cores(cores, 4, 2048)
            windows[name] = (shape, jobs)
            for policy in scenarios.DESCRIPTIONS:
                scenario = scenarios.build(policy, alpha=200, beta=60, runtime_factor=1.0)
                placed = replay_both(self, shape, scenario, jobs, cache_scores=(0, 30))
                self.assertGreater(len(placed), 750, (name, policy))
                # The window loads the cloud: some jobs waited for room.
                submitted = {job.job_id: job.submit - jobs[0].submit for job in jobs}
                waited = sum(now > submitted[job_id] for job_id, now, _ in placed)
                self.assertGreater(waited, 10, (name, policy))
        # Topology levels and the tenant's constraints: 16 blocks of 4 racks of 4 hosts.
        shape, jobs = windows["METACENTRUM-2009-2.swf.gz"]
        nested = dataclasses.replace(shape, topology=(("block", 4), ("rack", 4)))
        for spec in (
            TopologySpec(),
            TopologySpec(required="rack"),
            TopologySpec(required="block", preferred="rack"),
        ):
            for policy in ("hpc-aware", "mdobp-cache"):
                scenario = scenarios.build(policy, alpha=200, beta=60, runtime_factor=1.0)
                scenario = dataclasses.replace(scenario, topology=spec)
                replay_both(self, nested, scenario, jobs, cache_scores=(0, 30), spans=True)
        # Ground-truth interference slows jobs; the engines still agree.
        hpc = scenarios.build("hpc-aware", alpha=200, beta=60, runtime_factor=1.0)
        replay_both(
            self, shape, hpc, jobs, cache_scores=(0, 30), interference=interference.CachePressure()
        )


class TestRefusedJobs(testtools.TestCase):
    def test_a_refused_job_is_tried_again_only_when_releases_could_make_room(self) -> None:
        """A head refused for want of room on state classes waits until the
        hosts freed since could add what it lacked; plan() over every host
        tries it after every release. Same placements, fewer attempts."""
        path = traces.trace(self, "no_memory/CTC-SP2-1996-3.1-cln.swf.gz")
        report = swf.ReadReport(path, swf.MemorySemantics.AUTO)
        every = swf.read_jobs(path, report, swf.MemorySemantics.AUTO, swf.OnError.SKIP)
        jobs = list(itertools.islice(every, 3000, 4500))
        shape = sim_settings.ClusterShape.from_total_cores(340, 4, 2048)
        scenario = scenarios.build("hpc-aware", alpha=200, beta=60, runtime_factor=1.0)
        attempts = {}
        for classes in (None, False):
            sim = Recording(shape, scenario, host_classes=classes, cache_scores=(0, 30))
            sim.placements = []
            outcome = outcome_of(sim.run(jobs))
            attempts[sim.engine] = (sim.attempts, sim.placements, outcome)
        (tried, placed, outcome), (tried_every, expected, outcome_expected) = attempts.values()
        self.assertEqual(expected, placed)
        self.assertEqual(outcome_expected, outcome)
        self.assertLess(tried, tried_every * 0.9, (tried, tried_every))

    def test_what_a_refusal_lacked(self) -> None:
        shortfall = sim_cloud.Shortfall(vms=5, per_host=2)
        self.assertEqual(
            [False, False, False, True, True], [shortfall.may_fit_after(n) for n in range(5)]
        )


class TestChoice(testtools.TestCase):
    SHAPE = sim_settings.ClusterShape(hosts=2, cores=4, ram_mb=2048)

    def test_blind_scenarios_use_host_classes(self) -> None:
        for name in ("mdobp", "least-free-pes", "most-free-pes", "nova-ram"):
            scenario = scenarios.build(name, alpha=200, beta=60, runtime_factor=1.0)
            self.assertTrue(simulator.Simulator(self.SHAPE, scenario).host_classes, name)

    def test_the_papers_policies_use_the_kernel_or_state_classes(self) -> None:
        """Cosine packing on one rack level, and Nova's weighers blind to
        racks, run on the compiled kernel."""
        for name, engine in (
            ("nova-default", "compiled hosts"),
            ("mdobp-cache", "compiled hosts"),
            ("hpc-aware", "compiled hosts"),
        ):
            scenario = scenarios.build(name, alpha=200, beta=60, runtime_factor=1.0)
            self.assertEqual(engine, simulator.Simulator(self.SHAPE, scenario).engine, name)
        mdobp = scenarios.build("mdobp", alpha=200, beta=60, runtime_factor=1.0)
        slowed = simulator.Simulator(
            self.SHAPE, mdobp, interference=interference.CachePressure(0.01)
        )
        self.assertEqual("compiled hosts", slowed.engine)
        # A tenant's constraints are planned on state classes.
        hpc = scenarios.build("hpc-aware", alpha=200, beta=60, runtime_factor=1.0)
        constrained = dataclasses.replace(hpc, topology=TopologySpec(required="rack"))
        self.assertEqual("state classes", simulator.Simulator(self.SHAPE, constrained).engine)
        reference = simulator.Simulator(self.SHAPE, mdobp, host_classes=False)
        self.assertEqual("hosts", reference.engine)

    def test_what_stays_host_by_host(self) -> None:
        hpc = scenarios.build("hpc-aware", alpha=200, beta=60, runtime_factor=1.0)
        extreme = dataclasses.replace(hpc, app_class=AppClass.EXTREME_HPC)
        segments = dataclasses.replace(hpc, topology=TopologySpec(segment=2, segment_level="rack"))
        on_hosts = dataclasses.replace(hpc, topology=TopologySpec(required="host"))
        for scenario, why in (
            (extreme, "ExtremeHPC"),
            (segments, "segments"),
            (on_hosts, "host level"),
        ):
            self.assertEqual("hosts", simulator.Simulator(self.SHAPE, scenario).engine, why)
            self.assertRaisesRegex(
                ValueError, why, simulator.Simulator, self.SHAPE, scenario, host_classes=True
            )
        # More levels, and the tenant's required and preferred ones, replay on classes.
        nested = sim_settings.ClusterShape(
            hosts=8, cores=4, ram_mb=2048, topology=(("block", 2), ("rack", 2))
        )
        for spec in (
            TopologySpec(),
            TopologySpec(required="rack"),
            TopologySpec(preferred="block"),
        ):
            scenario = dataclasses.replace(hpc, topology=spec)
            self.assertEqual("state classes", simulator.Simulator(nested, scenario).engine)


class TestSharedModels(testtools.TestCase):
    """Interference models of hpc_nova_scheduler.interference in the replay."""

    SHAPE = sim_settings.ClusterShape(hosts=4, cores=4, ram_mb=8192)

    def jobs(self) -> list[swf.Job]:
        return [job(i, i * 3, 200 + 17 * (i % 5), 1 + i % 4) for i in range(1, 40)]

    def test_cache_pressure_as_a_shared_model_is_the_per_vm_truth(self) -> None:
        from hpc_nova_scheduler.interference.cache_pressure import CachePressureModel

        scenario = scenarios.build("hpc-aware", alpha=200, beta=200, runtime_factor=1.0)
        results = [
            simulator.Simulator(self.SHAPE, scenario, cache_scores=(0, 40), interference=truth).run(
                self.jobs()
            )
            for truth in (interference.CachePressure(30, 1), CachePressureModel(30, 1))
        ]
        self.assertGreater(results[0].mean_interference(), 1.0)
        for old, new in zip(results[0].outcomes, results[1].outcomes, strict=True):
            self.assertEqual(old.job_id, new.job_id)
            self.assertAlmostEqual(old.end, new.end, delta=1e-6)

    def test_admission_by_the_truth_keeps_every_job_within_the_tolerance(self) -> None:
        from hpc_nova_scheduler import datafiles, resources
        from hpc_nova_scheduler.interference import model_registry

        profiles = [
            p
            for p in datafiles.read_profiles(
                str(resources.example_profiles_dir() / "seed-applications.yaml")
            )
            if p.sllc_score is not None
        ]
        truth = model_registry.load("ivmp-base")
        for tolerance in (3.0, 15.0):
            judged = scenarios.build(
                "hpc-aware",
                alpha=200,
                beta=60,
                runtime_factor=1.0,
                admission=truth,
                tolerance=tolerance,
            )
            result = simulator.Simulator(
                self.SHAPE, judged, interference=truth, profiles=profiles
            ).run(self.jobs())
            self.assertEqual(39, len(result.outcomes))
            for o in result.outcomes:
                self.assertLessEqual((o.end - o.start) / o.nominal_run, 1 + tolerance / 100 + 1e-9)
        # The thresholds alone let some job run past 3 % under the same truth.
        blind = scenarios.build("hpc-aware", alpha=200, beta=60, runtime_factor=1.0)
        result = simulator.Simulator(self.SHAPE, blind, interference=truth, profiles=profiles).run(
            self.jobs()
        )
        self.assertGreater(max((o.end - o.start) / o.nominal_run for o in result.outcomes), 1.03)

    def test_admission_replays_on_state_classes_as_host_by_host(self) -> None:
        """A model as admission and as the truth: the same hosts job by job."""
        from hpc_nova_scheduler import datafiles, resources
        from hpc_nova_scheduler.interference import model_registry

        profiles = [
            p
            for p in datafiles.read_profiles(
                str(resources.example_profiles_dir() / "seed-applications.yaml")
            )
            if p.sllc_score is not None
        ]
        truth = model_registry.load("ivmp-base")
        shape = sim_settings.ClusterShape(hosts=12, cores=4, ram_mb=8192, hosts_per_rack=4)
        jobs = [job(i, i * 2, 150 + 37 * (i % 7), 1 + i % 6) for i in range(1, 150)]
        for name, tolerance in (("hpc-aware", 3.0), ("mdobp-cache", 15.0)):
            judged = scenarios.build(
                name, alpha=200, beta=60, runtime_factor=1.0, admission=truth, tolerance=tolerance
            )
            self.assertEqual("state classes", simulator.Simulator(shape, judged).engine)
            placed = replay_both(self, shape, judged, jobs, interference=truth, profiles=profiles)
            self.assertEqual(149, len(placed))
            # The model decided something: the thresholds alone place otherwise.
            unjudged = Recording(
                shape,
                scenarios.build(name, alpha=200, beta=60, runtime_factor=1.0),
                interference=truth,
                profiles=profiles,
            )
            unjudged.placements = []
            unjudged.run(jobs)
            self.assertNotEqual(unjudged.placements, placed)

    def test_runtime_trees_judge_and_slow_jobs_by_host_type(self) -> None:
        import fixtures

        from hpc_nova_scheduler.runtime import trees
        from tests.unit.runtime.test_trees import dataset, samples

        truth = trees.RuntimeTrees(trees=15).fit(samples(dataset().training))
        profiles = [p for p in dataset().profiles if p.runtime_family in truth.families]
        shape = sim_settings.ClusterShape.of_kinds(
            [
                sim_settings.HostKind(2, 4, 8192, name="T1"),
                sim_settings.HostKind(2, 4, 8192, name="T2"),
            ]
        )
        self.assertEqual(["T1", "T1", "T2", "T2"], shape.host_types())
        judged = scenarios.build(
            "hpc-aware", alpha=200, beta=60, runtime_factor=1.0, admission=truth, tolerance=20.0
        )
        result = simulator.Simulator(shape, judged, interference=truth, profiles=profiles).run(
            self.jobs()
        )
        self.assertEqual(39, len(result.outcomes))
        for o in result.outcomes:
            self.assertLessEqual((o.end - o.start) / o.nominal_run, 1.2 + 1e-9)
        # The model judges host types per class as plan() does per host.
        replay_both(self, shape, judged, self.jobs(), interference=truth, profiles=profiles)
        blind = scenarios.build("hpc-aware", alpha=200, beta=60, runtime_factor=1.0)
        unjudged = simulator.Simulator(shape, blind, interference=truth, profiles=profiles)
        outcomes = unjudged.run(self.jobs()).outcomes
        self.assertGreater(max((o.end - o.start) / o.nominal_run for o in outcomes), 1.2)
        # Hosts alike share one prediction; asking the model for each gives the same replay.
        self.useFixture(
            fixtures.MonkeyPatch("hpc_nova_scheduler.sim.simulator.PREDICTION_CACHE", -1)
        )
        again = simulator.Simulator(shape, blind, interference=truth, profiles=profiles)
        self.assertEqual(outcomes, again.run(self.jobs()).outcomes)


def plans_on_idle(shape, scenario, request) -> bool:
    """What plan() itself answers for ``request`` on the idle cloud."""
    try:
        algorithm.plan(
            request, shape.build().columns(), scenario.thresholds, policy=scenario.policy
        )
    except algorithm.NoPlacement:
        return False
    return True


class TestIdleAnswers(testtools.TestCase):
    """The idle cloud's answer, kept per kind of request, is plan()'s own."""

    @settings(max_examples=200, deadline=None)
    @given(
        st.sampled_from(["mdobp-cache", "hpc-aware", "nova-default"]),
        st.sampled_from(list(AppClass)),
        st.lists(
            st.tuples(st.floats(0, 70, allow_nan=False), st.integers(1, 30)),
            min_size=1,
            max_size=6,
        ),
        st.sampled_from([1.0, 2.0]),
    )
    # A score that leaves two VMs of three asked the same cache slots as one
    # that admits six of two: an idle host's room still tells them apart.
    @example("hpc-aware", AppClass.SYNC_HPC, [(10.0, 2), (25.0, 7)], 1.0)
    def test_kept_answers_are_plans_answers(self, name, app_class, asked, vcpus) -> None:
        """On every engine that serves the requests, each asked in turn of
        one cloud (so that kinds kept for one serve the next)."""
        shape = sim_settings.ClusterShape(hosts=6, cores=4, ram_mb=8192, cpu_groups=2)
        scenario = scenarios.build(name, alpha=100, beta=60, runtime_factor=1.0)
        engines = [sim_cloud.PlannedCloud]
        if not StateClasses.serves(scenario.policy, app_class):
            engines.append(sim_cloud.StateClassedCloud)
        demand = Resources(vcpus, 1024, 0)
        for engine in engines:
            cloud = engine(shape, scenario)
            for number, (score, count) in enumerate(asked):
                for app in ("first", "second"):
                    request = algorithm.PlacementRequest(
                        ApplicationProfile(app_class, score, f"{app}{number}"),
                        demand,
                        count,
                        f"{app}{number}",
                    )
                    expected = plans_on_idle(shape, scenario, request)
                    # The second asks what the first asked, under another name.
                    self.assertEqual(
                        expected, cloud.plans_on_empty(request), (engine, score, count)
                    )
                # Scores a hair either side of a threshold's share keep apart.
                for nudge in (-1e-7, 1e-7):
                    near = 60.0 / max(1, count) + nudge
                    request = algorithm.PlacementRequest(
                        ApplicationProfile(app_class, near, "near"), demand, count, "near"
                    )
                    expected = plans_on_idle(shape, scenario, request)
                    self.assertEqual(expected, cloud.plans_on_empty(request), (engine, near))
