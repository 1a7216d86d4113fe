"""Fair share as the filter applies it to one request: its scope and its tries.

A request falls under fair share when its project has a share in the
generation of entitlements in force, or when it is preemptible
(``hpc:preemptible``) while a generation is in force (:func:`scope`); it is
then planned on each platform its project may use, in turn (:func:`tries`),
and refused when there is none. A preemptible request may use any
platform's idle cores, never its project's entitlement, and its claim is a
loan the agent may take back; so is a claim beyond the entitlement under
``borrow``.
"""

from __future__ import annotations

from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.cluster import Host
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import fairness
from hpc_nova_scheduler.scheduler.request import Request, RequestState

LOG = logging.getLogger(__name__)

#: Hosts to plan over, and the platform choice they stand for (None: no fair share).
Try = tuple[list[Host], fairness.Choice | None]


def scope(
    entitlements: fairness.Entitlements, state: RequestState, request: Request
) -> fairness.InForce | None:
    """The entitlements the request is held to; None when fair share does not apply.

    It applies to the HPC requests of projects with a share, and to
    preemptible requests of every project (so that each is recorded as a
    loan the agent may take back), while a generation less than two
    intervals old is in force.
    """
    options = fairness.settings()
    if options is None or state.database is None or not request.project_id:
        return None
    try:
        in_force = entitlements.current(state.database)
    except db_api.ERRORS as error:
        LOG.warning("hpc-nova-scheduler: cannot read entitlements (%s); fair share skipped", error)
        return None
    if in_force is None:
        return None
    if request.project_id not in in_force.governed and not state.preemptible:
        return None
    if in_force.stale(options.interval, timeutils.utcnow()):
        fairness.warn_stale(in_force)
        return None
    return in_force


def tries(
    state: RequestState,
    request: Request,
    in_force: fairness.InForce | None,
    core_hosts: list[Host],
    cores: int,
) -> list[Try]:
    """(hosts, choice) to plan over in turn: every host when fair share does not
    apply; else each platform the project may use, its template-following hosts
    first; empty after refusing the request.

    A preemptible request of a project without a share may also go, last,
    to the hosts of no platform, as it would without fair share: no
    entitlement or loan is counted there.
    """
    if in_force is None:
        return [(core_hosts, None)]
    options = fairness.settings()
    project = request.project_id
    use = state.database.cores_in_use()
    found = fairness.choices(
        in_force,
        in_force.cloud,
        project,
        cores,
        [host.name for host in core_hosts],
        use,
        options.enforcement if options is not None else hpc_conf.STRICT,
        preemptible=state.preemptible,
    )
    planned: list[Try] = []
    for choice in found:
        on_platform = [host for host in core_hosts if host.name in choice.keys]
        if choice.preferred:
            following = [host for host in on_platform if host.name in choice.preferred]
            if following and len(following) < len(on_platform):
                planned.append((following, choice))
        planned.append((on_platform, choice))
    if state.preemptible and project not in in_force.governed:
        elsewhere = [host for host in core_hosts if host.name not in in_force.cloud.platform_of]
        if elsewhere:
            planned.append((elsewhere, None))
    if planned:
        return planned
    if state.preemptible:
        # No idle cores: not demand for the entitlement, nothing to reclaim for.
        state.refusal = fairness.describe_no_idle_cores(
            in_force, in_force.cloud, project, cores, use
        )
        LOG.info("hpc-nova-scheduler: refusing %s: %s", state.application_id, state.refusal)
        return []
    state.refusal = fairness.describe_refusal(in_force, in_force.cloud, project, cores, use)
    LOG.info("hpc-nova-scheduler: refusing %s: %s", state.application_id, state.refusal)
    try:
        # The required level tells the reclaim to free cores inside one domain.
        state.database.record_refusal(
            project, state.profile.app_name, cores, topology_level=state.topology.required
        )
    except db_api.ERRORS as error:
        LOG.warning("hpc-nova-scheduler: could not record the refusal: %s", error)
    return []


def log_choice(application_id: str, choice: fairness.Choice | None, tried: list[Host]) -> None:
    """Debug: the platform a fair-share request was planned on."""
    if choice is None:
        return
    LOG.debug(
        "hpc-nova-scheduler: %s on platform %s (%s, %d hosts)",
        application_id,
        choice.platform,
        choice.loan or f"entitled {choice.entitled}",
        len(tried),
    )
