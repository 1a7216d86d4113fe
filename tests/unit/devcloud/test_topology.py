"""``up --topology``: the hosts' levels, their aggregates, nova.conf and the
stress's topology flavors."""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path

import fixtures
import testtools
from oslo_config import cfg

from devcloud import cli, config, control, operator, stress, workload
from devcloud.layout import Run
from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.profile import AppClass, profile_from_request
from hpc_nova_scheduler.topology import levels as topo

TWO_LEVELS = (("block", 2), ("rack", 2))


class TestDomains(testtools.TestCase):
    def test_two_blocks_of_two_racks_of_two_hosts(self) -> None:
        found = operator.domains(8, TWO_LEVELS)
        self.assertEqual({"block": "block-0", "rack": "block-0/rack-1"}, found["compute-03"], found)
        self.assertEqual({"block": "block-1", "rack": "block-1/rack-2"}, found["compute-04"], found)
        self.assertEqual(2, len({mine["block"] for mine in found.values()}))
        self.assertEqual(4, len({mine["rack"] for mine in found.values()}))
        # The value an aggregate carries: numbered across the cloud.
        self.assertEqual(
            {"block": "block-1", "rack": "rack-3"}, operator.level_values(7, TWO_LEVELS)
        )

    def test_without_a_topology_racks_of_four_as_ever(self) -> None:
        self.assertEqual(
            {f"compute-{i:02d}": {"rack": f"rack-{i // 4}"} for i in range(8)},
            operator.domains(8),
        )
        self.assertEqual(("rack-1", "xeon"), operator.topology(8)["compute-04"])
        self.assertEqual(("rack-1", "epyc"), operator.topology(8)["compute-06"])

    def test_the_last_domains_may_be_partly_filled(self) -> None:
        found = operator.domains(7, (("block", 2), ("rack", 3)))
        self.assertEqual("block-1/rack-2", found["compute-06"]["rack"])
        self.assertEqual("block-0", found["compute-05"]["block"])


class FakeCompute:
    """The compute API calls ``tag_hosts`` makes, recorded."""

    def __init__(self) -> None:
        self.aggregates: dict[str, dict] = {}

    def create_aggregate(self, name: str) -> str:
        self.aggregates[name] = {"metadata": {}, "hosts": []}
        return name

    def set_aggregate_metadata(self, aggregate: str, metadata: dict) -> None:
        self.aggregates[aggregate]["metadata"].update(metadata)

    def add_host_to_aggregate(self, aggregate: str, host: str) -> None:
        self.aggregates[aggregate]["hosts"].append(host)


class FakeConnection:
    def __init__(self) -> None:
        self.compute = FakeCompute()


class TestTagHosts(testtools.TestCase):
    def test_an_aggregate_per_domain_of_every_level_and_per_group(self) -> None:
        conn = FakeConnection()
        operator.tag_hosts(conn, 8, TWO_LEVELS)
        aggregates = conn.compute.aggregates
        self.assertEqual(
            {"compute-04", "compute-05", "compute-06", "compute-07"},
            set(aggregates["block-block-1"]["hosts"]),
        )
        self.assertEqual({"hpc:block": "block-1"}, aggregates["block-block-1"]["metadata"])
        self.assertEqual(["compute-06", "compute-07"], aggregates["rack-rack-3"]["hosts"])
        self.assertEqual({"hpc:rack": "rack-3"}, aggregates["rack-rack-3"]["metadata"])
        self.assertEqual(8, len(aggregates))  # 2 blocks, 4 racks, 2 processor groups

    def test_without_a_topology_racks_and_groups_as_before(self) -> None:
        conn = FakeConnection()
        operator.tag_hosts(conn, 8)
        self.assertEqual(
            ["cpu_group-epyc", "cpu_group-xeon", "rack-rack-0", "rack-rack-1"],
            sorted(conn.compute.aggregates),
        )


class TestConfiguration(testtools.TestCase):
    def run_with(self, topology=()) -> Run:
        root = self.useFixture(fixtures.TempDir()).path
        run = Run.new(
            Path(root),
            mysql="mysql+pymysql://root@127.0.0.1",
            rabbit="rabbit://guest:guest@127.0.0.1:5672",
            computes=8,
            scheduler_workers=2,
            plugin=True,
            topology=list(topology),
        )
        run.ports = dict.fromkeys(("placement", "glance", "neutron", "nova"), 1)
        return run

    def levels(self, run: Run) -> list[str]:
        """``topology_levels`` as a Nova service reads its nova.conf."""
        conf = cfg.ConfigOpts()
        hpc_conf.register_opts(conf)
        conf(["--config-file", str(config.nova_conf(run))], project="nova")
        return conf.hpc_scheduler.topology_levels

    def test_the_levels_go_to_the_nova_conf_every_nova_service_reads(self) -> None:
        run = self.run_with(TWO_LEVELS)
        self.assertEqual(["block", "rack"], self.levels(run))
        self.assertEqual(("block", "rack"), run.levels)

    def test_without_a_topology_the_option_keeps_its_default(self) -> None:
        run = self.run_with()
        self.assertEqual(["rack"], self.levels(run))
        self.assertNotIn("topology_levels", config.nova_conf(run).read_text())
        self.assertEqual(("rack",), run.levels)

    def test_the_topology_survives_the_run_file(self) -> None:
        run = self.run_with(TWO_LEVELS)
        run.save()
        loaded = Run.load(run.path)
        self.assertEqual([("block", 2), ("rack", 2)], loaded.topology)
        self.assertEqual(
            "topology_levels = block,rack: 2 blocks, 4 racks", control.describe_topology(loaded)
        )
        self.assertEqual(
            "topology_levels = rack: 2 racks", control.describe_topology(self.run_with())
        )


class TestOption(testtools.TestCase):
    def test_read_as_simulate_reads_it(self) -> None:
        args = cli.build_parser().parse_args(["up", "--topology", "block=2,rack=2"])
        self.assertEqual(TWO_LEVELS, args.topology)
        self.assertEqual((), cli.build_parser().parse_args(["up"]).topology)

    def test_a_wrong_shape_is_refused_before_anything_starts(self) -> None:
        for value in ("block=0,rack=2", "rack", "host=2", "rack=2,rack=2", ""):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertRaises(
                    SystemExit, cli.build_parser().parse_args, ["up", "--topology", value]
                )
            self.assertIn("argument --topology", err.getvalue())


class TestFlavors(testtools.TestCase):
    def test_each_flavor_once_more_per_level_and_every_one_valid(self) -> None:
        levels = ("block", "rack")
        specs = {spec.name: spec for spec in workload.flavor_specs(levels)}
        # 4 classes x 3 scores x 2 sizes, without and with each level; plain ones.
        self.assertEqual(24 * 3 + len(workload.PLAIN_FLAVORS), len(specs))
        self.assertEqual(
            {"hpc:app_class": "SyncHPC", "hpc:cache_score": "25", workload.REQUIRED: "block"},
            specs["hpc.SyncHPC.25.m.block"].extra_specs,
        )
        for spec in specs.values():
            # What nova-scheduler reads from each flavor, against the cloud's levels.
            found = topo.spec_from_extra_specs(spec.extra_specs, levels)
            self.assertEqual(spec.extra_specs.get(workload.REQUIRED), found.required)
            if spec.extra_specs:
                profile_from_request(spec.extra_specs, {})
        self.assertEqual(levels, workload.required_levels(specs))
        default = [spec.name for spec in workload.flavor_specs()]
        self.assertEqual(("rack",), workload.required_levels(default))

    def test_a_cloud_without_topology_flavors_requires_no_level(self) -> None:
        older = ["hpc.SyncHPC.25.m", "plain.s"]
        self.assertEqual((), workload.required_levels(older))

    def test_the_stress_asks_for_flavors_the_cloud_has(self) -> None:
        levels = ("block", "rack")
        names = {spec.name for spec in workload.flavor_specs(levels)}
        rng = random.Random(20261124)
        asked = []
        for number in range(400):
            request, flavor = stress.random_request(rng, f"c0r{number}", levels=levels)
            self.assertIn(flavor, names)
            asked.append(request)
            if request.required:
                self.assertTrue(flavor.endswith("." + request.required), flavor)
                self.assertIsNotNone(request.app_class)
        hpc = [a for a in asked if a.app_class is not None]
        required = [a for a in hpc if a.required]
        self.assertEqual({"block", "rack"}, {a.required for a in required})
        # About TOPOLOGY_SHARE of the HPC requests.
        self.assertLess(abs(len(required) / len(hpc) - stress.TOPOLOGY_SHARE), 0.1)
        self.assertTrue(any(a.app_class is AppClass.EXTREME_HPC for a in required))
        # Without levels, the load asks for none.
        rng = random.Random(1)
        for number in range(50):
            request, _ = stress.random_request(rng, f"c0r{number}")
            self.assertIsNone(request.required)
