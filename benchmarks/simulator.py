#!/usr/bin/env python3
"""Speed of the trace-driven simulator.

1. Every log under ``--traces`` (the no_memory ones included) and a log
   shaped like LANL-CM5-1994 (wide jobs, a deep queue; see shaped_logs.py),
   each replayed whole with MDOBP, jobs arriving at their submit times,
   FCFS, on the logged system's cores (its MaxProcs header or known size,
   else 1,024). Target: under 60 s each on one core. The baseline, measured
   in the same run, is the same replay of the first ``--baseline-jobs`` jobs
   through plan() over every host (the engine nova-scheduler runs), which
   the simulator used for every policy before host classes: the ratio says
   how much faster the class engine is on that log, and both must finish
   with the same outcomes.
2. Growth with the cloud: the first ``--growth-jobs`` jobs of METACENTRUM
   on 1,024 to 16,384 cores; per-job cost relative to 1,024 cores. Target:
   at most 1.5 at 16,384.

Reading a log is timed apart and left out of the figures. Each figure is
the best of ``--repeat`` runs, because this machine is shared and noisy.

    python benchmarks/simulator.py [--traces DIR] [--repeat 1] [--only NAME]
        [--baseline-jobs 2000] [--growth-jobs 20000] [--skip-whole]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time

import shaped_logs

from hpc_nova_scheduler.sim import scenarios, settings, simulator, swf

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACES = os.path.join(HERE, "..", "..", "shared", "traces")
METACENTRUM = "METACENTRUM-2009-2.swf.gz"
CORES_PER_HOST = 4
RAM_MB = 2048
DEFAULT_CORES = 1024
TARGET_SECONDS = 60
TARGET_GROWTH = 1.5


def read(path: str) -> list[swf.Job]:
    report = swf.ReadReport(path, swf.MemorySemantics.AUTO)
    return list(swf.read_jobs(path, report, swf.MemorySemantics.AUTO, swf.OnError.SKIP))


def replay(jobs, cores: int, repeat: int, host_classes: bool | None = None):
    """(best seconds, result) of an MDOBP replay."""
    shape = settings.ClusterShape.from_total_cores(cores, CORES_PER_HOST, RAM_MB)
    scenario = scenarios.build("mdobp", alpha=200, beta=60, runtime_factor=1.0)
    best = result = None
    for _ in range(repeat):
        sim = simulator.Simulator(shape, scenario, cache_scores=(0, 30), host_classes=host_classes)
        started = time.perf_counter()
        result = sim.run(jobs)
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def summary(result: simulator.Result) -> tuple:
    return (len(result.outcomes), result.makespan, result.mean_wait(), result.unfinished)


def logs(args) -> list[tuple[str, str]]:
    found = sorted(glob.glob(os.path.join(args.traces, "**", "*.swf*"), recursive=True))
    named = [(os.path.relpath(p, args.traces), p) for p in found]
    shaped = os.path.join(args.workdir, "LANL-CM5-shaped.swf.gz")
    named.append(("LANL-CM5-shaped (synthetic)", shaped))
    if args.only:
        named = [(n, p) for n, p in named if args.only in n]
    return named


def whole_logs(args) -> bool:
    print(
        f"\n1) whole logs, MDOBP, FCFS, hosts of {CORES_PER_HOST} cores and {RAM_MB} MB; "
        f"baseline: plan() over every host on the first {args.baseline_jobs} jobs"
    )
    print(
        f"{'log':>44} {'jobs':>8} {'cores':>6} {'seconds':>8} {'jobs/s':>8} "
        f"{'speedup':>8} {'same':>5} {'<60s':>5}"
    )
    all_met = True
    for name, path in logs(args):
        if name.startswith("LANL-CM5-shaped") and not os.path.exists(path):
            shaped_logs.lanl_cm5_shaped(path)
        jobs = read(path)
        found, _ = swf.system_processors(path)
        cores = -(-(found or DEFAULT_CORES) // CORES_PER_HOST) * CORES_PER_HOST
        seconds, _ = replay(jobs, cores, args.repeat)
        prefix = jobs[: args.baseline_jobs]
        fast, fast_result = replay(prefix, cores, args.repeat)
        slow, slow_result = replay(prefix, cores, args.repeat, host_classes=False)
        same = summary(fast_result) == summary(slow_result)
        met = seconds < TARGET_SECONDS and same
        all_met &= met
        print(
            f"{name:>44} {len(jobs):8d} {cores:6d} {seconds:8.1f} {len(jobs) / seconds:8.0f} "
            f"{slow / fast:8.1f} {'yes' if same else 'NO':>5} {'met' if met else 'NO':>5}"
        )
    return all_met


def growth(args) -> bool:
    path = os.path.join(args.traces, METACENTRUM)
    if not os.path.exists(path):
        print(f"\n2) growth: no {METACENTRUM} under {args.traces}", file=sys.stderr)
        return False
    prefix = read(path)[: args.growth_jobs]
    print(f"\n2) growth: first {len(prefix)} jobs of METACENTRUM with MDOBP")
    print(
        f"{'cores':>7} {'hosts':>6} {'seconds':>9} {'us/job':>8} "
        f"{'per-job ratio':>14} {'cores ratio':>12}"
    )
    reference = None
    ratio = 1.0
    for cores in (1024, 2048, 4096, 8192, 16384):
        seconds, _ = replay(prefix, cores, args.repeat)
        per_job = seconds / len(prefix)
        reference = reference or (cores, per_job)
        ratio = per_job / reference[1]
        print(
            f"{cores:7d} {cores // CORES_PER_HOST:6d} {seconds:9.2f} {per_job * 1e6:8.0f} "
            f"{ratio:14.2f} {cores / reference[0]:12.0f}"
        )
    met = ratio <= TARGET_GROWTH
    print(
        f"   target: at most {TARGET_GROWTH}x at 16,384 cores -> {ratio:.2f}x, "
        f"{'met' if met else 'MISSED'}"
    )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", default=DEFAULT_TRACES)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", help="only logs whose name contains this")
    parser.add_argument("--baseline-jobs", type=int, default=2000)
    parser.add_argument("--growth-jobs", type=int, default=20000)
    parser.add_argument("--skip-whole", action="store_true", help="only the growth table")
    parser.add_argument("--skip-growth", action="store_true", help="only the whole logs")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # progress shows when piped to a file
    met = True
    with tempfile.TemporaryDirectory() as workdir:
        args.workdir = workdir
        if not args.skip_whole:
            met &= whole_logs(args)
        if not args.skip_growth:
            met &= growth(args)
    print(f"\nall targets {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
