"""``rebalance``'s errors before any server moves (its moves are tested in
tests/functional/test_rebalance.py, in Nova's harness)."""

from __future__ import annotations

import os

import fixtures
import testtools

from hpc_nova_scheduler.db import api as db_api
from tests.unit.cmd.test_cli import run

CLOUD_VARIABLES = ("OS_CLOUD", "OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME")


class TestRebalanceErrors(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        directory = self.useFixture(fixtures.TempDir()).path
        self.url = f"sqlite:///{os.path.join(directory, 'hpc.sqlite')}"
        database = db_api.Database(self.url)
        database.sync()
        database.dispose()
        for name in CLOUD_VARIABLES:
            self.useFixture(fixtures.EnvironmentVariable(name))
        # No clouds.yaml of the machine may be found: a clouds file with no
        # cloud (an empty one is refused by 2025.1's openstacksdk).
        no_clouds = os.path.join(directory, "clouds.yaml")
        with open(no_clouds, "w") as stream:
            stream.write("clouds: {}\n")
        self.useFixture(fixtures.EnvironmentVariable("OS_CLIENT_CONFIG_FILE", no_clouds))
        self.useFixture(fixtures.EnvironmentVariable("HOME", directory))

    def rebalance(self, *argv: str):
        return run("--config-file", "/dev/null", "--connection", self.url, "rebalance", *argv)

    def test_no_cloud_is_a_clear_error(self) -> None:
        code, out, err = self.rebalance()
        self.assertEqual(1, code)
        self.assertIn("no cloud to talk to", err)
        self.assertIn("--os-cloud", err)
        self.assertEqual("", out)

    def test_an_unknown_cloud_is_named(self) -> None:
        code, _, err = self.rebalance("--os-cloud", "nowhere")
        self.assertEqual(1, code)
        self.assertIn("nowhere", err)

    def test_an_unreachable_cloud_is_a_clear_error(self) -> None:
        # A port nothing listens on: the identity service refuses at once.
        self.useFixture(fixtures.EnvironmentVariable("OS_AUTH_URL", "http://127.0.0.1:9/identity"))
        self.useFixture(fixtures.EnvironmentVariable("OS_USERNAME", "admin"))
        self.useFixture(fixtures.EnvironmentVariable("OS_PASSWORD", "secret"))
        self.useFixture(fixtures.EnvironmentVariable("OS_PROJECT_NAME", "admin"))
        code, out, err = self.rebalance()
        self.assertEqual(1, code)
        self.assertIn("cannot read the cloud", err)
        self.assertEqual("", out)

    def test_an_unknown_planner_is_told_before_the_cloud_is_asked(self) -> None:
        code, _, err = self.rebalance("--planner", "nope")
        self.assertEqual(1, code)
        self.assertIn("--planner: unknown planner 'nope'", err)

    def test_a_bad_alpha_is_told_before_the_cloud_is_asked(self) -> None:
        code, _, err = self.rebalance("--planner", "ffd", "--alpha", "2")
        self.assertEqual(1, code)
        self.assertIn("--alpha", err)
        self.assertNotIn("cloud", err)

    def test_options_are_checked(self) -> None:
        code, _, err = self.rebalance("--max-moves", "-1")
        self.assertEqual(2, code)
        self.assertIn("--max-moves", err)
        code, _, err = self.rebalance("--migration", "teleport")
        self.assertEqual(2, code)
