"""After a stress: the invariants per host, and app_running against Nova.

Placements come from the compute API (every ACTIVE server and its host);
what each server is (class, cache score, application) from the stress
ledger, which knows what every request asked for; the plugin's records from
its database. Rack order is not checked here: whether Algorithm 1 chose the
right rack depends on what ran at the moment of the choice, which the
functional and unit tests check instead. The tenant's
``hpc:topology_required`` is a constraint, not an order, and is checked
(:func:`topology_violations`).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hpc_nova_scheduler.core.judge import HostJudge
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api

EPSILON = 1e-6


@dataclasses.dataclass(frozen=True)
class Asked:
    """What one request asked for (one application)."""

    tag: str
    app_class: AppClass | None  # None: no hpc extra specs (left to Nova)
    cache_score: float
    app_name: str | None
    count: int
    #: The Keystone project the request came from (None: not said).
    project: str | None = None
    #: vCPUs of each server: the cores fair share counts it for.
    vcpus: int = 0
    #: ``hpc:topology_required`` of its flavor: the level one of whose
    #: domains must hold every VM of the request (None: no such constraint).
    required: str | None = None

    def describe(self) -> str:
        kind = self.app_class.value if self.app_class else "plain"
        within = f" in one {self.required}" if self.required else ""
        return (
            f"{self.tag}({kind} {self.app_name or '-'} {self.count}x{self.cache_score:g}{within})"
        )


@dataclasses.dataclass(frozen=True)
class Server:
    uuid: str
    host: str
    asked: Asked


@dataclasses.dataclass
class Findings:
    violations: list[str] = dataclasses.field(default_factory=list)
    mismatches: list[str] = dataclasses.field(default_factory=list)


def host_violations(
    servers: Iterable[Server],
    *,
    alpha: float,
    beta: float,
    harmful: frozenset[tuple[str, str]],
    groups: Mapping[str, str],
    cache_thresholds: bool = True,
) -> list[str]:
    """Every host and request that breaks a rule the plugin enforces.

    ``cache_thresholds``: whether alpha and beta bind; under an
    interference model they do not, the model judges shared hosts instead
    (:func:`interference_violations`).
    """
    found = []
    by_host: dict[str, list[Server]] = {}
    by_request: dict[str, list[Server]] = {}
    for server in servers:
        by_host.setdefault(server.host, []).append(server)
        by_request.setdefault(server.asked.tag, []).append(server)
    for host, here in sorted(by_host.items()):
        requests = {s.asked.tag: s.asked for s in here}
        names = ", ".join(
            f"{a.describe()}:{sum(1 for s in here if s.asked.tag == tag)}"
            for tag, a in sorted(requests.items())
        )
        total = sum(s.asked.cache_score for s in here)
        if cache_thresholds and total > alpha + EPSILON:
            found.append(f"{host}: cache {total:g} > alpha {alpha:g} [{names}]")
        if (
            cache_thresholds
            and any(a.app_class is AppClass.SYNC_HPC for a in requests.values())
            and total > beta + EPSILON
        ):
            found.append(f"{host}: runs SyncHPC, cache {total:g} > beta {beta:g} [{names}]")
        if len(requests) > 1 and any(
            a.app_class is AppClass.EXTREME_HPC for a in requests.values()
        ):
            found.append(f"{host}: ExtremeHPC host shared by {len(requests)} requests [{names}]")
        for a, b in itertools.combinations(sorted(requests.values(), key=lambda a: a.tag), 2):
            if a.app_name and b.app_name:
                pair = tuple(sorted((a.app_name, b.app_name)))
                if pair in harmful:
                    found.append(f"{host}: harmful pair {pair[0]}+{pair[1]} [{names}]")
    for _, placed in sorted(by_request.items()):
        asked = placed[0].asked
        if asked.app_class is None or asked.app_class is AppClass.NON_HPC:
            continue
        spanned = sorted({groups.get(s.host, "?") for s in placed})
        if len(spanned) > 1:
            found.append(
                f"{asked.describe()} spans processor groups {spanned}: "
                f"{sorted(s.host for s in placed)}"
            )
    return found


def topology_violations(
    servers: Iterable[Server], domains: Mapping[str, Mapping[str, str]]
) -> list[str]:
    """Every placed request with ``hpc:topology_required`` whose VMs are not
    all in one domain of the required level.

    ``domains`` gives each host's domain at every level, named by its path
    (``block-0/rack-1``), as the operator's aggregates put it there. A host
    without a value at the level is a domain of its own, as the placement
    takes it; ``host`` is every host itself. The stress boots no server
    groups: the application is the request, all its VMs together. A request
    of which only some VMs are ACTIVE is judged on those.
    """
    by_request: dict[str, list[Server]] = {}
    for server in servers:
        if server.asked.required is not None:
            by_request.setdefault(server.asked.tag, []).append(server)
    found = []
    for _, placed in sorted(by_request.items()):
        asked = placed[0].asked
        level = asked.required
        spanned = collections.Counter(
            s.host if level == "host" else domains.get(s.host, {}).get(level, f"host:{s.host}")
            for s in placed
        )
        if len(spanned) > 1:
            where = ", ".join(f"{domain}: {vms}" for domain, vms in sorted(spanned.items()))
            found.append(
                f"{asked.describe()} spans {len(spanned)} {level} domains [{where}]: "
                f"{sorted(s.host for s in placed)}"
            )
    return found


def interference_violations(
    servers: Iterable[Server], judge: HostJudge, groups: Mapping[str, str]
) -> tuple[list[str], int]:
    """Shared hosts the interference model refuses as they are now, and how
    many shared hosts were judged.

    ``judge`` is the rule the filter applies
    (:class:`~hpc_nova_scheduler.interference.rule.ModelRule`): a host is a
    violation when an application on it is predicted to slow down past the
    tolerance, or when the model cannot judge a co-runner (no profile, or
    one without its features), which the filter refuses too. The
    applications on a host are its requests, each with its VMs there, as
    the filter groups them; the host's type is its processor group. Servers
    without an application name are left out: they are plain requests,
    which the plugin leaves to Nova and never judges.
    """
    residents: dict[str, dict[str, list]] = {}
    for server in servers:
        if server.asked.app_name is None:
            continue
        here = residents.setdefault(server.host, {})
        entry = here.setdefault(server.asked.tag, [server.asked.app_name, 0])
        entry[1] += 1
    shared = sorted(host for host, here in residents.items() if len(here) > 1)
    hosts = [[(name, vms) for name, vms in residents[host].values()] for host in shared]
    reasons = judge.refusals(hosts, [groups.get(host) for host in shared])
    found = []
    for host, reason in zip(shared, reasons, strict=True):
        if reason is not None:
            names = ", ".join(f"{name}:{vms}" for name, vms in residents[host].values())
            found.append(f"{host} ({groups.get(host, '?')}): {reason} [{names}]")
    return found, len(shared)


def entitlement_violations(
    servers: Iterable[Server],
    *,
    governed: Iterable[str],
    most: Mapping[str, Mapping[str, int]],
    platform_of: Mapping[str, str],
    capacity: Mapping[str, int],
    enforcement: str,
) -> list[str]:
    """Fair share as the load left it: projects and platforms beyond what the
    entitlements allowed.

    Only the HPC servers of ``governed`` projects (those with a share) are
    held to entitlements; ``most`` is each one's largest entitlement per
    platform over the generations in force during the load (a VM placed
    under an older, larger entitlement stays legitimately). ``platform_of``
    maps hosts to platforms, ``capacity`` gives each platform's cores.

    ``strict``: a project's cores on a platform never exceed ``most`` there.
    Every claim of it took the platform's lock and saw all its earlier VMs,
    so its last VM still alive saw all the others.

    ``borrow``: beyond its entitlement a project may only use idle cores,
    which are not taken back; a project entitled later may still place its
    entitlement beside them, so a platform's governed cores may end above
    its cores. What does hold: the projects above their entitlement at the
    end, together, hold no more than the platform's cores. Each one's last
    VM there was borrowed (an entitled claim would have left it within its
    entitlement), and the latest of those borrowed claims saw every VM of
    them all and found room for itself among the platform's cores.
    """
    wanted = set(governed)
    held: dict[str, dict[str, int]] = {}
    tags: dict[tuple[str, str], set[str]] = {}
    for server in servers:
        asked = server.asked
        if asked.app_class is None or asked.project not in wanted:
            continue
        platform = platform_of.get(server.host, f"?{server.host}")
        by_project = held.setdefault(platform, {})
        by_project[asked.project] = by_project.get(asked.project, 0) + asked.vcpus
        tags.setdefault((platform, asked.project), set()).add(asked.tag)
    found = []
    for platform, by_project in sorted(held.items()):
        over = {
            project: cores
            for project, cores in sorted(by_project.items())
            if cores > most.get(project, {}).get(platform, 0)
        }
        if enforcement == "strict":
            for project, cores in over.items():
                found.append(
                    f"{project} holds {cores} cores on {platform}, entitled to at most "
                    f"{most.get(project, {}).get(platform, 0)} "
                    f"[{', '.join(sorted(tags[(platform, project)]))}]"
                )
        elif sum(over.values()) > capacity.get(platform, 0):
            names = ", ".join(
                f"{project} {cores}/{most.get(project, {}).get(platform, 0)}"
                for project, cores in over.items()
            )
            found.append(
                f"{platform}: projects beyond their entitlement hold {sum(over.values())} cores, "
                f"more than its {capacity.get(platform, 0)} cores could lend "
                f"(held/entitled: {names})"
            )
    return found


def record_mismatches(
    servers: Iterable[Server], alive: set[str], rows: Iterable[db_api.RunningRecord]
) -> list[str]:
    """app_running against Nova: HPC servers recorded where they run, no row
    for a server that no longer exists."""
    found = []
    by_uuid = {row.instance_uuid: row for row in rows}
    for server in servers:
        row = by_uuid.get(server.uuid)
        if row is None:
            if server.asked.app_class is not None:
                found.append(f"lost: {server.asked.describe()} {server.uuid} on {server.host}")
        elif row.host != server.host:
            found.append(f"misplaced: {server.uuid} runs on {server.host}, recorded on {row.host}")
    for uuid, row in sorted(by_uuid.items()):
        if uuid not in alive:
            found.append(f"stale: {uuid} ({row.app_class.value}) recorded on {row.host}")
    return found


@dataclasses.dataclass(frozen=True)
class Record:
    """What ``stress --record`` wrote: the cloud's levels, each host's domain
    at every level and processor group, and every VM the load placed."""

    levels: tuple[str, ...]
    domains: dict[str, dict[str, str]]
    groups: dict[str, str]
    servers: list[Server]


def write_record(
    path: Path,
    *,
    levels: Sequence[str],
    domains: Mapping[str, Mapping[str, str]],
    groups: Mapping[str, str],
    servers: Iterable[Server],
) -> None:
    """``servers`` grouped by request, with the cloud's domains, as JSON."""
    requests: dict[str, dict] = {}
    for server in servers:
        asked = server.asked
        entry = requests.setdefault(
            asked.tag,
            {
                "asked": {
                    "tag": asked.tag,
                    "app_class": asked.app_class.value if asked.app_class else None,
                    "cache_score": asked.cache_score,
                    "app_name": asked.app_name,
                    "count": asked.count,
                    "project": asked.project,
                    "vcpus": asked.vcpus,
                    "required": asked.required,
                },
                "hosts": {},
            },
        )
        entry["hosts"][server.uuid] = server.host
    document = {
        "levels": list(levels),
        "domains": {host: dict(mine) for host, mine in sorted(domains.items())},
        "groups": dict(sorted(groups.items())),
        "requests": [requests[tag] for tag in sorted(requests)],
    }
    Path(path).write_text(json.dumps(document, indent=1) + "\n")


def read_record(path: Path) -> Record:
    """A file :func:`write_record` wrote."""
    document = json.loads(Path(path).read_text())
    servers = []
    for request in document["requests"]:
        fields = dict(request["asked"])
        if fields["app_class"] is not None:
            fields["app_class"] = AppClass(fields["app_class"])
        asked = Asked(**fields)
        servers.extend(Server(uuid, host, asked) for uuid, host in request["hosts"].items())
    return Record(tuple(document["levels"]), document["domains"], document["groups"], servers)


# -- fair-share reclaim ----------------------------------------------------------
#
# What the stress saw of reclaims, from the plugin database polled during the
# load (:mod:`devcloud.reclaims`) and from its own ledger. Times are naive UTC.


@dataclasses.dataclass(frozen=True)
class LoanSeen:
    """A row of ``fairshare_loans`` as the poll first saw it: written by the
    scheduler with the VM's record, from its claim, not by the agent."""

    instance_uuid: str
    project: str
    platform: str
    cores: int
    kind: str
    over_by: int


@dataclasses.dataclass(frozen=True)
class ReclaimSeen:
    """A row of ``fairshare_reclaims`` as the poll last saw it."""

    id: int
    instance_uuid: str
    project: str
    platform: str
    cores: int
    kind: str
    beneficiary: str
    state: str
    requested_at: datetime.datetime
    acted_at: datetime.datetime | None = None
    #: Why it failed or was cancelled, as the agent recorded it.
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class Placed:
    """A VM recorded in ``app_running``: its project, platform and when it was placed."""

    instance_uuid: str
    project: str
    platform: str
    at: datetime.datetime
    cores: int = 0


@dataclasses.dataclass(frozen=True)
class Refused:
    """A row of ``fairshare_refusals``: cores of a request its project's
    entitlement refused, or that its entitlement allowed and no host could take."""

    project: str
    cores: int
    at: datetime.datetime


BORROWED = "borrowed"


@dataclasses.dataclass(frozen=True)
class GenerationSeen:
    """A generation of entitlements, as the poll read it."""

    number: int
    created_at: datetime.datetime
    #: project -> platform -> cores.
    allocation: dict[str, dict[str, int]]
    #: host -> platform.
    platform_of: dict[str, str]


@dataclasses.dataclass(frozen=True)
class UseSeen:
    """What one look saw each project use per platform, as fair share counts it
    (stopped victims and preemptible VMs left out)."""

    at: datetime.datetime
    #: (project, platform) -> cores.
    use: dict[tuple[str, str], int]


def victims_left_below(
    reclaims: Iterable[ReclaimSeen],
    uses: Sequence[UseSeen],
    generations: Iterable[GenerationSeen],
) -> tuple[list[str], int]:
    """Acted reclaims of borrowed VMs whose project, by the last look before the
    reclaim acted, held less than its entitlement in force plus the victim's
    cores: taking the victim left it below its entitlement, which reclaim
    never does. And how many were judged (a look and a generation before).

    A look is up to a poll before the act: the project's own placements in
    between could make one of these a false alarm, which is why the stress
    reports them and does not fail on them.
    """
    ordered = sorted(generations, key=lambda g: g.created_at)
    acted = sorted(
        (r for r in reclaims if r.acted_at is not None and r.kind == BORROWED),
        key=lambda r: (r.acted_at, r.id),
    )
    found, judged = [], 0
    for index, reclaim in enumerate(acted):
        looks = [u for u in uses if u.at <= reclaim.acted_at]
        in_force = [g for g in ordered if g.created_at <= reclaim.acted_at]
        if not looks or not in_force:
            continue
        judged += 1
        look, generation = looks[-1], in_force[-1]
        # This victim and the project's others taken there since the look.
        taken = sum(
            r.cores
            for r in acted[: index + 1]
            if (r.project, r.platform) == (reclaim.project, reclaim.platform)
            and r.acted_at >= look.at
        )
        use = look.use.get((reclaim.project, reclaim.platform), 0)
        entitled = generation.allocation.get(reclaim.project, {}).get(reclaim.platform, 0)
        if use - taken < entitled:
            found.append(
                f"reclaim {reclaim.id}: {reclaim.project} used {use} cores on "
                f"{reclaim.platform} at {look.at:%H:%M:%S}, entitled to {entitled} "
                f"(generation {generation.number}); {taken} taken since"
            )
    return found, judged


def wrong_victims(
    reclaims: Iterable[ReclaimSeen], loans: Mapping[str, LoanSeen], governed: Iterable[str]
) -> list[str]:
    """Reclaims whose victim was not a loan, or was a borrowed VM placed within
    its project's entitlement (``over_by`` 0), or of a project without a share.

    ``loans`` is every loan the poll saw during the load, by VM: the union of
    what ``fairshare_loans`` held, which the scheduler writes from the claim
    that placed the VM, whatever the agent later chose.
    """
    wanted = set(governed)
    found = []
    for reclaim in sorted(reclaims, key=lambda r: r.id):
        loan = loans.get(reclaim.instance_uuid)
        where = f"reclaim {reclaim.id} ({reclaim.state}) of {reclaim.instance_uuid}"
        if loan is None:
            found.append(f"{where} of {reclaim.project}: never recorded as a loan")
        elif loan.project != reclaim.project or loan.project not in wanted:
            found.append(
                f"{where}: a loan of {loan.project}, reclaimed as {reclaim.project}'s"
                + ("" if loan.project in wanted else f"; {loan.project} has no share")
            )
        elif loan.kind == BORROWED and loan.over_by <= 0:
            found.append(
                f"{where} of {loan.project}: borrowed, but placed within its entitlement "
                f"(over_by {loan.over_by})"
            )
    return found


def unused_reclaims(
    reclaims: Iterable[ReclaimSeen],
    placed: Iterable[Placed],
    window: float,
    until: datetime.datetime,
) -> tuple[list[str], int]:
    """Acted reclaims whose beneficiary placed nothing on the reclaim's platform
    within ``window`` seconds after it acted; and how many were judged.

    A reclaim acted less than ``window`` before ``until`` (the end of the
    load) is not judged: its beneficiary had no full window to use the room.
    """
    by_project: dict[str, list[Placed]] = collections.defaultdict(list)
    for vm in placed:
        by_project[vm.project].append(vm)
    span = datetime.timedelta(seconds=window)
    found, judged = [], 0
    for reclaim in sorted(reclaims, key=lambda r: r.id):
        if reclaim.acted_at is None or reclaim.acted_at + span > until:
            continue
        judged += 1
        used = any(
            vm.platform == reclaim.platform and reclaim.acted_at <= vm.at <= reclaim.acted_at + span
            for vm in by_project.get(reclaim.beneficiary, ())
        )
        if not used:
            found.append(
                f"reclaim {reclaim.id}: {reclaim.cores} cores of {reclaim.project} freed on "
                f"{reclaim.platform} at {reclaim.acted_at:%H:%M:%S}; {reclaim.beneficiary} "
                f"placed nothing there within {window:g} s"
            )
    return found, judged


def unmet_since(
    beneficiary: str,
    requested_at: datetime.datetime,
    placed: Iterable[Placed],
    refused: Iterable[Refused],
    interval: float,
) -> datetime.datetime | None:
    """When the unmet demand a reclaim requested at ``requested_at`` served
    began: the oldest refusal of the beneficiary still unmet then (None: none).

    As the agent counts unmet demand, from the tables the scheduler writes:
    refusals of the last ``interval`` seconds, each met by the beneficiary's
    later placements, oldest refused cores first; a placement in a
    refusal's (database) second meets it.
    """
    since = requested_at - datetime.timedelta(seconds=interval)
    events = [(r.at, 0, r.cores) for r in refused if r.project == beneficiary]
    events = [e for e in events if since <= e[0] <= requested_at]
    if not events:
        return None
    first = min(at for at, _, _ in events)
    events += [
        (vm.at, 1, vm.cores)
        for vm in placed
        if vm.project == beneficiary and first <= vm.at <= requested_at
    ]
    queue: collections.deque[list] = collections.deque()
    for at, kind, cores in sorted(events, key=lambda e: (e[0], e[1])):
        if kind == 0:
            queue.append([at, cores])
            continue
        while cores > 0 and queue:
            met = min(cores, queue[0][1])
            queue[0][1] -= met
            cores -= met
            if queue[0][1] == 0:
                queue.popleft()
    return queue[0][0] if queue else None


@dataclasses.dataclass(frozen=True)
class FreedIn:
    """Time from unmet demand to freed cores, over the acted reclaims."""

    seconds: tuple[float, ...]
    #: Acted reclaims whose beneficiary had no refusal still unmet when the
    #: reclaim was requested (its declared demand alone, or older ones).
    untimed: int
    bound: float
    #: The reclaims that took longer than ``bound``, described.
    late: tuple[str, ...] = ()

    @property
    def within(self) -> int:
        return sum(1 for s in self.seconds if s <= self.bound)


def time_to_freed_cores(
    reclaims: Iterable[ReclaimSeen],
    placed: Iterable[Placed],
    refused: Iterable[Refused],
    interval: float,
    bound: float,
) -> FreedIn:
    """Seconds from each acted reclaim's :func:`unmet_since` to its ``acted_at``;
    ``bound`` is one ``fairshare_interval`` plus the grace."""
    placed, refused = list(placed), list(refused)
    seconds, untimed, late = [], 0, []
    for reclaim in sorted(reclaims, key=lambda r: r.id):
        if reclaim.acted_at is None:
            continue
        start = unmet_since(reclaim.beneficiary, reclaim.requested_at, placed, refused, interval)
        if start is None:
            untimed += 1
            continue
        took = max(0.0, (reclaim.acted_at - start).total_seconds())
        seconds.append(took)
        if took > bound:
            late.append(
                f"reclaim {reclaim.id} for {reclaim.beneficiary}: unmet since "
                f"{start:%H:%M:%S}, requested {reclaim.requested_at:%H:%M:%S}, acted "
                f"{reclaim.acted_at:%H:%M:%S} ({took:.0f} s)"
            )
    return FreedIn(tuple(sorted(seconds)), untimed, bound, tuple(late))
