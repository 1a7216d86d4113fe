"""Options, the generated sample, and the nova.conf snippet."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import tempfile
import unittest

import fixtures
import testtools
from oslo_config import cfg

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler import resources

ETC = resources.SOURCE_ROOT / "etc"


class TestOptions(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.conf = cfg.ConfigOpts()
        hpc_conf.register_opts(self.conf)
        self.conf([], default_config_files=[])

    def test_defaults(self) -> None:
        group = self.conf.hpc_scheduler
        self.assertEqual(60.0, group.sync_cache_threshold)
        self.assertGreater(group.cache_threshold, group.sync_cache_threshold)
        self.assertEqual(10.0, group.interference_tolerance)
        self.assertIsNone(group.connection)
        self.assertEqual("reject", group.database_failure_policy)

    def test_options_are_listed_for_the_generator(self) -> None:
        [(group, opts), (agent, agent_opts), (collector, collector_opts)] = hpc_conf.list_opts()
        self.assertEqual("hpc_scheduler", group.name)
        self.assertTrue(
            {
                "cache_threshold",
                "sync_cache_threshold",
                "connection",
                "database_failure_policy",
                "fairshare_reclaim",
                "fairshare_reclaim_grace",
                "cache_pressure_source",
                "measured_rebalance_dry_run",
            }
            <= {o.name for o in opts}
        )
        self.assertTrue(all(o.help for o in opts))
        # The agent's own credentials for Nova's API: keystoneauth's options.
        self.assertEqual("hpc_scheduler_agent", agent.name)
        names = {o.dest for o in agent_opts}
        self.assertTrue({"auth_type", "auth_url", "username", "service_type"} <= names)
        service_type = next(o for o in agent_opts if o.dest == "service_type")
        self.assertEqual("compute", service_type.default)
        # The collector's, read on the compute hosts only.
        self.assertEqual("hpc_collector", collector.name)
        self.assertEqual(
            {
                "interval",
                "resctrl_root",
                "libvirt_run_dir",
                "cgroup_root",
                "host",
                "half_life",
                "retention",
            },
            {o.name for o in collector_opts},
        )
        self.assertTrue(all(o.help for o in collector_opts))

    def test_reclaim_modes_and_grace_are_checked(self) -> None:
        self.assertEqual("off", self.conf.hpc_scheduler.fairshare_reclaim)
        self.assertRaises(
            ValueError, self.conf.set_override, "fairshare_reclaim", "kill", group="hpc_scheduler"
        )
        self.assertRaises(
            ValueError,
            self.conf.set_override,
            "fairshare_reclaim_grace",
            -1,
            group="hpc_scheduler",
        )

    def test_the_agent_group_registers_once_and_loads_its_auth(self) -> None:
        from keystoneauth1 import loading as ks_loading

        hpc_conf.register_agent_opts(self.conf)
        hpc_conf.register_agent_opts(self.conf)
        self.assertEqual("compute", self.conf.hpc_scheduler_agent.service_type)
        self.conf.set_override("auth_type", "admin_token", group="hpc_scheduler_agent")
        self.conf.register_opts(
            ks_loading.get_auth_plugin_conf_options("admin_token"), group="hpc_scheduler_agent"
        )
        self.conf.set_override("endpoint", "http://nova.example:8774/v2.1", "hpc_scheduler_agent")
        self.conf.set_override("token", "secret", "hpc_scheduler_agent")
        auth = ks_loading.load_auth_from_conf_options(self.conf, "hpc_scheduler_agent")
        self.assertEqual("http://nova.example:8774/v2.1", auth.endpoint)

    def test_bad_values_are_refused(self) -> None:
        self.assertRaises(
            ValueError, self.conf.set_override, "sync_cache_threshold", -1, group="hpc_scheduler"
        )
        self.assertRaises(
            ValueError,
            self.conf.set_override,
            "database_failure_policy",
            "ignore",
            group="hpc_scheduler",
        )

    def test_alpha_below_beta_is_reported(self) -> None:
        hpc_conf.check_thresholds(self.conf)
        self.conf.set_override("cache_threshold", 50, group="hpc_scheduler")
        error = self.assertRaises(hpc_conf.ConfigurationError, hpc_conf.check_thresholds, self.conf)
        self.assertIn("alpha must be >= beta", str(error))


class TestShippedConfiguration(testtools.TestCase):
    def test_sample_is_what_the_generator_writes(self) -> None:
        out = self.useFixture(fixtures.TempDir()).join("sample.conf")
        subprocess.run(
            [
                os.path.join(os.path.dirname(sys.executable), "oslo-config-generator"),
                "--config-file",
                str(ETC / "oslo-config-generator" / "hpc-nova-scheduler.conf"),
                "--output-file",
                out,
            ],
            check=True,
            cwd=resources.SOURCE_ROOT,
            # The options of this source tree, wherever the package is installed from.
            env={**os.environ, "PYTHONPATH": str(resources.SOURCE_ROOT)},
        )
        self.assertTrue(
            filecmp.cmp(out, ETC / "hpc-nova-scheduler.conf.sample", shallow=False),
            "etc/hpc-nova-scheduler.conf.sample is stale: run oslo-config-generator "
            "--config-file etc/oslo-config-generator/hpc-nova-scheduler.conf",
        )

    def test_nova_conf_snippet_parses_with_our_options(self) -> None:
        conf = cfg.ConfigOpts()
        hpc_conf.register_opts(conf)
        conf([], default_config_files=[str(ETC / "nova.conf.snippet")])
        self.assertEqual(60.0, conf.hpc_scheduler.sync_cache_threshold)
        self.assertIn("mysql+pymysql", conf.hpc_scheduler.connection)
        hpc_conf.check_thresholds(conf)


class TestFairnessSettings(unittest.TestCase):
    """The fair-share options are read together; a bad one names itself."""

    def _conf(self, text: str) -> cfg.ConfigOpts:
        directory = self.enterContext(tempfile.TemporaryDirectory())
        path = os.path.join(directory, "nova.conf")
        with open(path, "w") as handle:
            handle.write("[hpc_scheduler]\n" + text)
        conf = cfg.ConfigOpts()
        hpc_conf.register_opts(conf)
        conf(["--config-file", path])
        return conf

    def test_none_by_default(self) -> None:
        self.assertIsNone(hpc_conf.fairness_settings(self._conf("")))

    def test_policy_names_its_first_level(self) -> None:
        settings = hpc_conf.fairness_settings(self._conf("fairness_policy = equal\n"))
        self.assertEqual("fairness", settings.first_level)
        self.assertEqual("strict", settings.enforcement)
        self.assertEqual(300, settings.interval)

    def test_bad_values_name_the_option(self) -> None:
        for text, option in (
            ("fairness_policy = fair\n", "fairness_policy"),
            ("fairness_policy = paf\nfairshare_top_percent = 80\n", "fairshare_top_percent"),
            ("fairness_policy = paf\ncorunner_policy = best\n", "corunner_policy"),
            ("fairness_policy = paf\nfairshare_interval = 1\n", "fairshare_interval"),
            ("fairness_policy = paf\nfairshare_enforcement = soft\n", "fairshare_enforcement"),
        ):
            with self.subTest(option=option):
                with self.assertRaises(hpc_conf.ConfigurationError) as raised:
                    hpc_conf.fairness_settings(self._conf(text))
                message = str(raised.exception)
                self.assertTrue(message.startswith(f"[hpc_scheduler] {option}: "), message)
                self.assertNotIn("\n", message)
