"""The ``idle-traits`` task: ``CUSTOM_HPC_IDLE`` on exactly the idle compute nodes.

And, with ``[hpc_scheduler] roomy_rack_trait``, ``CUSTOM_HPC_ROOMY_RACK``
on every host of the roomiest racks (:func:`~.narrowing.roomiest`), as
many whole racks as ``[scheduler] max_placement_results`` hosts hold.

Every ``[hpc_scheduler] idle_trait_interval`` seconds the holder of the
``idle_traits`` lease reads

* the compute nodes of every cell from Nova's cell databases (one query a
  cell, only the columns it uses: :mod:`~hpc_nova_scheduler.scheduler.nova_nodes`):
  a node is idle when it runs no VM and no vCPU is claimed on it
  (``running_vms`` and ``vcpus_used`` are 0);
* the providers that carry the trait, from Placement (one
  ``GET /resource_providers?required=CUSTOM_HPC_IDLE``),

and writes only the difference, provider by provider. A provider is tagged
only if Placement, read at that moment, shows nothing allocated on it, and
the write carries the generation of that read: an allocation made in
between changes the generation, Placement answers 409, and the provider is
read again. Every write sends the provider's whole trait list as read, with
the one trait added or removed: the traits of nova-compute and of anyone
else stay as they are.

Placement is reached as nova-scheduler reaches it: Nova's report client,
with the ``[placement]`` credentials of the nova.conf the agent reads.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core import narrowing
from hpc_nova_scheduler.core.holders import host_key
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import domains as topology_domains
from hpc_nova_scheduler.scheduler import nova_nodes

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF

#: The lease that lets one agent write the traits.
LEASE = db_api.IDLE_TRAITS_LEASE
#: Seconds a lease lasts at least without renewal.
LEASE_SECONDS = 20.0
#: Placement microversions: traits of a provider (1.6), ``required`` on
#: GET /resource_providers (1.18).
TRAITS_VERSION = "1.6"
LIST_VERSION = "1.18"
#: Writes of one provider tried before the run leaves it to the next.
ATTEMPTS = 4
#: Seconds between two renewals of the lease during a long run (the first
#: run of a large cloud tags every node).
RENEW_SECONDS = 5.0


class PlacementError(Exception):
    """Placement answered a read or write of the keeper with an error."""


def lease_seconds(interval: float) -> float:
    """How long the lease lasts: three intervals, so one slow run does not lose it."""
    return max(LEASE_SECONDS, 3.0 * interval)


def nova_node_uses() -> tuple[list[narrowing.NodeUse], bool]:
    """Every compute node of the cells that answered, and whether all answered."""
    cells = nova_nodes.read()
    for cell in cells.silent:
        LOG.warning("hpc-scheduler-agent: cell %s did not answer for its compute nodes", cell)
    nodes = [
        narrowing.NodeUse(
            node.uuid,
            node.running_vms,
            node.vcpus_used,
            key=host_key(node.host, node.nodename),
            vcpus=node.vcpus,
            cpu_allocation_ratio=node.cpu_allocation_ratio,
        )
        for node in cells.nodes
    ]
    return nodes, cells.complete


def nova_budget() -> int:
    """Hosts the roomy racks may hold: what nova-scheduler asks Placement for."""
    from nova import conf as nova_conf

    return int(nova_conf.CONF.scheduler.max_placement_results)


def roomy_racks_on() -> bool:
    return bool(CONF.hpc_scheduler.roomy_rack_trait)


def nova_placement() -> Any:
    """Nova's report client: Placement with nova.conf's ``[placement]`` credentials."""
    from nova.scheduler.client import report

    return report.SchedulerReportClient()


@dataclasses.dataclass
class Run:
    """What one run of the keeper did."""

    added: list[str] = dataclasses.field(default_factory=list)
    removed: list[str] = dataclasses.field(default_factory=list)
    #: Idle per Nova, but Placement shows an allocation: left untagged.
    busy_in_placement: list[str] = dataclasses.field(default_factory=list)
    #: Providers Placement no longer has.
    gone: list[str] = dataclasses.field(default_factory=list)
    #: 409 answers (another writer, or an allocation, came in between).
    conflicts: int = 0
    #: Providers left to the next run: too many conflicts, the lease lost, the agent stopping.
    left: int = 0
    #: Providers that carried the trait when the run began.
    tagged_before: int = 0
    #: CUSTOM_HPC_ROOMY_RACK written on, and taken off.
    roomy_added: list[str] = dataclasses.field(default_factory=list)
    roomy_removed: list[str] = dataclasses.field(default_factory=list)
    #: Hosts the roomy racks hold after the run (None: that part did not run).
    roomy_hosts: int | None = None


class IdleTraitKeeper:
    """Keeps :data:`~.narrowing.IDLE_TRAIT` on the idle compute nodes, while it holds the lease."""

    def __init__(
        self,
        database: Callable[[], db_api.Database],
        holder: str,
        *,
        nodes: Callable[[], tuple[list[narrowing.NodeUse], bool]] = nova_node_uses,
        placement: Callable[[], Any] = nova_placement,
        stopping: threading.Event | None = None,
        tags: Callable[[], Any] = dict,
        budget: Callable[[], int] = nova_budget,
    ) -> None:
        self._database = database
        self.holder = holder
        self._nodes = nodes
        self._connect = placement
        self._placement: Any = None
        self._stopping = stopping or threading.Event()
        self._tags = tags
        self._budget = budget
        self._traits_known: set[str] = set()

    # -- Placement ---------------------------------------------------------------

    def placement(self) -> Any:
        if self._placement is None:
            self._placement = self._connect()
        return self._placement

    def _get(self, url: str, version: str) -> Any:
        return self.placement().get(url, version=version)

    @staticmethod
    def _failed(response: Any, what: str) -> PlacementError:
        text = " ".join(str(getattr(response, "text", "")).split())[:300]
        return PlacementError(f"Placement answered {response.status_code} to {what}: {text}")

    def ensure_trait(self, trait: str = narrowing.IDLE_TRAIT) -> None:
        """Create the custom trait in Placement (once a process; idempotent)."""
        if trait in self._traits_known:
            return
        url = f"/traits/{trait}"
        response = self.placement().put(url, None, version=TRAITS_VERSION)
        if response.status_code not in (201, 204):
            raise self._failed(response, f"PUT {url}")
        self._traits_known.add(trait)

    def tagged(self, trait: str = narrowing.IDLE_TRAIT) -> set[str]:
        """The providers that carry ``trait`` now."""
        url = f"/resource_providers?required={trait}"
        response = self._get(url, LIST_VERSION)
        if response.status_code != 200:
            raise self._failed(response, f"GET {url}")
        return {rp["uuid"] for rp in response.json()["resource_providers"]}

    def _set(
        self, uuid: str, add: bool, run: Run, trait: str = narrowing.IDLE_TRAIT
    ) -> bool | None:
        """Add or remove ``trait`` on one provider; False if it must not change, None if left.

        The provider's traits and, when adding the idle trait, its usages
        are read, and the traits written back with the generation both
        reads saw.
        """
        check_usages = add and trait == narrowing.IDLE_TRAIT
        traits_url = f"/resource_providers/{uuid}/traits"
        for _ in range(ATTEMPTS):
            response = self._get(traits_url, TRAITS_VERSION)
            if response.status_code == 404:
                run.gone.append(uuid)
                return False
            if response.status_code != 200:
                raise self._failed(response, f"GET {traits_url}")
            body = response.json()
            traits = set(body["traits"])
            generation = body["resource_provider_generation"]
            if (trait in traits) == add:
                return False  # someone else did it meanwhile
            if check_usages:
                usages_url = f"/resource_providers/{uuid}/usages"
                response = self._get(usages_url, TRAITS_VERSION)
                if response.status_code == 404:
                    run.gone.append(uuid)
                    return False
                if response.status_code != 200:
                    raise self._failed(response, f"GET {usages_url}")
                usages = response.json()
                if usages["resource_provider_generation"] != generation:
                    run.conflicts += 1
                    continue
                if not narrowing.placement_idle(usages["usages"]):
                    run.busy_in_placement.append(uuid)
                    return False
            if add:
                traits.add(trait)
            else:
                traits.discard(trait)
            payload = {"resource_provider_generation": generation, "traits": sorted(traits)}
            response = self.placement().put(traits_url, payload, version=TRAITS_VERSION)
            if response.status_code == 200:
                return True
            if response.status_code == 409:
                run.conflicts += 1
                continue
            if response.status_code == 404:
                run.gone.append(uuid)
                return False
            raise self._failed(response, f"PUT {traits_url}")
        return None

    # -- one run -------------------------------------------------------------------

    def release(self) -> bool:
        """Let the lease go (an agent that stops)."""
        return self._database().release_lease(self.holder, name=LEASE)

    def run(self, interval: float) -> Run | None:
        """One run, if this agent holds (or takes) the lease; what it did."""
        database = self._database()
        ttl = lease_seconds(interval)
        if database.take_lease(self.holder, ttl, name=LEASE) is None:
            return None
        nodes, complete = self._nodes()
        self.ensure_trait()
        tagged = self.tagged()
        run = Run(tagged_before=len(tagged))
        writer = _Writer(self, database, ttl, run)
        writer.apply(narrowing.changes(nodes, tagged, complete=complete), narrowing.IDLE_TRAIT)
        if roomy_racks_on():
            self._roomy(database, nodes, complete, writer)
        if run.added or run.removed or run.left or run.roomy_added or run.roomy_removed:
            LOG.info(
                "hpc-scheduler-agent: %s: %d tagged, %d untagged; %s: %d tagged, %d untagged; "
                "%d left to the next run (%d idle per Nova but allocated in Placement)",
                narrowing.IDLE_TRAIT,
                len(run.added),
                len(run.removed),
                narrowing.ROOMY_TRAIT,
                len(run.roomy_added),
                len(run.roomy_removed),
                run.left,
                len(run.busy_in_placement),
            )
        return run

    def _roomy(
        self,
        database: db_api.Database,
        nodes: list[narrowing.NodeUse],
        complete: bool,
        writer: _Writer,
    ) -> None:
        """The roomy racks' trait: every host of the roomiest racks that fit the budget."""
        if not complete:
            # A rack's room is unknown while a cell is silent: the racks stay as they are.
            LOG.warning(
                "hpc-scheduler-agent: %s left as it is: a cell did not answer",
                narrowing.ROOMY_TRAIT,
            )
            return
        tags = self._tags()
        if tags is None:
            # Without the aggregates every host would be a rack of its own.
            LOG.warning(
                "hpc-scheduler-agent: %s left as it is: host aggregates cannot be read",
                narrowing.ROOMY_TRAIT,
            )
            return
        self.ensure_trait(narrowing.ROOMY_TRAIT)
        tagged = self.tagged(narrowing.ROOMY_TRAIT)
        level = topology_domains.in_force()[-1]
        domains_of = topology_domains.domains_of_hosts(tags)
        rows, claims = database.of_class(AppClass.EXTREME_HPC)
        held = {row.key for row in rows} | {
            host_key(claim.host, claim.nodename) for claim in claims
        }
        wanted = narrowing.roomiest(
            nodes,
            lambda key: domains_of(key)[level],
            self._budget(),
            held=held,
            tagged=tagged,
        )
        known = {node.uuid for node in nodes}
        writer.apply(narrowing.diff(wanted, known, tagged, complete=True), narrowing.ROOMY_TRAIT)
        writer.run.roomy_hosts = len(wanted)


class _Writer:
    """Writes one run's changes, untagging first, renewing the lease as it goes."""

    def __init__(
        self, keeper: IdleTraitKeeper, database: db_api.Database, ttl: float, run: Run
    ) -> None:
        self.keeper = keeper
        self.database = database
        self.ttl = ttl
        self.run = run
        self.renewed = time.monotonic()
        self.stopped = False

    def apply(self, changes: narrowing.Changes, trait: str) -> None:
        # Untag first: a busy node in the sample only costs the filter a
        # look, but it is the one error that lasts until a run ends; and
        # the roomy racks never hold more hosts than the budget meanwhile.
        work = [(uuid, False) for uuid in sorted(changes.remove)]
        work += [(uuid, True) for uuid in sorted(changes.add)]
        idle = trait == narrowing.IDLE_TRAIT
        for position, (uuid, add) in enumerate(work):
            if self.stopped or self.keeper._stopping.is_set():
                self.run.left += len(work) - position
                return
            if time.monotonic() - self.renewed > RENEW_SECONDS:
                if self.database.take_lease(self.keeper.holder, self.ttl, name=LEASE) is None:
                    LOG.warning("hpc-scheduler-agent: idle-traits lease lost during a run")
                    self.stopped = True
                    self.run.left += len(work) - position
                    return
                self.renewed = time.monotonic()
            done = self.keeper._set(uuid, add, self.run, trait)
            if done is None:
                self.run.left += 1
            elif done:
                if idle:
                    (self.run.added if add else self.run.removed).append(uuid)
                else:
                    (self.run.roomy_added if add else self.run.roomy_removed).append(uuid)
