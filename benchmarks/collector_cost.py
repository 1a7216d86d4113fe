#!/usr/bin/env python3
"""What ``hpc-scheduler-collector`` costs its compute host (issue 47: at most 1 % of a core).

One host of ``--instances`` running instances (default 100), laid out as
libvirtd and the kernel lay them out (:class:`demo.measured_host.MeasuredHost`:
a status file per domain, a resctrl mount of two cache domains with a
monitoring group per instance). Each instance's QEMU process is this
benchmark's own, so the collector reads real ``/proc/<pid>/task`` entries.
Between reads, outside the timing, every instance's occupancy and bandwidth
counters move. Each read is the collector's whole interval: status files,
groups, counters, the decayed means, and one transaction into the plugin
database (a SQLite file, or ``--connection``; a server database's own CPU
is not the host's and is not counted).

Printed: the median CPU seconds of a read (this process's user + system
time, which another process's load does not inflate), the share of one
core it costs at ``--interval`` seconds (target at most 1 %), and, as the
baseline measured in the same run, the CPU of plainly reading every file
the collector reads (the I/O no collector can avoid), with the ratio.

    python benchmarks/collector_cost.py [--instances 100] [--interval 10] [--reads 30]
        [--connection URL]
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time
import uuid as uuid_lib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TARGET = 0.01
MiB = 2**20


def plain_read(host) -> None:
    """Every file a read of the collector opens, read plainly, once."""
    for path in host.run_dir.iterdir():
        path.read_bytes()
    for path in (host.tree.root / "info" / "L3_MON" / "mon_features", host.tree.root / "size"):
        path.read_bytes()
    for group in [host.tree.root, *(host.tree.root / "mon_groups").iterdir()]:
        (group / "tasks").read_bytes()
        for domain in (group / "mon_data").iterdir():
            for counter in domain.iterdir():
                counter.read_bytes()
    os.listdir(f"/proc/{os.getpid()}/task")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=100)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between reads")
    parser.add_argument("--reads", type=int, default=30, help="reads timed (after one warm-up)")
    parser.add_argument("--connection", help="the plugin database (default: a SQLite file)")
    args = parser.parse_args(argv)
    if args.instances < 1 or args.reads < 1 or args.interval <= 0:
        parser.error("--instances and --reads must be >= 1, --interval > 0")

    from hpc_nova_scheduler.collector.collector import Collector, Settings
    from hpc_nova_scheduler.db import api as db_api
    from hpc_nova_scheduler.demo.measured_host import MeasuredHost

    with tempfile.TemporaryDirectory(prefix="collector-cost-") as folder:
        url = args.connection or f"sqlite:///{Path(folder) / 'hpc.sqlite'}"
        database = db_api.Database(url)
        database.sync()
        host = MeasuredHost(Path(folder) / "host")
        instances = [str(uuid_lib.uuid4()) for _ in range(args.instances)]
        for uuid in instances:
            host.start(uuid, os.getpid())
        settings = Settings(
            "bench-host",
            host.tree.root,
            host.run_dir,
            300.0,
            datetime.timedelta(hours=1),
        )
        clock = [0.0]
        start = datetime.datetime(2026, 11, 29, 12, 0, 0)
        said: list[str] = []
        collector = Collector(
            database,
            settings,
            said.append,
            clock=lambda: clock[0],
            now=lambda: start + datetime.timedelta(seconds=clock[0]),
        )

        def drive(step: int) -> None:
            for index, uuid in enumerate(instances):
                host.occupy(uuid, (index % 30 + step % 5) * MiB // 4)
                host.move(uuid, int(args.interval * (index + 1) * 10 * MiB))

        reads, baseline = [], []
        for step in range(args.reads + 1):
            drive(step)
            clock[0] += args.interval
            before = time.process_time()
            collected = collector.collect()
            spent = time.process_time() - before
            before = time.process_time()
            plain_read(host)
            plain = time.process_time() - before
            if step:  # the first read makes the groups and reads the figures back
                reads.append(spent)
                baseline.append(plain)
        database.dispose()
    if said:
        print("the collector said:", *said, sep="\n  ")
    if len(collected.samples) != args.instances:
        print(f"only {len(collected.samples)} of {args.instances} instances were sampled")
        return 1
    read = statistics.median(reads)
    plain = statistics.median(baseline)
    share = read / args.interval
    verdict = "within" if share <= TARGET else "ABOVE"
    print(f"{args.instances} instances, a read every {args.interval:g} s, {args.reads} reads:")
    print(f"  collector read (median CPU):        {read * 1000:8.2f} ms")
    print(f"  plain read of the same files:       {plain * 1000:8.2f} ms (baseline)")
    print(f"  ratio to the baseline:              {read / plain if plain else float('inf'):8.1f}")
    print(f"  share of one core:                  {share:8.3%} ({verdict} {TARGET:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
