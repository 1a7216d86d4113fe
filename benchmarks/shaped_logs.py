"""Synthetic job logs shaped like archive logs the project does not ship.

``lanl_cm5_shaped`` writes an SWF log shaped like LANL-CM5-1994 from the
Parallel Workloads Archive: a 1,024-node machine whose jobs take
partitions of 32 to 1,024 processors (about 101 on average), offered a
little more work than it can run, so that the queue grows deep. Seeded, so
every run replays the same log.
"""

from __future__ import annotations

import gzip
import math
import random

#: Partition sizes and their shares, chosen for a mean near LANL-CM5's 101.
PARTITIONS = ((32, 0.45), (64, 0.27), (128, 0.15), (256, 0.08), (512, 0.04), (1024, 0.01))
MACHINE = 1024
#: Offered load (work over capacity): above 1, the queue grows.
LOAD = 1.05


def lanl_cm5_shaped(path: str, jobs: int = 122_060, seed: int = 1994) -> str:
    """Write the log to ``path`` (gzipped SWF, with a MaxProcs header); return it."""
    rng = random.Random(seed)
    sizes, weights = zip(*PARTITIONS, strict=True)
    drawn = []
    for _ in range(jobs):
        processors = rng.choices(sizes, weights)[0]
        run = min(12 * 3600, max(1, round(rng.lognormvariate(5.5, 1.8))))
        requested = min(24 * 3600, math.ceil(run * rng.uniform(1.0, 3.0)))
        memory_kb = min(32 * 1024, max(256, round(rng.lognormvariate(math.log(4096), 0.8))))
        drawn.append((processors, run, requested, memory_kb))
    work = sum(p * r for p, r, _, _ in drawn)
    gap = work / (MACHINE * LOAD) / jobs
    submit = 0.0
    with gzip.open(path, "wt") as out:
        out.write(f"; MaxJobs: {jobs}\n; MaxProcs: {MACHINE}\n")
        out.write("; Note: synthetic, shaped like LANL-CM5-1994 (benchmarks/shaped_logs.py)\n")
        for number, (processors, run, requested, memory_kb) in enumerate(drawn, start=1):
            fields = [number, round(submit), -1, run, processors, -1, memory_kb, processors]
            fields += [requested, -1, 1, rng.randrange(1, 200), -1, -1, 1, -1, -1, -1]
            out.write(" ".join(str(f) for f in fields) + "\n")
            submit += rng.expovariate(1 / gap)
    return path
