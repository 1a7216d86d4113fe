"""The rounds of one planned request: Nova places its VMs one at a time.

A plan fixes how many VMs go on each host. Nova schedules a multi-create
request one instance at a time, filtering and weighing the hosts again for
each, so every round the filter keeps the hosts that still have planned
VMs (and the alternates behind them), learns where Nova put the previous
VM, and records it in the plugin database.
"""

from __future__ import annotations

from typing import Any

from oslo_log import log as logging

from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import claims, host_view
from hpc_nova_scheduler.scheduler.fallback import DATABASE_ERRORS, FallbackStore
from hpc_nova_scheduler.scheduler.occupancy import PlacementOccupancy
from hpc_nova_scheduler.scheduler.placed_here import PlacedHere
from hpc_nova_scheduler.scheduler.request import Request, RequestState

LOG = logging.getLogger(__name__)


class Rounds:
    """Walks Nova through a plan, round by round."""

    def __init__(
        self,
        occupancy: PlacementOccupancy,
        fallback: FallbackStore,
        placed_here: PlacedHere | None = None,
    ) -> None:
        self.occupancy = occupancy
        self._fallback = fallback
        self._placed_here = placed_here if placed_here is not None else PlacedHere()

    def select(self, state: RequestState, hosts: list, request: Request) -> list:
        """The hosts this round may choose from.

        A plan fixes how many VMs go on each host, not in which order: each
        round keeps the hosts that still have planned VMs and lets Nova's
        weighers choose among them, with the alternates behind them (see
        ``HpcPlanWeigher``). The next round tells where the previous VM
        went: the host Nova claimed for it gained an instance in Nova's
        host state (Nova also puts it first, which is the fallback); in the
        last round one planned host is left, which tells where the last goes.
        """
        if state.refusal is not None:
            return []
        if state.plan is None:
            if not state.avoid:
                return hosts
            return [hs for hs in hosts if host_view.host_key(hs) not in state.avoid]
        instance_uuid = request.instance_uuid
        if instance_uuid in state.answers:
            # Nova filters the last instance again when it gathers alternates.
            return [hs for hs in hosts if host_view.host_key(hs) in state.answers[instance_uuid]]
        if state.pending is not None:
            went = self._claimed_host(state, hosts)
            if went is None or not self._took(state, went, request):
                claims.abandon(state)
                return []
        kept = frozenset(key for key, count in state.remaining.items() if count > 0)
        state.planned_now = kept
        offered = kept | frozenset(state.spares)
        state.answers[instance_uuid] = offered
        chosen = [hs for hs in hosts if host_view.host_key(hs) in offered]
        state.pending = instance_uuid
        if sum(state.remaining.values()) == 1:
            planned = [hs for hs in chosen if host_view.host_key(hs) in kept]
            if not planned:
                LOG.warning(
                    "hpc-nova-scheduler: planned host %s no longer passes Nova's "
                    "filters; the request fails rather than being split",
                    sorted(kept),
                )
                state.pending = None
                claims.abandon(state)
                return []
            if state.dedicated and len(state.answers) > 1:
                # Before the last VM: a request that read the database before
                # this plan was claimed may have claimed Placement meanwhile.
                busy = self.occupancy.foreign(
                    [hs for key, hs in state.dedicated.items() if key not in state.spares],
                    set(state.own_vms) | set(state.answers),
                )
                if busy:
                    LOG.warning(
                        "hpc-nova-scheduler: ExtremeHPC hosts %s of %s now run other VMs; "
                        "the request fails rather than sharing them",
                        sorted(busy),
                        state.application_id,
                    )
                    state.pending = None
                    claims.abandon(state)
                    return []
            self._took(state, planned[0], request)
        else:
            state.seen = {host_view.host_key(hs): _instance_count(hs) for hs in chosen}
        return chosen

    @staticmethod
    def _claimed_host(state: RequestState, hosts: list) -> Any:
        """The host Nova claimed for the pending instance, among ``hosts``.

        Nova consumes the claimed host's state, which counts one more
        instance. When Placement turned down the first host, Nova claimed a
        later one, so the first is not enough. Other requests of this
        scheduler may consume the same host states meanwhile; the first
        host, when it gained, and otherwise the first planned host that
        gained, is the one.
        """
        if not hosts:
            return None
        gained = [
            hs
            for hs in hosts
            if _instance_count(hs) is not None
            and state.seen.get(host_view.host_key(hs)) is not None
            and _instance_count(hs) > state.seen[host_view.host_key(hs)]
        ]
        if not gained or gained[0] is hosts[0]:
            return hosts[0]
        for hs in gained:
            if state.remaining.get(host_view.host_key(hs), 0) > 0:
                return hs
        return gained[0]

    def _took(self, state: RequestState, host_state: Any, request: Request) -> bool:
        """The pending instance went to ``host_state``: count and record it."""
        key = host_view.host_key(host_state)
        instance_uuid, state.pending = state.pending, None
        if state.remaining.get(key, 0) <= 0:
            LOG.error(
                "hpc-nova-scheduler: %s went to %s, which the plan of %s does not "
                "have room on; refusing the rest of the request",
                instance_uuid,
                key,
                state.application_id,
            )
            state.refusal = "off plan"
            return False
        state.remaining[key] -= 1
        if instance_uuid:
            # Nova took it off this service's host state when it chose the host.
            self._placed_here.add(instance_uuid)
        self._record(state, host_state, instance_uuid, request)
        return True

    def _record(
        self, state: RequestState, host_state: Any, instance_uuid: str, request: Request
    ) -> None:
        if state.database is None or not instance_uuid:
            return
        profile = state.profile
        vm = db_api.RunningRecord(
            instance_uuid=instance_uuid,
            host=host_state.host,
            nodename=host_state.nodename,
            app_class=profile.app_class,
            cache_score=profile.cache_score,
            app_name=profile.app_name,
            request_id=state.application_id,
            project_id=request.project_id,
            cores=state.vm_cores,
        )
        try:
            if state.claim_id is None:
                state.database.record_running([vm])
            else:
                state.database.record_placed(vm, state.claim_id)
        except DATABASE_ERRORS as error:
            copy = None if self._fallback.owns(state.database) else self._fallback.database()
            LOG.warning(
                "hpc-nova-scheduler: could not record %s in app_running (%s)%s",
                instance_uuid,
                error,
                "; recording it in the fallback copy" if copy is not None else "",
            )
            if copy is None:
                return
            try:
                copy.record_running([vm])
            except DATABASE_ERRORS as again:
                LOG.warning(
                    "hpc-nova-scheduler: nor in the fallback copy (%s); the sweep will "
                    "restore it from Nova",
                    again,
                )


def _instance_count(host_state: Any) -> int | None:
    count = getattr(host_state, "num_instances", None)
    return count if isinstance(count, int) else None
