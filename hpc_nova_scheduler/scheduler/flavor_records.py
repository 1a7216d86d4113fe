"""The ``app_running`` row of a VM the plugin did not place, from its flavor.

VMs that predate the plugin, or that Nova placed without it, are known by
their flavor's ``hpc:`` extra specs (and the ``hpc_app_name`` hint they were
booted with). Both the co-runner reads and ``reconcile`` record them so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from oslo_log import log as logging

from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.db import api as db_api

LOG = logging.getLogger(__name__)


def lenient_profile(extra_specs: Mapping[str, Any] | None) -> core_profile.ApplicationProfile:
    """The profile of a running VM's flavor, tolerating invalid old values.

    A flavor may carry values set before validation existed (or through a
    microversion older than 2.86); each unreadable value falls back to its
    default, with a warning, because the VM runs whatever its specs say.
    """
    specs = extra_specs or {}
    try:
        return core_profile.profile_from_request(specs)
    except core_profile.ProfileError as error:
        LOG.warning(
            "hpc-nova-scheduler: a running VM's flavor has an invalid %s (%s); "
            "using the default for it",
            error.key,
            error.reason,
        )
    fields = {}
    for key, name, parse in (
        (core_profile.SPEC_APP_CLASS, "app_class", core_profile.AppClass.parse),
        (core_profile.SPEC_CACHE_SCORE, "cache_score", core_profile.parse_cache_score),
        (core_profile.SPEC_APP_NAME, "app_name", core_profile.parse_app_name),
    ):
        if key in specs:
            with contextlib.suppress(core_profile.ProfileError):
                fields[name] = parse(specs[key])
    return core_profile.ApplicationProfile(**fields)


def record_from_flavor(
    uuid: str,
    host: str,
    nodename: str | None,
    extra_specs: Mapping[str, Any] | None,
    project_id: str | None,
    hinted_name: str | None = None,
) -> db_api.RunningRecord:
    """The app_running row of a VM the plugin did not place, from its flavor.

    ``hinted_name`` is the ``hpc_app_name`` hint it was booted with, which
    names it where the flavor does not.
    """
    found = lenient_profile(extra_specs)
    app_name = found.app_name
    if app_name is None and hinted_name is not None:
        with contextlib.suppress(core_profile.ProfileError):
            app_name = core_profile.parse_app_name(hinted_name, key=core_profile.HINT_APP_NAME)
    return db_api.RunningRecord(
        instance_uuid=uuid,
        host=host,
        nodename=nodename,
        app_class=found.app_class,
        cache_score=found.cache_score,
        app_name=app_name,
        project_id=project_id,
    )
