"""Seed 003's placement over every host as arrays, planned by a compiled kernel.

:mod:`.state_classes` keeps hosts in classes so that a plan in Python
scores classes, not hosts. Where :mod:`.host_kernel` serves the request
(cosine packing, or Nova's weighers blind to racks; the rack as the only
topology level, no tenant constraints, no judge of co-runners), the same
idea in compiled code costs less than the classes' bookkeeping: the
kernel keeps hosts in the same state together and scores states, and
placing or releasing a job is one call. :class:`HostArrays` answers what
the simulator asks of :class:`~.state_classes.StateClasses` (plans as
segments, placements, releases, the precheck's room), with the same plans.

Each host's VMs are kept in placement order: a release sums the cache
total of what stays afresh, in that order, as ClusterState does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np

from hpc_nova_scheduler.core.algorithm import (
    NO_TOPOLOGY,
    PACKING_COSINE,
    PACKING_NOVA_WEIGHERS,
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
from hpc_nova_scheduler.sim import host_kernel
from hpc_nova_scheduler.topology import levels as topo

Vector = tuple[float, float, float]
Segments = list[tuple[list[int], int]]


@dataclasses.dataclass(frozen=True)
class PlannedRows:
    """A plan: each VM's host (row), in placement order. Iterated, its runs
    of one host as segments ([row], VMs), as StateClasses plans them."""

    chosen: np.ndarray

    def __iter__(self) -> Iterator[tuple[list[int], int]]:
        rows = np.zeros(len(self.chosen), dtype=np.int64)
        vms = np.zeros(len(self.chosen), dtype=np.int64)
        count = host_kernel.runs(self.chosen, len(self.chosen), rows, vms)
        for row, taken in zip(rows[:count].tolist(), vms[:count].tolist(), strict=True):
            yield [row], taken


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
        self.levels = tuple(columns.levels)
        self.names = list(columns.names)
        size = len(self.names)
        self._capacity = np.array(columns.capacity, dtype=float)
        self._free = self._capacity.copy()
        self._cache = np.zeros(size)
        #: Per host, how many SyncHPC VMs it runs.
        self._sync_vms = np.zeros(size, dtype=np.int64)
        self._rack = np.array(columns.rack, dtype=np.int64)
        self._racks = len(columns.rack_names)
        self.group_names = sorted(set(columns.cpu_groups))
        code = {name: i for i, name in enumerate(self.group_names)}
        self._group = np.array([code[g] for g in columns.cpu_groups], dtype=np.int64)
        self._capacities = np.unique(self._capacity, axis=0)
        #: Per host, its VMs as runs of one application, in placement order:
        #: the application's number and its VMs (a run per column, as many
        #: as ``_run_count``; the columns widen when a host needs more).
        self._run_app = np.zeros((size, 4), dtype=np.int64)
        self._run_vms = np.zeros((size, 4), dtype=np.int64)
        self._run_count = np.zeros(size, dtype=np.int64)
        self._tally = np.zeros(size, dtype=np.int64)
        #: Running applications by number (numbers of finished ones are
        #: reused): its VM, demand and cache score; and by id, its number
        #: and hosts (as placed; :meth:`rows_of` sorts them).
        self._apps: list[tuple[RunningVM, Vector] | None] = []
        self._spare: list[int] = []
        self._app_score = np.zeros(8)
        self._running: dict[str, tuple[int, np.ndarray]] = {}
        self._scratch = host_kernel.scratch_for(self._rack, max(self._racks, 1))
        #: The hosts in the same state, kept together (plans not ranked by
        #: rack score states, not hosts).
        self._states = host_kernel.states_for(
            self._free, self._capacity, self._cache, self._sync_vms, self._group
        )
        #: Each VM's host in the last plan.
        self._chosen = np.zeros(0, dtype=np.int64)
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
        if policy.packing == PACKING_NOVA_WEIGHERS:
            if policy.topology:
                return "Nova's weighers in rack order are planned in Python"
        elif policy.packing != PACKING_COSINE:
            return "the compiled kernel packs by cosine or by Nova's weighers only"
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
        return self.plan_segments(request, rule).chosen.tolist()

    def plan_segments(
        self, request: PlacementRequest, rule: HostJudge | None = None
    ) -> PlannedRows:
        """:meth:`plan` for :meth:`apply_segments`, as an array (a wide
        job's plan is not spelt out in Python)."""
        if request.count < 1:
            raise NoPlacement("a request needs at least one VM")
        reason = self.serves(
            self.policy, self.levels, request.app_class, request.topology, rule is not None
        )
        if request.application_id in self._running or any(request.held_domains):
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
            self._sync_vms,
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
            policy.packing == PACKING_NOVA_WEIGHERS,
            self._chosen,
            self._scratch,
            self._states,
        )
        if placed < count:
            raise NoPlacement(
                f"only {room} of {count} VMs fit within capacity, "
                "dedicated hosts, cache thresholds and the interference table",
                room,
                room=room,
            )
        return placed

    def _segments(self, placed: int, chosen: np.ndarray | None = None) -> PlannedRows:
        """The plan: its first ``placed`` VMs' hosts, kept as an array."""
        return PlannedRows((self._chosen if chosen is None else chosen)[:placed].copy())

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
        # The kernel's kept copies of a VM of one core and this memory (no
        # memory: cores alone) are these very fits; a plan of that VM, the
        # next thing the simulator asks, reads them kept. Summed per rack,
        # whole numbers: exact in any order.
        demand = (1.0, max(float(memory_mb), 0.0), 0.0)
        kept_for = self._scratch[host_kernel.COPIES_FOR]
        if tuple(kept_for.tolist()) != demand:
            host_kernel.keep_copies(self._free, self._rack, np.array(demand), self._scratch)
        return float(self._scratch[host_kernel.RACK_COPIES].sum())

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
        self._place(np.array(rows, dtype=np.int64), request)

    def apply_segments(self, segments: PlannedRows | Segments, request: PlacementRequest) -> None:
        """Place the request's VMs as :meth:`plan_segments` planned them, or
        ``vms`` VMs on each host of ``rows`` for each (rows, vms) given."""
        if isinstance(segments, PlannedRows):
            self._place(segments.chosen, request)
            return
        self._place(
            np.array([row for rows, vms in segments for row in rows for _ in range(vms)]),
            request,
        )

    def _place(self, chosen: np.ndarray, request: PlacementRequest) -> None:
        profile = request.profile
        vm = RunningVM(
            uuid=f"{request.application_id}#",
            app_class=profile.app_class,
            cache_score=profile.cache_score,
            app_name=profile.app_name,
            application_id=request.application_id,
        )
        demand = request.demand.as_tuple()
        if self._spare:
            app = self._spare.pop()
            self._apps[app] = (vm, demand)
        else:
            app = len(self._apps)
            self._apps.append((vm, demand))
            if app == len(self._app_score):
                self._app_score = np.concatenate([self._app_score, np.zeros(app)])
        self._app_score[app] = profile.cache_score
        while True:
            hosts = host_kernel.place(
                self._state(),
                self._tally,
                self._scratch,
                self._states,
                self._rack,
                chosen.astype(np.int64, copy=False),
                len(chosen),
                app,
                np.array(demand, dtype=float),
                float(profile.cache_score),
                profile.app_class is AppClass.SYNC_HPC,
            )
            if len(hosts) or not len(chosen):
                break
            # A host has as many runs as the columns hold: twice as many.
            self._run_app = np.concatenate([self._run_app, np.zeros_like(self._run_app)], axis=1)
            self._run_vms = np.concatenate([self._run_vms, np.zeros_like(self._run_vms)], axis=1)
        self._running[request.application_id] = (app, hosts)

    def release(self, application_id: str) -> int:
        """Remove every VM of the application; return how many hosts it ran on."""
        known = self._running.pop(application_id, None)
        if known is None:
            return 0
        app, hosts = known
        vm, demand = self._apps[app]
        host_kernel.release(
            self._state(),
            self._scratch,
            self._states,
            self._rack,
            self._app_score,
            hosts,
            app,
            np.array(demand, dtype=float),
            vm.app_class is AppClass.SYNC_HPC,
        )
        self._apps[app] = None
        self._spare.append(app)
        return len(hosts)

    def _state(self) -> tuple:
        """Per host, what placing and releasing change (host_kernel.place)."""
        return (
            self._free,
            self._cache,
            self._sync_vms,
            self._run_app,
            self._run_vms,
            self._run_count,
        )

    # -- what the simulator reads of hosts -----------------------------------

    def rows_of(self, application_id: str) -> list[int]:
        known = self._running.get(application_id)
        return [] if known is None else np.sort(known[1]).tolist()

    def vms_on(self, row: int) -> list[RunningVM]:
        apps = self._apps
        return [
            apps[app][0]
            for app, vms in zip(
                self._run_app[row, : self._run_count[row]].tolist(),
                self._run_vms[row, : self._run_count[row]].tolist(),
                strict=True,
            )
            for _ in range(vms)
        ]

    def free_of(self, row: int) -> Vector:
        return tuple(self._free[row].tolist())

    def capacity_of(self, row: int) -> Vector:
        return tuple(self._capacity[row].tolist())

    def cache_of(self, row: int) -> float:
        return float(self._cache[row])

    def empty_rows(self) -> set[int]:
        """The hosts no VM runs on."""
        return set(np.flatnonzero(self._run_count == 0).tolist())

    def free_cores(self) -> float:
        return float(self._free[:, 0].sum())


__all__ = ["HostArrays"]
