"""Repair ``app_running`` from Nova's own view of its instances.

The scheduler keeps ``app_running`` in step as it places VMs and as it
meets hosts whose VMs changed; what happened while no scheduler looked
(servers deleted or moved while nova-scheduler was down, a record that
failed to write) is repaired here:

- a row whose instance is gone (deleted, never built, archived) is removed;
- a row whose instance runs on another host now follows it;
- a live instance whose flavor has ``hpc:`` extra specs and that has no row
  gets one, from its flavor;
- a row that does not know its VM's cores (written before fair share
  counted them) gets its flavor's vCPUs.

Each row's fate is the holder rule's (:func:`hpc_nova_scheduler.core.holders.locate`),
the same rule the filter reads: a row whose instance Nova is still
scheduling (a build request, no cell yet), building (in its cell, no host
yet) or has parked (shelved offloaded) is left alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from nova import context as nova_context
from nova import objects

from hpc_nova_scheduler.core import holders
from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler.flavor_records import record_from_flavor
from hpc_nova_scheduler.scheduler.nova_instances import NovaInstances, hinted_names

_BATCH = 500


@dataclasses.dataclass(frozen=True)
class Found:
    """An instance as Nova's cell database holds it."""

    uuid: str
    host: str | None
    nodename: str | None
    deleted: bool
    vm_state: str | None
    extra_specs: dict
    project_id: str | None
    #: The flavor's vCPUs: the VM's cores, as fair share counts them.
    vcpus: int = 0

    def holder_view(self) -> holders.NovaInstance:
        return holders.NovaInstance(self.host, self.nodename, self.deleted, self.vm_state)


@dataclasses.dataclass
class Changes:
    stale: list[db_api.RunningRecord] = dataclasses.field(default_factory=list)
    moved: list[tuple[db_api.RunningRecord, str, str | None]] = dataclasses.field(
        default_factory=list
    )
    missing: list[db_api.RunningRecord] = dataclasses.field(default_factory=list)
    #: instance -> its cores, for rows that did not know them.
    cores: dict[str, int] = dataclasses.field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.stale or self.moved or self.missing or self.cores)

    def describe(self) -> list[str]:
        lines = [f"stale: {vm.instance_uuid} on {vm.host} (instance gone)" for vm in self.stale]
        lines += [
            f"moved: {vm.instance_uuid} from {vm.host} to {host}" for vm, host, _ in self.moved
        ]
        lines += [
            f"missing: {vm.instance_uuid} on {vm.host} ({vm.app_class.value}, "
            f"cache score {vm.cache_score:g})"
            for vm in self.missing
        ]
        lines += [f"cores: {uuid} has {cores}" for uuid, cores in sorted(self.cores.items())]
        return lines


class NovaView:
    """Instances across Nova's cells, read through Nova's own objects."""

    def __init__(self, nova: NovaInstances | None = None) -> None:
        self.context = nova_context.get_admin_context(read_deleted="yes")
        self.nova = nova or NovaInstances()

    def _cells(self) -> list[Any]:
        return [
            cell for cell in objects.CellMappingList.get_all(self.context) if not cell.is_cell0()
        ]

    @staticmethod
    def _found(instance: Any) -> Found:
        return Found(
            uuid=instance.uuid,
            host=instance.host,
            nodename=instance.node,
            deleted=bool(instance.deleted),
            vm_state=instance.vm_state,
            extra_specs=dict(instance.flavor.extra_specs or {}),
            project_id=instance.project_id,
            vcpus=int(instance.flavor.vcpus or 0),
        )

    def look_up(self, uuids: Sequence[str]) -> tuple[dict[str, Found], set[str]]:
        """Instances by uuid, and the uuids Nova is still scheduling."""
        by_cell: dict[str, list[str]] = {}
        unplaced: list[str] = []
        for start in range(0, len(uuids), _BATCH):
            unplaced += self._map(list(uuids[start : start + _BATCH]), by_cell)
        # The conductor puts an instance in its cell before it deletes the
        # build request: one not in a cell at the first read and no longer
        # a build request at the second is looked for in the cells again.
        scheduling = self.nova.scheduling(unplaced) if unplaced else set()
        gone = [uuid for uuid in unplaced if uuid not in scheduling]
        if gone:
            self._map(gone, by_cell)
        instances = self.nova.get(by_cell)
        return {uuid: self._found(i) for uuid, i in instances.items()}, scheduling

    def _map(self, uuids: list[str], by_cell: dict[str, list[str]]) -> list[str]:
        """Sort ``uuids`` by cell uuid into ``by_cell``; return those in none."""
        mappings = objects.InstanceMappingList.get_by_instance_uuids(self.context, uuids)
        mapped = {m.instance_uuid: m for m in mappings}
        unplaced = []
        for uuid in uuids:
            mapping = mapped.get(uuid)
            if mapping is not None and mapping.cell_mapping is not None:
                by_cell.setdefault(mapping.cell_mapping.uuid, []).append(uuid)
            else:
                unplaced.append(uuid)
        return unplaced

    def hpc_instances(self) -> list[Found]:
        """Every live instance on a host whose flavor has ``hpc:`` specs."""
        live = nova_context.get_admin_context()
        found = []
        for cell in self._cells():
            with nova_context.target_cell(live, cell) as cctxt:
                # Objects for the instances whose stored flavor names an
                # hpc: spec only: a sweep every few seconds must not build
                # every instance of a large cloud.
                uuids = self.nova.hpc_flavored(cctxt)
                for start in range(0, len(uuids), _BATCH):
                    instances = objects.InstanceList.get_by_filters(
                        cctxt,
                        {"uuid": uuids[start : start + _BATCH], "deleted": False},
                        expected_attrs=["flavor"],
                    )
                    found.extend(
                        self._found(i)
                        for i in instances
                        if i.host and core_profile.has_hpc_specs(i.flavor.extra_specs or {})
                    )
        return found


def plan(rows: Iterable[db_api.RunningRecord], nova: NovaView) -> Changes:
    rows = list(rows)
    changes = Changes()
    found, scheduling = nova.look_up([row.instance_uuid for row in rows])
    for row in rows:
        instance = found.get(row.instance_uuid)
        # No host state here: Nova's databases alone tell where each VM is.
        verdict = holders.locate(
            row.host,
            row.nodename,
            seen=None,
            instance=instance.holder_view() if instance is not None else None,
            scheduling=row.instance_uuid in scheduling,
        )
        if verdict.gone:
            changes.stale.append(row)
            continue
        if verdict.whereabouts is holders.Whereabouts.MOVED:
            changes.moved.append((row, verdict.host, verdict.nodename))
        if instance is not None and instance.host and not row.cores and instance.vcpus:
            changes.cores[row.instance_uuid] = instance.vcpus
    known = {row.instance_uuid for row in rows}
    missing = [i for i in nova.hpc_instances() if i.uuid not in known]
    hinted = hinted_names(
        nova.nova, [i.uuid for i in missing if core_profile.SPEC_APP_NAME not in i.extra_specs]
    )
    for instance in missing:
        record = record_from_flavor(
            instance.uuid,
            instance.host,
            instance.nodename,
            instance.extra_specs,
            instance.project_id,
            hinted.get(instance.uuid),
        )
        changes.missing.append(dataclasses.replace(record, cores=instance.vcpus))
    return changes


def apply(database: db_api.Database, changes: Changes) -> None:
    if changes.stale:
        database.forget_running([vm.instance_uuid for vm in changes.stale])
    if changes.moved:
        database.record_running(
            [
                dataclasses.replace(vm, host=host, nodename=nodename or host)
                for vm, host, nodename in changes.moved
            ]
        )
    if changes.missing:
        database.record_running(changes.missing)
    if changes.cores:
        database.set_cores(changes.cores)
