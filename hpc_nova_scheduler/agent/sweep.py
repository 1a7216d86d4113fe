"""The ``sweep`` task: ``app_running`` repaired from Nova, and the fallback copy kept ready.

The filter corrects the records of the hosts it looks at while it places
VMs; servers deleted or moved in between are corrected every
``[hpc_scheduler] reconcile_interval`` seconds by this sweep, with the same
repair as ``hpc-nova-scheduler reconcile``.

Each sweep also keeps the fallback copy
(:mod:`hpc_nova_scheduler.scheduler.fallback`) ready for an outage of the
plugin database: it hands what the copy holds from the last outage over
to the database before repairing, then copies the profiles, the
interference table and the entitlements into it. The copy is the file of
the scheduler workers of this host (``fallback_connection``, by default in
Nova's ``state_path``), so an agent that keeps it ready runs on every host
that runs nova-scheduler, with the same nova.conf. The filter hands a copy
over on its own request path too, so an outage ends well without an agent.
"""

from __future__ import annotations

from oslo_log import log as logging

from hpc_nova_scheduler.agent import reconcile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler.fallback import FallbackStore

LOG = logging.getLogger(__name__)


def sweep(
    database: db_api.Database,
    fallback: FallbackStore | None = None,
    nova: reconcile.NovaView | None = None,
) -> reconcile.Changes:
    """One sweep: hand the copy over, repair ``app_running``, refresh the copy."""
    if fallback is not None:
        fallback.hand_over(database, force=True)
    changes = reconcile.plan(database.list_running(), nova or reconcile.NovaView())
    if changes:
        reconcile.apply(database, changes)
        for line in changes.describe():
            LOG.info("hpc-scheduler-agent: app_running %s", line)
    if fallback is not None:
        fallback.refresh(database)
    return changes
