"""The interference model nova-scheduler judges shared hosts with, kept by its stamp.

:mod:`hpc_nova_scheduler.interference.resolver` says which model
``[hpc_scheduler] interference_model`` means. A model that is not fitted is
built once. A fitted one, stored in the plugin database, is read again
whenever its stamp (kind, generation) changes there, and not on every
request: a stored forest is megabytes. While the database fails, the last
model read stays in use.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from oslo_log import log as logging

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.interference import model_registry, resolver
from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.interference.rule import ModelRule
from hpc_nova_scheduler.scheduler.fallback import DATABASE_ERRORS, FailurePolicy

LOG = logging.getLogger(__name__)
CONF = hpc_conf.CONF


def _nothing_stored(name: str) -> None:
    return None


class ModelCache:
    """The configured model, read once per stored version."""

    def __init__(self, policy: FailurePolicy) -> None:
        self._policy = policy
        self._models: dict[str, InterferenceModel] = {}
        #: (kind, generation) of each stored model when it was read.
        self._stamps: dict[str, tuple] = {}
        self._lock = threading.Lock()

    def model(self, database: db_api.Database | None) -> InterferenceModel | None:
        """The model ``interference_model`` names; None for seed 003's thresholds.

        While no fitted model is stored under the name, a registered fitted
        kind cannot judge shared hosts and refuses them; a name that is
        neither registered nor stored raises UnknownModel.
        """
        name = CONF.hpc_scheduler.interference_model
        if name == resolver.NO_MODEL:
            return None
        if resolver.is_plain(name):
            with self._lock:
                model = self._models.get(name)
                if model is None:
                    model = self._models[name] = resolver.model(name)
                return model
        stamp = None
        if database is not None:
            try:
                stamp = database.stored_model_stamp(name)
            except DATABASE_ERRORS as error:
                LOG.warning("hpc-nova-scheduler: cannot read stored model %s: %s", name, error)
                with self._lock:
                    cached = self._models.get(name)
                if cached is not None:
                    return cached
        with self._lock:
            cached = self._models.get(name)
            if stamp is None:
                # The fallback copy holds no fitted models: keep the last one read.
                if cached is not None and self._policy.degraded(database):
                    return cached
                # Not fitted: refuses shared hosts, and says why.
                return resolver.model(name, lookup=_nothing_stored)
            if cached is not None and self._stamps.get(name) == stamp:
                return cached
        try:
            stored = database.stored_model(name)
        except DATABASE_ERRORS as error:
            LOG.warning("hpc-nova-scheduler: cannot read stored model %s: %s", name, error)
            if cached is not None:
                return cached
            raise model_registry.UnknownModel(
                f"stored model {name!r} cannot be read: {error}"
            ) from None
        if stored is None:  # deleted since its stamp was read
            raise model_registry.UnknownModel(f"stored model {name!r} is gone")
        try:
            model = resolver.from_record(stored)
        except Exception as error:  # a damaged or untrusted stored model must not stop Nova
            raise model_registry.UnknownModel(
                f"stored model {name!r} cannot be read: {error}"
            ) from None
        LOG.info(
            "hpc-nova-scheduler: interference model %s (%s) read from the plugin database, "
            "made with %s",
            name,
            stored.kind,
            stored.versions,
        )
        with self._lock:
            self._models[name] = model
            self._stamps[name] = stamp
        return model

    def rule(
        self,
        model: InterferenceModel,
        profile: ApplicationProfile,
        corunners: Mapping[str, list],
        database: db_api.Database | None,
    ) -> tuple[ModelRule, db_api.Database | None]:
        """The model's admission, with the profiles of the request and every co-runner.

        Without the plugin database (or its fallback copy) there are no
        profiles: every shared host is refused, and hosts alone stay open.
        """
        names = {vm.app_name for vms in corunners.values() for vm in vms if vm.app_name}
        if profile.app_name:
            names.add(profile.app_name)
        records = None
        while database is not None and records is None:
            try:
                records = database.list_profiles(sorted(names)) if names else []
            except DATABASE_ERRORS as error:
                database = self._policy.failed(profile, error, database)
        profiles = {r.name: r for r in records or ()}
        tolerance = CONF.hpc_scheduler.interference_tolerance
        return ModelRule(model, tolerance, profiles), database
