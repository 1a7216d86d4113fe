"""tools/cloud.py and hpc-scheduler-agent: how it is run, and the fault that kills it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import testtools

from devcloud import control, faults
from tests.unit.devcloud import a_run


class TestAgentInTheCloud(testtools.TestCase):
    def test_the_agent_reads_the_schedulers_nova_conf(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            run = a_run(folder=folder)
            command = control.agent_command(run)
        self.assertEqual(["-m", "hpc_nova_scheduler.agent.main"], command[1:3])
        self.assertEqual(["--config-file", str(Path(folder) / "etc/nova.conf")], command[3:])

    def test_agent_kill_is_a_fault_and_a_window_starts_unbroken(self) -> None:
        self.assertIs(faults.kill_agent, faults.FAULTS["agent-kill"])
        self.assertEqual([], faults.Window("agent-kill").problems)
