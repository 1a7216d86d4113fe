"""``hosts show`` on every backend: declared and measured cache pressure per host."""

from __future__ import annotations

import datetime
import json

from oslo_utils import timeutils

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db.measured import Figure, HostReport
from tests import db_backends
from tests.unit.cmd.test_cli import CommandTests as _CommandBase

LLC = 64 * 2**20
A = "11111111-0000-0000-0000-00000000000a"
B = "11111111-0000-0000-0000-00000000000b"
C = "11111111-0000-0000-0000-00000000000c"


class HostsShowTests(_CommandBase):
    """The command against a synced database (the base's own tests are not re-run)."""

    def setUp(self) -> None:
        super().setUp()
        self.ok("db", "sync")
        with open(self.conf_file, "w") as conf:
            conf.write("[hpc_scheduler]\ncache_pressure_source = max\nmeasured_min_samples = 3\n")
        self.database.record_running(
            [
                db_api.RunningRecord(A, "cn1", AppClass.SYNC_HPC, 10.0, nodename="cn1"),
                db_api.RunningRecord(B, "cn1", AppClass.NON_HPC, 0.0, nodename="cn1"),
                db_api.RunningRecord(C, "cn2", AppClass.ASYNC_HPC, 30.0, nodename="cn2"),
            ]
        )

    def report(self, host: str, figures: dict, *, ago: float = 0.0) -> None:
        at = timeutils.utcnow() - datetime.timedelta(seconds=ago)
        self.database.record_measurements(
            HostReport(
                host,
                at,
                LLC,
                {"llc_occupancy": LLC / 2, "mbm_total_bps": 3e9},
                ("llc_occupancy", "mbm_total_bps"),
                ("cpi: perf_event_paranoid is 3",),
            ),
            [],
            {
                uuid: {"llc_occupancy": Figure(share * LLC, share * LLC, samples, at)}
                for uuid, (share, samples) in figures.items()
            },
            retention=datetime.timedelta(hours=1),
        )

    def test_declared_and_measured_side_by_side(self) -> None:
        # A measured at a tenth of the LLC (6), B at half (30); C's host is stale.
        self.report("cn1", {A: (0.1, 5), B: (0.5, 5)})
        self.report("cn2", {C: (1.0, 5)}, ago=600)
        found = json.loads(self.ok("hosts", "show", "--measured", "--format", "json"))
        self.assertEqual("max", found["cache_pressure_source"])
        cn1, cn2 = found["hosts"]
        self.assertEqual(
            # Under max, A counts with its declared 10.
            ("cn1", 2, 10.0, 36.0, 2, 40.0),
            (
                cn1["host"],
                cn1["vms"],
                cn1["declared"],
                cn1["measured"],
                cn1["measured_vms"],
                cn1["in_force"],
            ),
        )
        self.assertFalse(cn1["stale"])
        self.assertEqual(["cpi: perf_event_paranoid is 3"], cn1["problems"])
        # Stale: its VMs count as declared, whatever it last measured.
        self.assertEqual(
            (30.0, 30.0, 0, True),
            tuple(cn2[k] for k in ("declared", "measured", "measured_vms", "stale")),
        )
        table = self.ok("hosts", "show", "--measured")
        self.assertIn("in force (max)", table)
        self.assertIn("32.0 MiB (50%)", table)
        self.assertIn("3.00 GB/s", table)
        self.assertIn("stale (> 60 s)", table)
        self.assertIn("1 problem(s)", table)

    def test_without_measured_only_what_is_declared(self) -> None:
        found = json.loads(self.ok("hosts", "show", "--format", "json"))
        self.assertEqual(
            [
                {"host": "cn1", "vms": 2, "declared": 10.0},
                {"host": "cn2", "vms": 1, "declared": 30.0},
            ],
            found["hosts"],
        )
        self.assertIn("cn2", self.ok("hosts", "show"))
        self.assertNotIn("cn1", self.ok("hosts", "show", "cn2"))

    def test_too_few_samples_and_hosts_that_never_reported(self) -> None:
        self.report("cn9", {})
        self.report("cn1", {A: (1.0, 2)})
        found = json.loads(self.ok("hosts", "show", "--measured", "--format", "json"))
        by_host = {h["host"]: h for h in found["hosts"]}
        self.assertEqual((10.0, 0), (by_host["cn1"]["measured"], by_host["cn1"]["measured_vms"]))
        self.assertEqual((None, True), (by_host["cn2"]["report_age_s"], by_host["cn2"]["stale"]))
        # A host that reports and runs no recorded VM is listed too.
        self.assertEqual(0, by_host["cn9"]["vms"])
        self.assertIn("never", self.ok("hosts", "show", "--measured", "cn2"))

    def test_a_bad_option_is_one_line(self) -> None:
        with open(self.conf_file, "w") as conf:
            conf.write("[hpc_scheduler]\ncache_pressure_source = sometimes\n")
        code, out, err = self.cli("hosts", "show", "--measured")
        self.assertEqual(1, code)
        self.assertEqual("", out)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIn("[hpc_scheduler] cache_pressure_source in ", err)
        self.assertIn("but found 'sometimes'", err)


# Only the command's tests: the base class's own run in test_cli.
for _name in [n for n in vars(_CommandBase) if n.startswith("test_")]:
    setattr(HostsShowTests, _name, None)

db_backends.for_each_backend(globals(), HostsShowTests, "TestHostsShow")
