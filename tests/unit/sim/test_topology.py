"""Network topology in the replay: the hierarchy, the jobs' constraints, the shares."""

from __future__ import annotations

import random
from unittest import mock

import testtools

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import PACKING_LEAST_FREE_PES, Policy
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.sim import scenarios, settings, simulator
from hpc_nova_scheduler.sim import topology as sim_topology
from hpc_nova_scheduler.topology import levels as topo
from tests.unit.sim.jobs import job

#: 10 hosts of 4 cores: racks of 3 hosts, 2 racks a block (4 racks, 2 blocks).
TWO_LEVELS = settings.ClusterShape(
    hosts=10, cores=4, ram_mb=4096, topology=(("block", 2), ("rack", 3))
)


def hpc(topology=algorithm.NO_TOPOLOGY, flat: bool = False) -> settings.Scenario:
    """hpc-aware without thresholds: every job of several VMs is SyncHPC."""
    return settings.Scenario("hpc", Policy(), app_class=None, topology=topology, flat=flat)


def replay(shape, scenario, jobs, **kwargs) -> simulator.Result:
    return simulator.Simulator(shape, scenario, spans=True, **kwargs).run(jobs)


class TestHierarchy(testtools.TestCase):
    def test_levels_nest_outermost_first_and_hosts_fill_them_in_order(self) -> None:
        self.assertEqual(("block", "rack"), TWO_LEVELS.levels)
        self.assertEqual(3, TWO_LEVELS.rack_size)
        codes = TWO_LEVELS.domain_codes()
        self.assertEqual([0, 0, 0, 0, 0, 0, 1, 1, 1, 1], codes[0].tolist())
        self.assertEqual([0, 0, 0, 1, 1, 1, 2, 2, 2, 3], codes[1].tolist())
        state = TWO_LEVELS.build()
        self.assertEqual(("block", "rack"), state.levels)
        hosts = state.hosts()
        self.assertEqual([("block-0",)] * 6 + [("block-1",)] * 4, [host.outer for host in hosts])
        self.assertEqual(
            ["rack-0"] * 3 + ["rack-1"] * 3 + ["rack-2"] * 3 + ["rack-3"],
            [host.rack for host in hosts],
        )
        columns = state.columns()
        self.assertEqual(("block", "rack"), columns.levels)
        self.assertEqual(2, len(columns.domain_names[0]))
        self.assertEqual(4, len(columns.domain_names[1]))
        self.assertIn("topology block=2,rack=3 (2 blocks, 4 racks)", TWO_LEVELS.describe())

    def test_three_levels(self) -> None:
        shape = settings.ClusterShape(
            hosts=20, cores=4, ram_mb=4096, topology=(("pod", 2), ("block", 2), ("rack", 3))
        )
        codes = shape.domain_codes()
        # Racks of 3 hosts, blocks of 2 racks (6 hosts), pods of 2 blocks (12 hosts).
        self.assertEqual([row // 12 for row in range(20)], codes[0].tolist())
        self.assertEqual([row // 6 for row in range(20)], codes[1].tolist())
        self.assertEqual([row // 3 for row in range(20)], codes[2].tolist())
        hosts = shape.build().hosts()
        self.assertEqual(("pod-1", "block-2"), hosts[12].outer)
        self.assertEqual("rack-4", hosts[12].rack)

    def test_flat_build_hides_the_outer_levels(self) -> None:
        state = TWO_LEVELS.build(flat=True)
        self.assertEqual(("rack",), state.levels)
        self.assertEqual({()}, {host.outer for host in state.hosts()})
        self.assertEqual(
            [host.rack for host in TWO_LEVELS.build().hosts()],
            [host.rack for host in state.hosts()],
        )

    def test_without_topology_the_cloud_is_seed_003s(self) -> None:
        shape = settings.ClusterShape(hosts=70, cores=4, ram_mb=2048, cpu_groups=2)
        self.assertEqual(("rack",), shape.levels)
        self.assertEqual(32, shape.rack_size)
        self.assertEqual("70 hosts of 4 cores and 2048 MB", shape.describe())
        hosts = shape.build().hosts()
        self.assertEqual({()}, {host.outer for host in hosts})
        self.assertEqual([f"rack-{row // 32}" for row in range(70)], [h.rack for h in hosts])
        self.assertEqual(["group-0"] * 64 + ["group-1"] * 6, [host.cpu_group for host in hosts])
        # One level named rack=32 is the same cloud.
        same = settings.ClusterShape(
            hosts=70, cores=4, ram_mb=2048, cpu_groups=2, topology=(("rack", 32),)
        )
        self.assertEqual(hosts, same.build().hosts())

    def test_the_last_level_replaces_hosts_per_rack(self) -> None:
        shape = settings.ClusterShape(
            hosts=8, cores=4, ram_mb=2048, hosts_per_rack=32, topology=(("rack", 2),)
        )
        self.assertEqual(4, len({host.rack for host in shape.build().hosts()}))


class TestParsing(testtools.TestCase):
    def test_topology(self) -> None:
        self.assertEqual(
            (("block", 4), ("rack", 16)), sim_topology.parse_topology("block=4,rack=16")
        )
        self.assertEqual((("rack", 8),), sim_topology.parse_topology(" Rack = 8 "))
        for bad, message in (
            ("", "expected LEVEL=N"),
            ("block", "'block' is not LEVEL=N"),
            ("block=0,rack=4", "'block=0' is not LEVEL=N"),
            ("block=x,rack=4", "'block=x' is not LEVEL=N"),
            ("=4", "'=4' is not LEVEL=N"),
            ("block=4,,rack=4", "'' is not LEVEL=N"),
            ("block=4,block=2", "topology level 'block' is named twice"),
            ("rack=4,host=2", "topology level 'host' is reserved"),
            ("rack 1=4", "is not a name"),
        ):
            error = self.assertRaises(ValueError, sim_topology.parse_topology, bad)
            self.assertIn(message, str(error), bad)

    def test_configurations(self) -> None:
        found = sim_topology.parse_configurations(
            "none,preferred=rack,Required=Block+preferred=rack,seed003"
        )
        self.assertEqual(
            ["none", "preferred=rack", "required=block+preferred=rack", "seed003"],
            [config.label for config in found],
        )
        self.assertEqual([False, False, False, True], [config.flat for config in found])
        levels = ("block", "rack")
        self.assertEqual(
            topo.TopologySpec(required="block", preferred="rack"), found[2].spec(levels)
        )
        self.assertTrue(found[0].spec(levels).empty)
        for bad, message in (
            ("", "expected none, seed003 or KEY=LEVEL"),
            ("needed=rack", "'needed=rack': expected none, seed003, required=LEVEL"),
            ("required", "'required': expected"),
            ("required=", "'required=': expected"),
            ("required=rack+required=block", "required is given twice"),
            ("none,none", "'none' is given twice"),
        ):
            error = self.assertRaises(ValueError, sim_topology.parse_configurations, bad)
            self.assertIn(message, str(error), bad)

    def test_levels_are_checked_against_the_cloud(self) -> None:
        (config,) = sim_topology.parse_configurations("required=block")
        error = self.assertRaises(ValueError, config.spec, ("rack",))
        self.assertIn("required=block: ", str(error))
        self.assertIn("unknown topology level 'block'", str(error))
        (inverted,) = sim_topology.parse_configurations("required=rack+preferred=block")
        error = self.assertRaises(ValueError, inverted.spec, ("block", "rack"))
        self.assertIn("not inside the required level", str(error))

    def test_variants_multiply_the_topology_aware_scenarios_alone(self) -> None:
        built = [
            scenarios.build(name, alpha=200, beta=60, runtime_factor=1.0)
            for name in ("least-free-pes", "mdobp-cache", "hpc-aware")
        ]
        configs = sim_topology.parse_configurations("none,required=rack,seed003")
        found = sim_topology.variants(built, configs, ("block", "rack"))
        self.assertEqual(
            [
                "least-free-pes",
                "mdobp-cache beta=60",
                "hpc-aware beta=60 [none]",
                "hpc-aware beta=60 [required=rack]",
                "hpc-aware beta=60 [seed003]",
            ],
            [scenario.name for scenario in found],
        )
        self.assertEqual(topo.TopologySpec(required="rack"), found[3].topology)
        self.assertEqual([False, False, False, False, True], [s.flat for s in found])
        self.assertEqual(built[2].thresholds, found[4].thresholds)


class TestReplay(testtools.TestCase):
    def test_required_rack_jobs_always_land_in_one_rack(self) -> None:
        rng = random.Random(3)
        jobs = [job(i, i * 5, rng.choice([20, 60, 200]), rng.randint(1, 12)) for i in range(1, 80)]
        result = replay(TWO_LEVELS, hpc(topo.TopologySpec(required="rack")), jobs)
        multi = [o for o in result.outcomes if o.processors > 1]
        self.assertEqual(len(jobs), len(result.outcomes))
        self.assertGreater(len(multi), 40)
        self.assertEqual({1}, {o.spans[1] for o in multi})
        self.assertEqual(1.0, result.one_domain_share("rack"))
        self.assertEqual(1.0, result.one_domain_share("block"))
        # Without the constraint some of the same jobs span racks.
        free = replay(TWO_LEVELS, hpc(), jobs)
        self.assertLess(free.one_domain_share("rack"), 1.0)

    def test_a_job_too_big_for_any_domain_is_refused_not_kept(self) -> None:
        jobs = [job(1, 0, 10, 13), job(2, 0, 10, 30), job(3, 0, 10, 41), job(4, 1, 10, 2)]
        result = replay(TWO_LEVELS, hpc(topo.TopologySpec(required="rack")), jobs)
        # 13 VMs fit no rack (12 cores) and 30 none either; 41 fit no cloud (40 cores).
        self.assertEqual(([1, 2], [3]), (result.topology_refused, result.never_fit))
        self.assertEqual([4], [o.job_id for o in result.outcomes])
        self.assertEqual(0, result.unfinished)
        blocks = replay(TWO_LEVELS, hpc(topo.TopologySpec(required="block")), jobs)
        # A block holds 24 cores: 13 VMs fit one.
        self.assertEqual(([2], [3]), (blocks.topology_refused, blocks.never_fit))
        self.assertEqual([1, 4], sorted(o.job_id for o in blocks.outcomes))
        self.assertEqual(1, blocks.outcomes[0].spans[0])

    def test_a_job_refused_for_its_topology_now_waits_and_retries(self) -> None:
        # Racks of one 4-core host: two 3-VM jobs leave one core on each, and
        # a 2-VM job fits at once only across two racks.
        shape = settings.ClusterShape(hosts=2, cores=4, ram_mb=4096, topology=(("rack", 1),))
        jobs = [job(1, 0, 100, 3), job(2, 0, 100, 3), job(3, 1, 10, 2)]
        free = {o.job_id: o for o in replay(shape, hpc(), jobs).outcomes}
        self.assertEqual((1, (2,)), (free[3].start, free[3].spans))
        required = replay(shape, hpc(topo.TopologySpec(required="rack")), jobs)
        held = {o.job_id: o for o in required.outcomes}
        self.assertEqual((100, (1,)), (held[3].start, held[3].spans))
        self.assertEqual([], required.topology_refused)

    def test_spans_are_those_of_the_plans_domains(self) -> None:
        rng = random.Random(5)
        jobs = [job(i, i * 3, rng.choice([10, 50]), rng.randint(2, 14)) for i in range(1, 40)]
        plans = {}
        real = algorithm.plan

        def recording(request, *args, **kwargs):
            found = real(request, *args, **kwargs)
            plans[int(request.application_id)] = found
            return found

        # plan() over every host: the state classes' plans are held to its
        # job by job elsewhere.
        with mock.patch.object(algorithm, "plan", recording):
            result = replay(
                TWO_LEVELS, hpc(topo.TopologySpec(preferred="rack")), jobs, host_classes=False
            )
        self.assertEqual(len(jobs), len(result.outcomes))
        for outcome in result.outcomes:
            expected = tuple(len(domains) for domains in plans[outcome.job_id].domains)
            self.assertEqual(expected, outcome.spans, outcome.job_id)

    def test_seed_003s_ordering_on_the_same_hierarchy(self) -> None:
        rng = random.Random(7)
        jobs = [job(i, i * 4, rng.choice([30, 90]), rng.randint(2, 10)) for i in range(1, 60)]
        flat = replay(TWO_LEVELS, hpc(flat=True), jobs)
        # The same racks without the blocks: seed 003's plans, and blocks still counted.
        racks_only = settings.ClusterShape(hosts=10, cores=4, ram_mb=4096, hosts_per_rack=3)
        seed = simulator.Simulator(racks_only, hpc()).run(jobs)
        self.assertEqual(
            [(o.job_id, o.start, o.end) for o in seed.outcomes],
            [(o.job_id, o.start, o.end) for o in flat.outcomes],
        )
        self.assertEqual(("block", "rack"), flat.levels)
        self.assertEqual({2}, {len(o.spans) for o in flat.outcomes})

    def test_blind_policies_are_measured_too(self) -> None:
        scenario = settings.Scenario("lfp", Policy.nova_like(PACKING_LEAST_FREE_PES))
        jobs = [job(1, 0, 10, 16), job(2, 0, 10, 1), job(3, 0, 10, 8)]
        result = replay(TWO_LEVELS, scenario, jobs)
        # ClassedCloud, least free host first: job 1 fills h0-h3 (racks 0
        # and 1 of block 0), job 2 takes h4, job 3 the 3 cores left on h4,
        # then h5 and one core of h6 (rack 2, block 1).
        spans = {o.job_id: o.spans for o in result.outcomes}
        self.assertEqual({1: (1, 2), 2: (1, 1), 3: (2, 2)}, spans)

    def test_measuring_changes_no_outcome(self) -> None:
        rng = random.Random(11)
        jobs = [job(i, i * 2, rng.choice([10, 40]), rng.randint(1, 9)) for i in range(1, 50)]
        for scenario in (hpc(), settings.Scenario("mdobp", Policy.nova_like())):
            plain = simulator.Simulator(TWO_LEVELS, scenario).run(jobs)
            measured = replay(TWO_LEVELS, scenario, jobs)
            self.assertEqual(
                [(o.job_id, o.start, o.end) for o in plain.outcomes],
                [(o.job_id, o.start, o.end) for o in measured.outcomes],
            )
            self.assertEqual({()}, {o.spans for o in plain.outcomes})
            self.assertEqual((), plain.levels)

    def test_span_cost_stretches_jobs_across_outer_domains(self) -> None:
        # Two blocks of one 4-core host: 8 VMs span both.
        shape = settings.ClusterShape(
            hosts=2, cores=4, ram_mb=4096, topology=(("block", 1), ("rack", 1))
        )
        scenario = settings.Scenario("lfp", Policy.nova_like(PACKING_LEAST_FREE_PES))
        jobs = [job(1, 0, 100, 8), job(2, 200, 100, 4)]
        result = simulator.Simulator(shape, scenario, span_cost=50).run(jobs)
        ends = {o.job_id: (o.start, o.end, o.spans) for o in result.outcomes}
        self.assertEqual({1: (0, 150, (2, 2)), 2: (200, 300, (1, 1))}, ends)
        # The stretch shows as the job's run time over its run time alone.
        self.assertEqual(1.25, result.mean_interference())
        self.assertRaises(ValueError, simulator.Simulator, shape, scenario, span_cost=-1)


class TestShares(testtools.TestCase):
    def outcome(self, job_id, processors, spans) -> simulator.Outcome:
        return simulator.Outcome(job_id, 0, 0, 10, processors, 10, spans)

    def test_shares_of_the_jobs_of_several_vms(self) -> None:
        result = simulator.Result(
            "x",
            [
                self.outcome(1, 4, (1, 1)),
                self.outcome(2, 8, (1, 2)),
                self.outcome(3, 16, (2, 3)),
                self.outcome(4, 1, (1, 1)),
            ],
            [],
            0,
            64,
            levels=("block", "rack"),
        )
        self.assertEqual(3, result.multi_vm_jobs())
        self.assertEqual(1 / 3, result.one_domain_share("rack"))
        self.assertEqual(2 / 3, result.one_domain_share("block"))
        self.assertIsNone(result.one_domain_share("pod"))

    def test_no_share_without_jobs_of_several_vms_or_spans(self) -> None:
        single = simulator.Result("x", [self.outcome(1, 1, (1,))], [], 0, 4, levels=("rack",))
        self.assertIsNone(single.one_domain_share("rack"))
        unmeasured = simulator.Result("x", [self.outcome(1, 4, ())], [], 0, 4)
        self.assertIsNone(unmeasured.one_domain_share("rack"))

    def test_a_tiny_log_end_to_end(self) -> None:
        # least-free-pes on two blocks of two racks of one 4-core host, all at
        # once: job 1 (4 VMs) fills h0; job 2 (6 VMs) h1 and two of h2; job 3
        # (1 VM) the least free host, h2; job 4 (2 VMs) h2 and h3.
        shape = settings.ClusterShape(
            hosts=4, cores=4, ram_mb=4096, topology=(("block", 2), ("rack", 1))
        )
        scenario = settings.Scenario("lfp", Policy.nova_like(PACKING_LEAST_FREE_PES))
        jobs = [job(1, 0, 10, 4), job(2, 0, 10, 6), job(3, 0, 10, 1), job(4, 0, 10, 2)]
        result = replay(shape, scenario, jobs)
        spans = {o.job_id: o.spans for o in result.outcomes}
        self.assertEqual({1: (1, 1), 2: (2, 2), 3: (1, 1), 4: (1, 2)}, spans)
        self.assertEqual(3, result.multi_vm_jobs())
        self.assertEqual(1 / 3, result.one_domain_share("rack"))
        self.assertEqual(2 / 3, result.one_domain_share("block"))


class TestApplicationClass(testtools.TestCase):
    def test_only_jobs_of_several_vms_carry_the_constraint(self) -> None:
        sim = simulator.Simulator(TWO_LEVELS, hpc(topo.TopologySpec(required="rack")))
        one = sim._request(job(1, 0, 10, 1), 0.0)
        many = sim._request(job(2, 0, 10, 3), 0.0)
        self.assertTrue(one.topology.empty)
        self.assertEqual(AppClass.ASYNC_HPC, one.app_class)
        self.assertEqual(topo.TopologySpec(required="rack"), many.topology)
        self.assertEqual(AppClass.SYNC_HPC, many.app_class)
