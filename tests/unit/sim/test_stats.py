"""Trace statistics, and seed 003's Table II from the real METACENTRUM log."""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.sim import stats, swf
from tests import traces
from tests.unit.sim.jobs import job as make_job


class TestBuckets(testtools.TestCase):
    def test_edges(self) -> None:
        self.assertEqual(0, stats.bucket_of(None))
        self.assertEqual(0, stats.bucket_of(511_999))
        self.assertEqual(1, stats.bucket_of(512_000))
        self.assertEqual(1, stats.bucket_of(1_048_575))
        self.assertEqual(2, stats.bucket_of(1_048_576))
        self.assertEqual(5, stats.bucket_of(9_000_000))

    def test_summary(self) -> None:
        summary = stats.summarize(
            [
                make_job(procs=2, memory_mb=2048),
                make_job(run=30.0),
                make_job(procs=4, memory_mb=1000),
            ]
        )
        self.assertEqual((3, 2), (summary.jobs, summary.with_memory))
        self.assertEqual([2, 0, 1, 0, 0, 0], summary.memory_buckets)
        self.assertEqual([1, 0, 1, 0, 0, 0], summary.memory_buckets_known)
        self.assertEqual(30.0, summary.run_time.maximum)
        self.assertEqual(2 * 10 + 30 + 40, summary.processor_seconds)
        self.assertEqual(0, stats.summarize([]).jobs)


class TestTableII(testtools.TestCase):
    def test_metacentrum_reproduces_table_ii(self) -> None:
        path = traces.trace(self, "METACENTRUM-2009-2.swf.gz")
        report = swf.ReadReport(path, swf.MemorySemantics.AUTO)
        summary = stats.summarize(swf.read_jobs(path, report))
        self.assertEqual(
            (103656, 0, swf.MemorySemantics.USED_PER_JOB),
            (summary.jobs, report.malformed, report.memory),
        )
        # Seed 003 Table II, to the job.
        self.assertEqual([87075, 10062, 5946, 379, 161, 33], summary.memory_buckets)
        self.assertEqual(
            ["84.00", "9.71", "5.74", "0.37", "0.16", "0.03"],
            [f"{row[2]:.2f}" for row in summary.table_ii()],
        )
