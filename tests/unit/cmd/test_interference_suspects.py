"""``interference suspects`` on every backend: CPI2's victims and suspects from the database."""

from __future__ import annotations

import datetime
import json

from oslo_utils import timeutils

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db.measured import Figure, HostReport
from tests import db_backends
from tests.unit.cmd.test_cli import CommandTests as _CommandBase


class SuspectsTests(_CommandBase):
    """The command against a synced database (the base's own tests are not re-run)."""

    def setUp(self) -> None:
        super().setUp()
        self.ok("db", "sync")
        sync = AppClass.SYNC_HPC
        rows = {
            "v": ("cn1", "app-v"),
            "s1": ("cn2", "app-v"),
            "s2": ("cn2", "app-v"),
            "noisy": ("cn1", "app-n"),
        }
        self.database.record_running(
            [
                db_api.RunningRecord(uuid, host, sync, 10.0, nodename=host, request_id=app)
                for uuid, (host, app) in rows.items()
            ]
        )
        self.cpi = {"v": 2.5, "s1": 1.0, "s2": 1.2, "noisy": 0.7}

    def report(self, *, ago: float = 0.0, samples: int = 6) -> None:
        at = timeutils.utcnow() - datetime.timedelta(seconds=ago)
        for host, members in (("cn1", ("v", "noisy")), ("cn2", ("s1", "s2"))):
            self.database.record_measurements(
                HostReport(host, at, 2**26),
                [],
                {
                    uuid: {
                        "cpi": Figure(self.cpi[uuid], self.cpi[uuid], samples, at),
                        "llc_occupancy": Figure(2**20, 2**20, samples, at),
                    }
                    for uuid in members
                },
                retention=datetime.timedelta(hours=1),
            )

    def test_the_slow_vm_and_its_co_runner(self) -> None:
        self.report()
        (found,) = json.loads(self.ok("interference", "suspects", "--format", "json"))
        keys = ("victim", "application", "host", "cpi", "siblings_cpi")
        self.assertEqual(("v", "app-v", "cn1", 2.5, 1.1), tuple(found[k] for k in keys))
        self.assertEqual(["noisy"], [s["instance"] for s in found["suspects"]])
        table = self.ok("interference", "suspects")
        self.assertIn("noisy", table)
        self.assertIn("1.10 (2)", table)
        # A higher ratio forgives it.
        self.assertIn("no suspect", self.ok("interference", "suspects", "--ratio", "3"))

    def test_stale_or_too_few_samples_list_nothing(self) -> None:
        self.report(ago=600)
        self.assertIn("0 of 4 recorded VMs have a fresh CPI", self.ok("interference", "suspects"))
        self.report(samples=2)
        self.assertEqual([], json.loads(self.ok("interference", "suspects", "--format", "json")))

    def test_a_ratio_of_one_or_less_is_refused_in_one_line(self) -> None:
        code, out, err = self.cli("interference", "suspects", "--ratio", "1")
        self.assertEqual(2, code)
        self.assertEqual("", out)
        self.assertIn("--ratio", err)
        self.assertIn("must be more than 1", err)


# Only the command's tests: the base class's own run in test_cli.
for _name in [n for n in vars(_CommandBase) if n.startswith("test_")]:
    setattr(SuspectsTests, _name, None)

db_backends.for_each_backend(globals(), SuspectsTests, "TestSuspects")
