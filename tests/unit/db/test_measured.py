"""Measured interference (``measured_*``) on every backend: reports, samples, figures, retention."""

from __future__ import annotations

import datetime

from hpc_nova_scheduler.db import measured, migration
from tests import db_backends

T0 = datetime.datetime(2026, 11, 29, 12, 0, 0)
KEPT = datetime.timedelta(hours=1)
A = "11111111-0000-0000-0000-000000000001"
B = "11111111-0000-0000-0000-000000000002"


def _report(host: str, at: datetime.datetime, **totals: float) -> measured.HostReport:
    return measured.HostReport(
        host,
        at,
        llc_bytes=2 * 30 * 2**20,
        totals=totals,
        measures=("llc_occupancy", "mbm_total_bps"),
        problems=("perf: cycles not supported here",),
    )


def _figure(mean: float, at: datetime.datetime, samples: int = 1) -> measured.Figure:
    return measured.Figure(mean, mean * 2, samples, at)


class MeasuredTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)

    def test_a_report_is_stored_and_read_back_with_unknown_left_out(self) -> None:
        samples = [
            measured.InstanceSample(A, T0, {"llc_occupancy": 4096.0, "mbm_total_bps": 1e9}),
            # The kernel could not read its bandwidth: absent, not zero.
            measured.InstanceSample(B, T0, {"llc_occupancy": 1024.0}),
        ]
        figures = {
            A: {"llc_occupancy": _figure(4096.0, T0)},
            B: {"llc_occupancy": _figure(1024.0, T0)},
        }
        self.database.record_measurements(
            _report("cn1", T0, llc_occupancy=5120.0), samples, figures, retention=KEPT
        )
        (host,) = self.database.measured_hosts()
        self.assertEqual(("cn1", T0, 2 * 30 * 2**20), (host.host, host.reported_at, host.llc_bytes))
        self.assertEqual({"llc_occupancy": 5120.0}, host.totals)
        self.assertEqual(("llc_occupancy", "mbm_total_bps"), host.measures)
        self.assertEqual(("perf: cycles not supported here",), host.problems)
        self.assertEqual(
            [{"llc_occupancy": 1024.0}], [s.values for s in self.database.measured_samples(B)]
        )
        found = self.database.measured_instances(hosts=["cn1"])
        self.assertEqual({A, B}, set(found))
        self.assertEqual(figures[A], found[A].figures)
        self.assertEqual({}, self.database.measured_instances(hosts=["cn2"]))

    def test_a_later_report_rewrites_the_host_and_follows_a_migrated_instance(self) -> None:
        self.database.record_measurements(
            _report("cn1", T0, llc_occupancy=1.0),
            [measured.InstanceSample(A, T0, {"llc_occupancy": 1.0})],
            {A: {"llc_occupancy": _figure(1.0, T0)}},
            retention=KEPT,
        )
        later = T0 + datetime.timedelta(seconds=10)
        self.database.record_measurements(
            _report("cn2", later, mbm_total_bps=3.0),
            [measured.InstanceSample(A, later, {"llc_occupancy": 3.0})],
            {A: {"llc_occupancy": _figure(2.0, later, 2)}},
            retention=KEPT,
        )
        self.database.record_measurements(_report("cn1", later), [], {}, retention=KEPT)
        hosts = {h.host: h for h in self.database.measured_hosts()}
        self.assertEqual({}, hosts["cn1"].totals)
        self.assertEqual(later, hosts["cn1"].reported_at)
        (figures,) = self.database.measured_instances().values()
        self.assertEqual(
            ("cn2", later, 2),
            (figures.host, figures.updated_at, figures.figures["llc_occupancy"].samples),
        )
        self.assertEqual(2, len(self.database.measured_samples(A)))

    def test_samples_and_figures_older_than_the_retention_go(self) -> None:
        self.database.record_measurements(
            _report("cn1", T0),
            [measured.InstanceSample(A, T0, {"cpi": 1.5})],
            {A: {"cpi": _figure(1.5, T0)}},
            retention=KEPT,
        )
        self.database.record_measurements(
            _report("cn2", T0),
            [measured.InstanceSample(B, T0, {"cpi": 0.9})],
            {B: {"cpi": _figure(0.9, T0)}},
            retention=KEPT,
        )
        later = T0 + KEPT + datetime.timedelta(seconds=1)
        self.database.record_measurements(_report("cn1", later), [], {}, retention=KEPT)
        # Only cn1's own rows: cn2's collector keeps its own.
        self.assertEqual([], self.database.measured_samples(A))
        self.assertEqual({B}, set(self.database.measured_instances()))
        self.assertEqual(1, len(self.database.measured_samples(B)))

    def test_bad_input_is_one_line_naming_the_key_and_writes_nothing(self) -> None:
        bad = [
            (_report("cn1", T0, swap=1.0), [], {}, "unknown metric 'swap'"),
            (_report("cn1", T0, llc_occupancy=-1.0), [], {}, "llc_occupancy = -1.0"),
            (
                _report("cn1", T0),
                [measured.InstanceSample(A, T0, {"cpi": float("nan")})],
                {},
                f"instance {A}: cpi = nan",
            ),
            (
                _report("cn1", T0),
                [measured.InstanceSample(A, T0, {"cpi": "1.2"})],
                {},
                "is not a number",
            ),
            (_report("", T0), [], {}, "host: '' is not a host name"),
            (_report("cn1", T0), [], {"x" * 40: {}}, "is not an instance uuid"),
        ]
        for report, samples, figures, message in bad:
            error = self.assertRaises(
                measured.MeasuredError,
                self.database.record_measurements,
                report,
                samples,
                figures,
                retention=KEPT,
            )
            self.assertIn(message, str(error))
            self.assertNotIn("\n", str(error))
        self.assertEqual([], self.database.measured_hosts())


db_backends.for_each_backend(globals(), MeasuredTests, "TestMeasured")
