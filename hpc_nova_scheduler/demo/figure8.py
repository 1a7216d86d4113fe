"""Seed 003's Figure 8 case study, booted through an in-process Nova.

Eight hosts of 4 cores and 8 GB in one rack, and the stream IS.B.4
(ExtremeHPC), LU.C.16, LU.B.4, ChaNGa.4 (SyncHPC) and EP.B.4 (AsyncHPC), each
VM 1 vCPU and 2 GB. A request the scheduler refuses (NoValidHost) is
deferred, as in the paper, and tried again each time applications finish
(:func:`finishing_batches`), until it is placed. Any other outcome of a
boot (a server in ERROR for another reason, one still building after a
timeout) is a :class:`DemoFailure`, never a deferral.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import time
from collections.abc import Mapping, Sequence
from typing import Any

from nova.tests.functional.api import client as api_client

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.demo.cloud import HpcCloud
from hpc_nova_scheduler.demo.fake_driver import Shape

HOSTS = tuple(f"N{i}" for i in range(1, 9))
NODE = Shape(vcpus=4, memory_mb=8192, local_gb=100)
VM_RAM_MB = 2048

#: What Nova's scheduler puts in a refused server's fault message.
NO_VALID_HOST = "No valid host"
#: Seconds a request may stay in BUILD, generous for a loaded machine.
BUILD_TIMEOUT = 300.0
#: Seconds an application's servers may take to disappear once deleted.
DELETE_TIMEOUT = 120.0
#: Seconds the computes may take to report their inventory to Placement.
COMPUTES_TIMEOUT = 120.0
_POLL = 0.2


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


class DemoFailure(Exception):
    """A boot or delete went wrong for a reason other than the scheduler's refusal."""


class Verdict(enum.Enum):
    PLACED = "placed"
    DEFERRED = "deferred"
    FAILED = "failed"


@dataclasses.dataclass(frozen=True)
class RequestResult:
    """What became of one request (or one server)."""

    verdict: Verdict
    message: str = ""


def fault_message(server: Mapping[str, Any]) -> str:
    fault = server.get("fault") or {}
    return str(fault.get("message") or "")


def server_result(server: Mapping[str, Any]) -> RequestResult:
    """One server body of Nova's API: placed, refused by the scheduler, or failed."""
    status = server.get("status")
    if status == "ACTIVE":
        return RequestResult(Verdict.PLACED)
    message = fault_message(server)
    if status == "ERROR" and NO_VALID_HOST.lower() in message.lower():
        return RequestResult(Verdict.DEFERRED, message)
    where = f"server {server.get('id', '?')} is {status}"
    if status == "BUILD":
        task = server.get("OS-EXT-STS:task_state")
        return RequestResult(Verdict.FAILED, f"{where} (task {task}) after the timeout")
    return RequestResult(Verdict.FAILED, f"{where}: {message or 'no fault recorded'}")


def request_result(servers: Sequence[Mapping[str, Any]], expected: int) -> RequestResult:
    """All servers of one multi-create request, after waiting for them.

    Nova schedules a request's servers together: either all are placed or
    the scheduler refuses all of them. Anything else is a failure.
    """
    if len(servers) != expected:
        return RequestResult(Verdict.FAILED, f"{len(servers)} of {expected} servers exist")
    results = [server_result(s) for s in servers]
    failed = [r.message for r in results if r.verdict is Verdict.FAILED]
    if failed:
        return RequestResult(Verdict.FAILED, "; ".join(dict.fromkeys(failed)))
    verdicts = {r.verdict for r in results}
    if verdicts == {Verdict.PLACED}:
        return RequestResult(Verdict.PLACED)
    if verdicts == {Verdict.DEFERRED}:
        return RequestResult(Verdict.DEFERRED, results[0].message)
    return RequestResult(
        Verdict.FAILED,
        "some servers of the request are ACTIVE, the others refused: "
        + results[[r.verdict for r in results].index(Verdict.DEFERRED)].message,
    )


@dataclasses.dataclass
class AppPlacement:
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
class DemoRun:
    title: str
    beta: float | None
    outcomes: list[AppPlacement]
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

    def _setup_services(self) -> None:
        # The demo retries a deferred request right after deleting an
        # application; Nova's computes tell the scheduler about deleted
        # instances by an asynchronous cast, so a loaded machine could still
        # show them to the filters. Reading instances from the database per
        # request makes "finished" mean finished.
        self.flags(track_instance_changes=False, group="filter_scheduler")
        super()._setup_services()


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
    build_timeout: float = BUILD_TIMEOUT,
    log_path: str | None = None,
) -> DemoRun:
    """Boot the stream once; ``beta=None`` runs Nova's default scheduler.

    Raises :class:`DemoFailure` when anything but the scheduler's refusal
    stops a request, or when the computes never report to Placement.
    ``log_path`` receives the log of Nova's services, to read after a failure.
    """
    cloud = cloud_class(beta, alpha, db_url)("runTest")
    try:
        cloud.start()
        wait_for_computes(cloud, HOSTS, COMPUTES_TIMEOUT)
        return _drive(cloud, beta, stream, build_timeout)
    finally:
        try:
            if log_path and getattr(cloud, "stdlog", None) is not None:
                with open(log_path, "w", encoding="utf-8") as log:
                    log.write(cloud.stdlog.logger.output)
        finally:
            cloud.stop()


def wait_for_computes(cloud: HpcCloud, hosts: Sequence[str], timeout: float) -> None:
    """Return once every host has a resource provider with VCPU inventory.

    A request booted before then would be refused for want of hosts, which
    the demo would take for the scheduler's answer.
    """
    deadline = time.monotonic() + timeout
    while True:
        ready = set()
        for provider in cloud.placement.get("/resource_providers", version="1.14").body[
            "resource_providers"
        ]:
            if provider["name"] in hosts:
                inventory = cloud.placement.get(
                    f"/resource_providers/{provider['uuid']}/inventories"
                ).body["inventories"]
                if inventory.get("VCPU", {}).get("total", 0) > 0:
                    ready.add(provider["name"])
        missing = [h for h in hosts if h not in ready]
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise DemoFailure(
                f"computes {', '.join(missing)} did not report VCPU inventory to Placement "
                f"within {timeout:g} s"
            )
        time.sleep(_POLL)


def _boot(cloud: HpcCloud, flavor_id: str, count: int, timeout: float) -> list[dict]:
    """Boot ``count`` servers in one request; their bodies once none is building."""
    body: dict = {"server": cloud._build_server(flavor_id=flavor_id, networks="none")}
    body["server"]["min_count"] = count
    body["server"]["return_reservation_id"] = True
    reservation = cloud.api.post_server(body)["reservation_id"]
    deadline = time.monotonic() + timeout
    while True:
        servers = cloud.api.get_servers(detail=True, search_opts={"reservation_id": reservation})
        settled = len(servers) == count and all(s["status"] != "BUILD" for s in servers)
        if settled or time.monotonic() >= deadline:
            break
        time.sleep(_POLL)
    # Nova sets a refused server's state before it records the fault; the
    # fault says why, so wait for it (bounded: no fault is itself a failure).
    result = []
    for server in servers:
        if server["status"] != "ACTIVE":
            server = cloud.api.get_server(server["id"])
        while server["status"] == "ERROR" and "fault" not in server:
            if time.monotonic() >= deadline + 30:
                break
            time.sleep(_POLL)
            server = cloud.api.get_server(server["id"])
        result.append(server)
    return result


def _delete(cloud: HpcCloud, servers: Sequence[Mapping[str, Any]], timeout: float) -> None:
    """Delete servers and wait until Nova no longer has them."""
    for server in servers:
        with contextlib.suppress(api_client.OpenStackApiNotFoundException):
            cloud.api.delete_server(server["id"])
    pending = {s["id"]: s["status"] for s in servers}
    deadline = time.monotonic() + timeout
    while pending:
        for server_id, was in list(pending.items()):
            try:
                body = cloud.api.get_server(server_id)
            except api_client.OpenStackApiNotFoundException:
                del pending[server_id]
                continue
            if body["status"] == "ERROR" and was != "ERROR":
                raise DemoFailure(
                    f"deleting server {server_id} put it in ERROR: {fault_message(body)}"
                )
        if pending and time.monotonic() >= deadline:
            raise DemoFailure(
                f"servers {', '.join(sorted(pending))} still exist {timeout:g} s after delete"
            )
        if pending:
            time.sleep(_POLL)


def _drive(
    cloud: HpcCloud, beta: float | None, stream: Sequence[App], build_timeout: float
) -> DemoRun:
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
    outcomes: dict[str, AppPlacement] = {}
    deferred: list[App] = []
    peak: dict[str, float] = dict.fromkeys(HOSTS, 0.0)

    def launch(app: App, after: list[str]) -> bool:
        servers = _boot(cloud, flavors[app.name], app.count, build_timeout)
        result = request_result(servers, app.count)
        if result.verdict is Verdict.FAILED:
            raise DemoFailure(f"{app.name}: {result.message}")
        if result.verdict is Verdict.DEFERRED:
            _delete(cloud, servers, DELETE_TIMEOUT)
            return False
        running[app.name] = servers
        outcomes[app.name] = AppPlacement(app, cloud.hosts_of(servers), after=list(after))
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
        for batch in finishing_batches(order, [n for n in running if n not in finished], app.name):
            for name in batch:
                _delete(cloud, running.pop(name), DELETE_TIMEOUT)
                finished.append(name)
            if launch(app, [_app_label(n, order) for n in finished]):
                placed = True
                break
        if not placed:
            outcomes[app.name] = AppPlacement(app, {}, refused=True)
    title = "Nova defaults (no plugin)" if beta is None else f"hpc-nova-scheduler, beta = {beta:g}"
    return DemoRun(
        title,
        beta,
        [outcomes[app.name] for app in stream],
        _cache(running, stream),
        peak,
    )


def finishing_batches(order: list[str], running: list[str], deferred: str) -> list[list[str]]:
    """When the running applications finish, as seen by a deferred request.

    Seed 003 gives no run times (IS.B.4's aside), so the demo assumes this:
    applications started before the request was deferred finish one by one
    in arrival order; those started while it waited were submitted together
    behind it and finish together, as one batch. It is the simplest rule
    that gives both deferral rows of Figure 8: LU.B.4 "after App1" at beta =
    60, and LU.C.16 "after App1, App3-App5" at beta = 40 (finishing App3-App5
    one by one would let it in after App4: EP.B.4's 2.5 leaves room for two
    of its VMs per host under 40).
    """
    position = order.index(deferred)
    before = [[name] for name in order[:position] if name in running]
    after = [name for name in order[position + 1 :] if name in running]
    return before + ([after] if after else [])


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


def expand_after(text: str) -> list[str]:
    """'App1, App3-App5' -> ['App1', 'App3', 'App4', 'App5'] (the inverse of compress_after)."""
    labels: list[str] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        start, stop = int(first.strip()[3:]), int((last or first).strip()[3:])
        labels.extend(f"App{n}" for n in range(start, stop + 1))
    return labels
