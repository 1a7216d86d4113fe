#!/usr/bin/env python3
"""Throughput and latency of a real control plane, plugin on against plugin off.

For each number of scheduler workers, ``tools/cloud.py up`` starts a cloud
(16 computes on Nova's fake driver, MariaDB, RabbitMQ) and concurrent
clients boot and delete servers as ``stress`` does, in phases that differ
only in whether nova-scheduler runs HpcPlacementFilter (nova-scheduler is
restarted between them):

- **mixed**: requests of every class and plain ones, plugin on then off;
- **plain**: plain requests only, with the same seed in every phase, in
  ABBA order (on, off, off, on), so that both sides get the same load and
  drift on this shared machine falls on both alike.

Printed per phase: requests settled per second, and p50/p95 from POST to
ACTIVE for HPC and for plain requests. Then the resident and proportional
memory of each scheduler worker with the plugin on, and the ratios plugin
on / off of plain requests' p50 and p95 (target: at most 1.10).

    .venv/bin/python benchmarks/cloud_load.py [--workers 2,4] [--computes 16] [--seconds 45]

Needs the local MariaDB and RabbitMQ, and takes about ten minutes per
worker count. Each cloud is taken down at the end, also on failure.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devcloud import cli, control, operator, services, stress

ROOT = Path(__file__).resolve().parent.parent / ".cloud"
#: A finer look than stress's, so that latencies are not rounded to half seconds.
POLL = 0.2


@dataclasses.dataclass
class Phase:
    workers: int
    load: str
    plugin: bool
    seconds: float
    ledger: list

    def latencies(self, hpc: bool) -> list[float]:
        return [
            o.settled - o.posted
            for o in self.ledger
            if (o.asked.app_class is not None) == hpc and o.result == "active" and o.settled
        ]

    @property
    def rate(self) -> float:
        return sum(1 for o in self.ledger if o.settled) / self.seconds

    def row(self) -> str:
        cells = [f"{self.workers:>7}", f"{self.load:<5}", f"{'on' if self.plugin else 'off':<6}"]
        cells.append(f"{self.rate:>6.2f}")
        for hpc in (True, False):
            values = self.latencies(hpc)
            count = sum(1 for o in self.ledger if (o.asked.app_class is not None) == hpc)
            refused = sum(
                1
                for o in self.ledger
                if (o.asked.app_class is not None) == hpc and o.result != "active"
            )
            cells.append(
                f"{count:>4} {refused:>3} {percentile(values, 0.5):>5.2f} "
                f"{percentile(values, 0.95):>5.2f}"
                if values
                else f"{count:>4} {refused:>3} {'-':>5} {'-':>5}"
            )
        return " | ".join(cells)


HEADER = "workers | load  | plugin | req/s  | HPC: n ref p50 p95      | plain: n ref p50 p95"


def percentile(values: list[float], fraction: float) -> float:
    return stress.percentile(values, fraction)


def memory(pid: int) -> tuple[float, float]:
    """Resident and proportional set size of a process, MiB."""
    rss = pss = 0.0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("Rss", "Pss"):
                kib = float(value.split()[0]) / 1024
                rss, pss = (kib, pss) if name == "Rss" else (rss, kib)
    except OSError:
        pass
    return rss, pss


def run_phase(run, workers: int, load: str, plugin: bool, args, say) -> Phase:
    if plugin != run.plugin:
        control.set_plugin(run, plugin, say=say)
    admin = operator.connect(run)
    stress.clear(admin, say)
    kinds = stress.KINDS if load == "mixed" else stress.PLAIN_ONLY
    clients, ledger, started = stress.start_clients(
        run, seconds=args.seconds, clients=args.clients, seed=args.seed, kinds=kinds
    )
    for client in clients:
        client.join()
    elapsed = time.monotonic() - started
    errors = [c.error for c in clients if c.error is not None]
    if errors:
        raise RuntimeError(f"a client failed: {errors[0]!r}")
    stress.clear(admin, say)
    phase = Phase(workers, load, plugin, elapsed, list(ledger))
    print(phase.row(), flush=True)
    return phase


def worker_memory(run) -> list[tuple[int, float, float]]:
    (scheduler,) = run.services_named("nova-scheduler")
    return [(pid, *memory(pid)) for pid in services.children(scheduler.pid)]


def bench_workers(workers: int, args, say) -> tuple[list[Phase], dict[str, list]]:
    run = control.up(
        ROOT,
        mysql=args.mysql,
        rabbit=args.rabbit,
        computes=args.computes,
        scheduler_workers=workers,
        plugin=True,
        say=say,
    )
    phases: list[Phase] = []
    sizes: dict[str, list] = {}
    try:
        phases.append(run_phase(run, workers, "mixed", True, args, say))
        sizes["on"] = worker_memory(run)
        phases.append(run_phase(run, workers, "mixed", False, args, say))
        sizes["off"] = worker_memory(run)
        for plugin in (True, False, False, True):
            phases.append(run_phase(run, workers, "plain", plugin, args, say))
    finally:
        control.down(run, say=say)
    return phases, sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="2,4", help="scheduler worker counts (default 2,4)")
    parser.add_argument("--computes", type=int, default=16, help="nova-compute processes")
    parser.add_argument("--seconds", type=float, default=45.0, help="length of each phase")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--mysql", default=cli.MYSQL)
    parser.add_argument("--rabbit", default=cli.RABBIT)
    parser.add_argument("--verbose", action="store_true", help="print the cloud's progress")
    args = parser.parse_args(argv)
    stress.POLL = POLL
    try:
        counts = [int(value) for value in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers: expected numbers separated by commas, got {args.workers!r}")
    if any(count < 1 for count in counts) or args.computes < 1 or args.seconds <= 0:
        parser.error("--workers, --computes and --seconds must be positive")

    def say(message: str) -> None:
        if args.verbose:
            print(f"  {message}", file=sys.stderr, flush=True)

    print(
        f"{args.computes} computes, {args.clients} clients, {args.seconds:g} s per phase, "
        f"seed {args.seed}"
    )
    print(HEADER)
    summary = []
    for workers in counts:
        phases, sizes = bench_workers(workers, args, say)
        for plugin, found in sizes.items():
            for pid, rss, pss in found:
                print(
                    f"{workers:>7} | plugin {plugin:<3} | scheduler worker {pid}: "
                    f"RSS {rss:.0f} MiB, PSS {pss:.0f} MiB"
                )
        plain = [p for p in phases if p.load == "plain"]
        on = [v for p in plain if p.plugin for v in p.latencies(False)]
        off = [v for p in plain if not p.plugin for v in p.latencies(False)]
        ratios = tuple(percentile(on, q) / percentile(off, q) for q in (0.5, 0.95))
        rates = (
            statistics.fmean(p.rate for p in plain if p.plugin)
            / statistics.fmean(p.rate for p in plain if not p.plugin),
        )
        summary.append((workers, *ratios, *rates))
    for workers, p50, p95, rate in summary:
        verdict = "within" if max(p50, p95) <= 1.10 else "ABOVE"
        print(
            f"plain requests, {workers} workers: latency plugin on / off p50 {p50:.3f}, "
            f"p95 {p95:.3f} ({verdict} the 1.10 target); throughput on / off {rate:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
