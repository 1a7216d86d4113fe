"""A short stress on a real control plane, with the plugin database down and a worker killed.

``tools/cloud.py up`` starts every service as a process of its own on the
local MariaDB and RabbitMQ, with ``database_failure_policy = degrade``; the
stress boots and deletes requests of every class for about a minute while
the plugin's database refuses connections for 20 s and then one
nova-scheduler worker is killed with SIGKILL, and checks every invariant and
the plugin's records against Nova. Each compute is measured
(``up --measured``): ``stress --measured``'s scenes follow, then a short
stress under the stored ``pair-forest`` model, on the same cloud.
``down`` must leave no process, database or virtual host behind. Without
MariaDB or RabbitMQ the test skips, except where CI (or
``HPC_REQUIRE_DB_BACKENDS``) is set: there it fails.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shutil
import subprocess
from pathlib import Path

import fixtures
import sqlalchemy as sa
import testtools
from oslo_config import cfg

from devcloud import cli, control, measured, services, stress
from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.agent import reclaim as agent_reclaim
from tests import db_backends

LAST_LINE = re.compile(
    r"^stress: (\d+) requests, (\d+) servers, (\d+) invariant violations, "
    r"(\d+) topology violations, (\d+) entitlement violations, (\d+) record mismatches, "
    r"(\d+) s$"
)


def _missing_backend() -> str | None:
    try:
        engine = sa.create_engine(cli.MYSQL)
        with engine.connect():
            pass
        engine.dispose()
    except sa.exc.SQLAlchemyError as error:
        return f"MariaDB at {cli.MYSQL} does not answer: {error}"
    tool = shutil.which("rabbitmqctl")
    if tool is None:
        return "rabbitmqctl is not on PATH"
    done = subprocess.run([tool, "-q", "list_vhosts"], capture_output=True, timeout=60)
    if done.returncode:
        return f"RabbitMQ does not answer: {done.stderr.decode(errors='replace')}"
    return None


class TestCloudStress(testtools.TestCase):
    def _agent_reaches_nova(self, run) -> None:
        """hpc-scheduler-agent's own credentials from nova.conf (keystoneauth's
        admin_token through devcloud's stand-in for Keystone) act on Nova's API
        as the agent: what fair-share reclaim marks and stops victims with."""
        conf = cfg.ConfigOpts()
        hpc_conf.register_opts(conf)
        conf([], default_config_files=[str(Path(run.folder) / "etc" / "nova.conf")])
        connection = agent_reclaim.connect(conf)
        try:
            # keystonecontext answers 401 to a request it finds no user in.
            self.assertEqual([], list(connection.compute.servers(all_projects=True)))
        finally:
            connection.close()

    def _stress_under_a_stored_model(self, run) -> None:
        """A short stress with ``--interference-model pair-forest``: the forest
        is fitted and stored, nova-scheduler restarted to use it, and no shared
        host is left with a predicted slowdown past the tolerance."""
        args = argparse.Namespace(
            seconds=15.0,
            clients=4,
            plugin=None,
            policy=None,
            interference_model="pair-forest",
            seed=20261123,
            fault=[],
            keep_servers=False,
        )
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = stress.main(run, args, say=self.say)
        report = out.getvalue() + "\n".join(self.log)
        found = LAST_LINE.match(out.getvalue().strip().splitlines()[-1])
        self.assertIsNotNone(found, report)
        requests, _, violations, topology, entitlement, mismatches, _ = map(int, found.groups())
        self.assertGreater(requests, 0, report)
        self.assertEqual(
            (0, 0, 0, 0, 0), (violations, topology, entitlement, mismatches, code), report
        )
        self.assertEqual("pair-forest", run.interference_model)
        self.assertTrue(
            any(line.startswith("interference model pair-forest: ") for line in self.log), report
        )

    def _measured_pressure(self, run) -> None:
        """``stress --measured``'s scenes on the measured computes: the operator's
        ``interference suspects`` names the antagonist of a VM its cache
        contention slows (CPI on the fake PMU), and under ``max`` the agent
        moves the antagonist; the agent live-migrates one VM off the host a
        drifting phase overloads, and the host comes back within beta; the VM
        declared at 10 that measures 55 takes a co-runner under ``declared``,
        not under ``measured``. How long the agent took is reported, not
        judged: the machine may be loaded."""
        problems = measured.check(run, self.say, on_time=False)
        report = "\n".join(self.log)
        self.assertEqual([], problems, report)
        for expected in (
            "co-runners under declared: SyncHPC 10 asked for H: on H;",
            "co-runners under measured: SyncHPC 10 asked for H: refused;",
            "rebalance: 1 live migration(s), the first asked ",
            "suspects: under max the agent live-migrated the antagonist, not the victim",
        ):
            self.assertTrue(any(line.startswith(expected) for line in self.log), report)
        self.assertEqual("declared", run.cache_source)

    def setUp(self) -> None:
        super().setUp()
        reason = _missing_backend()
        if reason is not None:
            if db_backends.backends_required():
                self.fail(f"{reason} (HPC_REQUIRE_DB_BACKENDS is set)")
            self.skipTest(reason)
        self.root = self.useFixture(fixtures.TempDir()).path
        self.log: list[str] = []

    def say(self, message: str) -> None:
        self.log.append(message)

    def test_stress_with_the_plugin_database_down_and_a_worker_killed(self) -> None:
        try:
            run = control.up(
                Path(self.root),
                mysql=cli.MYSQL,
                rabbit=cli.RABBIT,
                computes=8,
                scheduler_workers=2,
                plugin=True,
                say=self.say,
                policy="degrade",
                measured=True,
            )
        except services.ServiceError as error:
            self.fail(f"up failed: {error}\n" + "\n".join(self.log))
        up_pids = [s.pid for s in run.services]
        try:
            self._agent_reaches_nova(run)
            args = argparse.Namespace(
                seconds=60.0,
                clients=4,
                plugin=None,
                policy=None,
                seed=20261122,
                fault=["plugin-db", "scheduler-worker", "agent-kill"],
                keep_servers=False,
            )
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = stress.main(run, args, say=self.say)
            report = out.getvalue() + "\n".join(self.log)
            last = out.getvalue().strip().splitlines()[-1]
            found = LAST_LINE.match(last)
            self.assertIsNotNone(found, report)
            requests, _, violations, topology, entitlement, mismatches, _ = map(int, found.groups())
            self.assertGreater(requests, 0, report)
            self.assertEqual((0, 0, 0, 0), (violations, topology, entitlement, mismatches), report)
            # Racks of four computes: some requests required one, and were judged.
            self.assertTrue(
                any(
                    line.startswith("topology: ") and "requests required a level (rack " in line
                    for line in self.log
                ),
                report,
            )
            self.assertEqual(0, code, report)
            for fault in ("plugin-db", "scheduler-worker", "agent-kill"):
                self.assertTrue(any(f"fault {fault} from" in line for line in self.log), report)
            # The filter hands the copy over on its request path, the agent at its sweep.
            handed = "".join(
                (Path(run.folder) / "logs" / f"{name}.log").read_text(errors="replace")
                for name in ("nova-scheduler", control.AGENT)
            )
            self.assertIn("the plugin database answers again; handed over", handed, report)
            self.assertFalse(any("fault left broken" in line for line in self.log), report)
            self._measured_pressure(run)
            self._stress_under_a_stored_model(run)
        finally:
            databases, vhost, account = list(run.databases), run.vhost, run.hpc_account
            control.down(run, say=self.say)
        self.assertEqual([], [pid for pid in up_pids if services.group_alive(pid)])
        engine = sa.create_engine(cli.MYSQL)
        try:
            with engine.connect() as connection:
                names = {row[0] for row in connection.execute(sa.text("SHOW DATABASES"))}
                users = {
                    row[0] for row in connection.execute(sa.text("SELECT User FROM mysql.user"))
                }
        finally:
            engine.dispose()
        self.assertEqual(set(), names & set(databases))
        self.assertNotIn(account[0], users)
        listed = subprocess.run(
            ["rabbitmqctl", "-q", "list_vhosts"], capture_output=True, text=True, timeout=60
        ).stdout.split()
        self.assertNotIn(vhost, listed)
