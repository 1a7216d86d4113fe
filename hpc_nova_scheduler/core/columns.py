"""Hosts as columns: the placement engine's working view of a cloud.

:func:`~hpc_nova_scheduler.core.algorithm.plan` judges every candidate host
for every request. Holding each attribute of all hosts in one numpy array
lets it do that in a few vector operations instead of a Python loop over
hosts and their VMs, which is what makes replaying a 100,000-job log take
seconds. The Nova adapter builds the columns from its host snapshots
(:meth:`HostColumns.from_hosts`); the simulator's
:class:`~hpc_nova_scheduler.core.state.ClusterState` keeps one up to date as
VMs come and go.

Per-application facts (which hosts run VMs of an application, or of an
application name) are kept as sparse maps, since an application touches a
handful of hosts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hpc_nova_scheduler.core.cluster import Host, Resources, RunningVM
from hpc_nova_scheduler.core.domains import DEFAULT_LEVELS, path_of
from hpc_nova_scheduler.core.profile import AppClass


def rack_id(name: str, rack: str) -> str:
    """A host with no rack is a rack of its own (product contract)."""
    return rack or f"host:{name}"


def domain_ids(name: str, values: Sequence[str]) -> list[str]:
    """A host's domain at each level, outermost first, as paths from the top.

    Two racks called ``r1`` in two blocks are two domains; a host without a
    value at some level is its own domain there (and below it). With one
    level this is :func:`rack_id`.
    """
    path = path_of(name, values)
    return ["/".join(path[: depth + 1]) for depth in range(len(path))]


def _domain_ids_of(
    names: Sequence[str], outer: Sequence[tuple[str, ...]], racks: Sequence[str]
) -> list[list[str]]:
    """Per level, :func:`domain_ids` of every host (a request builds the
    columns of thousands of hosts: one comprehension per level)."""
    columns: list[list[str]] = []
    depth = len(outer[0]) + 1 if outer else 1
    for level in range(depth):
        values = racks if level == depth - 1 else [o[level] for o in outer]
        here = [v or f"host:{n}" for n, v in zip(names, values, strict=True)]
        if columns:
            here = [f"{parent}/{v}" for parent, v in zip(columns[-1], here, strict=True)]
        columns.append(here)
    return columns


class HostColumns:
    """The candidate hosts, one row each, in the caller's order.

    The row order is the placement's tie-breaker of last resort.
    """

    def __init__(
        self,
        names: Sequence[str],
        capacity: Sequence[Resources],
        free: Sequence[Resources],
        racks: Sequence[str],
        cpu_groups: Sequence[str],
        outer: Sequence[Sequence[str]] | None = None,
        levels: Sequence[str] = DEFAULT_LEVELS,
    ) -> None:
        self.names = list(names)
        size = len(self.names)
        self.index = {name: i for i, name in enumerate(self.names)}
        self.capacity = np.array([r.as_tuple() for r in capacity], dtype=float).reshape(size, 3)
        self.free = np.array([r.as_tuple() for r in free], dtype=float).reshape(size, 3)
        #: The topology's levels, outermost first; the last is seed 003's rack.
        self.levels = tuple(levels)
        depth = len(self.levels)
        #: Each host's value at the innermost level (its rack).
        self.racks = list(racks)
        outer = [()] * size if outer is None else list(outer)
        #: Each host's values at the levels outside the rack, outermost first.
        self.outer = [tuple((tuple(o) + ("",) * depth)[: depth - 1]) for o in outer]
        by_level = _domain_ids_of(self.names, self.outer, self.racks)
        #: Each host's domain code at each level (rank among the level's
        #: sorted domain ids), then its own row for the host level.
        self.domain = np.empty((depth + 1, size), dtype=np.int64)
        #: Each level's domain ids, sorted: a code indexes this list.
        self.domain_names: list[list[str]] = []
        for level in range(depth):
            column = by_level[level]
            unique = sorted(set(column))
            rank = {d: i for i, d in enumerate(unique)}
            self.domain[level] = [rank[d] for d in column]
            self.domain_names.append(unique)
        self.domain[depth] = np.arange(size)
        self.domain_names.append(self.names)
        self.rack_ids = by_level[-1]
        #: Each host's rack as its rank among the sorted rack names.
        self.rack = self.domain[depth - 1]
        self.rack_names = self.domain_names[depth - 1]
        self.cpu_groups = list(cpu_groups)
        self._group_rows: dict[str, np.ndarray] | None = None
        self.cache_total = np.zeros(size)
        self.vms = np.zeros(size, dtype=np.int64)
        self.sync_vms = np.zeros(size, dtype=np.int64)
        self.extreme_vms = np.zeros(size, dtype=np.int64)
        #: application id -> host row -> [VMs, ExtremeHPC VMs]
        self.by_application: dict[str, dict[int, list[int]]] = {}
        #: application name -> host row -> VMs
        self.by_name: dict[str, dict[int, int]] = {}
        #: (application id, application name) -> host row -> VMs
        self.by_application_name: dict[tuple[str, str], dict[int, int]] = {}

    def __len__(self) -> int:
        return len(self.names)

    def rows_by_group(self) -> dict[str, np.ndarray]:
        """Each processor group's rows, ascending; worked out once per columns.

        A host's group never changes, and the simulator plans thousands of
        jobs over the same columns: grouping them host by host for each
        plan was a Python step per host per job.
        """
        if self._group_rows is None:
            groups: dict[str, list[int]] = {}
            for row, group in enumerate(self.cpu_groups):
                groups.setdefault(group, []).append(row)
            self._group_rows = {g: np.array(rows, dtype=np.int64) for g, rows in groups.items()}
        return self._group_rows

    @classmethod
    def from_hosts(
        cls, hosts: Iterable[Host], levels: Sequence[str] = DEFAULT_LEVELS
    ) -> HostColumns:
        hosts = list(hosts)
        columns = cls(
            [h.name for h in hosts],
            [h.capacity for h in hosts],
            [h.free for h in hosts],
            [h.rack for h in hosts],
            [h.cpu_group for h in hosts],
            [h.outer for h in hosts],
            levels,
        )
        for row, host in enumerate(hosts):
            for vm in host.vms:
                columns.count_vm(row, vm, +1)
            # Summed in VM order, as a fresh look at the host would.
            columns.cache_total[row] = ordered_sum(vm.cache_score for vm in host.vms)
        return columns

    def copy(self) -> HostColumns:
        """An independent copy, to try changes on without touching this one."""
        other = HostColumns.__new__(HostColumns)
        other.__dict__.update(self.__dict__)
        for name in ("capacity", "free", "cache_total", "vms", "sync_vms", "extreme_vms"):
            setattr(other, name, getattr(self, name).copy())
        other.by_application = {
            app: {row: list(counts) for row, counts in rows.items()}
            for app, rows in self.by_application.items()
        }
        other.by_name = {name: dict(rows) for name, rows in self.by_name.items()}
        other.by_application_name = {
            key: dict(rows) for key, rows in self.by_application_name.items()
        }
        return other

    def place(self, row: int, vm: RunningVM, demand: Resources) -> None:
        """Account for ``vm`` of ``demand`` placed on host ``row``."""
        self.free[row] -= demand.as_tuple()
        self.cache_total[row] += vm.cache_score
        self.count_vm(row, vm, +1)

    def count_vm(self, row: int, vm: RunningVM, sign: int) -> None:
        """Count ``vm`` on host ``row`` in (+1) or out (-1); not its cache score."""
        extreme = vm.app_class is AppClass.EXTREME_HPC
        self.vms[row] += sign
        self.sync_vms[row] += sign * (vm.app_class is AppClass.SYNC_HPC)
        self.extreme_vms[row] += sign * extreme
        if vm.application_id is not None:
            tally = self.by_application.setdefault(vm.application_id, {})
            counts = tally.setdefault(row, [0, 0])
            counts[0] += sign
            counts[1] += sign * extreme
            if counts[0] == 0:
                del tally[row]
                if not tally:
                    del self.by_application[vm.application_id]
        if vm.app_name is not None:
            _tally(self.by_name, vm.app_name, row, sign)
            if vm.application_id is not None:
                _tally(self.by_application_name, (vm.application_id, vm.app_name), row, sign)


def _tally(index: dict, key, row: int, sign: int) -> None:
    tally = index.setdefault(key, {})
    tally[row] = tally.get(row, 0) + sign
    if tally[row] == 0:
        del tally[row]
        if not tally:
            del index[key]


def ordered_sum(values: Iterable[float]) -> float:
    """Left to right from 0.0, so every place that sums a host's cache scores agrees to the bit."""
    total = 0.0
    for value in values:
        total += value
    return total


def counted_rows(
    every: np.ndarray, weights: np.ndarray | None, counted: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``every``, ascending, and each one's summed
    ``weights`` (None: how many times it comes), as int64.

    ``counted``: over every row, one bincount and no sort (a wide job's
    hosts, some share of the cloud's, cost less to count than to sort);
    else sorted. Both ways agree.
    """
    if counted:
        seen = np.bincount(every)
        rows = seen.nonzero()[0]
        if weights is None:
            return rows, seen[rows]
        return rows, np.bincount(every, weights=weights)[rows].astype(np.int64)
    if weights is None:
        return np.unique(every, return_counts=True)
    rows, where = np.unique(every, return_inverse=True)
    return rows, np.bincount(where, weights=weights, minlength=len(rows)).astype(np.int64)
