"""Seed 003's placement over every host as arrays, planned by a compiled kernel.

:mod:`.state_classes` keeps hosts in classes so that a plan in Python
scores classes, not hosts. Where :mod:`.host_kernel` serves the request
(cosine packing, the rack as the only topology level, no tenant
constraints, no judge of co-runners), scoring every host in compiled code
costs less than the classes' bookkeeping: about 12 ns a host, so a plan on
a cloud of 400 hosts costs a few microseconds, and placing or releasing a
job is a few array writes. :class:`HostArrays` answers what the simulator
asks of :class:`~.state_classes.StateClasses` (plans as segments,
placements, releases, the precheck's room), with the same plans.

Each host's VMs are kept in placement order: a release sums the cache
total of what stays afresh, in that order, as ClusterState does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from hpc_nova_scheduler.core import host_kernel
from hpc_nova_scheduler.core import topology as topo
from hpc_nova_scheduler.core.algorithm import (
    NO_TOPOLOGY,
    PACKING_COSINE,
    NoPlacement,
    PlacementRequest,
    Policy,
    best_group,
    vm_copies,
)
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.columns import HostColumns
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.judge import HostJudge
from hpc_nova_scheduler.core.profile import AppClass

Vector = tuple[float, float, float]
Segments = list[tuple[list[int], int]]


class HostArrays:
    """The hosts of one cloud as arrays; rows are the positions of
    ``columns`` (an idle cloud's). Nothing but :meth:`apply_segments` and
    :meth:`release` changes them."""

    def __init__(self, columns: HostColumns, policy: Policy, thresholds: Thresholds) -> None:
        reason = self.serves(policy, tuple(columns.levels))
        if reason:
            raise ValueError(reason)
        if columns.vms.any():
            raise ValueError("host arrays start from an idle cloud")
        self.policy = policy
        self.thresholds = thresholds
        self.names = list(columns.names)
        size = len(self.names)
        self._capacity = np.array(columns.capacity, dtype=float)
        self._free = self._capacity.copy()
        self._cache = np.zeros(size)
        #: Per host, how many SyncHPC VMs it runs, and whether any.
        self._sync_vms = np.zeros(size, dtype=np.int64)
        self._sync = np.zeros(size, dtype=np.bool_)
        self._rack = np.array(columns.rack, dtype=np.int64)
        self._racks = len(columns.rack_names)
        self.group_names = sorted(set(columns.cpu_groups))
        code = {name: i for i, name in enumerate(self.group_names)}
        self._group = np.array([code[g] for g in columns.cpu_groups], dtype=np.int64)
        self._capacities = np.unique(self._capacity, axis=0)
        #: Per host, its VMs as runs (VM, how many, demand) in placement order.
        self._runs: list[list[tuple[RunningVM, int, Vector]]] = [[] for _ in range(size)]
        #: application id -> its hosts, ascending.
        self._rows_of: dict[str, list[int]] = {}
        self._scratch = host_kernel.scratch_for(size, max(self._racks, 1))
        #: Each VM's host in the last plan, and that plan as runs of one host.
        self._chosen = np.zeros(0, dtype=np.int64)
        self._run_rows = np.zeros(0, dtype=np.int64)
        self._run_vms = np.zeros(0, dtype=np.int64)
        self._most_per_host: dict[tuple[float, ...], int] = {}
        self._most_one_core: dict[float, float] = {}

    @staticmethod
    def serves(
        policy: Policy,
        levels: tuple[str, ...],
        app_class: AppClass | None = None,
        spec: topo.TopologySpec = NO_TOPOLOGY,
        judged: bool = False,
    ) -> str:
        """Why the kernel cannot plan for ``policy`` on a cloud of ``levels``
        (requests of ``app_class`` with constraints ``spec``, judged by a
        model of co-runners); empty if it can."""
        if policy.packing != PACKING_COSINE:
            return "the compiled kernel packs by cosine only"
        if judged:
            return "a judge of co-runners is asked in Python"
        if policy.topology and len(levels) > 1:
            return "BestFit over several topology levels is planned in Python"
        if policy.topology and not spec.empty:
            return "a tenant's topology constraints are planned in Python"
        if policy.classes and app_class is AppClass.EXTREME_HPC:
            return "ExtremeHPC dedication reads every co-runner of a host"
        return ""

    def __len__(self) -> int:
        return len(self.names)

    # -- planning ------------------------------------------------------------

    def plan(self, request: PlacementRequest, rule: HostJudge | None = None) -> list[int]:
        """The rows of the request's VMs in placement order, as
        :func:`~hpc_nova_scheduler.core.algorithm.plan` would choose them."""
        return [row for rows, vms in self.plan_segments(request, rule) for row in rows * vms]

    def plan_segments(self, request: PlacementRequest, rule: HostJudge | None = None) -> Segments:
        """:meth:`plan` as segments (a host, the VMs it takes in a row)."""
        if request.count < 1:
            raise NoPlacement("a request needs at least one VM")
        reason = self.serves(
            self.policy, ("rack",), request.app_class, request.topology, rule is not None
        )
        if request.application_id in self._rows_of or any(request.held_domains):
            reason = "an application that already runs is planned over every host"
        if reason:
            raise ValueError(reason)
        homogeneous = self.policy.homogeneity and request.app_class.needs_homogeneity
        if not homogeneous or len(self.group_names) == 1:
            return self._segments(self._plan_in(request, -1))

        def in_group(group: str) -> tuple[np.ndarray, tuple]:
            placed = self._plan_in(request, self.group_names.index(group))
            chosen = self._chosen[:placed].copy()
            # best_group's rank: the racks, then the hosts the plan spans.
            return chosen, (len(np.unique(self._rack[chosen])), len(np.unique(chosen)))

        chosen = best_group(request.count, self.group_names, in_group)
        return self._segments(len(chosen), chosen)

    def _plan_in(self, request: PlacementRequest, group: int) -> int:
        """Plan in processor group ``group`` (-1: all hosts) into
        ``self._chosen``; return the VMs placed or raise NoPlacement."""
        count = request.count
        if len(self._chosen) < count:
            self._chosen = np.zeros(max(count, 2 * len(self._chosen)), dtype=np.int64)
        policy = self.policy
        app_class = request.app_class if policy.classes else AppClass.NON_HPC
        placed, room = host_kernel.plan(
            self._free,
            self._capacity,
            self._cache,
            self._sync,
            self._rack,
            self._group,
            group,
            np.array(request.demand.as_tuple(), dtype=float),
            count,
            float(request.profile.cache_score),
            request.app_class is AppClass.SYNC_HPC,
            policy.cache_criteria,
            float(self.thresholds.alpha),
            float(self.thresholds.beta),
            policy.topology and app_class.topology_aware,
            self._chosen,
            self._scratch,
        )
        if placed < count:
            raise NoPlacement(
                f"only {room} of {count} VMs fit within capacity, "
                "dedicated hosts, cache thresholds and the interference table",
                room,
                room=room,
            )
        return placed

    def _segments(self, placed: int, chosen: np.ndarray | None = None) -> Segments:
        """The plan's hosts in placement order, runs of one host as one segment."""
        chosen = self._chosen if chosen is None else chosen
        if len(self._run_rows) < placed:
            self._run_rows = np.zeros(len(self._chosen), dtype=np.int64)
            self._run_vms = np.zeros(len(self._chosen), dtype=np.int64)
        count = host_kernel.runs(chosen, placed, self._run_rows, self._run_vms)
        return [
            ([row], vms)
            for row, vms in zip(
                self._run_rows[:count].tolist(), self._run_vms[:count].tolist(), strict=True
            )
        ]

    def most_vms(self, request: PlacementRequest, rule: HostJudge | None = None) -> int | None:
        """The most VMs of the request's kind a plan holds now (every count
        up to it plans, none beyond); None for a demand of nothing."""
        beyond = dataclasses.replace(
            request, count=len(self.names) * self.most_per_host(request.demand.as_tuple()) + 1
        )
        try:
            self.plan_segments(beyond, rule)
        except NoPlacement as refusal:
            return refusal.room
        return None

    def most_per_host(self, demand: tuple[float, ...]) -> int:
        """The most VMs of ``demand`` an idle host holds."""
        most = self._most_per_host.get(demand)
        if most is None:
            copies = vm_copies(self._capacities, np.array(demand, dtype=float))
            most = self._most_per_host[demand] = int(copies.max())
        return most

    def one_core_room(self, memory_mb: float) -> float:
        """How many one-core VMs of ``memory_mb`` fit in all (the simulator's precheck)."""
        fit = np.floor(self._free[:, 0] + 1e-9)
        if memory_mb > 0:
            fit = np.minimum(fit, np.floor((self._free[:, 1] + 1e-9) / memory_mb))
        return float(np.maximum(fit, 0.0).sum())

    def most_one_core(self, memory_mb: float) -> float:
        """The most one-core VMs of ``memory_mb`` an idle host holds."""
        most = self._most_one_core.get(memory_mb)
        if most is None:
            fit = np.floor(self._capacities[:, 0] + 1e-9)
            if memory_mb > 0:
                fit = np.minimum(fit, np.floor((self._capacities[:, 1] + 1e-9) / memory_mb))
            most = self._most_one_core[memory_mb] = float(np.maximum(fit, 0.0).max())
        return most

    # -- placing and releasing -----------------------------------------------

    def apply(self, rows: Sequence[int], request: PlacementRequest) -> None:
        """Place the request's VMs on ``rows`` (one per VM, as planned)."""
        self.apply_segments([([row], 1) for row in rows], request)

    def apply_segments(self, segments: Segments, request: PlacementRequest) -> None:
        """Place ``vms`` VMs on each host of ``rows``, for each (rows, vms)."""
        profile = request.profile
        demand = request.demand.as_tuple()
        vm = RunningVM(
            uuid=f"{request.application_id}#",
            app_class=profile.app_class,
            cache_score=profile.cache_score,
            app_name=profile.app_name,
            application_id=request.application_id,
        )
        hosts: list[int] = []
        counts: list[int] = []
        on: dict[int, int] = {}
        for rows, vms in segments:
            for row in rows:
                hosts.append(row)
                counts.append(vms)
                on[row] = on.get(row, 0) + vms
        host_kernel.place(
            self._free,
            self._cache,
            np.array(hosts, dtype=np.int64),
            np.array(counts, dtype=np.int64),
            np.array(demand, dtype=float),
            float(profile.cache_score),
        )
        sync = profile.app_class is AppClass.SYNC_HPC
        runs = self._runs
        for row, vms in on.items():
            # One run per host: an application's VMs on a host arrive together.
            runs[row].append((vm, vms, demand))
            if sync:
                self._sync_vms[row] += vms
                self._sync[row] = True
        self._rows_of[request.application_id] = sorted(on)

    def release(self, application_id: str) -> int:
        """Remove every VM of the application; return how many hosts it ran on."""
        rows = self._rows_of.pop(application_id, None)
        if rows is None:
            return 0
        freed: list[int] = []
        demand: Vector = (0.0, 0.0, 0.0)
        for row in rows:
            kept = []
            for run in self._runs[row]:
                vm, vms, demand_of = run
                if vm.application_id == application_id:
                    freed.append(vms)
                    demand = demand_of
                    if vm.app_class is AppClass.SYNC_HPC:
                        self._sync_vms[row] -= vms
                        self._sync[row] = self._sync_vms[row] > 0
                else:
                    kept.append(run)
            self._runs[row] = kept
            # Summed afresh in placement order, as ClusterState does.
            total = 0.0
            for vm, vms, _ in kept:
                for _ in range(vms):
                    total += vm.cache_score
            self._cache[row] = total
        host_kernel.give_back(
            self._free,
            np.array(rows, dtype=np.int64),
            np.array(freed, dtype=np.int64),
            np.array(demand, dtype=float),
        )
        return len(rows)

    # -- what the simulator reads of hosts -----------------------------------

    def rows_of(self, application_id: str) -> list[int]:
        return list(self._rows_of.get(application_id, []))

    def vms_on(self, row: int) -> list[RunningVM]:
        return [vm for vm, vms, _ in self._runs[row] for _ in range(vms)]

    def free_of(self, row: int) -> Vector:
        return tuple(self._free[row].tolist())

    def capacity_of(self, row: int) -> Vector:
        return tuple(self._capacity[row].tolist())

    def cache_of(self, row: int) -> float:
        return float(self._cache[row])

    def empty_rows(self) -> set[int]:
        """The hosts no VM runs on."""
        return {row for row, runs in enumerate(self._runs) if not runs}

    def free_cores(self) -> float:
        return float(self._free[:, 0].sum())


__all__ = ["HostArrays"]
