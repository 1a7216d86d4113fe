#!/usr/bin/env python3
"""What the agent's read of every compute node costs, with Nova's objects and without (issue 46).

hpc-scheduler-agent reads every compute node of the cloud: the idle-traits
keeper at each run, the fair-share allocator at each look at its lease.
At 10,000 nodes, Nova's ``ComputeNodeList.get_all`` spent half the agent's
time building versioned objects. ``scheduler.nova_nodes`` reads only the
columns the agent uses. Both read the same Nova cell database here: a
SQLite file (or ``--connection``) of ``--nodes`` records shaped as Nova's
resource tracker writes them for the fake driver (stats, hypervisor specs,
``cpu_info``, a NUMA topology). Each read is repeated ``--repeat`` times,
alternating, and the medians are printed with their ratio to Nova's
objects, the baseline measured in the same run.

    python benchmarks/agent_reads.py [--nodes 10000] [--repeat 5] [--connection URL]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid as uuid_lib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CPU_INFO = json.dumps(
    {
        "arch": "x86_64",
        "model": "Nehalem",
        "vendor": "Intel",
        "topology": {"cells": 1, "sockets": 2, "cores": 16, "threads": 1},
        "features": ["sse4.2", "avx", "avx2"],
    }
)
STATS = json.dumps(
    {"num_instances": "1", "num_vm_active": "1", "num_task_None": "1", "io_workload": "0"}
)
SUPPORTED = json.dumps([["x86_64", "fake", "hvm"]])


def fill(connection: str, count: int) -> None:
    """``count`` compute node records in a fresh Nova cell database at ``connection``."""
    import sqlalchemy as sa
    from nova.db.main import models

    engine = sa.create_engine(connection)
    table = models.ComputeNode.__table__
    # The one table read: the whole schema's indexes exceed MariaDB's key length.
    table.create(engine)
    rows = []
    for index in range(count):
        rows.append(
            dict(
                uuid=str(uuid_lib.uuid4()),
                host=f"rack{index // 40:04d}",
                hypervisor_hostname=f"node{index:05d}",
                vcpus=32,
                memory_mb=262144,
                local_gb=1000,
                vcpus_used=index % 3 * 8,
                memory_mb_used=0,
                local_gb_used=0,
                hypervisor_type="fake",
                hypervisor_version=1000,
                cpu_info=CPU_INFO,
                running_vms=index % 3,
                free_ram_mb=262144,
                free_disk_gb=1000,
                current_workload=0,
                disk_available_least=1000,
                host_ip="10.0.0.1",
                supported_instances=SUPPORTED,
                stats=STATS,
                numa_topology=None,
                cpu_allocation_ratio=1.0,
                ram_allocation_ratio=1.0,
                disk_allocation_ratio=1.0,
                mapped=1,
                deleted=0,
            )
        )
    with engine.begin() as conn:
        conn.execute(sa.insert(table), rows)
    engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--connection", help="an empty database to fill (default: SQLite)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as directory:
        connection = args.connection or f"sqlite:///{os.path.join(directory, 'cell.sqlite')}"
        fill(connection, args.nodes)

        from nova import config as nova_config
        from nova import context as nova_context
        from nova import objects

        from hpc_nova_scheduler.scheduler import nova_nodes

        objects.register_all()
        nova_config.parse_args([], default_config_files=[], configure_db=False)
        nova_config.CONF.set_override("connection", connection, group="database")
        ctxt = nova_context.get_admin_context()

        readers = {
            "ComputeNodeList.get_all": lambda: len(objects.ComputeNodeList.get_all(ctxt)),
            "nova_nodes (columns)": lambda: len(nova_nodes._Columns.rows(ctxt)),
        }
        times: dict[str, list[float]] = {name: [] for name in readers}
        for _ in range(args.repeat):
            for name, reader in readers.items():
                started = time.perf_counter()
                found = reader()
                times[name].append(time.perf_counter() - started)
                if found != args.nodes:
                    print(f"{name} read {found} nodes, not {args.nodes}", file=sys.stderr)
                    return 1
    baseline = statistics.median(times["ComputeNodeList.get_all"])
    print(f"{args.nodes} compute nodes, {args.repeat} reads each, median seconds")
    for name, found in times.items():
        median = statistics.median(found)
        print(f"  {name:<26} {median:8.3f} s   ratio {median / baseline:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
