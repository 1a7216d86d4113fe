"""Summary statistics of a job log, including seed 003's Table II."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from hpc_nova_scheduler.sim.swf import Job

#: Table II's memory-per-core buckets. Its counts come out exactly with the
#: first edge at 512,000 KB and the others at binary gigabytes; that is how
#: the paper's "<512MB" must have been computed.
TABLE_II_EDGES_KB = (512_000, 1_048_576, 2_097_152, 4_194_304, 8_388_608)
TABLE_II_LABELS = ("<512MB", "512MB-1GB", "1GB-2GB", "2GB-4GB", "4GB-8GB", ">8GB")


@dataclasses.dataclass
class Distribution:
    minimum: float
    median: float
    mean: float
    maximum: float

    @classmethod
    def of(cls, values: np.ndarray) -> Distribution:
        if values.size == 0:
            return cls(0.0, 0.0, 0.0, 0.0)
        return cls(
            float(values.min()), float(np.median(values)), float(values.mean()), float(values.max())
        )


@dataclasses.dataclass
class TraceStats:
    jobs: int
    with_memory: int
    processors: Distribution
    processor_seconds: float
    run_time: Distribution
    span_seconds: float
    #: Jobs per Table II bucket; jobs without memory in the first, as the paper counts.
    memory_buckets: list[int]
    #: Jobs per bucket among those with a memory value.
    memory_buckets_known: list[int]

    def table_ii(self) -> list[tuple[str, int, float, int, float]]:
        """(bucket, jobs, % of all, jobs with memory, % of those)."""
        rows = []
        for label, count, known in zip(
            TABLE_II_LABELS, self.memory_buckets, self.memory_buckets_known, strict=True
        ):
            rows.append(
                (
                    label,
                    count,
                    100.0 * count / self.jobs if self.jobs else 0.0,
                    known,
                    100.0 * known / self.with_memory if self.with_memory else 0.0,
                )
            )
        return rows


def bucket_of(memory_per_processor_kb: float | None) -> int:
    if memory_per_processor_kb is None:
        return 0
    return sum(memory_per_processor_kb >= edge for edge in TABLE_II_EDGES_KB)


def summarize(jobs: Iterable[Job]) -> TraceStats:
    processors: list[int] = []
    run_times: list[float] = []
    submits: list[float] = []
    buckets = [0] * len(TABLE_II_LABELS)
    known = [0] * len(TABLE_II_LABELS)
    with_memory = 0
    for job in jobs:
        processors.append(job.processors)
        run_times.append(job.run_time)
        submits.append(job.submit)
        per_kb = None if job.memory_mb is None else job.memory_mb * 1024.0 / job.processors
        index = bucket_of(per_kb)
        buckets[index] += 1
        if per_kb is not None:
            known[index] += 1
            with_memory += 1
    procs = np.asarray(processors, dtype=float)
    runs = np.asarray(run_times, dtype=float)
    span = (max(submits) - min(submits)) if submits else 0.0
    return TraceStats(
        jobs=len(processors),
        with_memory=with_memory,
        processors=Distribution.of(procs),
        processor_seconds=float((procs * runs).sum()),
        run_time=Distribution.of(runs),
        span_seconds=span,
        memory_buckets=buckets,
        memory_buckets_known=known,
    )
