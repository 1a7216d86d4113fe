"""The entitlements in force, as the placement filter holds requests to them.

:class:`InForce` is the latest generation the agent's allocator wrote;
:func:`choices` turns it into the platforms a request may go to, highest
affinity first, each with the hosts that follow the node templates, and the
check that runs under the platform's lock when the plan is claimed
(:meth:`Database.claim`): two scheduler workers never spend one
entitlement, or one idle core, twice.

Cores in use come as project -> host key -> cores, where preemptible VMs
are under the pseudo-project :data:`~.db.api.PREEMPTIBLE_USE`: a platform's
total counts them (they take cores), no project's use does (they never
spend an entitlement), and no node template sees them as a project.

A claim may be a **loan** (issue 45): a VM placed beyond its project's
entitlement under ``borrow`` is borrowed, one of a preemptible flavor is
preemptible, whatever the enforcement. Both take idle cores only, and the
agent may take either back.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare.platforms import Cloud


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
    #: ``hpc:preemptible``: idle cores only, never the entitlement.
    preemptible: bool = False

    @property
    def lock(self) -> str:
        return db_api.lock_name("platform", self.platform)

    @property
    def loan(self) -> str | None:
        """The kind of loan a claim of this choice is (None: within the entitlement)."""
        if self.preemptible:
            return db_api.PREEMPTIBLE
        if self.borrowed:
            return db_api.BORROWED
        return None

    @property
    def idle_only(self) -> bool:
        """Whether the claim takes idle cores (a loan) rather than its entitlement."""
        return self.loan is not None

    def over_by(self, use: Mapping[str, Mapping[str, int]]) -> int:
        """The project's cores beyond its entitlement here once this claim's VMs run.

        What a borrowed claim records as its loan's ``over_by``, from the
        cores in use read under the platform's lock; 0 for a preemptible or
        entitled claim (preemptible cores are no project's use).
        """
        if self.loan != db_api.BORROWED:
            return 0
        return max(0, _used_on(use, self.project, self.keys) + self.cores - self.entitled)

    def refusal(self, use: Mapping[str, Mapping[str, int]]) -> str | None:
        """Why the claim may not be written, from the cores in use under the lock."""
        total = _platform_total(use, self.keys)
        if not self.idle_only:
            mine = _used_on(use, self.project, self.keys)
            if mine + self.cores > self.entitled:
                return (
                    f"{self.project} uses {mine} of its {self.entitled} cores on "
                    f"{self.platform}; {self.cores} more exceed its entitlement"
                )
            # Within the entitlement, the cores must still be there: others'
            # loans may hold them until a reclaim gives them back.
            if total + self.cores <= self.capacity:
                return None
            return (
                f"{self.platform} has {self.capacity - total} idle cores, {self.cores} asked "
                f"within {self.project}'s entitlement: loans hold the rest until reclaimed"
            )
        if total + self.cores <= self.capacity:
            return None
        return f"{self.platform} has {self.capacity - total} idle cores, {self.cores} asked"


def _used_on(use: Mapping[str, Mapping[str, int]], project: str, keys: frozenset[str]) -> int:
    return sum(c for key, c in use.get(project, {}).items() if key in keys)


def _platform_total(use: Mapping[str, Mapping[str, int]], keys: frozenset[str]) -> int:
    """Every core in use on ``keys``: all projects' and the preemptible VMs'."""
    return sum(c for by_key in use.values() for key, c in by_key.items() if key in keys)


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
        if name == db_api.PREEMPTIBLE_USE:
            # Preemptible VMs are no project of a template: they may be
            # taken back, and leave a host as the template found it.
            continue
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
    preemptible: bool = False,
) -> list[Choice]:
    """The platforms a request of ``project`` for ``cores`` cores may go to, in order.

    First the platforms of its entitlement with room left, highest affinity
    first; then, under ``borrow``, the platforms with that many idle cores,
    highest affinity first. Only platforms among ``candidate_keys`` (the
    hosts Nova's filters passed) count. A ``preemptible`` request goes to
    the platforms with that many idle cores only, under either enforcement,
    and follows no node template.
    """
    entitled = in_force.allocation.get(project, {})
    affinity = in_force.affinity.get(project, {})
    present: dict[str, set[str]] = collections.defaultdict(set)
    for key in candidate_keys:
        platform = cloud.platform_of.get(key)
        if platform is not None:
            present[platform].add(key)
    by_affinity = sorted(present, key=lambda p: (-affinity.get(p, 0.0), p))
    if preemptible:
        return [
            Choice(
                platform=platform,
                preferred=None,
                entitled=entitled.get(platform, 0),
                borrowed=False,
                cores=cores,
                project=project,
                keys=cloud.keys[platform],
                hosts=cloud.hosts.get(platform, ()),
                capacity=cloud.cores(platform),
                preemptible=True,
            )
            for platform in by_affinity
            if _platform_total(use, cloud.keys[platform]) + cores <= cloud.cores(platform)
        ]
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
            if borrowed and any(c.platform == platform for c in found):
                continue
            # Entitled or borrowed, the cores must be there: within an
            # entitlement, other projects' loans may hold them (a refusal
            # then tells the next allocator run, whose reclaim frees them).
            if _platform_total(use, keys) + cores > capacity:
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
        idle = cloud.cores(platform) - _platform_total(use, keys)
        parts.append(
            f"{platform} {_used_on(use, project, keys)}/{entitled.get(platform, 0)} ({idle} idle)"
        )
    return (
        f"project {project}: {cores} cores beyond its entitlement or the idle cores "
        f"(generation {in_force.generation}; used/entitled per platform: {', '.join(parts)})"
    )


def describe_no_idle_cores(
    in_force: InForce,
    cloud: Cloud,
    project: str,
    cores: int,
    use: Mapping[str, Mapping[str, int]],
) -> str:
    """Why no platform may take a preemptible request: the idle cores of each."""
    parts = [
        f"{platform} {cloud.cores(platform) - _platform_total(use, keys)}"
        for platform, keys in sorted(cloud.keys.items())
    ]
    return (
        f"project {project}: {cores} preemptible cores, more than any platform has idle "
        f"(generation {in_force.generation}; idle cores per platform: {', '.join(parts)})"
    )
