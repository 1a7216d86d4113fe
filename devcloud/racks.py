"""Racks of nodes behind compute services, for ``up --nodes``.

A cloud of thousands of nodes does not run a nova-compute process per node:
one compute service manages a rack of nodes, the way one Ironic compute
manages many bare-metal machines, and several services share a process
(:mod:`devcloud.compute_pool`), as Nova's functional harness runs them.
Nova keeps aggregates per compute service host, so a rack (``hpc:rack``) is
one service; its nodes are resource providers of their own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: One node: a two-socket HPC server.
NODE_VCPUS = 32
NODE_MEMORY_MB = 128 * 1024
NODE_DISK_GB = 1000
#: Nodes per rack (one compute service), as in a real machine room.
RACK_SIZE = 40
#: Compute services per nova-compute process. A process of 2 services took
#: 125 MiB (PSS), one of 25 services and 1,000 nodes 160-175 MiB: 25 keeps
#: 10,000 nodes in ten processes, 1.6 GiB. Fewer per process do not bring
#: the cloud up faster once Placement's CPU is the bound (see the docs).
SERVICES_PER_PROCESS = 25
#: (vendor, model) of the racks' processors, alternating by pairs of racks:
#: racks are homogeneous, and a request spanning racks still has to mind
#: the model. Nova's fake driver reports them in ``cpu_info``.
CPU_MODELS = (("Intel", "Icelake-Server"), ("AMD", "EPYC-Milan"))
#: Digits of a service's number: ``compute-000`` up to 1,000 racks.
HOST_DIGITS = 3
#: The innermost level: one rack is one compute service.
RACK_LEVEL = "rack"


def services_for(nodes: int, rack_size: int) -> int:
    """Compute services (racks) for ``nodes``: the last rack may be partial."""
    return math.ceil(nodes / rack_size)


def host_name(index: int) -> str:
    return f"compute-{index:0{HOST_DIGITS}d}"


def node_name(host: str, number: int, rack_size: int) -> str:
    """``compute-000-n07``: the node's host and its place in the rack."""
    digits = max(2, len(str(rack_size - 1)))
    return f"{host}-n{number:0{digits}d}"


def nodes_in(index: int, nodes: int, rack_size: int) -> int:
    """How many nodes the rack numbered ``index`` holds."""
    return max(0, min(rack_size, nodes - index * rack_size))


def cpu_model(index: int) -> tuple[str, str]:
    """(vendor, model) of the rack numbered ``index``."""
    return CPU_MODELS[(index // 2) % len(CPU_MODELS)]


def node_fields(index: int) -> dict[str, object]:
    """A node of the rack ``index``, as ``fake_driver.Shape`` takes it."""
    vendor, model = cpu_model(index)
    return {
        "vcpus": NODE_VCPUS,
        "memory_mb": NODE_MEMORY_MB,
        "local_gb": NODE_DISK_GB,
        "cpu_model": model,
        "cpu_vendor": vendor,
    }


def layout(nodes: int, rack_size: int) -> dict[str, dict[str, dict[str, object]]]:
    """host -> node -> shape fields: the file ``fake_driver.load_nodes`` reads."""
    found = {}
    for index in range(services_for(nodes, rack_size)):
        host = host_name(index)
        fields = node_fields(index)
        found[host] = {
            node_name(host, n, rack_size): dict(fields)
            for n in range(nodes_in(index, nodes, rack_size))
        }
    return found


def node_names(nodes: int, rack_size: int) -> list[str]:
    return [name for rack in layout(nodes, rack_size).values() for name in rack]


def pools(hosts: Sequence[str], cells: Sequence[int], per_process: int) -> list[list[str]]:
    """Hosts grouped into processes of at most ``per_process`` services.

    ``cells[i]`` is the cell of ``hosts[i]``: a process reads one cell's
    configuration, so it holds services of one cell only.
    """
    groups: list[list[str]] = []
    last_cell = None
    for host, cell in zip(hosts, cells, strict=True):
        if cell != last_cell or len(groups[-1]) >= per_process:
            groups.append([])
            last_cell = cell
        groups[-1].append(host)
    return groups


def topology(levels: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """``up --topology`` under ``--nodes``: the levels above the rack, with
    the rack (one compute service) appended as the innermost level.

    ``block=6`` nests racks six to a block; ``block=6,rack=1`` says the same.
    Raises ``ValueError`` for a rack of more than one service.
    """
    shape = [(level, int(n)) for level, n in levels]
    if shape and shape[-1][0] == RACK_LEVEL:
        if shape[-1][1] != 1:
            raise ValueError(
                f"under --nodes a rack is one compute service (--rack-size nodes), not "
                f"{shape[-1][1]}; give the levels above it, e.g. block=6"
            )
        return shape
    if any(level == RACK_LEVEL for level, _ in shape):
        raise ValueError("under --nodes the rack is the innermost level")
    return [*shape, (RACK_LEVEL, 1)]
