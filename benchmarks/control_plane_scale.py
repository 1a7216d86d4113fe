#!/usr/bin/env python3
"""Latency, throughput and placement quality of a real control plane of many nodes.

For each cloud size (``--sizes``, default 1,000 and 10,000 nodes),
``tools/cloud.py up --nodes N`` starts the real multi-process control plane:
racks of 40 nodes of 32 vCPUs, one nova-compute service per rack on the
multi-node fake driver (several services per process), MariaDB, RabbitMQ,
Placement under gunicorn and four nova-scheduler workers. A background fill
(``--fill``, a share of the cores, in 8-vCPU plain servers booted in
batches) gives the cloud partly used nodes, as a running cloud has. Then,
for each ``[scheduler] max_placement_results`` (Nova's default of 1000 and
the number of nodes), concurrent clients send the same request stream with
the plugin on and off, in ABBA order (on, off, off, on), so that drift on
this shared machine falls on both sides alike:

- ``plain``: one 2-vCPU server, no ``hpc:`` extra specs;
- ``plain16``: 16 servers of 8 vCPUs, no ``hpc:`` extra specs;
- ``sync16``: 16 servers of 8 vCPUs, SyncHPC (one application);
- ``extreme``: 2 servers of 16 vCPUs, ExtremeHPC (a dedicated node).

Printed per phase and request kind: requests, refusals, requests settled per
second, p50/p95/p99 of ``select_destinations`` from the scheduler's own log
(:mod:`devcloud.scale`) and of POST to ACTIVE. For HPC requests, what each
got (racks, blocks, processor groups spanned) and whether the whole cloud
had better: a rack of one processor group with room for a whole sync16
request that was split or refused, an idle node for an ExtremeHPC request
that was refused. With ``--fair`` two more phase pairs (plugin on, fair
share on and off, ABBA) give the fair-share path's extra milliseconds.

``--narrow`` narrows Placement's sample at the default limit (docs:
admin/scale-narrowing): hpc-scheduler-agent keeps ``CUSTOM_HPC_IDLE`` and
``CUSTOM_HPC_ROOMY_RACK`` (``idle_trait_interval``, ``roomy_rack_trait``),
and with the plugin on the ExtremeHPC and SyncHPC flavors require them.
Nova alone boots the same flavors without the traits.

``--profile DIR`` records every nova-scheduler worker with py-spy during
each phase and prints the hottest frames: the profile of the real service,
not of an in-process stand-in. In plugin-on phases it records
hpc-scheduler-agent too, which shares the machine's cores; every such
phase prints the agent's CPU seconds, with or without ``--profile``.

Targets, as ratios to Nova alone in the same run (plugin off):

- plain requests: p99 at most 1.10 at 10k nodes;
- sync16 p50 no worse than Nova alone's plain16 p50;
- the fair-share path at 10k nodes: at most 20 ms extra per request;
- quality at the default limit: >= 99 % of sync16 requests that fit in one
  rack land in one rack; no ExtremeHPC request refused while a node is idle.

    .venv/bin/python benchmarks/control_plane_scale.py [--sizes 1000,10000]
        [--seconds 120] [--clients 4] [--fill 0.2] [--fair] [--narrow] [--profile DIR]
        [--verbose]

Needs the local MariaDB and RabbitMQ, about 24 GB of memory at 10,000
nodes, and an hour or more for both sizes. Each cloud is taken down at the
end, also on failure (``--keep`` keeps the last one up).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import random
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devcloud import cli, control, fairshare, memory, operator, scale, services, stress
from devcloud.operator import FlavorSpec
from hpc_nova_scheduler import conf

ROOT = Path(__file__).resolve().parent.parent / ".cloud"
BUILD_TIMEOUT = 600.0
#: ``[hpc_scheduler] reconcile_interval``'s default: the trial cloud's 10 s
#: would sweep six times as often as an operator's agent does.
RECONCILE_INTERVAL = next(opt.default for opt in conf.ALL_OPTS if opt.name == "reconcile_interval")
#: Requests each client keeps alive before deleting its oldest.
KEEP_ALIVE = 6


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str
    flavor: FlavorSpec
    count: int
    #: Share of the requests of the stream.
    weight: float

    @property
    def vcpus(self) -> int:
        return self.flavor.vcpus

    @property
    def app_class(self) -> str | None:
        return self.flavor.extra_specs.get("hpc:app_class")


def _hpc(app_class: str) -> dict[str, str]:
    return {"hpc:app_class": app_class, "hpc:cache_score": "10"}


KINDS = (
    Kind("plain", FlavorSpec("scale.plain.2", 2, 4096, {}), 1, 0.55),
    Kind("plain16", FlavorSpec("scale.plain.8", 8, 16384, {}), 16, 0.15),
    Kind("sync16", FlavorSpec("scale.sync.8", 8, 16384, _hpc("SyncHPC")), 16, 0.15),
    Kind("extreme", FlavorSpec("scale.extreme.16", 16, 32768, _hpc("ExtremeHPC")), 2, 0.15),
)
#: What a kind's flavor requires under ``--narrow`` (plugin on, default limit).
NARROWED = {
    "sync16": {"trait:CUSTOM_HPC_ROOMY_RACK": "required"},
    "extreme": {"trait:CUSTOM_HPC_IDLE": "required"},
}
#: A setting on, off, off, on: drift of the shared machine falls on both alike.
ABBA = (True, False, False, True)
#: Seconds a restarted nova-scheduler has run before a phase starts: Nova's
#: ``scheduler_instance_sync_interval`` (120 s) and a margin (run_phase says why).
SETTLE = 150.0
#: Seconds between two runs of the agent's idle-traits task under ``--narrow``.
NARROW_INTERVAL = 30
FILL = FlavorSpec("scale.fill.8", 8, 16384, {})
#: Servers of one fill request: a multi-create, scheduled in one call.
FILL_BATCH = 100


@dataclasses.dataclass
class Outcome:
    kind: Kind
    tag: str
    posted: float
    settled: float | None = None
    #: active, novalidhost, error, timeout, api-error
    result: str = "pending"
    servers: list[str] = dataclasses.field(default_factory=list)
    #: server -> node, read once ACTIVE
    nodes: dict[str, str] = dataclasses.field(default_factory=dict)
    deleted: float | None = None


class Client(threading.Thread):
    """Boots requests of random kinds one after the other; keeps a few alive."""

    def __init__(self, index, run, flavors, deadline, seed, ledger, prefix, project=None):
        super().__init__(name=f"scale-client-{index}", daemon=True)
        self.index, self.run_, self.flavors = index, run, flavors
        self.deadline, self.ledger, self.prefix = deadline, ledger, prefix
        self.project = project or f"scale-{index % 2}"
        self.rng = random.Random(seed)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._load()
        except BaseException as error:  # reported by the main thread
            self.error = error

    def _load(self) -> None:
        conn = operator.connect(
            self.run_, project=self.project, user=f"user-{self.index}", admin=False
        )
        admin = operator.connect(self.run_)
        alive: collections.deque[Outcome] = collections.deque()
        number = 0
        while time.monotonic() < self.deadline:
            number += 1
            kind = self.rng.choices(KINDS, weights=[k.weight for k in KINDS])[0]
            outcome = Outcome(kind, f"{self.prefix}c{self.index}r{number}", time.monotonic())
            try:
                self._boot(conn, admin, outcome)
            except stress.API_FAULTS as error:
                outcome.result, outcome.settled = "api-error", time.monotonic()
                print(f"  client {self.index}: {error}", file=sys.stderr)
                time.sleep(1)
            self.ledger.append(outcome)
            if outcome.result == "active":
                alive.append(outcome)
            else:
                _delete(conn, outcome)
            while len(alive) > KEEP_ALIVE:
                _delete(conn, alive.popleft())
        for outcome in alive:
            _delete(conn, outcome)

    def _boot(self, conn, admin, outcome: Outcome) -> None:
        kind = outcome.kind
        hints = {"hpc_app_name": outcome.tag} if kind.app_class else {}
        conn.compute.create_server(
            name=outcome.tag,
            image_id=self.run_.image_id,
            flavor_id=self.flavors[kind.name],
            networks="none",
            min_count=kind.count,
            max_count=kind.count,
            scheduler_hints=hints,
        )
        pattern = f"^{outcome.tag}(-[0-9]+)?$"
        settled = stress.await_request(conn, pattern, kind.count, outcome.posted + BUILD_TIMEOUT)
        outcome.servers, outcome.result = settled.servers, settled.result
        outcome.settled = time.monotonic()
        if outcome.result == "active":
            found = stress.read(
                lambda: list(admin.compute.servers(details=True, all_projects=True, name=pattern))
            )
            outcome.nodes = {s.id: s.hypervisor_hostname for s in found if s.hypervisor_hostname}


def _delete(conn, outcome: Outcome) -> None:
    for uuid in outcome.servers:
        try:
            conn.compute.delete_server(uuid, ignore_missing=True)
        except stress.API_FAULTS:
            continue
    outcome.deleted = time.monotonic()


def wait_gone(conn, prefix: str, timeout: float = 900.0) -> None:
    """Until no server of the stream (named ``prefix...``) is left.

    A plain listing under a name filter: a detailed one of a filled cloud
    makes nova-api ask Neutron about a whole page in one URL, which fails
    (HTTP 500) with hundreds of servers. Whatever is left is deleted again:
    Nova accepts the delete of a server in any state.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = stress.read(
            lambda: list(conn.compute.servers(details=False, all_projects=True, name=f"^{prefix}"))
        )
        if not left:
            return
        for server in left:
            with contextlib.suppress(*stress.API_FAULTS):
                conn.compute.delete_server(server.id, ignore_missing=True)
        time.sleep(2)
    raise RuntimeError(f"servers of {prefix} still there after {timeout:.0f} s")


@dataclasses.dataclass
class Phase:
    nodes: int
    limit: int
    plugin: bool
    fair: bool
    narrow: bool
    seconds: float
    ledger: list[Outcome]
    timings: list[scale.Timing]

    def of(self, kind: str) -> list[Outcome]:
        return [o for o in self.ledger if o.kind.name == kind]

    def scheduler_seconds(self, kind: str) -> list[float]:
        mine = {uuid for o in self.of(kind) for uuid in o.servers}
        return [
            t.seconds
            for t in self.timings
            if t.seconds is not None and mine.intersection(t.instances)
        ]

    def active_seconds(self, kind: str) -> list[float]:
        return [o.settled - o.posted for o in self.of(kind) if o.result == "active"]

    def label(self) -> str:
        mode = " fair" if self.fair else " nrw" if self.narrow else ""
        return f"{self.nodes:>6} {self.limit:>6} {'on' if self.plugin else 'off':<3}{mode:<5}"


def ms(values: list[float], fraction: float) -> str:
    value = stress.percentile(values, fraction)
    return f"{value * 1000:>7.0f}" if values else f"{'-':>7}"


HEADER = (
    " nodes  limit plg      | kind     |    n  ref  err  req/s | select_destinations ms "
    "p50     p95     p99 | POST-to-ACTIVE ms p50     p95     p99"
)


def print_phase(phase: Phase) -> None:
    for kind in KINDS:
        done = phase.of(kind.name)
        if not done:
            continue
        # Refused by the scheduler (no valid host), apart from requests that
        # failed elsewhere: an API call that failed, a build error, a timeout.
        refused = sum(1 for o in done if o.result == "novalidhost")
        failed = sum(1 for o in done if o.result not in ("active", "novalidhost"))
        rate = sum(1 for o in done if o.settled) / phase.seconds
        sched, active = phase.scheduler_seconds(kind.name), phase.active_seconds(kind.name)
        print(
            f"{phase.label()} | {kind.name:<8} | {len(done):>4} {refused:>4} {failed:>4} "
            f"{rate:>6.2f} | "
            f"{'':>19}{ms(sched, 0.5)} {ms(sched, 0.95)} {ms(sched, 0.99)} | "
            f"{'':>14}{ms(active, 0.5)} {ms(active, 0.95)} {ms(active, 0.99)}",
            flush=True,
        )


def node_model(run) -> dict[str, scale.Node]:
    places = operator.node_places(run)
    found = {}
    for name, place in places.items():
        rack = place.domains.get("rack") or next(reversed(place.domains.values()), "")
        block = place.domains.get("block", "")
        found[name] = scale.Node(place.host, rack, block, place.cpu_group, place.vcpus)
    return found


@dataclasses.dataclass
class Quality:
    sync_fit: int = 0
    sync_fit_one_rack: int = 0
    sync_split_better: int = 0
    sync_refused_better: int = 0
    extreme: int = 0
    extreme_refused_idle: int = 0
    racks: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    blocks: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    groups: collections.Counter = dataclasses.field(default_factory=collections.Counter)


def quality(phase: Phase, nodes: dict[str, scale.Node], base: dict[str, str]) -> Quality:
    """Judge each HPC request against the whole cloud as it was when it was placed.

    The cloud for a request is the fill (``base``: server -> node), every
    stream request that settled ACTIVE before it settled (the capacity it
    could not have had), less the ones deleted before it was posted (what it
    could have had from the start).
    """
    found = Quality()
    cloud = scale.Cloud(nodes)
    for server, node in base.items():
        cloud.add(server, node, FILL.vcpus)
    events = []
    for o in phase.ledger:
        if o.result == "active" and o.settled is not None:
            events.append((o.settled, 1, o))
            if o.deleted is not None:
                events.append((o.deleted, 0, o))
    events.sort(key=lambda e: (e[0], e[1]))
    judged = sorted(
        (o for o in phase.ledger if o.kind.app_class and o.settled is not None),
        key=lambda o: o.settled,
    )
    step = 0
    for request in judged:
        while step < len(events) and events[step][0] < request.settled:
            _, add, other = events[step]
            step += 1
            for server, node in other.nodes.items():
                if add:
                    cloud.add(
                        server,
                        node,
                        other.kind.vcpus,
                        dedicated=other.kind.app_class == "ExtremeHPC",
                    )
                else:
                    cloud.remove(server)
        # Deleted after the request was posted: its scheduler saw them still there.
        late = [
            o
            for o in phase.ledger
            if o.deleted is not None and request.posted < o.deleted < request.settled
        ]
        for other in late:
            for server, node in other.nodes.items():
                cloud.add(
                    server, node, other.kind.vcpus, dedicated=other.kind.app_class == "ExtremeHPC"
                )
        _judge(request, cloud, nodes, found)
        for other in late:
            for server in other.nodes:
                cloud.remove(server)
    return found


def _judge(request: Outcome, cloud: scale.Cloud, nodes, found: Quality) -> None:
    kind = request.kind
    placed = scale.spread(nodes, request.nodes.values()) if request.result == "active" else None
    if placed is not None:
        found.racks[(kind.name, placed.racks)] += 1
        found.blocks[(kind.name, placed.blocks)] += 1
        found.groups[(kind.name, placed.cpu_groups)] += 1
    if kind.app_class == "SyncHPC":
        fits = cloud.one_rack_fits(kind.count, kind.vcpus)
        if fits:
            found.sync_fit += 1
            if placed is not None and placed.racks == 1:
                found.sync_fit_one_rack += 1
            elif placed is not None:
                found.sync_split_better += 1
            else:
                found.sync_refused_better += 1
    elif kind.app_class == "ExtremeHPC":
        found.extreme += 1
        # Two 16-vCPU servers fill one 32-vCPU node: one idle node suffices.
        if placed is None and request.result == "novalidhost" and cloud.idle_nodes() >= 1:
            found.extreme_refused_idle += 1


def print_quality(phase: Phase, q: Quality) -> None:
    share = q.sync_fit_one_rack / q.sync_fit if q.sync_fit else float("nan")
    print(
        f"{phase.label()} | quality: sync16 fitting one rack {q.sync_fit}, in one rack "
        f"{q.sync_fit_one_rack} ({share:.1%}), split {q.sync_split_better}, refused "
        f"{q.sync_refused_better}; extreme {q.extreme}, refused while a node was idle "
        f"{q.extreme_refused_idle}"
    )
    for name, counter in (("racks", q.racks), ("blocks", q.blocks), ("cpu groups", q.groups)):
        parts = ", ".join(f"{kind} {n}: {c}" for (kind, n), c in sorted(counter.items()))
        if parts:
            print(f"{phase.label()} |   {name} spanned: {parts}")


def scheduler_log(run) -> Path:
    (scheduler,) = run.services_named("nova-scheduler")
    return Path(scheduler.log)


def agent_pids(run) -> list[int]:
    """The agent's processes, when it runs (it is stopped with the plugin off):
    oslo.service's threading launcher and the worker it forks."""
    found = [s.pid for s in run.services_named(control.AGENT) if services.alive(s.pid)]
    return [pid for parent in found for pid in (parent, *services.children(parent))]


def cpu_seconds(pids: list[int]) -> float | None:
    """CPU seconds ``pids`` used in all; None if one is gone (the figure would be partial)."""
    try:
        return sum(services.cpu_seconds(pid) for pid in pids)
    except OSError:
        return None


def start_profilers(run, args, name: str, pids=None) -> list[tuple[subprocess.Popen, Path]]:
    """py-spy on every nova-scheduler worker (or on ``pids``) for the phase (``--profile``)."""
    if not args.profile:
        return []
    if pids is None:
        (scheduler,) = run.services_named("nova-scheduler")
        pids = services.children(scheduler.pid)
    started = []
    for pid in pids:
        out = Path(args.profile) / f"{name}-{pid}.txt"
        command = [args.py_spy, "record", "--format", "raw", "--nonblocking"]
        command += ["--rate", str(args.profile_rate)]
        command += ["--duration", str(int(args.seconds)), "--pid", str(pid), "--output", str(out)]
        with out.with_suffix(".log").open("w") as messages:
            process = subprocess.Popen(command, stdout=messages, stderr=subprocess.STDOUT)
        started.append((process, out))
    return started


#: Frames the profile report ranks: Nova's and the plugin's code, where a
#: request's time goes (the bootstrap and the RPC loop hold every sample).
PROFILED = ("nova/", "hpc_nova_scheduler/", "oslo_db/", "sqlalchemy/", "keystoneauth1/")


def report_profiles(started: list[tuple[subprocess.Popen, Path]], label: str) -> None:
    if not started:
        return
    lines: list[str] = []
    for process, out in started:
        process.wait()
        if out.is_file():
            lines += out.read_text().splitlines()
    if not lines:
        why = ", ".join(str(out.with_suffix(".log")) for _, out in started)
        print(f"{label} | profile: py-spy recorded nothing (its messages: {why})")
    for frame, inclusive, own in scale.hot_frames(lines, top=25, within=PROFILED):
        print(f"{label} | profile {inclusive:6.1%} incl {own:6.1%} self  {frame}")
    # The plugin's own share, which Nova's frames above it hide.
    for frame, inclusive, own in scale.hot_frames(lines, top=12, within=("hpc_nova_scheduler/",)):
        print(f"{label} | plugin  {inclusive:6.1%} incl {own:6.1%} self  {frame}")


def run_phase(
    run,
    flavors,
    args,
    *,
    plugin: bool,
    fair: bool,
    limit: int,
    say,
    narrowed=None,
) -> Phase:
    """One phase of the streams; ``narrowed``: the kinds' flavors that require
    the agent's traits, used with the plugin on."""
    if plugin != run.plugin:
        control.set_plugin(run, plugin, say=say)
    if fair != (run.fairness != "none"):
        control.set_fairness(run, "equal" if fair else "none", "borrow", say=say)
    # A restarted host manager trusts a compute host's instance list only
    # once that host's periodic sync has arrived (Nova's
    # scheduler_instance_sync_interval, 120 s); until then it reads each
    # candidate node's instances from the database on every request, which
    # a scheduler that has run a while never does. Whatever restarted it.
    (scheduler,) = run.services_named("nova-scheduler")
    wait = args.settle - services.age(scheduler.pid)
    if wait > 0:
        say(f"letting nova-scheduler settle for {wait:.0f} s")
        time.sleep(wait)
    narrow = plugin and narrowed is not None
    if narrow:
        flavors = {**flavors, **narrowed}
    name = f"n{run.nodes}-l{limit}-{'on' if plugin else 'off'}{'-fair' if fair else ''}"
    tag = f"{name}-{secrets.token_hex(2)}"
    profilers = start_profilers(run, args, tag)
    # The agent shares the machine's cores with nova-scheduler: what it
    # costs during a plugin-on phase is part of the plugin's price.
    agent = agent_pids(run) if plugin else []
    agent_cpu = cpu_seconds(agent)
    agent_profilers = start_profilers(run, args, f"agent-{tag}", agent)
    log = scheduler_log(run)
    offset = log.stat().st_size
    prefix = f"k{secrets.token_hex(2)}"
    ledger: list[Outcome] = []
    started = time.monotonic()
    projects = [p.name for p in fairshare.PROJECTS if p.weight is not None] if fair else None
    clients = [
        Client(
            i,
            run,
            flavors,
            started + args.seconds,
            args.seed + i,
            ledger,
            prefix,
            projects[i % len(projects)] if projects else None,
        )
        for i in range(args.clients)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    elapsed = time.monotonic() - started
    errors = [c.error for c in clients if c.error is not None]
    if errors:
        raise RuntimeError(f"a client failed: {errors[0]!r}")
    wait_gone(operator.connect(run), prefix)
    phase = Phase(
        run.nodes, limit, plugin, fair, narrow, elapsed, ledger, scale.read_timings(log, offset)
    )
    print_phase(phase)
    after = cpu_seconds(agent)
    if agent and (after is None or agent_cpu is None):
        print(f"{phase.label()} | agent: restarted during the phase, CPU not counted")
    elif agent:
        used = after - agent_cpu
        print(
            f"{phase.label()} | agent: {used:.1f} CPU s over {elapsed:.0f} s "
            f"({used / elapsed:.1%} of a core)",
            flush=True,
        )
    report_profiles(profilers, phase.label())
    report_profiles(agent_profilers, f"{phase.label()} agent")
    return phase


class FillCount:
    """The fill's servers as Nova's databases hold them.

    Nova's cell databases, not its API: a detailed listing of thousands of
    servers makes nova-api ask Neutron about a whole page in one URL, and
    pages of them repeat under a name filter (openstacksdk stops them). A
    server the scheduler could not place lies in cell0.
    """

    QUERY = sa.text(
        "SELECT uuid, node, vm_state FROM instances WHERE deleted = 0 AND display_name LIKE 'fill%'"
    )

    def __init__(self, run) -> None:
        self.cell = sa.create_engine(run.database_url("nova", as_plugin=False))
        self.cell0 = sa.create_engine(run.database_url("nova_cell0", as_plugin=False))

    def read(self) -> tuple[list, int]:
        """(the cell's rows, the servers in cell0)."""
        with self.cell.connect() as connection:
            rows = connection.execute(self.QUERY).all()
        with self.cell0.connect() as connection:
            failed = len(connection.execute(self.QUERY).all())
        return rows, failed

    def settled(self) -> tuple[int, list]:
        """(servers active, in error or in cell0; the cell's rows)."""
        rows, failed = self.read()
        return sum(1 for row in rows if row.vm_state != "building") + failed, rows

    def close(self) -> None:
        self.cell.dispose()
        self.cell0.dispose()


def fill(run, conn, flavors, share: float, say) -> dict[str, str]:
    """Boot 8-vCPU plain servers in batches until ``share`` of the cores are used.

    At most one batch per scheduler worker is in flight: at 10,000 nodes a
    batch of 200 took the scheduler 2 to 24 minutes (each instance's
    allocation is claimed in Placement in turn), and forty batches queued
    at once outlived the conductor's ``long_rpc_timeout``: their servers
    went to cell0.
    """
    nodes = operator.node_places(run)
    total = sum(place.vcpus for place in nodes.values())
    wanted = int(total * share) // FILL.vcpus
    in_flight = FILL_BATCH * run.scheduler_workers
    count = FillCount(run)
    asked = batch = 0
    deadline = time.monotonic() + max(600.0, wanted * 2.0)
    try:
        while True:
            settled, rows = count.settled()
            if settled >= wanted or time.monotonic() > deadline:
                break
            if asked < wanted and asked - settled < in_flight:
                size = min(FILL_BATCH, wanted - asked)
                batch += 1
                conn.compute.create_server(
                    name=f"fill{batch}",
                    image_id=run.image_id,
                    flavor_id=flavors["fill"],
                    networks="none",
                    min_count=size,
                    max_count=size,
                )
                asked += size
                say(f"fill: {asked} of {wanted} servers asked, {settled} settled")
                continue
            time.sleep(5)
        _, failed = count.read()
    finally:
        count.close()
    placed = {row.uuid: row.node for row in rows if row.vm_state == "active" and row.node}
    say(f"fill: {len(placed)} of {wanted} servers active, {failed} not placed (cell0)")
    return placed


def agent_log(run) -> Path:
    (agent,) = run.services_named(control.AGENT)
    return Path(agent.log)


def start_narrowing(run, say, timeout: float = 1800.0) -> None:
    """The agent keeps the idle and roomy-rack traits; wait for its first run
    that tagged roomy racks (a few minutes at 10,000 nodes)."""
    control.set_idle_trait_interval(run, NARROW_INTERVAL, say=say)
    log = agent_log(run)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            found = re.search(r"CUSTOM_HPC_ROOMY_RACK: (\d+) tagged", line)
            if found and int(found.group(1)) > 0:
                say(f"narrowing: {line.split('hpc-scheduler-agent: ', 1)[-1]}")
                return
        time.sleep(5)
    raise RuntimeError(f"the agent tagged no roomy rack in {timeout:.0f} s (see {log})")


def narrowed_flavors(conn) -> dict[str, str]:
    """The HPC kinds' flavors that require the agent's traits (``--narrow``)."""
    found = {}
    for kind in KINDS:
        if kind.name in NARROWED:
            spec = kind.flavor
            narrowed = dataclasses.replace(
                spec,
                name=f"{spec.name}.narrow",
                extra_specs={**spec.extra_specs, **NARROWED[kind.name]},
            )
            found[kind.name] = operator.create_flavor(conn, narrowed)
    return found


def bench_size(nodes: int, args, say) -> list[tuple[Phase, Quality]]:
    run = control.up(
        ROOT,
        mysql=args.mysql,
        rabbit=args.rabbit,
        computes=0,
        nodes=nodes,
        scheduler_workers=args.workers,
        plugin=True,
        timing=True,
        reconcile_interval=args.reconcile_interval,
        say=say,
    )
    results = []
    try:
        print(f"{nodes:>6} nodes up:")
        for line in memory.table(memory.usage(run)):
            print(f"{nodes:>6} {line}")
        conn = operator.connect(run)
        flavors = {kind.name: operator.create_flavor(conn, kind.flavor) for kind in KINDS}
        flavors["fill"] = operator.create_flavor(conn, FILL)
        model = node_model(run)
        base = fill(run, conn, flavors, args.fill, say) if args.fill > 0 else {}
        if args.fair:
            # The trial's shares, runs and demand, written with fair share on
            # (the allocator refuses otherwise); phases turn it on and off.
            control.set_fairness(run, "equal", "borrow", say=say)
            fairshare.prepare(run, say)
        limits = list(dict.fromkeys(nodes if v == "N" else int(v) for v in args.limits))
        # Made once: every limit below the cloud's size boots the same flavors.
        narrowing = args.narrow and min(limits) < nodes
        narrowed_kinds = narrowed_flavors(conn) if narrowing else None
        for limit in limits:
            control.set_placement_results(run, limit, say=say)
            # Narrowing is for a sample smaller than the cloud: at the
            # number of nodes the roomy racks would be every rack.
            narrowed = None
            if narrowing and limit < nodes:
                narrowed = narrowed_kinds
                start_narrowing(run, say)
            elif run.idle_trait_interval:
                control.set_idle_trait_interval(run, 0, say=say)
            # (plugin, fair share) of each phase, in ABBA order: the plugin
            # on and off; then, for the fair-share target, which is per
            # request at the default limit (the first of --limits), fair
            # share on and off with the plugin on.
            phases = [(plugin, False) for plugin in ABBA]
            if args.fair and limit == limits[0]:
                phases += [(True, fair) for fair in ABBA]
            for plugin, fair in phases:
                phase = run_phase(
                    run,
                    flavors,
                    args,
                    plugin=plugin,
                    fair=fair,
                    limit=limit,
                    say=say,
                    narrowed=narrowed,
                )
                found = quality(phase, model, base)
                if not fair:
                    print_quality(phase, found)
                results.append((phase, found))
        print(f"{nodes:>6} nodes after the load:")
        for line in memory.table(memory.usage(run)):
            print(f"{nodes:>6} {line}")
    finally:
        if not (args.keep and nodes == args.sizes[-1]):
            control.down(run, say=say)
    return results


def pooled(phases: list[Phase], kind: str, *, plugin: bool, fair: bool = False, sched: bool):
    values: list[float] = []
    for phase in phases:
        if phase.plugin == plugin and phase.fair == fair:
            values += phase.scheduler_seconds(kind) if sched else phase.active_seconds(kind)
    return values


def ratio(a: list[float], b: list[float], fraction: float) -> float:
    if not a or not b:
        return float("nan")
    return stress.percentile(a, fraction) / stress.percentile(b, fraction)


def summarise(nodes: int, limit: int, results: list[tuple[Phase, Quality]], args) -> None:
    # Each comparison pools the phases of its own ABBA block only: the plugin
    # on and off (the first block of the limit), then fair share on and off
    # with the plugin on. The second block's phases ran later; pooled with the
    # first, they would outnumber the plugin-off phases and carry the
    # machine's drift to one side.
    ran = [(p, q) for p, q in results if p.limit == limit]
    first, second = ran[: len(ABBA)], ran[len(ABBA) :]
    phases = [p for p, _ in first]
    head = f"{nodes} nodes, max_placement_results {limit}:"
    for sched, what in ((True, "select_destinations"), (False, "POST-to-ACTIVE")):
        on = pooled(phases, "plain", plugin=True, sched=sched)
        off = pooled(phases, "plain", plugin=False, sched=sched)
        p99 = ratio(on, off, 0.99)
        verdict = "within" if p99 <= 1.10 else "ABOVE"
        print(f"{head} plain {what} p99 on/off {p99:.3f} ({verdict} 1.10)")
        sync = pooled(phases, "sync16", plugin=True, sched=sched)
        plain16 = pooled(phases, "plain16", plugin=False, sched=sched)
        p50 = ratio(sync, plain16, 0.5)
        verdict = "within" if p50 <= 1.0 else "ABOVE"
        print(f"{head} sync16 (plugin) / plain16 (Nova alone) {what} p50 {p50:.3f} ({verdict} 1.0)")
    for plugin in (True, False):
        # Quality is no ratio to drift: every phase without fair share counts.
        mine = [(p, q) for p, q in ran if p.plugin == plugin and not p.fair]
        fit = sum(q.sync_fit for _, q in mine)
        one = sum(q.sync_fit_one_rack for _, q in mine)
        idle = sum(q.extreme_refused_idle for _, q in mine)
        share = one / fit if fit else float("nan")
        print(
            f"{head} plugin {'on' if plugin else 'off'}: sync16 in one rack when one fitted "
            f"{one}/{fit} ({share:.1%}, target 99 %); ExtremeHPC refused while a node was "
            f"idle: {idle} (target 0)"
        )
    fair = [p for p, _ in second if p.fair]
    if fair:
        plain = [p for p, _ in second if not p.fair]
        for kind in ("plain", "sync16", "extreme"):
            with_fair = [v for p in fair for v in p.scheduler_seconds(kind)]
            without = [v for p in plain for v in p.scheduler_seconds(kind)]
            if with_fair and without:
                extra = statistics.median(with_fair) - statistics.median(without)
                print(
                    f"{head} fair-share path, {kind}: {extra * 1000:+.1f} ms per request "
                    "(p50, target at most 20)"
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="node counts (default 1000,10000)")
    parser.add_argument(
        "--limits",
        default="1000,N",
        help="[scheduler] max_placement_results to run at, N for the number of nodes "
        "(default 1000,N)",
    )
    parser.add_argument("--workers", type=int, default=4, help="nova-scheduler workers")
    parser.add_argument("--seconds", type=float, default=120.0, help="length of each phase")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients")
    parser.add_argument(
        "--settle",
        type=float,
        default=SETTLE,
        metavar="SECONDS",
        help="a phase starts once nova-scheduler has run this long since its last restart "
        f"(default {SETTLE:g}: Nova's instance sync interval and a margin)",
    )
    parser.add_argument("--fill", type=float, default=0.2, help="share of cores filled first")
    parser.add_argument("--fair", action="store_true", help="also measure the fair-share path")
    parser.add_argument(
        "--narrow",
        action="store_true",
        help="at the default limit, the agent keeps the idle and roomy-rack traits and "
        "the plugin's HPC flavors require them",
    )
    parser.add_argument(
        "--reconcile-interval",
        type=int,
        default=RECONCILE_INTERVAL,
        metavar="SECONDS",
        help="[hpc_scheduler] reconcile_interval, the agent's sweep "
        f"(default {RECONCILE_INTERVAL}: the product's default, as an operator runs it)",
    )
    parser.add_argument("--keep", action="store_true", help="leave the last cloud up")
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="record each phase's nova-scheduler workers with py-spy into DIR and print "
        "the hottest frames",
    )
    parser.add_argument(
        "--profile-rate",
        type=int,
        default=20,
        metavar="HZ",
        help="py-spy samples per second (its own 100 falls behind on a loaded machine)",
    )
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--mysql", default=cli.MYSQL)
    parser.add_argument("--rabbit", default=cli.RABBIT)
    parser.add_argument("--verbose", action="store_true", help="print the cloud's progress")
    args = parser.parse_args(argv)
    try:
        args.sizes = [int(value) for value in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes: expected numbers separated by commas, got {args.sizes!r}")
    args.limits = args.limits.split(",")
    if not all(value == "N" or (value.isdigit() and int(value) > 0) for value in args.limits):
        parser.error(f"--limits: expected positive numbers or N, got {','.join(args.limits)!r}")
    if min(args.sizes) < 1 or args.seconds <= 0 or not 0 <= args.fill < 1:
        parser.error("--sizes and --seconds must be positive, --fill in [0, 1)")
    if args.settle < 0:
        parser.error(f"--settle: expected 0 or more seconds, got {args.settle:g}")
    if not 1 <= args.profile_rate <= 1000:
        parser.error(f"--profile-rate: expected 1 to 1000 per second, got {args.profile_rate}")
    if args.profile:
        args.py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if not Path(args.py_spy).is_file():
            parser.error("--profile needs py-spy: pip install py-spy")
        Path(args.profile).mkdir(parents=True, exist_ok=True)

    def say(message: str) -> None:
        if args.verbose:
            print(f"  {message}", file=sys.stderr, flush=True)

    print(
        f"sizes {args.sizes}, {args.workers} scheduler workers, {args.clients} clients, "
        f"{args.seconds:g} s per phase, settle {args.settle:g} s, fill {args.fill:.0%}, "
        f"seed {args.seed}" + (", narrowing at the default limit" if args.narrow else "")
    )
    print(HEADER)
    for nodes in args.sizes:
        # Summed up as soon as a size is done: a long run stopped in the
        # next size keeps them.
        results = bench_size(nodes, args, say)
        for limit in sorted({p.limit for p, _ in results}):
            summarise(nodes, limit, results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
