"""Memory a run uses: each service's processes, and the shared servers.

RSS counts the pages a process maps, shared ones (the interpreter, forked
workers' common pages) once per process; PSS shares each page among the
processes mapping it, so the PSS of a group of processes adds up to what
they cost the machine. MariaDB and RabbitMQ serve every run on the machine:
their rows are the whole servers.
"""

from __future__ import annotations

from devcloud import services
from devcloud.layout import Run

#: Process names of the local database and message queue servers.
SERVERS = {"mariadb": ("mariadbd", "mysqld"), "rabbitmq": ("beam.smp",)}
#: The name of the last row of :func:`usage`.
TOTAL = "total"

Row = tuple[str, list[int], int, int]


def _status_kib(pid: int, field: str, path: str) -> int | None:
    try:
        with open(f"/proc/{pid}/{path}") as stream:
            for line in stream:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return 0


def rss_pss(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in bytes; PSS is the RSS where smaps_rollup
    cannot be read (another user's process, without privileges)."""
    rss = _status_kib(pid, "VmRSS", "status") or 0
    pss = _status_kib(pid, "Pss", "smaps_rollup")
    return rss * 1024, (rss if pss is None else pss) * 1024


def _named(names: tuple[str, ...]) -> list[int]:
    found = []
    for pid, _state, _parent, _group in services._processes():
        try:
            with open(f"/proc/{pid}/comm") as stream:
                if stream.read().strip() in names:
                    found.append(pid)
        except OSError:
            continue
    return sorted(found)


def _row(name: str, pids: list[int]) -> Row:
    rss = pss = 0
    for pid in pids:
        one_rss, one_pss = rss_pss(pid)
        rss += one_rss
        pss += one_pss
    return name, pids, rss, pss


def usage(run: Run) -> list[Row]:
    """``(name, pids, rss_bytes, pss_bytes)`` for every service of the run
    (all processes of its group: gunicorn's and the schedulers' workers
    included), MariaDB and RabbitMQ, and a last row :data:`TOTAL` summing
    them all."""
    rows = [_row(service.name, services.group_members(service.pid)) for service in run.services]
    rows.extend(_row(name, _named(names)) for name, names in SERVERS.items())
    rows.append(
        (
            TOTAL,
            sorted({pid for _, pids, _, _ in rows for pid in pids}),
            sum(row[2] for row in rows),
            sum(row[3] for row in rows),
        )
    )
    return rows


def table(rows: list[Row]) -> list[str]:
    """Lines for ``up`` and ``status``: MiB of PSS and RSS per row."""
    width = max(len(name) for name, *_ in rows)
    lines = [f"memory: {'':<{width}}  procs  PSS MiB  RSS MiB"]
    for name, pids, rss, pss in rows:
        pss_mib, rss_mib = pss / 2**20, rss / 2**20
        lines.append(f"memory: {name:<{width}}  {len(pids):>5}  {pss_mib:>7.0f}  {rss_mib:>7.0f}")
    return lines
