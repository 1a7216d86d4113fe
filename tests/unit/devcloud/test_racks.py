"""``up --nodes``: racks of nodes behind compute services, their places,
nova.conf, the pool processes and the memory report."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import fixtures
import testtools
from oslo_config import cfg

from devcloud import SOURCE_TREE, cli, config, control, memory, operator, racks, services
from devcloud.layout import Run
from hpc_nova_scheduler.core import cpu_groups
from hpc_nova_scheduler.demo import fake_driver
from tests.unit.devcloud.test_topology import FakeConnection


def new_run(test: testtools.TestCase, **settings) -> Run:
    root = test.useFixture(fixtures.TempDir()).path
    run = Run.new(
        Path(root),
        mysql="mysql+pymysql://root@127.0.0.1",
        rabbit="rabbit://guest:guest@127.0.0.1:5672",
        scheduler_workers=4,
        plugin=True,
        **{"computes": 8, **settings},
    )
    run.ports = dict.fromkeys(("placement", "glance", "neutron", "nova"), 1)
    return run


def nodes_run(test: testtools.TestCase, nodes: int, rack_size: int, levels=(), **kw) -> Run:
    return new_run(
        test,
        computes=racks.services_for(nodes, rack_size),
        nodes=nodes,
        rack_size=rack_size,
        services_per_process=2,
        topology=racks.topology(levels),
        **kw,
    )


def read_nova_conf(run: Run) -> cfg.ConfigOpts:
    """nova.conf as Nova's services read it."""
    import oslo_messaging.opts
    from nova.conf import opts
    from oslo_db import options as db_options

    conf = cfg.ConfigOpts()
    db_options.set_defaults(conf)
    for group, options in [*opts.list_opts(), *oslo_messaging.opts.list_opts()]:
        # Keystoneauth's options come in several lists of a group, and some
        # are required of a plugin the file does not name.
        for option in (option for option in options if not option.required):
            with contextlib.suppress(cfg.DuplicateOptError):
                conf.register_opt(option, group=None if group == "DEFAULT" else group)
    conf(["--config-file", str(config.nova_conf(run))], project="nova")
    return conf


class TestLayout(testtools.TestCase):
    def test_racks_of_nodes_the_last_one_partial(self) -> None:
        found = racks.layout(95, 40)
        self.assertEqual(["compute-000", "compute-001", "compute-002"], list(found))
        self.assertEqual([40, 40, 15], [len(nodes) for nodes in found.values()])
        self.assertEqual("compute-002-n14", list(found["compute-002"])[-1])
        self.assertEqual(3, racks.services_for(95, 40))
        self.assertEqual(95, len(set(racks.node_names(95, 40))))

    def test_node_numbers_widen_with_the_rack(self) -> None:
        self.assertEqual("compute-001-n007", racks.node_name("compute-001", 7, 200))

    def test_the_driver_reads_the_layout_file(self) -> None:
        run = nodes_run(self, 100, 40)
        config.write_all(run)
        loaded = fake_driver.load_nodes(str(run.path / "etc" / config.NODES_FILE))
        self.assertEqual(
            fake_driver.Shape(32, 128 * 1024, 1000, "EPYC-Milan", "AMD"),
            loaded["compute-002"]["compute-002-n00"],
        )
        self.assertEqual(20, len(loaded["compute-002"]))
        # No per-host configuration: the pools name their hosts.
        self.assertFalse((run.path / "etc" / "compute-000.conf").exists())

    def test_processor_models_alternate_by_pairs_of_racks(self) -> None:
        models = [racks.cpu_model(i)[1] for i in range(6)]
        self.assertEqual(
            ["Icelake-Server"] * 2 + ["EPYC-Milan"] * 2 + ["Icelake-Server"] * 2, models
        )

    def test_pools_hold_one_cell_each(self) -> None:
        hosts = [racks.host_name(i) for i in range(7)]
        self.assertEqual(
            [hosts[0:3], hosts[3:4], hosts[4:7]],
            racks.pools(hosts, [1, 1, 1, 1, 2, 2, 2], 3),
        )
        self.assertEqual([hosts[0:4], hosts[4:7]], racks.pools(hosts, [1] * 7, 4))


class TestTopology(testtools.TestCase):
    def test_the_rack_is_one_service_below_the_given_levels(self) -> None:
        self.assertEqual([("rack", 1)], racks.topology(()))
        self.assertEqual([("block", 6), ("rack", 1)], racks.topology((("block", 6),)))
        self.assertEqual([("block", 6), ("rack", 1)], racks.topology((("block", 6), ("rack", 1))))

    def test_a_rack_of_several_services_is_refused(self) -> None:
        for levels in ((("block", 2), ("rack", 4)), (("rack", 2), ("row", 3))):
            self.assertRaises(ValueError, racks.topology, levels)

    def test_up_refuses_it_in_one_line(self) -> None:
        for argv, key in (
            (["up", "--nodes", "80", "--topology", "block=2,rack=4"], "--topology"),
            (["up", "--nodes", "80", "--computes", "4"], "--computes"),
        ):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(2, cli.main(argv))
            self.assertIn(key, out.getvalue())
            self.assertEqual(1, len(out.getvalue().strip().splitlines()))


class TestIdleTraitIntervalArgument(testtools.TestCase):
    def test_off_by_default_and_within_the_options_range(self) -> None:
        parser = cli.build_parser()
        self.assertEqual(0, parser.parse_args(["up"]).idle_trait_interval)
        args = parser.parse_args(["up", "--idle-trait-interval", "3600"])
        self.assertEqual(3600, args.idle_trait_interval)
        for bad in ("0", "3601", "soon"):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertRaises(
                    SystemExit, parser.parse_args, ["up", "--idle-trait-interval", bad]
                )
            self.assertIn("--idle-trait-interval", err.getvalue())


class TestNodePlaces(testtools.TestCase):
    def test_every_node_in_its_rack_and_block(self) -> None:
        run = nodes_run(self, 250, 40, (("block", 3),))
        places = operator.node_places(run)
        self.assertEqual(250, len(places))
        place = places["compute-004-n39"]
        self.assertEqual("compute-004", place.host)
        self.assertEqual({"block": "block-1", "rack": "block-1/rack-4"}, place.domains)
        self.assertEqual((32, 128 * 1024), (place.vcpus, place.memory_mb))
        # The name the plugin derives from the cpu_info the driver reports.
        driver_info = {"vendor": "AMD", "model": "EPYC-Milan", "arch": "x86_64"}
        self.assertEqual(
            cpu_groups.cpu_group_from_cpu_info(json.dumps(driver_info)),
            places["compute-002-n00"].cpu_group,
        )
        self.assertEqual("Intel/Icelake-Server", place.cpu_group)
        self.assertEqual(
            "topology_levels = block,rack: 3 blocks, 7 racks", control.describe_topology(run)
        )

    def test_a_cloud_of_computes_has_a_node_per_host(self) -> None:
        import nova.virt.fake

        run = new_run(self)
        places = operator.node_places(run)
        self.assertEqual([f"compute-{i:02d}" for i in range(8)], list(places))
        place = places["compute-06"]
        self.assertEqual(
            ("compute-06", {"rack": "rack-1"}, "epyc"), (place.host, place.domains, place.cpu_group)
        )
        medium = nova.virt.fake.MediumFakeDriver
        self.assertEqual((medium.vcpus, medium.memory_mb), (place.vcpus, place.memory_mb))
        self.assertEqual(4, run.rack_size)

    def test_racks_are_aggregates_of_services_without_processor_groups(self) -> None:
        run = nodes_run(self, 200, 40, (("block", 2),))
        conn = FakeConnection()
        operator.tag_hosts(
            conn, run.computes, run.topology, config.hosts(run), tag_cpu_groups=False
        )
        aggregates = conn.compute.aggregates
        self.assertEqual(["compute-004"], aggregates["rack-rack-4"]["hosts"])
        self.assertEqual(["compute-002", "compute-003"], aggregates["block-block-1"]["hosts"])
        self.assertFalse([name for name in aggregates if name.startswith("cpu_group")])
        self.assertEqual(3 + 5, len(aggregates))


def _narrowing(conf: cfg.ConfigOpts) -> tuple[int, bool]:
    group = conf.hpc_scheduler
    return group.idle_trait_interval, group.roomy_rack_trait


class TestNovaConf(testtools.TestCase):
    def test_scale_settings_and_the_multi_node_driver(self) -> None:
        conf = read_nova_conf(nodes_run(self, 80, 40))
        self.assertEqual(config.MULTI_NODE_DRIVER, conf.compute_driver)
        for section, options in config.SCALE.items():
            group = conf if section == "DEFAULT" else conf[section]
            for key, value in options.items():
                self.assertEqual(value, group[key], f"[{section}] {key}")
        self.assertGreater(conf.service_down_time, conf.report_interval)
        self.assertEqual(1000, conf.scheduler.max_placement_results)
        self.assertEqual(4, conf.scheduler.workers)

    def test_placement_results(self) -> None:
        run = nodes_run(self, 80, 40, placement_results=200)
        self.assertEqual(200, read_nova_conf(run).scheduler.max_placement_results)

    def test_the_idle_and_roomy_rack_traits_as_the_plugin_reads_them(self) -> None:
        from hpc_nova_scheduler import conf as hpc_conf

        run = nodes_run(self, 80, 40)
        conf = read_nova_conf(run)
        conf.register_opts(hpc_conf.narrowing_opts, group=hpc_conf.GROUP_NAME)
        self.assertEqual((0, False), _narrowing(conf))
        run.idle_trait_interval = 30
        conf = read_nova_conf(run)
        conf.register_opts(hpc_conf.narrowing_opts, group=hpc_conf.GROUP_NAME)
        self.assertEqual((30, True), _narrowing(conf))
        run.save()
        self.assertEqual(30, Run.load(run.path).idle_trait_interval)

    def test_a_cloud_of_computes_is_configured_as_before(self) -> None:
        run = new_run(self)
        text = config.nova_conf(run).read_text()
        self.assertIn(f"compute_driver = {config.COMPUTE_DRIVER}", text)
        for key in ("update_resources_interval", "max_placement_results", "max_overflow"):
            self.assertNotIn(key, text)

    def test_the_new_fields_survive_the_run_file(self) -> None:
        run = nodes_run(self, 80, 40, placement_results=50)
        run.save()
        loaded = Run.load(run.path)
        self.assertEqual(
            (80, 40, 50, 2),
            (loaded.nodes, loaded.rack_size, loaded.placement_results, loaded.services_per_process),
        )
        self.assertEqual([("rack", 1)], loaded.topology)


class TestPoolCommand(testtools.TestCase):
    def run_pool(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "devcloud.compute_pool", *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=SOURCE_TREE,
            env={**os.environ, "PYTHONPATH": str(SOURCE_TREE)},
        )

    def test_one_process_per_cell_of_its_hosts(self) -> None:
        run = nodes_run(self, 200, 40)
        command = control.pool_command(run, ["compute-000", "compute-001"], 1)
        self.assertEqual(["-m", "devcloud.compute_pool"], command[1:3])
        self.assertIn("compute-000,compute-001", command)

    def test_a_bad_layout_or_host_is_one_line_and_no_traceback(self) -> None:
        folder = Path(self.useFixture(fixtures.TempDir()).path)
        (folder / "nova.conf").write_text("[DEFAULT]\n")
        layout = folder / "nodes.json"
        layout.write_text(json.dumps(racks.layout(2, 2)))
        for file, hosts, key in (
            (folder / "missing.json", "compute-000", "--layout"),
            (layout, "compute-009", "--hosts"),
        ):
            done = self.run_pool(
                "--layout", str(file), "--hosts", hosts, "--config-file", str(folder / "nova.conf")
            )
            self.assertEqual(2, done.returncode, done.stderr)
            self.assertIn(key, done.stderr)
            self.assertNotIn("Traceback", done.stderr)


class TestMemory(testtools.TestCase):
    def test_every_service_the_servers_and_a_total(self) -> None:
        run = new_run(self)
        service = services.spawn(
            run, "sleeper", [sys.executable, "-c", "import time; time.sleep(60)"]
        )
        self.addCleanup(services.stop, service)
        rows = memory.usage(run)
        names = [row[0] for row in rows]
        self.assertEqual(["sleeper", *memory.SERVERS, memory.TOTAL], names)
        _, pids, rss, pss = rows[0]
        self.assertEqual([service.pid], pids)
        self.assertGreater(rss, 0)
        self.assertGreater(pss, 0)
        total = rows[-1]
        self.assertEqual(sum(row[3] for row in rows[:-1]), total[3])
        self.assertEqual(len(rows) + 1, len(memory.table(rows)))
