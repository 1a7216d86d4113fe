"""Batched reads of instances from Nova's databases, for the co-runners and the sweep.

The plugin asks Nova's cell databases about instances it does not know
(their flavors) and about records no host state shows (still being built,
moved, or gone), in one batched query per cell; and Nova's API database
about build requests and the hints an instance was booted with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from oslo_log import log as logging

from hpc_nova_scheduler.core import profile as core_profile

LOG = logging.getLogger(__name__)

_BATCH = 500


def _batches(uuids: Sequence[str]):
    """``uuids`` in lists of at most ``_BATCH``: one query each."""
    for start in range(0, len(uuids), _BATCH):
        yield list(uuids[start : start + _BATCH])


class NovaInstances:
    """Batched reads of instances from Nova's cell databases."""

    def __init__(self) -> None:
        self._cells: dict[str, Any] = {}

    def _cell(self, ctxt: Any, cell_uuid: str | None) -> Any:
        if cell_uuid and cell_uuid not in self._cells:
            self._cells[cell_uuid] = objects.CellMapping.get_by_uuid(ctxt, cell_uuid)
        return self._cells.get(cell_uuid) if cell_uuid else None

    def get(self, uuids_by_cell: Mapping[str | None, Sequence[str]]) -> dict[str, Any]:
        """Instances by uuid, deleted ones included, with their flavors."""
        ctxt = nova_context.get_admin_context(read_deleted="yes")
        found: dict[str, Any] = {}
        for cell_uuid, uuids in uuids_by_cell.items():
            cell = self._cell(ctxt, cell_uuid)
            for chunk in _batches(uuids):
                if cell is None:
                    instances = objects.InstanceList.get_by_filters(
                        ctxt, {"uuid": chunk}, expected_attrs=["flavor"]
                    )
                else:
                    with nova_context.target_cell(ctxt, cell) as cctxt:
                        instances = objects.InstanceList.get_by_filters(
                            cctxt, {"uuid": chunk}, expected_attrs=["flavor"]
                        )
                found.update((instance.uuid, instance) for instance in instances)
        return found

    @staticmethod
    def hpc_flavored(cctxt: Any) -> list[str]:
        """The live instances on a host, in the cell ``cctxt`` targets, whose
        flavor may have ``hpc:`` extra specs.

        A textual look at the flavor Nova stores with each instance
        (``instance_extra.flavor``, JSON), one query a cell: the sweep
        builds Nova's objects for these only, not for every instance of
        the cloud, most of them plain. A key is written ``"hpc:...`` in
        that JSON; a value that merely contains it comes back too, and the
        caller's look at the real extra specs drops it.
        """
        import sqlalchemy as sa
        from nova.db.main import api as main_api
        from nova.db.main import models

        instances = models.Instance.__table__
        extra = models.InstanceExtra.__table__
        select = (
            sa.select(instances.c.uuid)
            .select_from(instances.join(extra, extra.c.instance_uuid == instances.c.uuid))
            .where(
                instances.c.deleted == 0,
                instances.c.host.is_not(None),
                extra.c.flavor.like(f'%"{core_profile.SPEC_NAMESPACE}:%'),
            )
            .order_by(instances.c.id)
        )
        with main_api.get_engine(context=cctxt).connect() as connection:
            return [row[0] for row in connection.execute(select)]

    def scheduling(self, uuids: Sequence[str]) -> set[str]:
        """Which of ``uuids`` Nova is still scheduling.

        Until the conductor has a host for it, an instance exists only as a
        build request in the API database, not in any cell; the plugin
        records VMs (and claims room) in that window.
        """
        ctxt = nova_context.get_admin_context()
        found = set()
        for uuid in uuids:
            try:
                objects.BuildRequest.get_by_instance_uuid(ctxt, uuid)
            except nova_exception.BuildRequestNotFound:
                continue
            found.add(uuid)
        return found

    def hinted_names(self, uuids: Sequence[str]) -> dict[str, str]:
        """The ``hpc_app_name`` hint each instance was booted with, if any.

        Nova keeps every instance's request spec, hints included, in its
        API database: an application named only by its hint is known by
        name from Nova's own data, not only from ``app_running``.
        """
        # One query per batch: warming up on a filled cloud asks about every
        # VM of its hosts, and one query per VM was the plugin's hottest
        # frame at 1,000 nodes.
        ctxt = nova_context.get_admin_context()
        found: dict[str, str] = {}
        for chunk in _batches(uuids):
            for spec in objects.RequestSpec.get_by_instance_uuids(ctxt, chunk):
                value = spec.get_scheduler_hint(core_profile.HINT_APP_NAME)
                if isinstance(value, str):
                    found[spec.instance_uuid] = value
        return found


def hinted_names(nova: Any, uuids: Sequence[str]) -> dict[str, str]:
    """``nova.hinted_names``, or nothing where it cannot be read."""
    if not uuids:
        return {}
    try:
        return nova.hinted_names(uuids)
    except Exception as error:
        # Best effort: a VM whose hint cannot be read counts by its flavor.
        LOG.warning("hpc-nova-scheduler: cannot read request specs' hints: %s", error)
        return {}


def look_up(nova: Any, uuids_by_cell: Mapping[str | None, Sequence[str]]):
    """Instances by uuid, and the uuids Nova is still scheduling.

    An instance is looked for in its cell, then among build requests, then
    in its cell again: the conductor creates the instance before it deletes
    the build request, so one of the three reads sees it whenever it
    exists. One that is in none of them is gone.
    """
    instances = dict(nova.get(uuids_by_cell)) if uuids_by_cell else {}
    missing = {
        cell: [u for u in uuids if u not in instances] for cell, uuids in uuids_by_cell.items()
    }
    missing = {cell: uuids for cell, uuids in missing.items() if uuids}
    if not missing:
        return instances, set()
    scheduling = nova.scheduling([u for uuids in missing.values() for u in uuids])
    rest = {cell: [u for u in uuids if u not in scheduling] for cell, uuids in missing.items()}
    rest = {cell: uuids for cell, uuids in rest.items() if uuids}
    if rest:
        instances.update(nova.get(rest))
    return instances, scheduling
