"""Batch arrivals: jobs held for a window, then placed together by a batch planner.

The online policies place each job as it arrives. Seed 004 places a whole
batch of applications at once on identical empty hosts, all of an
application's VMs on one host. This module puts that setting into the
replay, so that what batch planning does to throughput shows beside the
online policies:

* **Windows.** Time (from the first arrival, as the replay counts it) is cut
  into windows of ``window`` seconds: a job arriving at ``t`` belongs to
  window ``floor(t / window)`` and is held until that window's end,
  ``(floor(t / window) + 1) * window``, as a periodic batch scheduler sees
  the jobs that came in since it last ran. Holding is the price of
  batching and counts as wait. With every job arriving at time zero the
  whole log is one window, planned at ``window``.
* **Which jobs.** Every arrival is held, those bigger than one host too:
  letting them go to the queue at once would hand them the cloud ahead of
  smaller jobs that came before them (on a loaded cloud that, not the
  planner, decided the outcome). The planner gets the jobs that fit one
  host of some kind (its unit). Jobs no idle cloud holds are "never fit"
  at once, as without batching, so both runs count the same jobs.
* **Which hosts.** A window is planned on the hosts that are empty at its
  end (the planners assume identical empty hosts), kind by kind in the
  cloud's order, each kind planned with the held jobs that fit one of its
  hosts. Free room on partly used hosts is left to the online policy: a
  planner cannot be told that a host is partly full.
* **How much at once.** The held jobs go to the planner in arrival order,
  ``max_batch`` at a time (default 50, the largest batch seed 004 plans),
  each chunk offered at most as many empty hosts as it has jobs (it never
  needs more); the hosts a chunk uses are gone for the next. When a chunk
  does not fit whole (a planner raises core's ``CannotPlace``, ILS
  returns an overloaded placement), the planner
  gets the longest prefix of it that fits, found by bisection, and the
  rest of the window moves on to the next kind. The jobs planned are thus
  always the earliest arrivals, as a FCFS queue would have them.
* **Fallback.** The jobs left over and those bigger than a host join the
  online queue in arrival order and are placed by the scenario's policy
  (FCFS or backfilled, as configured) at once if they fit, into any room,
  partly used hosts included. No job is lost. The planned jobs start
  first: within a window they overtake the bigger jobs, as the planner's
  batch is the point of the exercise.
* **The queue first.** A window is planned only when no job waits in the
  online queue; otherwise its jobs join the queue behind the waiting ones.
  Batch planning thus never overtakes a job of an earlier window, and the
  queue discipline the online policies are compared under is kept
  between windows.
* **Starting.** A planned job's VMs are applied to its planned host through
  :meth:`ClusterState.apply`, the code every online placement goes
  through, so room, interference slowdowns and outcomes are counted as
  for any job. The scenario's thresholds and admission model judge only
  the online placements: the planner decides its hosts alone, as in
  seed 004.

A planner that reads an interference model (``ils``, ``milp``) needs each
job's profile with that model's features: the simulator then draws one per
job from its ``profiles`` and refuses to run without them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpc_nova_scheduler.core.algorithm import PlacementRequest
from hpc_nova_scheduler.core.errors import CannotPlace
from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.planners.base import SLACK, Batch, BatchApp, Placement, Planner

if TYPE_CHECKING:
    from hpc_nova_scheduler.sim.settings import HostKind

#: The simulator's clouds a batch can be placed on.
Cloud = "PlannedCloud | StateClassedCloud"

#: Seed 004's largest batches have 50 applications.
MAX_BATCH = 50

#: A queue entry of the simulator: (job, cache score, arrival time).
Entry = tuple


@dataclasses.dataclass(frozen=True)
class BatchArrivals:
    """Hold arrivals for ``window`` seconds, then place them with ``planner``."""

    window: float
    planner: Planner
    max_batch: int = MAX_BATCH

    def __post_init__(self) -> None:
        if not math.isfinite(self.window) or self.window <= 0:
            raise ValueError(
                f"a batch window must be a positive number of seconds, not {self.window}"
            )
        if self.max_batch < 1:
            raise ValueError("a batch holds at least one job")

    @property
    def label(self) -> str:
        return f"{self.planner.name}/{self.window:g}s"

    def features(self) -> tuple[str, ...]:
        """The profile features the planner's interference model reads."""
        model = getattr(self.planner, "model", None)
        if not isinstance(model, InterferenceModel):
            return ()
        return tuple(f for f in model.features if f != "cache_score")


@dataclasses.dataclass(frozen=True)
class Kind:
    """The rows of one kind of identical hosts in the cloud."""

    kind: HostKind
    rows: range

    def takes(self, processors: int, memory_per_vm: float) -> bool:
        """Whether one idle host of this kind holds all the job's VMs."""
        return self.kind.holds(memory_per_vm) >= processors

    def demand(self, processors: int, memory_per_vm: float) -> tuple[float, float]:
        """The job's (cpu, mem) as shares of one host, the planners' unit."""
        return processors / self.kind.cores, processors * memory_per_vm / self.kind.ram_mb


def kinds_of(host_kinds: Sequence[HostKind]) -> list[Kind]:
    """Each kind with its rows, in the order the cloud adds its hosts."""
    found, first = [], 0
    for kind in host_kinds:
        found.append(Kind(kind, range(first, first + kind.count)))
        first += kind.count
    return found


def boundary(arrival: float, window: float) -> float:
    """The end of the window an arrival at ``arrival`` belongs to."""
    return (math.floor(arrival / window) + 1) * window


def placed(planner: Planner, batch: Batch) -> Placement | None:
    """The planner's placement of the whole batch, or None if it does not fit."""
    try:
        placement = planner.place(batch)
    except CannotPlace:
        return None
    return placement if placement.feasible(batch) else None


def longest_prefix(
    planner: Planner, apps: Sequence[BatchApp], hosts: int
) -> tuple[int, Placement | None]:
    """How many of ``apps``, from the first, the planner places on ``hosts``, and how.

    The prefix whose total demand exceeds the hosts is cut off unplanned;
    below it bisection looks for the longest one that fits (a planner need
    not be monotone, so it is a longest one found, not always the longest).
    """
    cpu = mem = 0.0
    bound = 0
    for app in apps:
        cpu, mem = cpu + app.cpu, mem + app.mem
        if cpu > hosts + SLACK * hosts or mem > hosts + SLACK * hosts:
            break
        bound += 1
    if bound == 0:
        return 0, None
    found = placed(planner, Batch(tuple(apps[:bound]), hosts))
    if found is not None:
        return bound, found
    fits, fails, best = 0, bound, None
    while fails - fits > 1:
        middle = (fits + fails) // 2
        attempt = placed(planner, Batch(tuple(apps[:middle]), hosts))
        if attempt is None:
            fails = middle
        else:
            fits, best = middle, attempt
    return fits, best


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def plan_window(
    arrivals: BatchArrivals,
    entries: Sequence[Entry],
    kinds: Sequence[Kind],
    empty_rows: set[int],
    app_of: Callable[[Entry, Kind], BatchApp | None],
) -> tuple[list[tuple[Entry, int]], list[Entry]]:
    """Plan a window's jobs on the empty hosts: (job, host row) pairs to start, and the
    jobs left over, in arrival order.

    ``app_of`` gives a job's application on a kind's hosts, None if one of
    them cannot hold it.
    """
    starts: list[tuple[Entry, int]] = []
    waiting = list(entries)
    for kind in kinds:
        empty = [row for row in kind.rows if row in empty_rows]
        candidates = [
            (position, app)
            for position, entry in enumerate(waiting)
            for app in [app_of(entry, kind)]
            if app is not None
        ]
        if not empty or not candidates:
            continue
        taken: set[int] = set()
        for chunk in _chunks(candidates, arrivals.max_batch):
            hosts = min(len(empty), len(chunk))
            if hosts == 0:
                break
            count, placement = longest_prefix(arrivals.planner, [app for _, app in chunk], hosts)
            hosts_of = placement.host_of if placement is not None else ()
            for (position, _), host in zip(chunk[:count], hosts_of, strict=True):
                starts.append((waiting[position], empty[host]))
                taken.add(position)
            used = {empty[host] for host in hosts_of}
            empty = [row for row in empty if row not in used]
            if count < len(chunk):
                break  # the rest of the window waits for a later kind or the queue
        waiting = [entry for position, entry in enumerate(waiting) if position not in taken]
    return starts, waiting


def empty_rows(cloud: Cloud) -> set[int]:
    """The hosts no VM runs on."""
    return cloud.empty_rows()


def start_on(cloud: Cloud, request: PlacementRequest, row: int) -> None:
    """Place all the request's VMs on host ``row``, as a batch planner chose.

    The same code as an online placement applies them, so the cloud's room
    and VMs are kept one way; a plan that would overfill the host is a bug,
    refused rather than counted.
    """
    free, capacity = cloud.room_of(row)
    need = np.array(request.demand.as_tuple()) * request.count
    room = np.asarray(free) + 1e-6 * np.maximum(np.asarray(capacity), 1.0)
    if np.any(need > room):
        raise ValueError(
            f"application {request.application_id} does not fit host {cloud.host_name(row)}"
        )
    cloud.place_on(request, row)
