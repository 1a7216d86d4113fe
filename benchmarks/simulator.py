#!/usr/bin/env python3
"""Speed of the trace-driven simulator.

1. The whole METACENTRUM-2009-2 log (103,656 jobs) on 1,024 cores with
   MDOBP, jobs arriving at their submit times, FCFS: the target is under
   60 s on one core. Least-free-PEs replays the same jobs in the same run as
   the baseline, so the printed ratio says what the cosine costs over the
   simplest packing.
2. Growth with the cloud: the first ``--growth-jobs`` jobs on 1,024 to
   16,384 cores; per-job cost relative to 1,024 cores, next to the ratio of
   cores (linear growth would match it).

Reading the log is timed apart and left out of the figures. Each figure is
the best of ``--repeat`` runs, because this machine is shared and noisy.

    python benchmarks/simulator.py [--trace PATH] [--repeat 1]
        [--cores 1024,2048,4096,8192,16384] [--growth-jobs 20000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from hpc_nova_scheduler.sim import scenarios, simulator, swf

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACE = os.path.join(HERE, "..", "..", "shared", "traces", "METACENTRUM-2009-2.swf.gz")


def replay(jobs, cores: int, policy: str, args) -> tuple[float, simulator.Result]:
    shape = simulator.ClusterShape.from_total_cores(cores, args.cores_per_host, args.ram_mb)
    scenario = scenarios.build(policy, alpha=200, beta=60, runtime_factor=1.0)
    best = None
    result = None
    for _ in range(args.repeat):
        started = time.perf_counter()
        result = simulator.Simulator(shape, scenario, cache_scores=(0, 30)).run(jobs)
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default=DEFAULT_TRACE)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cores", default="1024,2048,4096,8192,16384")
    parser.add_argument("--growth-jobs", type=int, default=20000)
    parser.add_argument("--cores-per-host", type=int, default=4)
    parser.add_argument("--ram-mb", type=float, default=2048)
    parser.add_argument("--skip-whole", action="store_true", help="only the growth table")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # progress shows when piped to a file
    if not os.path.exists(args.trace):
        print(f"no trace at {args.trace}; pass --trace", file=sys.stderr)
        return 2

    started = time.perf_counter()
    report = swf.ReadReport(args.trace, swf.MemorySemantics.AUTO)
    jobs = list(swf.read_jobs(args.trace, report, swf.MemorySemantics.AUTO, swf.OnError.SKIP))
    print(f"read {len(jobs)} jobs in {time.perf_counter() - started:.1f} s (not counted below)")
    print(f"hosts of {args.cores_per_host} cores and {args.ram_mb:g} MB; best of {args.repeat}")

    if not args.skip_whole:
        print("\n1) whole log on 1,024 cores, submit-time arrivals, FCFS")
        print(f"{'policy':>16} {'seconds':>9} {'us/job':>8} {'completed':>10} {'ratio':>6}")
        base, base_result = replay(jobs, 1024, "least-free-pes", args)
        mdobp, mdobp_result = replay(jobs, 1024, "mdobp", args)
        for name, seconds, result, ratio in (
            ("least-free-pes", base, base_result, 1.0),
            ("mdobp", mdobp, mdobp_result, mdobp / base),
        ):
            print(
                f"{name:>16} {seconds:9.1f} {seconds / len(jobs) * 1e6:8.0f} "
                f"{len(result.outcomes):10d} {ratio:6.2f}"
            )
        verdict = "met" if mdobp < 60 else "MISSED"
        print(f"   target: MDOBP under 60 s -> {mdobp:.1f} s, {verdict}")

    prefix = jobs[: args.growth_jobs]
    print(f"\n2) growth: first {len(prefix)} jobs with MDOBP")
    print(
        f"{'cores':>7} {'hosts':>6} {'seconds':>9} {'us/job':>8} "
        f"{'per-job ratio':>14} {'cores ratio':>12}"
    )
    reference = None
    for cores in [int(c) for c in args.cores.split(",")]:
        seconds, _ = replay(prefix, cores, "mdobp", args)
        per_job = seconds / len(prefix)
        reference = reference or (cores, per_job)
        print(
            f"{cores:7d} {cores // args.cores_per_host:6d} {seconds:9.2f} {per_job * 1e6:8.0f} "
            f"{per_job / reference[1]:14.2f} {cores / reference[0]:12.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
