"""Seed 003's Figure 8 case study, booted through an in-process Nova.

Eight hosts of 4 cores and 8 GB in one rack, and the stream IS.B.4
(ExtremeHPC), LU.C.16, LU.B.4, ChaNGa.4 (SyncHPC) and EP.B.4 (AsyncHPC), each
VM 1 vCPU and 2 GB. A request that finds no placement is deferred, as in the
paper: applications then finish one by one in arrival order, and the
deferred request is tried again after each, until it is placed.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.demo.cloud import HpcCloud
from hpc_nova_scheduler.demo.fake_driver import Shape

HOSTS = tuple(f"N{i}" for i in range(1, 9))
NODE = Shape(vcpus=4, memory_mb=8192, local_gb=100)
VM_RAM_MB = 2048


@dataclasses.dataclass(frozen=True)
class App:
    name: str
    app_class: AppClass
    cache_score: float
    count: int


STREAM = (
    App("IS.B.4", AppClass.EXTREME_HPC, 47, 4),
    App("LU.C.16", AppClass.SYNC_HPC, 16, 16),
    App("LU.B.4", AppClass.SYNC_HPC, 29, 4),
    App("ChaNGa.4", AppClass.SYNC_HPC, 7.5, 4),
    App("EP.B.4", AppClass.ASYNC_HPC, 2.5, 4),
)

#: Seed 003's Figure 8 table, in its own notation.
PAPER = {
    100: {
        "IS.B.4": "4xN1",
        "LU.C.16": "4x(N2-N5)",
        "LU.B.4": "3xN6 + 1xN7",
        "ChaNGa.4": "1xN6 + 3xN7",
        "EP.B.4": "4xN8",
    },
    40: {
        "IS.B.4": "4xN1",
        "LU.C.16": "2x(N1-N8) after App1, App3-App5",
        "LU.B.4": "1x(N2-N5)",
        "ChaNGa.4": "1x(N2-N5)",
        "EP.B.4": "1x(N2-N5)",
    },
    60: {
        "IS.B.4": "4xN1",
        "LU.C.16": "3x(N2-N6) + 1xN7",
        "LU.B.4": "2xN1 + 2xN8 after App1",
        "ChaNGa.4": "1x(N2-N5)",
        "EP.B.4": "1xN6 + 3xN7",
    },
}


@dataclasses.dataclass
class Outcome:
    """Where one application ran, and when."""

    app: App
    vms_per_host: dict[str, int]
    after: list[str] = dataclasses.field(default_factory=list)
    refused: bool = False

    @property
    def placement(self) -> str:
        if self.refused:
            return "refused"
        text = notation(self.vms_per_host)
        if self.after:
            text += " after " + ", ".join(compress_after(self.after))
        return text


@dataclasses.dataclass
class Scenario:
    title: str
    beta: float | None
    outcomes: list[Outcome]
    cache_per_host: dict[str, float]
    peak_cache_per_host: dict[str, float]


def notation(vms_per_host: dict[str, int]) -> str:
    """{'N2': 3, 'N3': 3, 'N7': 1} -> '3x(N2-N3) + 1xN7', as the paper writes."""
    by_count: dict[int, list[int]] = collections.defaultdict(list)
    for host, count in vms_per_host.items():
        by_count[count].append(int(host[1:]))
    parts: list[tuple[int, str]] = []
    for count, numbers in by_count.items():
        runs: list[list[int]] = []
        for n in sorted(numbers):
            if runs and n == runs[-1][-1] + 1:
                runs[-1].append(n)
            else:
                runs.append([n])
        for run in runs:
            span = f"N{run[0]}" if len(run) == 1 else f"(N{run[0]}-N{run[-1]})"
            parts.append((run[0], f"{count}x{span}"))
    return " + ".join(text for _, text in sorted(parts)) if parts else "-"


class _Figure8Cloud(HpcCloud):
    HOSTS = {name: NODE for name in HOSTS}
    RACKS = {"rack-1": list(HOSTS)}


def cloud_class(beta: float | None, alpha: float, db_url: str | None) -> type[HpcCloud]:
    """The demo cloud: with the plugin at this beta, or Nova's defaults (None)."""
    flags: dict = {"cache_threshold": alpha}
    if beta is not None:
        flags["sync_cache_threshold"] = beta
    attributes: dict = {"HPC_FLAGS": flags, "DB_URL": db_url}
    if beta is None:
        attributes["EXTRA_FILTERS"] = ()
    return type(f"Figure8Beta{beta}", (_Figure8Cloud,), attributes)


def run(
    beta: float | None,
    alpha: float = 200.0,
    db_url: str | None = None,
    stream: Sequence[App] = STREAM,
) -> Scenario:
    """Boot the stream once; ``beta=None`` runs Nova's default scheduler."""
    cloud = cloud_class(beta, alpha, db_url)("runTest")
    cloud.start()
    try:
        return _drive(cloud, beta, stream)
    finally:
        cloud.stop()


def _drive(cloud: HpcCloud, beta: float | None, stream: Sequence[App]) -> Scenario:
    flavors = {
        app.name: cloud.hpc_flavor(
            ram=VM_RAM_MB,
            app_class=app.app_class.value,
            cache_score=app.cache_score,
            app_name=app.name,
        )
        for app in stream
    }
    running: dict[str, list[dict]] = {}
    outcomes: dict[str, Outcome] = {}
    deferred: list[App] = []
    peak: dict[str, float] = dict.fromkeys(HOSTS, 0.0)

    def launch(app: App, after: list[str]) -> bool:
        servers = cloud.launch(flavors[app.name], app.count)
        if any(s["status"] != "ACTIVE" for s in servers):
            for server in servers:
                cloud._delete_server(server)
            return False
        running[app.name] = servers
        outcomes[app.name] = Outcome(app, cloud.hosts_of(servers), after=list(after))
        for host, total in _cache(running, stream).items():
            peak[host] = max(peak[host], total)
        return True

    for app in stream:
        if not launch(app, []):
            deferred.append(app)
    finished: list[str] = []
    order = [app.name for app in stream]
    for app in deferred:
        placed = False
        for name in order:
            if name not in running or name in finished:
                continue
            for server in running.pop(name):
                cloud._delete_server(server)
            finished.append(name)
            if launch(app, [_app_label(n, order) for n in finished]):
                placed = True
                break
        if not placed:
            outcomes[app.name] = Outcome(app, {}, refused=True)
    title = "Nova defaults (no plugin)" if beta is None else f"hpc-nova-scheduler, beta = {beta:g}"
    return Scenario(
        title,
        beta,
        [outcomes[app.name] for app in stream],
        _cache(running, stream),
        peak,
    )


def _app_label(name: str, order: list[str]) -> str:
    return f"App{order.index(name) + 1}"


def _cache(running: dict[str, list[dict]], stream: Sequence[App]) -> dict[str, float]:
    scores = {app.name: app.cache_score for app in stream}
    totals = dict.fromkeys(HOSTS, 0.0)
    for name, servers in running.items():
        for server in servers:
            totals[server["OS-EXT-SRV-ATTR:host"]] += scores[name]
    return totals


def compress_after(labels: list[str]) -> list[str]:
    """['App1', 'App3', 'App4'] -> ['App1', 'App3-App4']."""
    numbers = [int(label[3:]) for label in labels]
    out: list[str] = []
    start = prev = None
    for n in [*numbers, None]:
        if start is None:
            start = prev = n
        elif n is not None and n == prev + 1:
            prev = n
        else:
            out.append(f"App{start}" if start == prev else f"App{start}-App{prev}")
            start = prev = n
    return out
