"""Claims: a plan written in the plugin database before Nova places its VMs.

nova-scheduler runs requests in native threads, and operators run several
scheduler workers. A plan is therefore claimed before Nova places its first
VM (:meth:`Database.claim`): under row locks on the plan's hosts and
application, :meth:`PlanContext.check` re-reads what runs and is claimed
there and checks the plan against it with
:mod:`hpc_nova_scheduler.core.admission`, and the claim is written in the
same transaction; a plan that lost a race is made again from fresh data.
Other requests count live claims as VMs, so two requests never spend the
same cache budget or take the same host as dedicated.

A claim holds its planned VMs until they are recorded, and its spare slots
until the request's builds have settled (:func:`settle`); a request that
will not be placed as planned gives its room back at once (:func:`abandon`).
"""

from __future__ import annotations

import dataclasses
import uuid as uuid_lib
from collections.abc import Callable
from typing import Any

from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core import admission, algorithm
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.judge import HostJudge
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare.in_force import Choice
from hpc_nova_scheduler.measured.pressure import Scores
from hpc_nova_scheduler.scheduler import host_view
from hpc_nova_scheduler.scheduler.corunners import claim_cores, claimed_vms
from hpc_nova_scheduler.scheduler.fallback import DATABASE_ERRORS, FailurePolicy
from hpc_nova_scheduler.scheduler.nova_instances import look_up
from hpc_nova_scheduler.scheduler.occupancy import PlacementOccupancy
from hpc_nova_scheduler.scheduler.request import RequestState

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF


@dataclasses.dataclass
class PlanContext:
    """What a plan was made from, to check it again under the claim's locks."""

    hosts: list
    request: algorithm.PlacementRequest
    thresholds: Thresholds
    table: InterferenceTable
    instance_uuid: str | None
    own: set[str]
    #: The interference model's admission (None: the cache thresholds).
    rule: HostJudge | None = None
    #: Co-runners per host key as planned on (Nova's view and the database's).
    knowledge: dict[str, list[RunningVM]] = dataclasses.field(default_factory=dict)
    #: Processor group per candidate host key.
    groups: dict[str, str] = dataclasses.field(default_factory=dict)
    project_id: str | None = None
    #: ``(depth, domain of (host, host key))`` at the required topology level, or None.
    topology: tuple[int, Callable[[str, str], str]] | None = None
    #: Free cores per host key as planned on (concurrent claims taken off),
    #: and the claims already taken off (:class:`Knowledge`).
    free_cores: dict[str, float] = dataclasses.field(default_factory=dict)
    claims_seen: set[str] = dataclasses.field(default_factory=set)
    #: The measured cache scores the plan was made with (None: declared),
    #: so that the check judges every VM as the plan did.
    scores: Scores | None = None

    def _as_vm(self, row: db_api.RunningRecord) -> RunningVM:
        application_id = self.request.application_id
        own = row.instance_uuid in self.own or row.request_id == application_id
        declared = row.cache_score
        scores = self.scores
        return RunningVM(
            uuid=row.instance_uuid,
            app_class=row.app_class,
            cache_score=declared if scores is None else scores.score(row.instance_uuid, declared),
            app_name=row.app_name,
            application_id=application_id if own else row.request_id,
        )

    def check(
        self, view: db_api.ClaimView, plan: algorithm.Plan, slots: dict[str, int]
    ) -> str | None:
        """Why the plan no longer holds against ``view``; None if it does.

        On each host the plan uses: what the database says runs and is
        claimed there now, plus what only Nova showed when the plan was made
        (VMs with no record), judged by the same rules the planner applied.
        """
        exclude = {self.instance_uuid} if self.instance_uuid else set()
        application_id = self.request.application_id
        fresh: dict[str, list[RunningVM]] = {}
        recorded = set()
        app_keys = set()
        app_hosts = set()
        for row in view.running:
            recorded.add(row.instance_uuid)
            if row.instance_uuid in exclude:
                continue
            vm = self._as_vm(row)
            fresh.setdefault(row.key, []).append(vm)
            if vm.application_id == application_id:
                app_keys.add(row.key)
                app_hosts.add((row.host, row.key))
        for claim in view.claims:
            fresh.setdefault(claim.key, []).extend(claimed_vms(claim, claim.application_id))
            if claim.application_id == application_id and claim.vms:
                app_keys.add(claim.key)
                app_hosts.add((claim.host, claim.key))
        profile = self.request.profile
        for key, adding in slots.items():
            nova_only = [
                vm
                for vm in self.knowledge.get(key, ())
                if vm.uuid not in recorded and not vm.uuid.startswith("claim:")
            ]
            reason = admission.refusal(
                [*fresh.get(key, ()), *nova_only],
                profile,
                application_id,
                adding,
                self.thresholds,
                self.table,
                self.rule,
                host_type=self.groups.get(key),
            )
            if reason is not None:
                return f"{key}: {reason}"
        reason = self._cores_claimed_meanwhile(view, plan)
        if reason is not None:
            return reason
        if profile.app_class.needs_homogeneity and plan.cpu_group is not None:
            # The application may have grown elsewhere meanwhile (another
            # request of its server group): it must stay on one processor type.
            for key in app_keys:
                group = self.groups.get(key)
                if group is not None and group != plan.cpu_group:
                    return f"the application now runs on processor group {group}"
        if self.topology is not None and app_hosts:
            # Another request of its server group may have taken a domain meanwhile.
            depth, domain_of = self.topology
            planned = plan.domains[depth] if depth < len(plan.domains) else plan.hosts
            for host, key in sorted(app_hosts):
                domain = domain_of(host, key)
                if domain not in planned:
                    level = self.request.topology.required
                    return f"the application now runs in {level} {domain} ({key})"
        return None

    def _cores_claimed_meanwhile(self, view: db_api.ClaimView, plan: algorithm.Plan) -> str | None:
        """Whether claims written since the plan was made took the cores it needs."""
        cores = self.request.demand.vcpus if self.request.demand is not None else 0.0
        if cores <= 0 or not self.free_cores:
            return None
        # Claims the plan did not see: written since (a claim's VMs only ever
        # leave it, for app_running rows that the host states then count).
        new_cores: dict[str, float] = {}
        for claim in view.claims:
            if claim.claim_id not in self.claims_seen:
                new_cores[claim.key] = new_cores.get(claim.key, 0.0) + claim_cores(claim)
        for key, vms in plan.vms_per_host().items():
            new = new_cores.get(key, 0.0)
            free = self.free_cores.get(key)
            if new > 0 and free is not None and free - new < vms * cores - 1e-9:
                return (
                    f"{key}: {new:g} cores claimed meanwhile, {free - new:g} left for {vms} VM(s)"
                )
        return None


def claim(
    state: RequestState,
    context: PlanContext,
    plan: algorithm.Plan,
    spares: tuple[str, ...],
    policy: FailurePolicy,
    fair: Choice | None = None,
) -> str | None:
    """Claim the plan and its spares; say what conflicts if they cannot be.

    Without a database (``database_failure_policy = degrade``) nothing
    is claimed: the plan stands on what this scheduler alone knows. With
    ``fair`` the claim also takes its platform's lock and is refused when
    the cores in use there leave no room for it (:meth:`Choice.refusal`).
    A claim of a loan (borrowed or preemptible, :attr:`Choice.loan`) says
    so, and recording its VMs records the loans.
    """
    database = state.database
    if database is None:
        return None
    by_key = {host_view.host_key(hs): hs for hs in context.hosts}
    profile = context.request.profile
    claim_id = str(uuid_lib.uuid4())
    adding = dict(plan.vms_per_host())
    loan = fair.loan if fair is not None else None
    claims: list[db_api.Claim] = []
    for key in [*adding, *spares]:
        hs = by_key[key]
        claims.append(
            db_api.Claim(
                claim_id=claim_id,
                instance_uuid=context.instance_uuid or claim_id,
                application_id=state.application_id,
                host=hs.host,
                nodename=hs.nodename or hs.host,
                cell_uuid=getattr(hs, "cell_uuid", None),
                vms=adding.get(key, 0),
                spare=0 if key in adding else 1,
                app_class=profile.app_class,
                cache_score=profile.cache_score,
                app_name=profile.app_name,
                project_id=context.project_id,
                cores=state.vm_cores,
                loan=loan,
                loan_platform=fair.platform if loan is not None else None,
                loan_over=0 if loan is not None else None,
            )
        )
    slots = {**{key: 1 for key in spares}, **adding}
    try:

        def check(view: db_api.ClaimView) -> str | None:
            reason = context.check(view, plan, slots)
            if reason is None and fair is not None:
                use = view.use or {}
                reason = fair.refusal(use)
                if reason is None and loan == db_api.BORROWED:
                    # How far beyond its entitlement the project goes, from
                    # the cores in use read under the platform's lock: no
                    # concurrent claim can change it before these rows are
                    # written. Database.claim writes ``claims`` after this
                    # check returns, in the same transaction, so the rows
                    # are replaced in place here (a retry computes it again).
                    over = fair.over_by(use)
                    claims[:] = [dataclasses.replace(c, loan_over=over) for c in claims]
            return reason

        conflict = database.claim(
            claims,
            check,
            ttl=CONF.hpc_scheduler.claim_timeout,
            extra_locks=[fair.lock] if fair is not None else (),
            use_hosts=fair.hosts if fair is not None else None,
        )
    except DATABASE_ERRORS as error:
        state.database = policy.failed(profile, error, database)
        if state.database is None:
            return None
        return "the plugin database failed; planning again from the fallback copy"
    if conflict is None:
        state.claim_id = claim_id
    return conflict


def check_dedicated(
    state: RequestState,
    context: PlanContext,
    plan: algorithm.Plan,
    spares: tuple[str, ...],
    knowledge: Any,
    occupied: set[str],
    occupancy: PlacementOccupancy,
) -> str | None:
    """Whether Placement shows VMs the plugin does not know on ExtremeHPC hosts.

    Requests left to Nova are not claimed; one that read the database
    before this claim was written may have claimed Placement since.
    """
    by_key = {host_view.host_key(hs): hs for hs in context.hosts}
    keys = [*dict.fromkeys(plan.hosts), *spares]
    state.dedicated = {key: by_key[key] for key in keys}
    state.own_vms = frozenset(
        vm.uuid
        for key in keys
        for vm in knowledge.vms.get(key, ())
        if vm.application_id == state.application_id
    ) | ({context.instance_uuid} if context.instance_uuid else frozenset())
    busy = occupancy.foreign(state.dedicated.values(), set(state.own_vms))
    if not busy:
        return None
    occupied.update(busy)
    abandon(state)
    state.refusal = None
    state.claim_id = None
    return f"Placement shows other VMs on {sorted(busy)}"


def settle(database: db_api.Database, nova: Any) -> None:
    """End the claims of requests that Nova has finished building.

    A claim holds its planned VMs until they are recorded, and its spare
    slots until the request's builds have settled: until then Nova's
    conductor may still rebuild a VM on an alternate. A request whose
    instances are all active, failed or gone no longer needs either.
    """
    try:
        database.expire_claims()
        open_claims = database.open_claims()
        if not open_claims:
            return
        asked: dict[str | None, list[str]] = {}
        for cell_uuid, uuids in open_claims.values():
            asked.setdefault(cell_uuid, []).extend(uuids)
        instances, scheduling = look_up(nova, asked)
        settled = [
            claim_id
            for claim_id, (_, uuids) in open_claims.items()
            if all(
                uuid not in scheduling and settled_instance(instances.get(uuid)) for uuid in uuids
            )
        ]
        if settled:
            database.release_claims(settled)
    except Exception as error:
        # Best effort: an unsettled claim only holds room until it expires.
        LOG.warning("hpc-nova-scheduler: could not settle claims: %s", error)


def settled_instance(instance: Any) -> bool:
    """Whether Nova is done building (or moving) ``instance``."""
    if instance is None or getattr(instance, "deleted", False):
        return True
    vm_state = getattr(instance, "vm_state", None)
    if vm_state in ("error", "deleted"):
        return True
    return vm_state != "building" and getattr(instance, "task_state", None) is None


def abandon(state: RequestState) -> None:
    """The request will not be placed as planned: give its room back."""
    state.refusal = state.refusal or "abandoned"
    if state.database is None or state.claim_id is None:
        return
    try:
        state.database.release_claims([state.claim_id])
    except DATABASE_ERRORS as error:
        LOG.warning(
            "hpc-nova-scheduler: could not release claim %s (it expires by itself): %s",
            state.claim_id,
            error,
        )
