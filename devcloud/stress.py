"""``stress``: concurrent clients boot and delete servers, then a check.

Each client boots one request at a time (``--min-count k`` of one flavor,
the application name as the ``hpc_app_name`` hint), waits for its servers
to be ACTIVE or refused, keeps a few requests alive and deletes older ones,
until the time is up. Then it waits for deletions to settle, reads every
server from the compute API and the plugin's ``app_running`` table, and
checks them (:mod:`devcloud.checker`). The last line is

    stress: R requests, S servers, V invariant violations, P topology violations,
    E entitlement violations, L record mismatches, T s

(on one line) and the exit status is non-zero when V, P, E or L is above
zero, or when a fault left something broken (``agent-kill``: the restarted
hpc-scheduler-agent did not sweep, or under ``--fairness`` write a
generation, within one interval).
Some HPC requests (:data:`TOPOLOGY_SHARE`) use a flavor with
``hpc:topology_required`` at one of the cloud's levels (``rack``; with ``up
--topology block=2,rack=2`` also ``block``); each client reads where the
VMs of every request it placed landed, as an operator would, and P counts
the placed requests, alive or deleted since, whose VMs span more than one
domain of the required level (:func:`devcloud.checker.topology_violations`).
P is kept apart from V: V judges the hosts as the load left them, P every
placement as it was made.
Under ``--fairness`` the clients come from three projects with a share and
one without (:mod:`devcloud.fairshare`), and E counts the projects and
platforms beyond what the entitlements allowed
(:func:`devcloud.checker.entitlement_violations`); without it E is 0.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import random
import re
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TypeVar

from keystoneauth1 import exceptions as keystoneauth_exceptions
from openstack import exceptions as openstack_exceptions

from devcloud import (
    checker,
    config,
    control,
    fairshare,
    faults,
    models,
    operator,
    reclaims,
    workload,
)
from devcloud.layout import Run
from hpc_nova_scheduler.cmd import options
from hpc_nova_scheduler.core.criteria import InterferenceTable
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import InterferenceRecord
from hpc_nova_scheduler.db import api as db_api

Say = Callable[[str], None]
T = TypeVar("T")
#: Request kinds and their weights; None is a plain request (no hpc specs).
KINDS = (
    (AppClass.SYNC_HPC, 30),
    (AppClass.ASYNC_HPC, 25),
    (AppClass.NON_HPC, 10),
    (AppClass.EXTREME_HPC, 10),
    (None, 25),
)
#: Of the HPC requests, the share whose flavor has ``hpc:topology_required``
#: at one of the cloud's levels, chosen evenly.
TOPOLOGY_SHARE = 0.3
#: Plain requests only: what the plugin costs requests it leaves to Nova.
PLAIN_ONLY = ((None, 1),)
#: Requests each client keeps alive; older ones are deleted.
KEEP_ALIVE = 3
BUILD_TIMEOUT = 180.0
#: Seconds between two looks at a request's servers.
POLL = 0.5
#: A connection the API closed without answering (gunicorn closes idle
#: keep-alive connections, and a request sent on one as it does so gets no
#: response); during version discovery keystoneauth reports it as a
#: discovery failure.
DROPPED = (keystoneauth_exceptions.ConnectionError, keystoneauth_exceptions.DiscoveryFailure)
#: What a client rides out: an API answering with an error (a fault may take
#: it down for a while) or dropping the connection.
API_FAULTS = (openstack_exceptions.SDKException, *DROPPED)
#: Times an idempotent read is sent before a dropped connection is an error.
READ_TRIES = 3


def read(call: Callable[[], T]) -> T:
    """``call()``, a read the API may safely get twice, sent again when the
    connection drops before an answer (up to :data:`READ_TRIES` times)."""
    for _ in range(READ_TRIES - 1):
        try:
            return call()
        except DROPPED:
            time.sleep(POLL)
    return call()


@dataclasses.dataclass
class Outcome:
    asked: checker.Asked
    posted: float
    settled: float | None = None
    #: active, novalidhost, error, timeout
    result: str = "pending"
    servers: list[str] = dataclasses.field(default_factory=list)
    detail: str = ""
    #: Where each server landed, read once the request was ACTIVE.
    hosts: dict[str, str] = dataclasses.field(default_factory=dict)


def add_arguments(sub, func) -> None:
    parser = sub.add_parser(
        "stress",
        help="boot and delete servers concurrently, then check every invariant",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "--seconds",
        type=options.positive_float,
        default=60.0,
        help="load duration (default 60)",
    )
    parser.add_argument(
        "--clients", type=options.positive_int, default=4, help="concurrent clients (default 4)"
    )
    parser.add_argument(
        "--plugin",
        choices=("on", "off"),
        default=None,
        help="run with or without HpcPlacementFilter (restarts nova-scheduler if it changes)",
    )
    parser.add_argument(
        "--policy",
        choices=("reject", "degrade"),
        default=None,
        help="database_failure_policy of the schedulers (restarts nova-scheduler if it changes)",
    )
    parser.add_argument(
        "--interference-model",
        metavar="NAME",
        default=None,
        help="interference_model of the schedulers: cache-score, ivmp, ivmp-base, "
        "pair-forest, runtime-trees or a stored name (restarts nova-scheduler if it "
        "changes; a fitted kind not stored yet is fitted first)",
    )
    parser.add_argument(
        "--fairness",
        choices=fairshare.POLICIES,
        default=None,
        help="fairness_policy of the schedulers, with three projects given a share, run "
        "times and demand, and a first generation written before the load (restarts "
        "nova-scheduler if it changes)",
    )
    parser.add_argument(
        "--enforcement",
        choices=fairshare.ENFORCEMENTS,
        default=None,
        help="fairshare_enforcement of the schedulers under --fairness (restarts "
        "nova-scheduler if it changes)",
    )
    from devcloud import cli

    cli.add_reclaim_arguments(parser, default=False)
    parser.add_argument(
        "--measured",
        action="store_true",
        help="before the load, show measured cache pressure at work (a cloud up with "
        "--measured): a VM declared low that measures high takes co-runners under "
        "cache_pressure_source declared and not under measured, and the agent's measured "
        "rebalance brings a host back under beta within sustain plus one interval",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the random load")
    parser.add_argument(
        "--record",
        metavar="FILE",
        type=Path,
        default=None,
        help="write every placed request (what it asked for, where its VMs landed) and the "
        "cloud's domains to FILE as JSON, what the topology check judged",
    )
    parser.add_argument(
        "--keep-servers",
        action="store_true",
        help="leave the servers alive at the end (the next stress deletes them first)",
    )
    parser.add_argument(
        "--fault",
        choices=sorted(faults.FAULTS),
        action="append",
        default=[],
        help="inject a fault a third of the way into the load (repeatable)",
    )
    parser.set_defaults(func=func)


def random_request(
    rng: random.Random,
    tag: str,
    kinds=KINDS,
    *,
    project: str | None = None,
    applications: tuple[str, ...] = workload.APPLICATIONS,
    scores: tuple[int, ...] = workload.CACHE_SCORES,
    levels: tuple[str, ...] = (),
) -> tuple[checker.Asked, str]:
    """A request of ``project`` for one of ``applications`` with one of the
    cache ``scores``, and its flavor; an HPC request requires one of the
    topology ``levels`` now and then (:data:`TOPOLOGY_SHARE`)."""
    app_class = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
    size = rng.choice(sorted(workload.SIZES))
    if app_class is None:
        count = rng.randint(1, 2)
        flavor = rng.choice(sorted(workload.PLAIN_FLAVORS))
        vcpus = workload.PLAIN_FLAVORS[flavor][0]
        return checker.Asked(tag, None, 0.0, None, count, project, vcpus), flavor
    count = rng.randint(1, 2) if app_class is AppClass.EXTREME_HPC else rng.randint(1, 4)
    score = rng.choice(scores)
    name = rng.choice(applications)
    required = rng.choice(levels) if levels and rng.random() < TOPOLOGY_SHARE else None
    flavor = workload.flavor_name(app_class, score, size, required)
    vcpus = workload.SIZES[size][0]
    asked = checker.Asked(tag, app_class, float(score), name, count, project, vcpus, required)
    return asked, flavor


#: Names of the servers a stress boots: ``s<run>c<client>r<request>[-n]``.
SERVER_NAME = re.compile(r"^s[0-9a-f]{4}c[0-9]+r[0-9]+(-[0-9]+)?$")


class Client(threading.Thread):
    def __init__(
        self,
        index: int,
        run: Run,
        deadline: float,
        seed: int,
        ledger: list,
        prefix: str,
        kinds=KINDS,
        projects: tuple[fairshare.Project, ...] | None = None,
        started: float | None = None,
    ) -> None:
        super().__init__(name=f"stress-client-{index}", daemon=True)
        self.index = index
        # Without fair share two projects, as ever; with it, the trial's four.
        if projects:
            self.project = projects[index % len(projects)]
        else:
            self.project = fairshare.Project(f"stress-{index % 2}", None, None)
        self.prefix = prefix
        self.kinds = kinds
        self.run_ = run
        self.deadline = deadline
        #: When its first request goes (monotonic): the project may be idle a while.
        self.begin = 0.0
        if started is not None:
            self.begin = started + (deadline - started) * self.project.idle_share
        self.keep_alive = self.project.keep_alive or KEEP_ALIVE
        self.rng = random.Random(seed)
        self.ledger = ledger
        self.deleted: list[str] = []
        self.error: BaseException | None = None
        self.admin = None

    def run(self) -> None:
        try:
            self._load()
        except BaseException as error:  # reported by the main thread
            self.error = error

    def _load(self) -> None:
        conn = operator.connect(
            self.run_, project=self.project.name, user=f"user-{self.index}", admin=False
        )
        # A tenant does not see hosts; the operator's view tells where VMs landed.
        self.admin = operator.connect(self.run_)
        levels = workload.required_levels(self.run_.flavors)
        applications = (
            (self.project.application,) if self.project.application else workload.APPLICATIONS
        )
        scores = workload.CACHE_SCORES if self.project.weight is None else fairshare.CACHE_SCORES
        alive: collections.deque[Outcome] = collections.deque()
        number = 0
        time.sleep(max(0.0, min(self.begin, self.deadline) - time.monotonic()))
        while time.monotonic() < self.deadline:
            number += 1
            asked, flavor = random_request(
                self.rng,
                f"{self.prefix}c{self.index}r{number}",
                self.kinds,
                project=self.project.name,
                applications=applications,
                scores=scores,
                levels=levels,
            )
            try:
                outcome = self._boot(conn, asked, flavor)
            except API_FAULTS as error:
                # A fault may take an API down for a while: say so, go on.
                outcome = Outcome(asked, posted=time.monotonic(), settled=time.monotonic())
                outcome.result = "api-error"
                outcome.detail = str(error)[:300]
                time.sleep(1)
            self.ledger.append(outcome)
            if outcome.result == "active":
                alive.append(outcome)
            else:
                self._discard(conn, outcome)
            while len(alive) > self.keep_alive:
                self._discard(conn, alive.popleft())

    def _boot(self, conn, asked: checker.Asked, flavor: str) -> Outcome:
        outcome = Outcome(asked, posted=time.monotonic())
        hints = {"hpc_app_name": asked.app_name} if asked.app_name else {}
        conn.compute.create_server(
            name=asked.tag,
            image_id=self.run_.image_id,
            flavor_id=self.run_.flavors[flavor],
            networks="none",
            min_count=asked.count,
            max_count=asked.count,
            scheduler_hints=hints,
        )
        pattern = f"^{asked.tag}(-[0-9]+)?$"
        settled = await_request(conn, pattern, asked.count, outcome.posted + BUILD_TIMEOUT)
        outcome.servers, outcome.result, outcome.detail = settled
        if outcome.result == "active":
            outcome.hosts = self._hosts(pattern)
        outcome.settled = time.monotonic()
        return outcome

    def _hosts(self, pattern: str) -> dict[str, str]:
        """Each server's host, as the operator reads it (empty if the API fails)."""
        try:
            servers = read(
                lambda: list(
                    self.admin.compute.servers(details=True, all_projects=True, name=pattern)
                )
            )
            return {s.id: where(self.run_, s) for s in servers if where(self.run_, s)}
        except API_FAULTS:
            return {}

    def _discard(self, conn, outcome: Outcome) -> None:
        for uuid in outcome.servers:
            try:
                conn.compute.delete_server(uuid, ignore_missing=True)
            except API_FAULTS:
                # Deleted at the end, with the others still alive.
                continue
            self.deleted.append(uuid)


class Settled(NamedTuple):
    """What one request of ``count`` servers came to."""

    #: The servers' ids, as many as the API listed.
    servers: list[str]
    #: active, novalidhost, error or timeout.
    result: str
    #: The fault's message of a failed server, or what a timeout saw.
    detail: str


def await_request(conn, pattern: str, count: int, deadline: float) -> Settled:
    """Poll the servers named ``pattern`` until all ``count`` are ACTIVE, all
    are ACTIVE or ERROR with one ERROR, or ``deadline`` (monotonic) passes."""
    while True:
        servers = read(lambda: list(conn.compute.servers(details=True, name=pattern)))
        ids = [s.id for s in servers]
        states = {s.status for s in servers}
        if len(servers) == count and states == {"ACTIVE"}:
            return Settled(ids, "active", "")
        failed = [s for s in servers if s.status == "ERROR"]
        if failed and len(servers) == count and states <= {"ACTIVE", "ERROR"}:
            message = (failed[0].fault or {}).get("message", "")
            return Settled(ids, "novalidhost" if "No valid host" in message else "error", message)
        if time.monotonic() > deadline:
            return Settled(ids, "timeout", f"states {sorted(states)} after the build timeout")
        time.sleep(POLL)


def clear(conn, say: Say, timeout: float = 180.0) -> None:
    """Delete the servers of earlier stress runs and wait until they are gone.

    The checker judges the servers of one run; servers left from another
    would be co-runners it does not know.
    """
    left = [
        s.id
        for s in read(lambda: list(conn.compute.servers(all_projects=True)))
        if SERVER_NAME.match(s.name or "")
    ]
    if not left:
        return
    delete_and_wait(conn, left, timeout)
    say(f"deleted {len(left)} stress server(s)")


def delete_and_wait(conn, uuids: list[str], timeout: float = 180.0) -> None:
    """Delete the servers ``uuids`` (of any project) and wait until Nova lists none of them."""
    for uuid in uuids:
        conn.compute.delete_server(uuid, ignore_missing=True)
    remaining = set(uuids)
    deadline = time.monotonic() + timeout
    while remaining and time.monotonic() < deadline:
        remaining &= {s.id for s in read(lambda: list(conn.compute.servers(all_projects=True)))}
        if remaining:
            time.sleep(1)


def start_clients(
    run: Run,
    *,
    seconds: float,
    clients: int,
    seed: int,
    kinds=KINDS,
    projects: tuple[fairshare.Project, ...] | None = None,
) -> tuple[list[Client], list[Outcome], float]:
    """Start the clients; return them, their shared ledger and the start time.

    ``projects``: client i is ``projects[i % len(projects)]`` (None: two
    projects, neither with a share)."""
    prefix = f"s{secrets.token_hex(2)}"
    started = time.monotonic()
    ledger: list[Outcome] = []
    pool = [
        Client(i, run, started + seconds, seed + i, ledger, prefix, kinds, projects, started)
        for i in range(clients)
    ]
    for client in pool:
        client.start()
    return pool, ledger, started


#: Server states nothing more happens in: a reclaim stops or shelves a victim.
SETTLED = ("ACTIVE", "ERROR", "SHUTOFF", "SHELVED", "SHELVED_OFFLOADED")


def _settle(conn, deleted: set[str], timeout: float = 180.0) -> list:
    """Every server once deletions are done and nothing is building."""
    deadline = time.monotonic() + timeout
    while True:
        servers = read(lambda: list(conn.compute.servers(details=True, all_projects=True)))
        busy = [s for s in servers if s.id in deleted or s.status not in SETTLED]
        if not busy or time.monotonic() > deadline:
            return servers
        time.sleep(1)


def _harmful() -> frozenset[tuple[str, str]]:
    records = [
        InterferenceRecord(a, b, slow_a, slow_b, "measured")
        for a, b, slow_a, slow_b in workload.INTERFERENCES
    ]
    return InterferenceTable.from_records(records, config.INTERFERENCE_TOLERANCE).harmful


def percentile(values: list[float], fraction: float) -> float:
    """The value at ``fraction`` of the sorted values (nearest rank); NaN for none.

    The benchmarks print theirs with it too, so that their figures and the
    stress's are read alike.
    """
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summarise(ledger: list[Outcome], say: Say) -> None:
    for label, hpc in (("HPC", True), ("plain", False)):
        mine = [o for o in ledger if (o.asked.app_class is not None) == hpc]
        active = [o.settled - o.posted for o in mine if o.result == "active" and o.settled]
        results = collections.Counter(o.result for o in mine)
        say(
            f"{label}: {len(mine)} requests {dict(results)}; POST to ACTIVE "
            f"p50 {percentile(active, 0.5):.1f} s, p95 {percentile(active, 0.95):.1f} s"
        )
    for outcome in ledger:
        if outcome.result in ("error", "timeout"):
            say(f"  {outcome.result}: {outcome.asked.describe()}: {outcome.detail[:200]}")


#: Why the plugin refused a request, from the scheduler's log, most specific first.
REFUSALS = (
    ("beyond its entitlement", "fair share: beyond the project's entitlement"),
    ("database_failure_policy = reject", "plugin database down (reject)"),
    ("concurrent placements", "lost every race for its hosts"),
    ("dedicated hosts hold only", "ExtremeHPC: no host free to dedicate"),
    ("hpc:topology_required=", "no domain of the required level holds it"),
    ("fit within capacity", "room, cache thresholds or interference table"),
    ("invalid", "invalid extra spec or hint"),
    ("off plan", "Nova chose a host off the plan"),
)


def refusal_reasons(log: Path, offset: int) -> collections.Counter:
    """The plugin's refusals logged by nova-scheduler since ``offset``, by reason."""
    reasons: collections.Counter = collections.Counter()
    try:
        with log.open(errors="replace") as stream:
            stream.seek(offset)
            for line in stream:
                if "hpc-nova-scheduler: no placement" not in line and "refusing" not in line:
                    continue
                reason = next((label for key, label in REFUSALS if key in line), "other")
                reasons[reason] += 1
    except OSError:
        pass
    return reasons


def _log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


def _inject(name: str, run: Run, window: faults.Window, rng, say: Say, *, at: float) -> None:
    time.sleep(max(0.0, at - time.monotonic()))
    try:
        faults.FAULTS[name](run, window, rng, say)
    except Exception as error:
        window.detail = f"the fault itself failed: {error!r}"
        window.ended = window.ended or time.monotonic()
        say(f"fault {name}: {window.detail}")
    run.save()


def build_attempts(conn, server_id: str) -> list[str]:
    """The hosts each build of a server was tried on, from its instance actions.

    Nova's conductor rebuilds a VM whose build failed on one of the
    alternates the scheduler returned; each try is one
    ``compute__do_build_and_run_instance`` event of the ``create`` action.
    """
    hosts: list[str] = []
    try:
        for action in conn.compute.server_actions(server_id):
            if action.action != "create":
                continue
            detail = conn.compute.get_server_action(action.request_id, server_id)
            for event in detail.events or []:
                if event.get("event") == "compute__do_build_and_run_instance":
                    hosts.append(event.get("host") or "?")
    except API_FAULTS:
        return hosts
    return hosts


def report_window(
    window: faults.Window, ledger: list[Outcome], started: float, say: Say, conn=None
) -> None:
    """What became of the requests in flight while the fault lasted."""
    if not window.started:
        say(f"fault {window.name}: not injected ({window.detail})")
        return
    touched = [
        o
        for o in ledger
        if o.posted <= window.ended and (o.settled or window.ended) >= window.started
    ]
    results = collections.Counter(o.result for o in touched)
    retried = []
    if conn is not None:
        for outcome in touched:
            for server_id in outcome.servers:
                hosts = build_attempts(conn, server_id)
                if len(hosts) > 1:
                    retried.append(f"{server_id} ({' -> '.join(hosts)})")
    say(
        f"fault {window.name} from {window.started - started:.0f} s to "
        f"{window.ended - started:.0f} s: {window.detail}; requests in flight: "
        f"{len(touched)} {dict(results)}; servers built again on an alternate: "
        f"{len(retried)}"
    )
    for line in retried[:10]:
        say(f"  retried: {line}")


def _records_converge(run: Run, placed, alive: set[str], say: Say) -> list[str]:
    """app_running against Nova, once the schedulers' sweeps have had time.

    Records of servers deleted after the last request a scheduler worker
    handled are repaired by its next sweep, within ``reconcile_interval``.
    """
    database = db_api.Database(run.database_url("hpc"))
    deadline = time.monotonic() + 2 * run.reconcile_interval + 10
    try:
        while True:
            found = checker.record_mismatches(placed, alive, database.list_running())
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(2)
    finally:
        database.dispose()


def _use_interference_model(run: Run, name: str | None, say: Say) -> None:
    """Make the schedulers judge by ``name`` (None: keep the current model).

    The model is made usable first (profiles, and a fitted kind fitted and
    stored), so that no scheduler runs with a model it cannot apply; the
    profiles are imported before every load under a predictive model, in
    case the cloud was set up with older ones.
    """
    wanted = run.interference_model if name is None else name
    models.prepare(run, wanted, say)
    if wanted != run.interference_model:
        control.set_interference_model(run, wanted, say=say)


def _interference_violations(run: Run, placed, groups, say: Say) -> list[str]:
    """Shared hosts the interference model refuses as the load left them."""
    found, shared = checker.interference_violations(placed, models.judge(run), groups)
    say(
        f"interference model {run.interference_model}: {shared} shared hosts judged, "
        f"{len(found)} over the tolerance of {config.INTERFERENCE_TOLERANCE:g}% or unjudgeable"
    )
    return found


def _use_fairness(run: Run, args: argparse.Namespace, say: Say) -> None:
    """Make the schedulers share by ``--fairness``, ``--enforcement``,
    ``--reclaim`` and ``--reclaim-grace`` (each None: keep the current one),
    restarting them only for a change."""
    policy = getattr(args, "fairness", None) or run.fairness
    enforcement = getattr(args, "enforcement", None) or run.enforcement
    reclaim = getattr(args, "reclaim", None) or run.reclaim
    grace = getattr(args, "reclaim_grace", None)
    grace = run.reclaim_grace if grace is None else grace
    wanted = (policy, enforcement, reclaim, grace)
    if policy == "none" == run.fairness:
        # Not written while fair share is off: kept for a later --fairness.
        run.enforcement, run.reclaim, run.reclaim_grace = enforcement, reclaim, grace
        run.save()
    elif wanted != (run.fairness, run.enforcement, run.reclaim, run.reclaim_grace):
        control.set_fairness(
            run, policy, enforcement, say=say, reclaim=reclaim, reclaim_grace=grace
        )


def _fair_report(
    run: Run, placed: list, ledger: list[Outcome], found: fairshare.Generations, say: Say
) -> list[str]:
    """Entitlement violations of the load, and what each project got, under the
    generations ``found`` (from the one in force at the start to the last)."""
    trial = fairshare.trial(run.reclaim)
    projects = fairshare.governed(trial)
    violations = checker.entitlement_violations(
        placed,
        governed=projects,
        most=found.most,
        platform_of=found.platform_of,
        capacity=found.capacity,
        enforcement=run.enforcement,
    )
    numbers = found.numbers
    say(
        f"fair share: generations {numbers[0] if numbers else '-'} to "
        f"{numbers[-1] if numbers else '-'} in force during the load ({len(numbers)}); "
        f"platforms {found.capacity}"
    )
    for project in trial:
        mine = [o for o in ledger if o.asked.project == project.name]
        results = collections.Counter(o.result for o in mine if o.asked.app_class is not None)
        held: collections.Counter = collections.Counter()
        for server in placed:
            if server.asked.project == project.name and server.asked.app_class is not None:
                held[found.platform_of.get(server.host, "?")] += server.asked.vcpus
        entitled = found.most.get(project.name, {})
        cores = ", ".join(
            f"{p} {held.get(p, 0)}/{entitled.get(p, 0)}" for p in sorted(found.capacity)
        )
        share = "no share" if project.weight is None else f"weight {project.weight:g}"
        say(
            f"  {project.name} ({share}, {project.application or 'any application'}): HPC "
            f"requests {dict(results)}; cores held at the end / most entitled: {cores}"
        )
    return violations


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _reclaim_report(
    run: Run,
    watch: reclaims.Watch,
    platform_of: dict[str, str],
    ended_utc: datetime.datetime,
    say: Say,
) -> list[str]:
    """What the agent reclaimed during the load; the wrong victims (the stress fails on any)."""
    seen = list(watch.reclaims.values())
    states = collections.Counter(r.state for r in seen)
    wrong = checker.wrong_victims(
        seen, watch.loans, fairshare.governed(fairshare.trial(run.reclaim))
    )
    placed = watch.placed(platform_of)
    bound = config.fairshare_interval(run) + run.reclaim_grace
    unused, judged = checker.unused_reclaims(seen, placed, bound, ended_utc)
    interval = config.fairshare_interval(run)
    freed = checker.time_to_freed_cores(seen, placed, watch.refusals.values(), interval, bound)
    kinds = collections.Counter(loan.kind for loan in watch.loans.values())
    say(
        f"reclaim ({run.reclaim}, grace {run.reclaim_grace} s, fairshare_interval "
        f"{config.fairshare_interval(run)} s): {len(seen)} reclaims {dict(states)}; loans seen "
        f"{dict(kinds)} over {watch.looks} looks"
        + (f" ({watch.failed_looks} failed)" if watch.failed_looks else "")
    )
    by_pair = collections.Counter((r.project, r.beneficiary, r.platform) for r in seen)
    for (victim, beneficiary, platform), count in sorted(by_pair.items()):
        say(f"  {count} from {victim} for {beneficiary} on {platform}")
    say(
        f"reclaim: {len(wrong)} wrong victims; {len(unused)} of {judged} acted reclaims judged "
        f"freed room nobody used within {bound} s (interval + grace)"
    )
    if freed.seconds:
        values = list(freed.seconds)
        say(
            f"reclaim: time from unmet demand to freed cores p50 {percentile(values, 0.5):.0f} s, "
            f"p95 {percentile(values, 0.95):.0f} s, max {max(values):.0f} s over "
            f"{len(values)} acted reclaims; {freed.within} within one interval + grace "
            f"({bound} s)"
            + (
                f"; {freed.untimed} with no refusal still unmet when requested"
                if freed.untimed
                else ""
            )
        )
    else:
        say(
            "reclaim: no acted reclaim to time"
            + (
                f" ({freed.untimed} with no refusal still unmet when requested)"
                if freed.untimed
                else ""
            )
        )
    below, weighed = checker.victims_left_below(seen, watch.uses, watch.generations.values())
    say(
        f"reclaim: {len(below)} of {weighed} acted reclaims of borrowed VMs left their "
        "project below its entitlement, by the last look before they acted"
    )
    for line in unused[:10]:
        say(f"  unused: {line}")
    for line in below[:10]:
        say(f"  below: {line}")
    for line in freed.late[:10]:
        say(f"  later than interval + grace: {line}")
    ended = [r for r in sorted(seen, key=lambda r: r.id) if r.state in ("failed", "cancelled")]
    for record in ended[:10]:
        say(f"  {record.state}: reclaim {record.id}: {(record.error or '')[:200]}")
    return wrong


def placements(ledger: list[Outcome]) -> list[checker.Server]:
    """Every VM of every request placed during the load, where it landed then."""
    return [
        checker.Server(uuid, host, outcome.asked)
        for outcome in ledger
        if outcome.result == "active"
        for uuid, host in sorted(outcome.hosts.items())
    ]


def where(run: Run, server) -> str | None:
    """What the checks judge a server by: its node under ``up --nodes``
    (each node is a host state of its own to the plugin), else its host."""
    return server.hypervisor_hostname if run.nodes else server.compute_host


def domains_of(run: Run) -> dict[str, dict[str, str]]:
    """Each host (node, under ``--nodes``) -> level -> domain path."""
    return {name: place.domains for name, place in operator.node_places(run).items()}


def groups_of(run: Run) -> dict[str, str]:
    """Each host (node, under ``--nodes``) -> processor group."""
    return {name: place.cpu_group for name, place in operator.node_places(run).items()}


def _topology_report(run: Run, ledger: list[Outcome], say: Say) -> list[str]:
    """The placed requests with ``hpc:topology_required`` spanning domains."""
    topological = [o for o in ledger if o.asked.required is not None]
    if not topological:
        say(f"topology: no request required a level (levels {','.join(run.levels)})")
        return []
    results = collections.Counter(o.result for o in topological)
    by_level = collections.Counter(o.asked.required for o in topological)
    placed = [o for o in topological if o.result == "active"]
    unread = sum(1 for o in placed if len(o.hosts) != o.asked.count)
    found = checker.topology_violations(placements(ledger), domains_of(run))
    say(
        f"topology: {len(topological)} requests required a level "
        f"({', '.join(f'{level} {n}' for level, n in sorted(by_level.items()))}) "
        f"{dict(results)}; {len(placed) - unread} placed requests judged, {len(found)} "
        "spanning domains" + (f"; {unread} placed but their hosts unread" if unread else "")
    )
    return found


def write_record(path: Path, run: Run, ledger: list[Outcome]) -> None:
    """The placed requests and the cloud's domains, as JSON (:func:`checker.read_record`)."""
    checker.write_record(
        path,
        levels=run.levels,
        domains=domains_of(run),
        groups=groups_of(run),
        servers=placements(ledger),
    )


def main(run: Run, args: argparse.Namespace, say: Say) -> int:
    if args.plugin is not None and (args.plugin == "on") != run.plugin:
        control.set_plugin(run, args.plugin == "on", say=say)
    if args.policy is not None and args.policy != run.policy:
        control.set_policy(run, args.policy, say=say)
    _use_interference_model(run, getattr(args, "interference_model", None), say)
    _use_fairness(run, args, say)
    fair = run.plugin and run.fairness != "none"
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    say(
        f"{args.clients} clients for {args.seconds:g} s, plugin "
        f"{'on' if run.plugin else 'off'}, database_failure_policy {run.policy}, "
        f"interference_model {run.interference_model}, fairness_policy {run.fairness}"
        + (f" ({run.enforcement})" if run.fairness != "none" else "")
        + f", seed {seed}"
    )
    admin = operator.connect(run)
    clear(admin, say)
    measured_problems: list[str] = []
    if getattr(args, "measured", False):
        from devcloud import measured  # it uses this module's helpers

        measured_problems = measured.check(run, say)
    # After the clearing: the first generation sees none of the old servers.
    first_generation = fairshare.prepare(run, say) if fair else None
    scheduler_log = run.path / "logs" / "nova-scheduler.log"
    log_offset = _log_size(scheduler_log)
    watch = None
    if fair and run.reclaim != "off":
        watch = reclaims.Watch(run.database_url("hpc", as_plugin=False))
        watch.start()
    clients, ledger, started = start_clients(
        run,
        seconds=args.seconds,
        clients=args.clients,
        seed=seed,
        projects=fairshare.trial(run.reclaim) if fair else None,
    )
    windows = []
    injectors = []
    for number, name in enumerate(args.fault):
        window = faults.Window(name)
        windows.append(window)
        injector = threading.Thread(
            target=_inject,
            args=(name, run, window, random.Random(seed + 1000 + number), say),
            kwargs={"at": started + args.seconds / 3 * (1 + number / len(args.fault))},
            daemon=True,
        )
        injector.start()
        injectors.append(injector)
    for client in clients:
        client.join()
    ended_utc = _utc_now()
    for injector in injectors:
        injector.join()
    # Every placement is done: later generations held none of them.
    last_generation = 0
    if first_generation is not None:
        last_generation = fairshare.latest(run.database_url("hpc"))
    errors = [c.error for c in clients if c.error is not None]
    for error in errors:
        say(f"client failed: {error!r}")
    deleted = {uuid for c in clients for uuid in c.deleted}
    servers = _settle(admin, deleted)
    if watch is not None:
        watch.stop()
    asked_by_tag = {o.asked.tag: o.asked for o in ledger}
    placed = []
    for server in servers:
        tag = server.name.rsplit("-", 1)[0] if server.name not in asked_by_tag else server.name
        asked = asked_by_tag.get(tag)
        if server.status == "ACTIVE" and asked is not None and where(run, server):
            placed.append(checker.Server(server.id, where(run, server), asked))
    groups = groups_of(run)
    predictive = run.plugin and models.is_predictive(run.interference_model)
    violations = checker.host_violations(
        placed,
        alpha=config.ALPHA,
        beta=config.BETA,
        harmful=_harmful(),
        groups=groups,
        cache_thresholds=not predictive,
    )
    if predictive:
        violations += _interference_violations(run, placed, groups, say)
    topology = _topology_report(run, ledger, say)
    record = getattr(args, "record", None)
    if record is not None:
        write_record(record, run, ledger)
        say(f"placed requests and the cloud's domains written to {record}")
    entitlement: list[str] = []
    wrong_victims: list[str] = []
    if first_generation is not None:
        found = fairshare.generations(run.database_url("hpc"), first_generation, last_generation)
        entitlement = _fair_report(run, placed, ledger, found, say)
        if watch is not None:
            wrong_victims = _reclaim_report(run, watch, found.platform_of, ended_utc, say)
    mismatches: list[str] = []
    if run.plugin:
        mismatches = _records_converge(run, placed, {s.id for s in servers}, say)
    else:
        say("plugin off: app_running is not checked")
    summarise(ledger, say)
    reasons = refusal_reasons(scheduler_log, log_offset)
    if reasons:
        say(
            "refusals logged by the plugin: "
            + ", ".join(f"{label} {count}" for label, count in reasons.most_common())
        )
    for window in windows:
        report_window(window, ledger, started, say, admin)
    left_broken = [f"{w.name}: {p}" for w in windows for p in w.problems]
    for line in left_broken:
        say(f"fault left broken: {line}")
    for line in violations[:20]:
        say(f"violation: {line}")
    for line in topology[:20]:
        say(f"topology: {line}")
    for line in entitlement[:20]:
        say(f"entitlement: {line}")
    for line in mismatches[:20]:
        say(f"record: {line}")
    for line in wrong_victims[:20]:
        say(f"wrong victim: {line}")
    for line in measured_problems:
        say(f"measured: {line}")
    elapsed = time.monotonic() - started
    if not args.keep_servers:
        clear(admin, say)
    print(
        f"stress: {len(ledger)} requests, {sum(o.asked.count for o in ledger)} servers, "
        f"{len(violations)} invariant violations, {len(topology)} topology violations, "
        f"{len(entitlement)} entitlement violations, "
        f"{len(mismatches)} record mismatches, {elapsed:.0f} s",
        flush=True,
    )
    failed = violations or topology or entitlement or mismatches or wrong_victims
    failed = failed or measured_problems
    return 1 if failed or errors or left_broken else 0
