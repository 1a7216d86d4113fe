"""Concurrent scheduling requests against one plugin database, and a checker.

Nova's scheduler is simulated closely enough for ``HpcPlacementFilter``: a
multi-create request calls ``filter_all`` once per instance, the first time
with every candidate host, then with the previous round's answer reordered so
that the host Nova chose comes first. Nothing reaches a compute, so Nova's
database (:class:`FakeNova`) shows every instance as still building until the
test deletes it or its request fails.

While requests run, every accepted request gets a lifetime: it counts from
the moment its last round returned until the moment the test starts deleting
it. A correct scheduler never lets requests that are alive at the same time
break an invariant, whatever order their rounds interleaved in; the checker
replays those lifetimes and also inspects the final ``app_running`` table.

:func:`run_processes` runs the requests in spawned worker processes (the
entry point must be importable, for the ``spawn`` start method).
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import queue
import random
import sys
import threading
import time
import traceback
import types
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from devcloud import checker
from hpc_nova_scheduler.core.criteria import InterferenceTable
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord
from hpc_nova_scheduler.db import api as db_api

ALPHA = 100.0
BETA = 60.0
TOLERANCE = 10.0
EPSILON = 1e-6

#: 8 hosts, 2 racks, 2 processor groups that cut across the racks.
RACKS = {"rack-a": ("n1", "n2", "n3", "n4"), "rack-b": ("n5", "n6", "n7", "n8")}
CPU_GROUPS = {"skylake": ("n1", "n2", "n5", "n6"), "icelake": ("n3", "n4", "n7", "n8")}
#: Big enough that capacity never limits (Placement guards it in Nova).
VCPUS = 64
RAM_MB = 256 * 1024
DISK_GB = 4000
#: Every request's flavor.
FLAVOR_VCPUS = 2
FLAVOR_RAM_MB = 2048
FLAVOR_DISK_GB = 10

APP_NAMES = ("LU", "CG", "FT", "MG", "EP", "IS")
#: Harmful (slowdown above the tolerance) and harmless records.
INTERFERENCES = (
    InterferenceRecord("CG", "MG", 35.0, 2.0),
    InterferenceRecord("FT", "IS", 4.0, 28.0),
    InterferenceRecord("EP", "LU", 12.5, 11.0),
    InterferenceRecord("CG", "LU", 3.0, 4.0),
    InterferenceRecord("EP", "FT", 1.0, 0.5),
)
CLASS_WEIGHTS = (
    (AppClass.SYNC_HPC, 30),
    (AppClass.ASYNC_HPC, 30),
    (AppClass.NON_HPC, 28),
    (AppClass.EXTREME_HPC, 12),
)

#: Instance states in the fake Nova.
BUILDING = "building"
ERROR = "error"
DELETED = "deleted"


def harmful_pairs() -> frozenset[tuple[str, str]]:
    return InterferenceTable.from_records(INTERFERENCES, TOLERANCE).harmful


def host_groups() -> dict[str, str]:
    return {host: group for group, hosts in CPU_GROUPS.items() for host in hosts}


def prepare_database(url: str) -> None:
    """Schema, profiles of the applications, interference records."""
    database = db_api.Database(url)
    try:
        database.sync()
        database.import_profiles(
            [ProfileRecord(name, AppClass.ASYNC_HPC, 20.0) for name in APP_NAMES]
        )
        database.import_interferences(list(INTERFERENCES))
    finally:
        database.dispose()


# -- the cloud ---------------------------------------------------------------


def host_states() -> list[types.SimpleNamespace]:
    """Nova host states of the cloud, empty, with every attribute read.

    Consistent for both readings of a host's capacity: Nova's own counters
    and the allocation candidates Placement returned for the request.
    """
    rack_of = {host: rack for rack, hosts in RACKS.items() for host in hosts}
    group_of = host_groups()
    states = []
    for name in sorted(rack_of):
        rp_uuid = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.hpc-concurrency"))
        states.append(
            types.SimpleNamespace(
                host=name,
                nodename=name,
                uuid=rp_uuid,
                cell_uuid=None,
                aggregates=[
                    types.SimpleNamespace(metadata={"hpc:rack": rack_of[name]}),
                    types.SimpleNamespace(metadata={"hpc:cpu_group": group_of[name]}),
                ],
                cpu_info=json.dumps({"vendor": "Intel", "model": group_of[name]}),
                vcpus_total=VCPUS,
                vcpus_used=0,
                cpu_allocation_ratio=1.0,
                total_usable_ram_mb=RAM_MB,
                free_ram_mb=RAM_MB,
                ram_allocation_ratio=1.0,
                total_usable_disk_gb=DISK_GB,
                free_disk_mb=DISK_GB * 1024,
                disk_mb_used=0,
                disk_allocation_ratio=1.0,
                instances={},
                allocation_candidates=[
                    {
                        "allocations": {
                            rp_uuid: {
                                "resources": {
                                    "VCPU": FLAVOR_VCPUS,
                                    "MEMORY_MB": FLAVOR_RAM_MB,
                                    "DISK_GB": FLAVOR_DISK_GB,
                                }
                            }
                        },
                        "mappings": {},
                    }
                ],
            )
        )
    return states


# -- the requests ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Request:
    """One multi-create request: ``len(uuids)`` VMs of one application."""

    index: int
    uuids: tuple[str, ...]
    app_class: AppClass
    cache_score: float
    app_name: str

    @property
    def required_rack(self) -> bool:
        """Every third request asks ``hpc:topology_required=rack``."""
        return self.index % 3 == 0

    @property
    def extra_specs(self) -> dict[str, str]:
        specs = {
            "hpc:app_class": self.app_class.value,
            "hpc:cache_score": f"{self.cache_score:g}",
            "hpc:app_name": self.app_name,
        }
        if self.required_rack:
            specs["hpc:topology_required"] = "rack"
        return specs

    def describe(self) -> str:
        return (
            f"r{self.index}({self.app_class.value} {self.app_name} "
            f"{len(self.uuids)}x{self.cache_score:g})"
        )


def make_requests(count: int, seed: int) -> list[Request]:
    rng = random.Random(seed)
    classes = [cls for cls, _ in CLASS_WEIGHTS]
    weights = [weight for _, weight in CLASS_WEIGHTS]
    requests = []
    for index in range(count):
        app_class = rng.choices(classes, weights)[0]
        vms = rng.randint(1, 2) if app_class is AppClass.EXTREME_HPC else rng.randint(2, 4)
        requests.append(
            Request(
                index=index,
                uuids=tuple(
                    str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(vms)
                ),
                app_class=app_class,
                cache_score=float(rng.randint(10, 45)),
                app_name=rng.choice(APP_NAMES),
            )
        )
    return requests


def request_spec(request: Request) -> Any:
    """A fresh RequestSpec, as nova-conductor builds one per request."""
    from nova import objects

    flavor = objects.Flavor(
        name=f"hpc-{request.index}",
        flavorid=f"hpc-{request.index}",
        vcpus=FLAVOR_VCPUS,
        memory_mb=FLAVOR_RAM_MB,
        root_gb=FLAVOR_DISK_GB,
        ephemeral_gb=0,
        swap=0,
        extra_specs=request.extra_specs,
    )
    return objects.RequestSpec(
        flavor=flavor,
        num_instances=len(request.uuids),
        instance_uuid=request.uuids[0],
        project_id="p",
        user_id="u",
        scheduler_hints={},
        instance_group=None,
        is_bfv=False,
    )


# -- Nova ---------------------------------------------------------------------


class FakeNova:
    """Nova's database as the filter reads it (``CoRunnerSource.nova``).

    Every instance of the run is known from the start as building and not
    on any compute; the test marks instances failed or deleted.
    """

    def __init__(self, requests: Iterable[Request]) -> None:
        self._specs = {u: r.extra_specs for r in requests for u in r.uuids}
        self._states: dict[str, str] = {}
        self._lock = threading.Lock()

    def mark(self, uuids: Iterable[str], state: str) -> None:
        with self._lock:
            self._states.update(dict.fromkeys(uuids, state))

    def _instance(self, uuid_: str) -> types.SimpleNamespace:
        state = self._states.get(uuid_, BUILDING)
        return types.SimpleNamespace(
            uuid=uuid_,
            host=None,
            vm_state=state,
            deleted=state == DELETED,
            project_id="p",
            flavor=types.SimpleNamespace(extra_specs=dict(self._specs[uuid_])),
        )

    def scheduling(self, uuids: Sequence[str]) -> set[str]:
        # Every instance of the run exists from the start.
        return set()

    def get(self, uuids_by_cell: Mapping[str | None, Sequence[str]]) -> dict[str, Any]:
        with self._lock:
            return {
                u: self._instance(u)
                for uuids in uuids_by_cell.values()
                for u in uuids
                if u in self._specs
            }


# -- running requests ---------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    """What Nova made of one request; times are ``time.time()``."""

    index: int
    accepted: bool
    hosts: list[str] = dataclasses.field(default_factory=list)
    #: When its last round returned (accepted requests).
    placed_at: float | None = None
    #: When the test started deleting it (None: still alive at the end).
    deleted_at: float | None = None


def schedule(
    flt: Any, hosts: list[Any], request: Request, nova: FakeNova, rng: random.Random
) -> Outcome:
    """Nova's loop over the instances of one request."""
    spec = request_spec(request)
    candidates = list(hosts)
    chosen: list[str] = []
    for number, instance_uuid in enumerate(request.uuids):
        if number:
            # Nova weighs, claims in Placement and builds selections between rounds.
            time.sleep(rng.uniform(0.0, 0.002))
        spec.instance_uuid = instance_uuid
        if not flt.run_filter_for_index(number):
            returned = candidates
        else:
            returned = list(flt.filter_all(candidates, spec) or [])
        if not returned:
            nova.mark(request.uuids, ERROR)
            return Outcome(request.index, accepted=False)
        pick = returned[0]
        chosen.append(pick.host)
        candidates = [pick] + [hs for hs in returned if hs is not pick]
    return Outcome(request.index, accepted=True, hosts=chosen, placed_at=time.time())


def run_threads(
    flt: Any,
    hosts: list[Any],
    requests: Sequence[Request],
    nova: FakeNova,
    *,
    threads: int,
    seed: int,
    keep_alive: int,
    timeout: float,
) -> tuple[list[Outcome], list[str]]:
    """Run ``requests`` from ``threads`` threads sharing ``flt``.

    Whenever more than ``keep_alive`` accepted requests of this run are
    alive, a random one is deleted, so that the cloud keeps room and
    requests keep competing for it. Returns the outcomes and the errors
    (exceptions, hung threads).
    """
    work: queue.Queue[Request] = queue.Queue()
    for request in requests:
        work.put(request)
    outcomes: list[Outcome] = []
    errors: list[str] = []
    alive: list[Outcome] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads)
    requests_by_index = {r.index: r for r in requests}

    def delete_some(rng: random.Random) -> None:
        with lock:
            if len(alive) <= keep_alive:
                return
            victim = alive.pop(rng.randrange(len(alive)))
            # The lifetime ends before Nova shows the deletion.
            victim.deleted_at = time.time()
        nova.mark(requests_by_index[victim.index].uuids, DELETED)

    def worker(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        try:
            barrier.wait(timeout=timeout)
            while True:
                try:
                    request = work.get_nowait()
                except queue.Empty:
                    return
                outcome = schedule(flt, hosts, request, nova, rng)
                with lock:
                    outcomes.append(outcome)
                    if outcome.accepted:
                        alive.append(outcome)
                delete_some(rng)
        except Exception as error:  # reported, not raised: the thread is not joined by testtools
            with lock:
                errors.append(f"thread {number}: {type(error).__name__}: {error}")

    pool = [
        threading.Thread(target=worker, args=(n,), name=f"hpc-request-{n}", daemon=True)
        for n in range(threads)
    ]
    for thread in pool:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in pool:
        thread.join(max(0.0, deadline - time.monotonic()))
    hung = [thread.name for thread in pool if thread.is_alive()]
    with lock:
        if hung:
            errors.append(f"threads still running after {timeout:g} s: {', '.join(hung)}")
        return list(outcomes), list(errors)


def configure(conf: Any, url: str) -> None:
    conf.set_override("cache_threshold", ALPHA, group="hpc_scheduler")
    conf.set_override("sync_cache_threshold", BETA, group="hpc_scheduler")
    conf.set_override("interference_tolerance", TOLERANCE, group="hpc_scheduler")
    conf.set_override("connection", url, group="hpc_scheduler")
    conf.set_override("database_failure_policy", "reject", group="hpc_scheduler")
    # The database never fails here; no process writes a fallback copy.
    conf.set_override("fallback_connection", "", group="hpc_scheduler")


def new_filter(nova: FakeNova) -> Any:
    from hpc_nova_scheduler.scheduler import placement_filter

    flt = placement_filter.HpcPlacementFilter()
    flt._source.nova = nova
    return flt


def run_worker(
    url: str,
    requests: Sequence[Request],
    everyone: Sequence[Request],
    threads: int,
    seed: int,
    keep_alive: int,
    timeout: float,
) -> tuple[list[Outcome], list[str]]:
    """A nova-scheduler worker: one filter, its own host states and Nova view.

    ``everyone`` are the requests of every process, whose instances this
    process's Nova knows about (as building: it never hears of the other
    processes' deletions, which only makes it cautious).
    """
    from nova import objects

    from hpc_nova_scheduler import conf as hpc_conf

    objects.register_all()
    configure(hpc_conf.CONF, url)
    nova = FakeNova(everyone)
    flt = new_filter(nova)
    try:
        outcomes, errors = run_threads(
            flt,
            host_states(),
            requests,
            nova,
            threads=threads,
            seed=seed,
            keep_alive=keep_alive,
            timeout=timeout,
        )
    finally:
        dispose(flt)
    if _green():
        errors.append("the worker's threads were eventlet green threads, not OS threads")
    return outcomes, errors


def _green() -> bool:
    patcher = sys.modules.get("eventlet.patcher")
    return bool(patcher and patcher.is_monkey_patched("thread"))


def _child(connection: Any, *args: Any) -> None:
    """Entry point of a spawned worker process: the answer goes up the pipe."""
    # stdout may be the test runner's subunit stream: keep it clean.
    os.dup2(2, 1)
    try:
        answer = run_worker(*args)
    except BaseException as error:  # reported to the parent, whatever it is
        answer = ([], [f"{type(error).__name__}: {error}\n{traceback.format_exc()}"])
    try:
        connection.send(answer)
    finally:
        connection.close()


def run_processes(
    url: str,
    shares: Sequence[Sequence[Request]],
    *,
    threads: int,
    seed: int,
    keep_alive: int,
    timeout: float,
) -> tuple[list[Outcome], list[str]]:
    """One spawned worker process per share of the requests, all at once.

    Clean interpreters: test runners that imported Nova's functional tests
    have eventlet monkey-patching in force, under which threads would be
    green; nova-scheduler runs native threads. Workers that do not answer in
    time are killed and reported.
    """
    context = multiprocessing.get_context("spawn")
    everyone = [request for share in shares for request in share]
    workers = []
    for number, share in enumerate(shares):
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(
            target=_child,
            args=(sender, url, share, everyone, threads, seed + number, keep_alive, timeout),
            name=f"hpc-scheduler-{number}",
            daemon=True,
        )
        process.start()
        sender.close()
        workers.append((number, process, receiver))
    # Room for the workers to import Nova before their own timeout starts.
    deadline = time.monotonic() + timeout + 60.0
    outcomes: list[Outcome] = []
    errors: list[str] = []
    for number, process, receiver in workers:
        try:
            if receiver.poll(max(0.0, deadline - time.monotonic())):
                done, failed = receiver.recv()
                outcomes.extend(done)
                errors.extend(f"process {number}: {error}" for error in failed)
            else:
                errors.append(f"process {number} did not answer in time")
        except EOFError:
            errors.append(f"process {number} died without answering")
        finally:
            receiver.close()
            process.join(max(1.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(5.0)
        if process.exitcode:
            errors.append(f"process {number} exited with {process.exitcode}")
    return outcomes, errors


def dispose(flt: Any) -> None:
    """Close the filter's database connections."""
    flt._database.dispose()


# -- the checker --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Placed:
    """One VM on one host, as the checker sees it."""

    host: str
    request: Request
    cache_score: float


def host_violations(
    placed: Iterable[Placed], harmful: frozenset[tuple[str, str]], when: str
) -> list[str]:
    """alpha, beta, ExtremeHPC dedication and the interference table, per host.

    The same checker that judges a stress on the real control plane
    (:func:`devcloud.checker.host_violations`); processor groups are
    checked per request by :func:`check`.
    """
    servers = [
        checker.Server(
            f"{vm.request.index}:{number}",
            vm.host,
            checker.Asked(
                f"r{vm.request.index}",
                vm.request.app_class,
                vm.cache_score,
                vm.request.app_name,
                len(vm.request.uuids),
            ),
        )
        for number, vm in enumerate(placed)
    ]
    found = checker.host_violations(servers, alpha=ALPHA, beta=BETA, harmful=harmful, groups={})
    return [f"{when}: {line}" for line in found]


def check(
    requests: Sequence[Request],
    outcomes: Sequence[Outcome],
    rows: Sequence[db_api.RunningRecord],
) -> tuple[list[str], dict[str, int]]:
    """Every violation of the invariants, and counts for the record."""
    harmful = harmful_pairs()
    group_of = host_groups()
    by_index = {r.index: r for r in requests}
    request_of = {u: r for r in requests for u in r.uuids}
    violations: list[str] = []

    seen = {o.index for o in outcomes}
    missing = [r.index for r in requests if r.index not in seen]
    if missing:
        violations.append(f"{len(missing)} requests never finished: {missing[:10]}")
    accepted = [o for o in outcomes if o.accepted]

    # Homogeneity: one processor group per HPC application.
    for outcome in accepted:
        request = by_index[outcome.index]
        groups = sorted({group_of[h] for h in outcome.hosts})
        if request.app_class.is_hpc and len(groups) > 1:
            violations.append(
                f"{request.describe()} spans processor groups {groups}: {outcome.hosts}"
            )

    # hpc:topology_required=rack: one rack per request, whatever raced with it.
    rack_of = {host: rack for rack, hosts in RACKS.items() for host in hosts}
    for outcome in accepted:
        request = by_index[outcome.index]
        racks = sorted({rack_of[h] for h in outcome.hosts})
        if request.required_rack and len(racks) > 1:
            violations.append(f"{request.describe()} spans racks {racks}: {outcome.hosts}")

    # Requests alive at the same time, at every moment one was placed.
    timeline: list[str] = []
    for moment in sorted(o.placed_at for o in accepted if o.placed_at is not None):
        alive = [
            o
            for o in accepted
            if o.placed_at is not None
            and o.placed_at <= moment
            and (o.deleted_at is None or o.deleted_at > moment)
        ]
        placed = [
            Placed(host, by_index[o.index], by_index[o.index].cache_score)
            for o in alive
            for host in o.hosts
        ]
        for violation in host_violations(placed, harmful, "alive together"):
            if violation not in timeline:
                timeline.append(violation)
    violations.extend(timeline)

    # The final app_running table: nothing lost, nothing unknown, invariants.
    final = [o for o in accepted if o.deleted_at is None]
    rows_by_uuid: dict[str, db_api.RunningRecord] = {}
    for row in rows:
        if row.instance_uuid not in request_of:
            violations.append(f"app_running has an unknown instance {row.instance_uuid}")
        else:
            rows_by_uuid[row.instance_uuid] = row
    placed = []
    for outcome in final:
        request = by_index[outcome.index]
        recorded = [rows_by_uuid[u] for u in request.uuids if u in rows_by_uuid]
        if len(recorded) != len(request.uuids):
            violations.append(
                f"{request.describe()} accepted on {outcome.hosts} but "
                f"{len(recorded)} of {len(request.uuids)} VMs are in app_running"
            )
        if sorted(row.host for row in recorded) != sorted(outcome.hosts[: len(recorded)]) and (
            len(recorded) == len(request.uuids)
        ):
            violations.append(
                f"{request.describe()} placed on {sorted(outcome.hosts)} but recorded on "
                f"{sorted(row.host for row in recorded)}"
            )
        for row in recorded:
            if (
                row.app_class is not request.app_class
                or abs(row.cache_score - request.cache_score) > EPSILON
            ):
                violations.append(
                    f"{request.describe()}: {row.instance_uuid} recorded as "
                    f"{row.app_class.value} {row.cache_score:g}"
                )
            placed.append(Placed(row.host, request, row.cache_score))
    violations.extend(host_violations(placed, harmful, "final app_running"))

    stats = {
        "requests": len(requests),
        "accepted": len(accepted),
        "refused": sum(1 for o in outcomes if not o.accepted),
        "required rack accepted": sum(1 for o in accepted if by_index[o.index].required_rack),
        "deleted": sum(1 for o in accepted if o.deleted_at is not None),
        "alive at the end": len(final),
        "rows": len(rows),
    }
    return violations, stats


#: Kinds of violation, by a phrase of their message.
KINDS = (
    ("alpha exceeded", "> alpha"),
    ("beta exceeded", "> beta"),
    ("ExtremeHPC host shared", "ExtremeHPC host shared"),
    ("harmful pair on one host", "harmful pair"),
    ("spans processor groups", "spans processor groups"),
    ("spans racks (topology required)", "spans racks"),
    ("VMs missing from app_running", "are in app_running"),
    ("recorded elsewhere or otherwise", "recorded"),
    ("unknown rows", "unknown instance"),
)


def kind(violation: str) -> str:
    where = "final app_running: " if violation.startswith("final app_running") else ""
    for label, phrase in KINDS:
        if phrase in violation:
            return where + label
    return "errors"


def report(violations: Sequence[str], stats: Mapping[str, Any], examples: int = 4) -> str:
    """Counts per kind of violation, then a few examples of each."""
    by_kind: dict[str, list[str]] = {}
    for violation in violations:
        by_kind.setdefault(kind(violation), []).append(violation)
    lines = [", ".join(f"{k}: {v}" for k, v in stats.items())]
    lines.append(f"{len(violations)} invariant violation(s):")
    lines.extend(f"  {len(found):4d} {label}" for label, found in by_kind.items())
    for label, found in by_kind.items():
        lines.append(f"{label}, e.g.:")
        lines.extend(f"  {v}" for v in found[:examples])
    return "\n".join(lines)
