"""Fair share inside nova-scheduler (seed 002): the allocator and the entitlements.

A **platform** is a processor group (``hpc:cpu_group``, or the group of a
compute node's ``cpu_info``); the aggregate key ``hpc:platform`` overrides
it. A **project** with a share (``fairshare share set``) is governed: its
HPC requests are held to its entitlements. Projects without a share, and
requests without ``hpc:`` extra specs or hint, are placed as before.

Two parts, both in every scheduler worker:

* :class:`Allocator`, a thread that runs seed 002's two levels in exactly
  one worker at a time: the holder of the ``fairshare_lease`` row. Every
  :data:`CHECK_SECONDS` it renews the lease, reads the inputs (shares,
  demand, the VMs recorded per project and platform, refusals for
  entitlement) and runs when ``fairshare_interval`` has passed or the
  inputs changed. A run charges the usage of the elapsed time, decays it,
  and writes a generation: entitlements and node templates. A worker that
  dies stops renewing: another takes the lease :data:`LEASE_SECONDS` later.
* :class:`Entitlements`, the filter's view of the latest generation, read
  at most every :data:`REFRESH_SECONDS` per process. :func:`choices` turns
  it into the platforms a request may go to, highest affinity first, each
  with the hosts that follow the node templates, and the check that runs
  under the platform's lock when the plan is claimed
  (:meth:`Database.claim`): two workers never spend one entitlement, or
  one idle core, twice.

Entitlements expire: a generation older than two intervals (the allocator
missed one whole interval) no longer holds, and the filter places as if
``fairness_policy`` were ``none``, saying so once in its log.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import os
import socket
import statistics
import threading
import time
import uuid as uuid_lib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.sharing import Platform, SharingError
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare import entitlements as live
from hpc_nova_scheduler.fairshare.allocator import TwoLevel
from hpc_nova_scheduler.fairshare.combinations import CombinationTable

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF

PLATFORM_KEY = "hpc:platform"
#: Seconds between two looks of a worker's allocator thread at the lease.
CHECK_SECONDS = 2.0
#: Seconds a lease lasts without renewal: a dead worker's passes on after this.
LEASE_SECONDS = 20.0
#: Seconds a read of the latest generation serves one process's requests.
REFRESH_SECONDS = 2.0
#: Generations kept in the database (``fairshare show`` reads the newest).
KEEP_GENERATIONS = 100


class FairshareError(ValueError):
    """The cloud cannot be shared as it is tagged: one line naming the host or platform."""


# -- the options -----------------------------------------------------------

_REPORTED: set[str] = set()
_REPORTED_LOCK = threading.Lock()


def _once(message: str, level: int = logging.ERROR) -> None:
    with _REPORTED_LOCK:
        if message in _REPORTED:
            return
        _REPORTED.add(message)
    LOG.log(level, "hpc-nova-scheduler: %s", message)


def settings() -> hpc_conf.FairnessSettings | None:
    """The fair-share options; None when off, or when one is bad (logged once)."""
    try:
        return hpc_conf.fairness_settings(CONF)
    except hpc_conf.ConfigurationError as error:
        _once(f"{error}; fair share stays off, HPC placement goes on without it")
        return None


def _policy_is_none() -> bool:
    try:
        return CONF.hpc_scheduler.fairness_policy == hpc_conf.NO_FAIRNESS
    except ValueError:
        return False  # a bad value: settings() says which, once


def change_gap(options: hpc_conf.FairnessSettings) -> float:
    """Seconds between two runs that changed inputs trigger."""
    return max(CHECK_SECONDS, options.interval / 30.0)


def two_level(options: hpc_conf.FairnessSettings) -> TwoLevel:
    return TwoLevel(
        first=options.first_level,
        second=options.corunner_policy,
        metric=options.platform_affinity,
        corunner=options.corunner_affinity,
        top_percent=options.top_percent,
        core_unit=options.core_unit,
        node_unit=options.node_unit,
    )


# -- platforms ---------------------------------------------------------------


def _one(host: str, key: str, values: Iterable[str]) -> str | None:
    found = sorted(set(values))
    if len(found) > 1:
        raise FairshareError(f"host {host} is in two platforms by {key}: {', '.join(found)}")
    return found[0] if found else None


def platform_of(host: str, tags: Mapping | None, cpu_info: Any) -> str:
    """A host's platform: ``hpc:platform``, else ``hpc:cpu_group``, else its ``cpu_info``."""
    # Imported here: host_view imports Nova, which the fair-share commands
    # that only read the plugin database (show, report) do without.
    from hpc_nova_scheduler.scheduler import host_view

    mine = (tags or {}).get(host, {})
    for key in (PLATFORM_KEY, host_view.CPU_GROUP_KEY):
        value = _one(host, key, mine.get(key, ()))
        if value is not None:
            return value
    return host_view.cpu_group_from_cpu_info(cpu_info)


@dataclasses.dataclass(frozen=True)
class Node:
    """A compute node as the allocator counts it."""

    host: str
    nodename: str | None
    vcpus: int
    cpu_info: Any = None

    @property
    def key(self) -> str:
        return db_api.host_key(self.host, self.nodename)


@dataclasses.dataclass(frozen=True)
class Cloud:
    """The platforms and which host is on which."""

    platforms: tuple[Platform, ...]
    #: host key -> platform
    platform_of: Mapping[str, str]
    #: platform -> its host names (what claims lock and count)
    hosts: Mapping[str, tuple[str, ...]]
    #: platform -> its host keys
    keys: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        # Derived here, once per cloud: requests ask for a platform's hosts.
        members: dict[str, set[str]] = collections.defaultdict(set)
        for key, platform in self.platform_of.items():
            members[platform].add(key)
        object.__setattr__(self, "keys", {p: frozenset(k) for p, k in members.items()})

    def cores(self, platform: str) -> int:
        return next((p.cores for p in self.platforms if p.name == platform), 0)


def build_cloud(nodes: Iterable[Node], tags: Mapping | None) -> Cloud:
    """Group the compute nodes into platforms; FairshareError for a host in two
    platforms or a platform with no cores.

    A platform's nodes should be identical; where their vCPUs differ it
    counts as that many nodes of the most common size, so its cores are
    what its nodes hold (:class:`Platform` has one node size).
    """
    members: dict[str, list[Node]] = collections.defaultdict(list)
    for node in nodes:
        members[platform_of(node.host, tags, node.cpu_info)].append(node)
    platforms = []
    for name, found in sorted(members.items()):
        total = sum(max(node.vcpus, 0) for node in found)
        if total <= 0:
            raise FairshareError(f"platform {name} has no cores ({len(found)} hosts, 0 vCPUs)")
        size = statistics.mode(node.vcpus for node in found if node.vcpus > 0)
        platforms.append(Platform(name, nodes=max(total // size, 1), cores_per_node=size))
    return Cloud(
        platforms=tuple(platforms),
        platform_of={node.key: name for name, found in members.items() for node in found},
        hosts={
            name: tuple(sorted({node.host for node in found})) for name, found in members.items()
        },
    )


def cloud_as_json(cloud: Cloud) -> dict:
    """The platforms of a generation, stored with it: the filter reads no compute nodes."""
    return {
        "platforms": [[p.name, p.nodes, p.cores_per_node] for p in cloud.platforms],
        "hosts": dict(sorted(cloud.platform_of.items())),
    }


def cloud_from_json(stored: Mapping) -> Cloud:
    platforms = tuple(Platform(name, nodes, size) for name, nodes, size in stored["platforms"])
    platform_of = dict(stored["hosts"])
    hosts: dict[str, set[str]] = collections.defaultdict(set)
    for key, platform in platform_of.items():
        # A host key is the host's name, with "/node" where they differ.
        hosts[platform].add(key.split("/", 1)[0])
    return Cloud(platforms, platform_of, {p: tuple(sorted(h)) for p, h in hosts.items()})


def nova_nodes() -> list[Node]:
    """Every compute node of every cell, as Nova's cell databases hold them."""
    from nova import context as nova_context
    from nova import objects

    ctxt = nova_context.get_admin_context()
    results = nova_context.scatter_gather_skip_cell0(ctxt, objects.ComputeNodeList.get_all)
    nodes = []
    for cell, result in results.items():
        if nova_context.is_cell_failure_sentinel(result):
            raise FairshareError(f"cell {cell} did not answer for its compute nodes")
        for node in result:
            if getattr(node, "deleted", False):
                continue
            nodes.append(
                Node(node.host, node.hypervisor_hostname, int(node.vcpus or 0), node.cpu_info)
            )
    return nodes


# -- the allocator's inputs and one run --------------------------------------


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What one allocator run reads."""

    cloud: Cloud
    projects: tuple[live.ProjectView, ...]
    runs: tuple[live.Run, ...]
    #: Recorded VMs of governed projects on known hosts (for usage).
    records: tuple[db_api.RunningRecord, ...]
    #: The run times of the projects' applications on the cloud's platforms.
    table: CombinationTable

    def digest(self, options: hpc_conf.FairnessSettings) -> str:
        return live.digest(
            options,
            self.cloud.platforms,
            [(p.name, p.weight, p.demand, p.running_cores, p.application) for p in self.projects],
            [dataclasses.astuple(run) for run in self.runs],
        )


def read_inputs(
    database: db_api.Database, cloud: Cloud, interval: float, now: datetime.datetime
) -> Inputs:
    shares = database.shares()
    declared = database.demand()
    records = [
        vm
        for vm in database.list_running()
        if vm.project_id in shares and vm.key in cloud.platform_of
    ]
    refusals = [
        r
        for r in database.refusals(now - datetime.timedelta(seconds=interval))
        if r.project in shares
    ]
    running: dict[str, dict[str, int]] = collections.defaultdict(dict)
    weighted: dict[str, list[tuple[str | None, int]]] = collections.defaultdict(list)
    for vm in records:
        platform = cloud.platform_of[vm.key]
        by_platform = running[vm.project_id]
        by_platform[platform] = by_platform.get(platform, 0) + vm.cores
        weighted[vm.project_id].append((vm.app_name, vm.cores))
    for project, application in database.demand_applications().items():
        weighted[project].append((application, declared.get(project, 0)))
    refused = unmet_refusals(refusals, records)
    for refusal in refusals:
        weighted[refusal.project].append((refusal.application, refusal.cores))
    projects = tuple(
        live.ProjectView(
            name=name,
            weight=weight,
            declared=declared.get(name, 0),
            running=dict(running.get(name, {})),
            refused=refused.get(name, 0),
            application=live.main_application(weighted.get(name, ())),
        )
        for name, weight in sorted(shares.items())
    )
    runs = tuple(
        live.Run(run.application, run.platform, run.runtime_s, tuple(run.corunners))
        for run in database.runs()
    )
    table = live.table_for(projects, cloud.platforms, runs)
    return Inputs(cloud, projects, runs, tuple(records), table)


def unmet_refusals(
    refusals: Iterable[db_api.Refusal], records: Iterable[db_api.RunningRecord]
) -> dict[str, int]:
    """Refused cores per project that no later placement of it has met.

    Nova has no queue: a refused user asks again, and once a retry is
    placed its cores run. Counting them as refused too would count that
    demand twice (and, within the interval, entitle the project to twice
    what it asked), so cores a project places after a refusal meet its
    oldest refused cores first.
    """
    # At one instant a refusal comes before a placement: the retry follows.
    # MariaDB keeps whole seconds, so there a placement in the refusal's
    # second meets it too; the error is at most one second's placements.
    events: list[tuple[datetime.datetime, int, str, int]] = [
        (r.at, 0, r.project, r.cores) for r in refusals
    ]
    first = min((at for at, *_ in events), default=None)
    if first is None:
        return {}
    events.extend(
        (vm.placed_at, 1, vm.project_id, -vm.cores)
        for vm in records
        if vm.placed_at is not None and vm.placed_at >= first and vm.project_id
    )
    unmet: dict[str, int] = collections.Counter()
    for _at, _order, project, cores in sorted(events, key=lambda e: (e[0], e[1])):
        unmet[project] = max(0, unmet[project] + cores)
    return {project: cores for project, cores in unmet.items() if cores}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One allocator run: what it read, what it planned, where it is stored."""

    inputs: Inputs
    allocation: dict[str, dict[str, int]]
    templates: dict[str, list[dict]]
    affinity: dict[str, dict[str, float]]
    usage: dict[tuple[str, str], float]
    generation: int | None


def charged(
    database: db_api.Database,
    inputs: Inputs,
    options: hpc_conf.FairnessSettings,
    since: datetime.datetime | None,
    now: datetime.datetime,
) -> dict[tuple[str, str], float]:
    """The usage now: the stored one decayed since ``since``, plus what ran meanwhile."""
    stored = database.usage()
    if since is None or now <= since:
        return stored
    elapsed = (now - since).total_seconds()
    core_seconds: dict[tuple[str, str], float] = collections.defaultdict(float)
    for vm in inputs.records:
        placed = vm.placed_at or since
        seconds = (now - max(placed, since)).total_seconds()
        if seconds > 0:
            core_seconds[(vm.project_id, inputs.cloud.platform_of[vm.key])] += vm.cores * seconds
    solo = live.solo_times(inputs.projects, inputs.cloud.platforms, inputs.table)
    return live.charge_usage(
        stored,
        core_seconds,
        elapsed,
        options.half_life,
        solo,
        two_level(options).usage_charge,
    )


def allocate(
    database: db_api.Database,
    options: hpc_conf.FairnessSettings,
    cloud: Cloud,
    *,
    write: bool = True,
    holder: str | None = None,
    now: datetime.datetime | None = None,
    inputs: Inputs | None = None,
    lease: db_api.Lease | None = None,
    latest: db_api.Generation | None = None,
) -> Outcome:
    """Run both levels once; store the generation unless ``write`` is False.

    With ``holder`` (the lease's holder) the run also charges the usage of
    the time since the last charge and stores it: only the lease's holder
    does, so no second is charged twice. The allocator thread passes what
    it has just read to decide that a run is due (``inputs``, its ``lease``
    and the ``latest`` generation), so that they are not read again.
    """
    now = now or timeutils.utcnow()
    if inputs is None:
        inputs = read_inputs(database, cloud, options.interval, now)
    if holder is not None and write:
        if lease is None:
            lease = database.lease()
        usage = charged(database, inputs, options, lease.accounted_at if lease else None, now)
    else:
        usage = database.usage()
    if latest is None:
        latest = database.latest_generation()
    plan = live.allocate(
        two_level(options),
        inputs.projects,
        cloud.platforms,
        inputs.table,
        usage,
        latest.allocation if latest else None,
    )
    affinity = live.affinities(
        options.platform_affinity, inputs.projects, cloud.platforms, inputs.table
    )
    templates = live.templates_as_json(plan)
    number = None
    if write:
        number = database.write_generation(
            options.policy,
            plan.allocation,
            {"templates": templates, "affinity": affinity, "cloud": cloud_as_json(cloud)},
        )
        if holder is not None:
            database.set_usage(usage, now)
            database.mark_lease(holder, accounted_at=now, digest=inputs.digest(options))
        database.prune_generations(KEEP_GENERATIONS)
        database.prune_refusals(now - datetime.timedelta(seconds=4 * options.interval))
    allocation = {
        project: {platform: cores for platform, cores in by_platform.items() if cores > 0}
        for project, by_platform in plan.allocation.items()
    }
    return Outcome(inputs, allocation, templates, affinity, usage, number)


# -- the allocator thread ----------------------------------------------------


class Allocator:
    """The allocator of one scheduler worker: runs while it holds the lease."""

    def __init__(
        self,
        database: Callable[[], db_api.Database],
        tags: Callable[[], Mapping | None],
        nodes: Callable[[], list[Node]] = nova_nodes,
    ) -> None:
        self._database = database
        self._tags = tags
        self._nodes = nodes
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid: int | None = None
        self.holder = ""

    def ensure_started(self) -> None:
        # Every request passes here: with fair share off (the default) one
        # option is read, not all of them.
        if self._running() or _policy_is_none():
            return
        if settings() is None:
            return
        with self._lock:
            if self._running():
                return
            self._pid = os.getpid()
            # A forked worker is a new holder: the parent's lease is not its own.
            self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid_lib.uuid4().hex[:8]}"
            self._thread = threading.Thread(
                target=self._loop, name="hpc-fairshare-allocator", daemon=True
            )
            self._thread.start()

    def _running(self) -> bool:
        return self._pid == os.getpid() and self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            try:
                self.tick()
            except Exception as error:
                # The next look tries again; placement goes on with the
                # entitlements in force meanwhile.
                LOG.warning("hpc-nova-scheduler: the fair-share allocator failed: %s", error)
            time.sleep(CHECK_SECONDS)

    def tick(self, now: datetime.datetime | None = None) -> Outcome | None:
        """Renew the lease and run if a run is due; the run's outcome, if any."""
        options = settings()
        if options is None:
            return None
        database = self._database()
        lease = database.take_lease(self.holder, LEASE_SECONDS)
        if lease is None:
            return None
        now = now or timeutils.utcnow()
        try:
            cloud = build_cloud(self._nodes(), self._tags())
        except FairshareError as error:
            problem = f"fair share cannot run: {error}; the last entitlements stay in force"
        else:
            problem = None
        if problem is not None:
            # Logged outside the handler: a tagging mistake is one line, not a traceback.
            _once(problem)
            return None
        inputs = read_inputs(database, cloud, options.interval, now)
        latest = database.latest_generation()
        age = (now - latest.created_at).total_seconds() if latest is not None else None
        due = (
            age is None
            or age >= options.interval
            # A change of the inputs (a placement, a deletion, a refusal)
            # triggers a run, but at most every thirtieth of the interval:
            # a busy cloud changes them at every placement.
            or (inputs.digest(options) != lease.digest and age >= change_gap(options))
        )
        if not due:
            return None
        try:
            outcome = allocate(
                database,
                options,
                cloud,
                holder=self.holder,
                now=now,
                inputs=inputs,
                lease=lease,
                latest=latest,
            )
        except SharingError as error:
            problem = f"fair share cannot allocate: {error}; the last entitlements stay in force"
        else:
            problem = None
        if problem is not None:
            _once(problem)
            return None
        LOG.info(
            "hpc-nova-scheduler: fair-share generation %s (%s): %s",
            outcome.generation,
            options.policy,
            outcome.allocation,
        )
        return outcome


# -- the filter's side: entitlements in force ---------------------------------


@dataclasses.dataclass(frozen=True)
class InForce:
    """The latest generation, as the filter holds a project's requests to it."""

    generation: int
    created_at: datetime.datetime
    allocation: Mapping[str, Mapping[str, int]]
    templates: Mapping[str, list]
    affinity: Mapping[str, Mapping[str, float]]
    governed: frozenset[str]
    cloud: Cloud

    def stale(self, interval: float, now: datetime.datetime) -> bool:
        return (now - self.created_at).total_seconds() > 2 * interval


def warn_stale(in_force: InForce) -> None:
    _once(
        f"fair-share generation {in_force.generation} of {in_force.created_at:%Y-%m-%d %H:%M:%S} "
        "is stale (no allocator ran for two intervals); placing without fair share until "
        "a new one is written",
        logging.WARNING,
    )


class Entitlements:
    """The generation in force, read at most every :data:`REFRESH_SECONDS` per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: dict[str, tuple[float, InForce | None]] = {}

    def current(self, database: db_api.Database) -> InForce | None:
        now = time.monotonic()
        cached = self._cached.get(database.url)
        if cached is not None and now - cached[0] < REFRESH_SECONDS:
            return cached[1]
        with self._lock:
            cached = self._cached.get(database.url)
            if cached is not None and now - cached[0] < REFRESH_SECONDS:
                return cached[1]
            found = self._read(database)
            self._cached[database.url] = (time.monotonic(), found)
            return found

    @staticmethod
    def _read(database: db_api.Database) -> InForce | None:
        latest = database.latest_generation()
        if latest is None:
            return None
        stored = latest.templates if isinstance(latest.templates, Mapping) else {}
        return InForce(
            generation=latest.number,
            created_at=latest.created_at,
            allocation=latest.allocation,
            templates=stored.get("templates", {}),
            affinity=stored.get("affinity", {}),
            governed=frozenset(database.shares()),
            cloud=cloud_from_json(stored.get("cloud", {"platforms": [], "hosts": {}})),
        )


@dataclasses.dataclass(frozen=True)
class Choice:
    """A platform a request may go to, and how its claim is checked."""

    platform: str
    #: Host keys that follow the node templates (None: no preference).
    preferred: frozenset[str] | None
    entitled: int
    borrowed: bool
    cores: int
    project: str
    #: Host keys of the platform and its host names (what the claim counts).
    keys: frozenset[str]
    hosts: tuple[str, ...]
    capacity: int

    @property
    def lock(self) -> str:
        return db_api.lock_name("platform", self.platform)

    def refusal(self, use: Mapping[str, Mapping[str, int]]) -> str | None:
        """Why the claim may not be written, from the cores in use under the lock."""
        mine = sum(c for key, c in use.get(self.project, {}).items() if key in self.keys)
        if not self.borrowed:
            if mine + self.cores <= self.entitled:
                return None
            return (
                f"{self.project} uses {mine} of its {self.entitled} cores on {self.platform}; "
                f"{self.cores} more exceed its entitlement"
            )
        total = sum(c for by_key in use.values() for key, c in by_key.items() if key in self.keys)
        if total + self.cores <= self.capacity:
            return None
        return f"{self.platform} has {self.capacity - total} idle cores, {self.cores} asked"


def _used_on(use: Mapping[str, Mapping[str, int]], project: str, keys: frozenset[str]) -> int:
    return sum(c for key, c in use.get(project, {}).items() if key in keys)


def template_hosts(
    templates: Sequence[Mapping],
    project: str,
    keys: Iterable[str],
    use: Mapping[str, Mapping[str, int]],
) -> frozenset[str] | None:
    """The hosts where ``project``'s VMs join a node template of its platform.

    A host follows a template naming ``project`` when every project on it
    is in the template and ``project`` still has room in its slot there.
    None when no template names the project (no preference).
    """
    mine = [
        ({name for name, _ in t.get("slots", ())}, dict(t.get("slots", ())).get(project, 0))
        for t in templates
        if project in {name for name, _ in t.get("slots", ())}
    ]
    if not mine:
        return None
    on_host: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for name, by_key in use.items():
        for key, cores in by_key.items():
            if cores > 0:
                on_host[key][name] = cores
    # A host nobody uses follows every template with room for the project:
    # decide that once rather than host by host (most hosts are empty).
    empty_follows = any(room > 0 for _, room in mine)
    return frozenset(
        key
        for key in keys
        if (
            empty_follows
            if key not in on_host
            else any(
                on_host[key].keys() <= members and on_host[key].get(project, 0) < room
                for members, room in mine
            )
        )
    )


def choices(
    in_force: InForce,
    cloud: Cloud,
    project: str,
    cores: int,
    candidate_keys: Iterable[str],
    use: Mapping[str, Mapping[str, int]],
    enforcement: str,
) -> list[Choice]:
    """The platforms a request of ``project`` for ``cores`` cores may go to, in order.

    First the platforms of its entitlement with room left, highest affinity
    first; then, under ``borrow``, the platforms with that many idle cores,
    highest affinity first. Only platforms among ``candidate_keys`` (the
    hosts Nova's filters passed) count.
    """
    entitled = in_force.allocation.get(project, {})
    affinity = in_force.affinity.get(project, {})
    present: dict[str, set[str]] = collections.defaultdict(set)
    for key in candidate_keys:
        platform = cloud.platform_of.get(key)
        if platform is not None:
            present[platform].add(key)
    by_affinity = sorted(present, key=lambda p: (-affinity.get(p, 0.0), p))
    found: list[Choice] = []
    for borrowed in (False, True):
        if borrowed and enforcement != hpc_conf.BORROW:
            break
        for platform in by_affinity:
            keys = cloud.keys[platform]
            capacity = cloud.cores(platform)
            mine = _used_on(use, project, keys)
            limit = entitled.get(platform, 0)
            if not borrowed and mine + cores > limit:
                continue
            if borrowed:
                if any(c.platform == platform for c in found):
                    continue
                total = sum(_used_on(use, name, keys) for name in use)
                if total + cores > capacity:
                    continue
            found.append(
                Choice(
                    platform=platform,
                    preferred=template_hosts(
                        in_force.templates.get(platform, ()), project, present[platform], use
                    ),
                    entitled=limit,
                    borrowed=borrowed,
                    cores=cores,
                    project=project,
                    keys=keys,
                    hosts=cloud.hosts.get(platform, ()),
                    capacity=capacity,
                )
            )
    return found


def describe_refusal(
    in_force: InForce,
    cloud: Cloud,
    project: str,
    cores: int,
    use: Mapping[str, Mapping[str, int]],
) -> str:
    """Why no platform may take the request: the project's entitlements and their use."""
    entitled = in_force.allocation.get(project, {})
    parts = []
    for platform in sorted({*entitled, *cloud.hosts}):
        keys = cloud.keys.get(platform, frozenset())
        parts.append(f"{platform} {_used_on(use, project, keys)}/{entitled.get(platform, 0)}")
    return (
        f"project {project}: {cores} cores beyond its entitlement (generation "
        f"{in_force.generation}; used/entitled per platform: {', '.join(parts)})"
    )
