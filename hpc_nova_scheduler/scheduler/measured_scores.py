"""The measured cache scores a request plans with (``cache_pressure_source``).

Read once per planned request, before its attempts, for the candidate hosts
only: every attempt, the claim's re-check under its locks and the
interference model then judge each running VM by the same score
(:class:`hpc_nova_scheduler.measured.pressure.Scores`). Under ``declared``
(the default) nothing is read and nothing changes.

A VM being moved (a migration, the measured rebalance) has run: it is
planned with its own measured score, and claims it; its record keeps its
declared score.

The collector records a host under the name nova-scheduler knows it by
(``[hpc_collector] host``, nova-compute's ``[DEFAULT] host``); an instance's
figures are joined by its UUID, so a VM counts with its measured score on
whichever candidate host Nova shows it.

Without the plugin database itself (the fallback copy, or Nova's data
alone) there are no measurements: every VM counts with its declared score.
"""

from __future__ import annotations

import dataclasses

from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.measured import pressure
from hpc_nova_scheduler.scheduler.fallback import DATABASE_ERRORS, FailurePolicy

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF


def settings() -> pressure.Settings:
    """``[hpc_scheduler] cache_pressure_source`` and its ``measured_*`` options."""
    return pressure.Settings.of(CONF.hpc_scheduler)


def read(
    hosts: list,
    database: db_api.Database | None,
    profile: ApplicationProfile,
    policy: FailurePolicy,
    *,
    moving: str | None = None,
) -> tuple[pressure.Scores | None, db_api.Database | None]:
    """The scores of the VMs on ``hosts`` and of the instance ``moving`` (on
    its source host, no candidate), None for every VM's declared score; and
    the database the request goes on with."""
    chosen = settings()
    if chosen.source == pressure.DECLARED:
        return None, database
    names = sorted({hs.host for hs in hosts})
    while not policy.degraded(database):
        try:
            instances = database.measured_instances(
                hosts=names, uuids=None if moving is None else [moving]
            )
            wanted = {*names, *(row.host for row in instances.values())}
            reports = {r.host: r for r in database.measured_hosts(hosts=wanted)}
        except DATABASE_ERRORS as error:
            database = policy.failed(profile, error, database)
            continue
        scores = pressure.Scores(chosen, reports, instances, timeutils.utcnow())
        LOG.debug(
            "hpc-nova-scheduler: %s cache scores: %d of %d measured instances on %d "
            "reporting hosts count",
            chosen.source,
            scores.counted,
            len(instances),
            len(reports),
        )
        return scores, database
    return None, database


def as_measured(
    request: algorithm.PlacementRequest, scores: pressure.Scores, instance_uuid: str
) -> algorithm.PlacementRequest:
    """``request`` planning instance ``instance_uuid`` with the score it counts with."""
    profile = request.profile
    score = scores.score(instance_uuid, profile.cache_score)
    if score == profile.cache_score:
        return request
    return dataclasses.replace(request, profile=dataclasses.replace(profile, cache_score=score))
