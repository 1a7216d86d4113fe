"""The ``fairshare`` task: seed 002's allocator, run by the holder of the lease.

Every :data:`CHECK_SECONDS` the agent renews (or takes) the
``fairshare_lease`` row, reads the inputs (shares, demand, the VMs recorded
per project and platform, refusals for entitlement) and runs when
``fairshare_interval`` has passed or the inputs changed. A run charges the
usage of the elapsed time, decays it, and writes a generation: entitlements
and node templates (:func:`~hpc_nova_scheduler.fairshare.live_allocation.allocate`).

Two agents may run, for availability: the lease decides which allocates.
An agent that stops lets the lease go at once; one that dies stops renewing
it, and another takes it :data:`LEASE_SECONDS` later.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping

from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.sharing import SharingError
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare.live_allocation import Outcome, allocate, read_inputs
from hpc_nova_scheduler.fairshare.platforms import FairshareError, Node, build_cloud
from hpc_nova_scheduler.scheduler import fairness
from hpc_nova_scheduler.scheduler import nova_nodes as nova_compute_nodes

LOG = logging.getLogger(__name__)

#: Seconds between two looks of an agent at the lease.
CHECK_SECONDS = 2.0
#: Seconds a lease lasts without renewal: a dead agent's passes on after this.
LEASE_SECONDS = 20.0


def change_gap(options: hpc_conf.FairnessSettings) -> float:
    """Seconds between two runs that changed inputs trigger."""
    return max(CHECK_SECONDS, options.interval / 30.0)


def nova_nodes() -> list[Node]:
    """Every compute node of every cell, as Nova's cell databases hold them."""
    cells = nova_compute_nodes.read()
    if cells.silent:
        raise FairshareError(f"cell {cells.silent[0]} did not answer for its compute nodes")
    return [Node(node.host, node.nodename, node.vcpus, node.cpu_info) for node in cells.nodes]


class Allocator:
    """The allocator of one agent: runs while it holds the lease."""

    def __init__(
        self,
        database: Callable[[], db_api.Database],
        tags: Callable[[], Mapping | None],
        nodes: Callable[[], list[Node]] = nova_nodes,
        holder: str = "",
    ) -> None:
        self._database = database
        self._tags = tags
        self._nodes = nodes
        #: Unique per agent process: the lease's holder.
        self.holder = holder
        #: Why the last look could not allocate (a tagging mistake, a cell
        #: that did not answer); None when it could, or had nothing to do.
        self.problem: str | None = None

    def release(self) -> bool:
        """Let the lease go (an agent that stops): another agent takes it at once."""
        return self._database().release_lease(self.holder)

    def _give_up(self, problem: str) -> None:
        """Say once why this run did not happen; the entitlements in force stay."""
        # Logged outside the handler: a tagging mistake is one line, not a traceback.
        self.problem = f"{problem}; the last entitlements stay in force"
        fairness.once(self.problem)

    def tick(self, now: datetime.datetime | None = None) -> Outcome | None:
        """Renew the lease and run if a run is due; the run's outcome, if any."""
        self.problem = None
        options = fairness.settings()
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
            cloud, problem = None, f"fair share cannot run: {error}"
        if cloud is None:
            return self._give_up(problem)
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
            outcome, problem = None, f"fair share cannot allocate: {error}"
        if outcome is None:
            return self._give_up(problem)
        LOG.info(
            "hpc-scheduler-agent: fair-share generation %s (%s): %s",
            outcome.generation,
            options.policy,
            outcome.allocation,
        )
        return outcome
