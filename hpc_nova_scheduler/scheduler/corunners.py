"""Who runs on each candidate host, and as which application.

Nova's host states say which instances are on a host (in memory, kept
current by the computes or read per host from Nova's database). The plugin's
``app_running`` table says what each instance is (class, cache score,
application), including VMs placed moments ago by this or another scheduler
process that no compute has reported yet. VMs that predate the plugin are
looked up once, in one batched query per cell, from their flavors' extra
specs, and recorded so they are not looked up again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nova import context as nova_context
from nova import objects
from oslo_log import log as logging
from oslo_utils import timeutils

from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler.host_view import host_key

LOG = logging.getLogger(__name__)

_NOVA_BATCH = 500


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


@dataclasses.dataclass
class Knowledge:
    """Co-runners per host key, and what is worth writing back."""

    vms: dict[str, list[RunningVM]]
    backfill: list[db_api.RunningVM] = dataclasses.field(default_factory=list)
    stale: list[str] = dataclasses.field(default_factory=list)


class CoRunnerSource:
    """Builds :class:`Knowledge` for a list of Nova host states."""

    def __init__(self, record_ttl: float) -> None:
        self.record_ttl = record_ttl
        self._cells: dict[str, Any] = {}
        self._from_flavors: dict[str, db_api.RunningVM] = {}

    # -- Nova's database ---------------------------------------------------

    def _cell(self, ctxt: Any, cell_uuid: str | None) -> Any:
        if not cell_uuid:
            return None
        if cell_uuid not in self._cells:
            self._cells[cell_uuid] = objects.CellMapping.get_by_uuid(ctxt, cell_uuid)
        return self._cells[cell_uuid]

    def _flavor_profiles(self, wanted: Mapping[str, Any]) -> dict[str, db_api.RunningVM]:
        """Profiles of instances (uuid -> host state) from their flavors."""
        missing = [uuid for uuid in wanted if uuid not in self._from_flavors]
        by_cell: dict[str | None, list[str]] = {}
        for uuid in missing:
            by_cell.setdefault(getattr(wanted[uuid], "cell_uuid", None), []).append(uuid)
        ctxt = nova_context.get_admin_context()
        for cell_uuid, uuids in by_cell.items():
            cell = self._cell(ctxt, cell_uuid)
            for start in range(0, len(uuids), _NOVA_BATCH):
                chunk = uuids[start : start + _NOVA_BATCH]
                if cell is None:
                    instances = objects.InstanceList.get_by_filters(
                        ctxt, {"uuid": chunk}, expected_attrs=["flavor"]
                    )
                else:
                    with nova_context.target_cell(ctxt, cell) as cctxt:
                        instances = objects.InstanceList.get_by_filters(
                            cctxt, {"uuid": chunk}, expected_attrs=["flavor"]
                        )
                for instance in instances:
                    found = lenient_profile(instance.flavor.extra_specs)
                    state = wanted[instance.uuid]
                    self._from_flavors[instance.uuid] = db_api.RunningVM(
                        instance_uuid=instance.uuid,
                        host=state.host,
                        nodename=state.nodename,
                        app_class=found.app_class,
                        cache_score=found.cache_score,
                        app_name=found.app_name,
                        project_id=instance.project_id,
                    )
        # Keep the cache to instances still around.
        self._from_flavors = {u: vm for u, vm in self._from_flavors.items() if u in wanted}
        return {u: self._from_flavors[u] for u in wanted if u in self._from_flavors}

    # -- putting it together -----------------------------------------------

    def collect(
        self,
        host_states: Sequence[Any],
        database: db_api.Database | None,
        *,
        exclude: Iterable[str] = (),
        own: Iterable[str] = (),
        application_id: str | None = None,
    ) -> Knowledge:
        """Co-runners of every host; ``database`` None means Nova only.

        ``exclude`` are instances that do not count (one being moved);
        ``own`` are instances of the requesting application itself (members
        of its server group).
        """
        exclude, own = set(exclude), set(own)
        keys = {host_key(hs): hs for hs in host_states}
        located: dict[str, Any] = {}
        for hs in host_states:
            for uuid in getattr(hs, "instances", None) or {}:
                located[uuid] = hs
        rows: dict[str, db_api.RunningVM] = {}
        if database is not None:
            names = {hs.host for hs in host_states}
            rows = {vm.instance_uuid: vm for vm in database.running_for(names, located)}
        unknown = {uuid: hs for uuid, hs in located.items() if uuid not in rows}
        looked_up = self._flavor_profiles(unknown) if unknown else {}
        knowledge = Knowledge(vms={key: [] for key in keys})
        if database is not None:
            knowledge.backfill = list(looked_up.values())

        def as_vm(record: db_api.RunningVM) -> RunningVM:
            app_id = application_id if record.instance_uuid in own else record.request_id
            return RunningVM(
                uuid=record.instance_uuid,
                app_class=record.app_class,
                cache_score=record.cache_score,
                app_name=record.app_name,
                application_id=app_id,
            )

        for uuid, hs in located.items():
            if uuid in exclude:
                continue
            record = rows.get(uuid) or looked_up.get(uuid)
            if record is None:
                # Not in Nova's database either (deleted meanwhile): it holds
                # a slot in the host state, but nothing is known of it.
                record = db_api.RunningVM(uuid, hs.host, core_profile.AppClass.NON_HPC, 0.0)
            knowledge.vms[host_key(hs)].append(as_vm(record))

        now = timeutils.utcnow()
        horizon = now - datetime.timedelta(seconds=self.record_ttl)
        for uuid, record in rows.items():
            if uuid in located or uuid in exclude:
                continue
            key = (
                record.host
                if record.nodename in (None, record.host)
                else (f"{record.host}/{record.nodename}")
            )
            if key not in knowledge.vms:
                continue
            if record.placed_at is not None and record.placed_at >= horizon:
                # Placed, but no compute has reported it yet.
                knowledge.vms[key].append(as_vm(record))
            else:
                knowledge.stale.append(uuid)
        return knowledge
