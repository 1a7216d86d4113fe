"""Fair share as the filter applies it to one request: its scope and its tries.

A request falls under fair share when its project has a share in the
generation of entitlements in force (:func:`scope`); it is then planned on
each platform its project may use, in turn (:func:`tries`), and refused when
there is none.
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

    It applies to the HPC requests of projects with a share, while a
    generation less than two intervals old is in force.
    """
    options = fairness.settings()
    if options is None or state.database is None or not request.project_id:
        return None
    try:
        in_force = entitlements.current(state.database)
    except db_api.ERRORS as error:
        LOG.warning("hpc-nova-scheduler: cannot read entitlements (%s); fair share skipped", error)
        return None
    if in_force is None or request.project_id not in in_force.governed:
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
    first; empty after refusing the request."""
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
    )
    planned: list[Try] = []
    for choice in found:
        on_platform = [host for host in core_hosts if host.name in choice.keys]
        if choice.preferred:
            following = [host for host in on_platform if host.name in choice.preferred]
            if following and len(following) < len(on_platform):
                planned.append((following, choice))
        planned.append((on_platform, choice))
    if planned:
        return planned
    state.refusal = fairness.describe_refusal(in_force, in_force.cloud, project, cores, use)
    LOG.info("hpc-nova-scheduler: refusing %s: %s", state.application_id, state.refusal)
    try:
        state.database.record_refusal(project, state.profile.app_name, cores)
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
        "borrowed" if choice.borrowed else f"entitled {choice.entitled}",
        len(tried),
    )
