"""Compute nodes read from Nova's cell databases: only the columns the plugin uses.

``ComputeNodeList.get_all`` builds a versioned object per node: its stats,
NUMA topology, hypervisor specs and PCI pools decoded, every field coerced.
At 10,000 nodes that was half of hpc-scheduler-agent's time, paid by the
idle-traits keeper every run and by the fair-share allocator at every look
at its lease, on the cores nova-scheduler runs on. The agent needs a few
numbers per node, so it reads those columns, one query a cell, as Nova's
own ``compute_node_get_all`` does, without building the objects.

The allocation ratio follows Nova's rule for a record that has none (an
old node, or a ratio left at 0.0): ``[DEFAULT] cpu_allocation_ratio``,
else ``initial_cpu_allocation_ratio``. Nova's object would also write that
value back to the record; a reader does not.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class NodeRow:
    """One live compute node, as its cell database records it."""

    uuid: str
    host: str
    #: The node behind the compute service (``hypervisor_hostname``).
    nodename: str | None
    vcpus: int
    vcpus_used: int
    running_vms: int
    cpu_allocation_ratio: float
    #: Nova's ``cpu_info`` JSON, as stored.
    cpu_info: str | None


@dataclasses.dataclass
class Cells:
    """Every cell's live compute nodes, and the cells that did not answer."""

    nodes: list[NodeRow] = dataclasses.field(default_factory=list)
    silent: list[str] = dataclasses.field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.silent


def _ratio_default() -> float:
    from nova import conf as nova_conf

    conf = nova_conf.CONF
    return float(conf.cpu_allocation_ratio or conf.initial_cpu_allocation_ratio)


class _Columns:
    """The per-cell query, given to Nova's scatter-gather."""

    # A classmethod, as Nova's own object listers are: Nova's DownCellFixture,
    # which the tests use for a silent cell, expects a bound method.
    @classmethod
    def rows(cls, cctxt: Any) -> list[tuple]:
        """The live compute nodes of the cell ``cctxt`` targets, as plain tuples."""
        import sqlalchemy as sa
        from nova.db.main import api as main_api
        from nova.db.main import models

        table = models.ComputeNode.__table__
        select = (
            sa.select(
                table.c.uuid,
                table.c.host,
                table.c.hypervisor_hostname,
                table.c.vcpus,
                table.c.vcpus_used,
                table.c.running_vms,
                table.c.cpu_allocation_ratio,
                table.c.cpu_info,
            )
            .where(table.c.deleted == 0)
            .order_by(table.c.id)
        )
        with main_api.get_engine(context=cctxt).connect() as connection:
            return [tuple(row) for row in connection.execute(select)]


def read() -> Cells:
    """Every cell's live compute nodes, one query a cell, the cells read in parallel."""
    from nova import context as nova_context

    ctxt = nova_context.get_admin_context()
    results = nova_context.scatter_gather_skip_cell0(ctxt, _Columns.rows)
    default_ratio = _ratio_default()
    cells = Cells()
    for cell, result in sorted(results.items()):
        if nova_context.is_cell_failure_sentinel(result):
            cells.silent.append(cell)
            continue
        for uuid, host, nodename, vcpus, used, running, ratio, cpu_info in result:
            cells.nodes.append(
                NodeRow(
                    uuid=uuid,
                    host=host,
                    nodename=nodename,
                    vcpus=int(vcpus or 0),
                    vcpus_used=int(used or 0),
                    running_vms=int(running or 0),
                    cpu_allocation_ratio=float(ratio) if ratio else default_ratio,
                    cpu_info=cpu_info,
                )
            )
    return cells
