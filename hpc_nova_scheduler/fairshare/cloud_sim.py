"""A VM-level fair-share cloud: enforcement, borrowed VMs and their reclaim, simulated.

The many-task simulator (``simulator.py``, ``fluid.py``) runs the paper's
pilots; this one runs what nova-scheduler enforces. Platforms of whole
cores, projects asking for VMs that stay until their lifetime ends (or
never: services), the first level every interval, each request admitted
as ``in_force.choices`` admits it, and, with reclaim on,
:func:`.reclaim.plan` taking loans back. Nova-free; one run is
:func:`simulate`.

The model, each decision with its reason
========================================

* **Platforms** are whole cores (nodes x cores per node); a VM fits where
  a platform has that many cores free, whatever its nodes. Node packing is
  the second level's and Nova's concern, not the question here.
* **Projects** (:class:`ProjectSpec`) are tenants with a closed loop, a
  pilot factory or an autoscaler: while active they keep ``declared``
  cores asked for (running plus waiting), in VMs of ``vm_cores``; a VM that
  ends is replaced at once; ``services`` of those cores are VMs that never
  end, the rest batch VMs with the scenario's :class:`Lifetime`. While
  idle they ask nothing new, withdraw what waits, and their VMs run on.
* **Declared demand stands** (``fairshare demand set``), idle or not, by
  default (``declare="standing"``): the entitlement a project keeps while
  idle is what ``strict`` leaves idle and ``borrow`` lends, and what a
  returning project gets back. With the live rule demand = max(declared,
  running + refused) (``entitlements.py``), the closed loop keeps every
  project's demand at its declaration, so entitlements move only when
  weights or declarations do. ``declare="active"`` withdraws the
  declaration while idle: entitlements then follow who is asking, and VMs
  placed within an entitlement a later run shrinks are not loans, so no
  reclaim takes them (the reclaim rule's own choice, ``reclaim.py``).
* **The allocator** runs at 0 and every ``interval_s``:
  ``entitlements.allocate`` over :class:`~.entitlements.ProjectView`
  values, exactly the agent's call (cached while its inputs do not move).
* **Admission** is ``in_force.choices``' order: the platforms where the
  VM stays within the project's entitlement, highest affinity first; then,
  under ``borrow``, any platform with the cores idle, highest affinity
  first, the VM recorded as a borrowed :class:`~.reclaim.Loan`. A VM only
  lands where the platform has the cores free.
* **Refused requests wait** and are retried at the next interval (Nova has
  no queue; the tenant retries). At an interval, the requests that fit
  their project's entitlement go first (oldest first), then, under
  ``borrow``, the others onto idle cores: a borrower never takes cores a
  project entitled to them is waiting for in the same instant.
* **Reclaim** (``reclaim=True``), at each interval after the retries:
  per platform, :func:`.reclaim.plan` with the waiting requests as unmet
  demand (each project's waiting cores spread over the platforms of its
  entitlement with room for whole VMs, highest affinity first: one request
  is never counted on two platforms; met in part, VM by VM, when the loans
  cannot cover all of it) and the victims not yet ended as
  :class:`~.reclaim.Pending`. A victim ends ``grace_s`` later; its cores go
  at once to its beneficiary's waiting requests (the beneficiary's retry),
  so no borrower takes them first and no second reclaim follows. Unmet
  demand here is the waiting requests only: a standing declaration of an
  idle project is not a request, and counting it would take loans back
  for nobody.
* **Fairness** per platform j at time t is Jain's index
  (``evaluation.jain``) over x_p = min(1, use_pj / target_pj) for every
  project with target_pj > 0, where target_pj = use_pj + min(waiting_p,
  whole VMs of room_pj): room_pj = max(0, E_pj - use_pj), rounded down to
  a multiple of the project's VM size, and waiting_p the
  cores it has waiting. A project is short on j only when it waits and
  has room for a whole VM there; using more than its entitlement does not
  count against anyone (it is borrowing, judged by the others' shortfall).
  1 when nobody is short. Time-weighted over the run; a platform where no
  project has a target counts as 1.
* **Utilisation** per platform is busy cores over capacity,
  time-weighted over the run.

Table 8's scenarios and the returning project as clouds, and the grid
that compares the modes, are :mod:`.cloud_scenarios`.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from hpc_nova_scheduler.core.sharing import Platform
from hpc_nova_scheduler.fairshare import entitlements, evaluation, reclaim
from hpc_nova_scheduler.fairshare.allocator import TwoLevel
from hpc_nova_scheduler.fairshare.combinations import CombinationTable

STRICT = "strict"
BORROW = "borrow"
ENFORCEMENTS = (STRICT, BORROW)

#: Cores of a VM unless a project says otherwise: half a cheetah or darth node.
VM_CORES = 4
DEFAULT_INTERVAL_S = 300.0
DEFAULT_GRACE_S = 300.0


class CloudSimError(ValueError):
    """A VM-level simulation that cannot be posed; the message names the value."""


@dataclasses.dataclass(frozen=True)
class Lifetime:
    """How long a batch VM runs: ``fixed`` seconds, ``exp`` (exponential, mean), ``forever``."""

    kind: str
    seconds: float = math.inf

    KINDS = ("fixed", "exp", "forever")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise CloudSimError(f"lifetime kind {self.kind!r}; known: {', '.join(self.KINDS)}")
        if self.kind != "forever" and not (math.isfinite(self.seconds) and self.seconds > 0):
            raise CloudSimError(f"lifetime seconds must be a number > 0, not {self.seconds}")

    @classmethod
    def parse(cls, text: str) -> Lifetime:
        """``forever``, ``SECONDS`` (fixed) or ``exp:SECONDS`` (exponential with that mean)."""
        text = text.strip()
        if text == "forever":
            return cls("forever")
        kind, sep, number = text.partition(":")
        if not sep:
            kind, number = "fixed", text
        elif kind != "exp":
            raise CloudSimError(f"lifetime {text!r}: expected forever, SECONDS or exp:SECONDS")
        try:
            seconds = float(number)
        except ValueError:
            raise CloudSimError(
                f"lifetime {text!r}: expected forever, SECONDS or exp:SECONDS"
            ) from None
        return cls(kind, seconds)

    @property
    def label(self) -> str:
        if self.kind == "forever":
            return "forever"
        return f"{self.seconds:g}" if self.kind == "fixed" else f"exp:{self.seconds:g}"

    def draw(self, rng: np.random.Generator) -> float:
        if self.kind == "forever":
            return math.inf
        if self.kind == "fixed":
            return self.seconds
        return float(rng.exponential(self.seconds))


@dataclasses.dataclass(frozen=True)
class ProjectSpec:
    """A tenant: what it declares, when it asks, and its VMs."""

    name: str
    application: str
    declared: int
    #: (start, end) seconds of its active periods, sorted, disjoint.
    active: tuple[tuple[float, float], ...]
    lifetime: Lifetime
    weight: float = 1.0
    #: Cores of its declaration held by VMs that never end.
    services: int = 0
    vm_cores: int = VM_CORES
    #: Whether its declaration stands while it is idle (else it is withdrawn).
    standing: bool = True

    def __post_init__(self) -> None:
        if self.vm_cores < 1:
            raise CloudSimError(f"{self.name}: vm_cores must be >= 1, not {self.vm_cores}")
        if not (0 <= self.services <= self.declared):
            raise CloudSimError(
                f"{self.name}: services must be 0..declared ({self.declared}), not {self.services}"
            )
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise CloudSimError(f"{self.name}: weight must be > 0, not {self.weight}")
        last = -math.inf
        for start, end in self.active:
            if not (last <= start < end):
                raise CloudSimError(f"{self.name}: active periods must be sorted and disjoint")
            last = end


@dataclasses.dataclass(frozen=True)
class Cloud:
    """A scenario as a cloud: platforms, tenants, how long it runs, the run times."""

    name: str
    platforms: tuple[Platform, ...]
    projects: tuple[ProjectSpec, ...]
    horizon_s: float
    table: CombinationTable = dataclasses.field(compare=False, hash=False, repr=False)


@dataclasses.dataclass(frozen=True)
class Settings:
    """How the cloud is governed."""

    enforcement: str = BORROW
    reclaim: bool = False
    interval_s: float = DEFAULT_INTERVAL_S
    grace_s: float = DEFAULT_GRACE_S
    first: str = "pa-rr"
    metric: str = "rpa"
    second: str = "maf"
    corunner: str = "normalised"

    def __post_init__(self) -> None:
        if self.enforcement not in ENFORCEMENTS:
            raise CloudSimError(
                f"enforcement {self.enforcement!r}; known: {', '.join(ENFORCEMENTS)}"
            )
        if not (math.isfinite(self.interval_s) and self.interval_s > 0):
            raise CloudSimError(f"interval must be a number of seconds > 0, not {self.interval_s}")
        if not (math.isfinite(self.grace_s) and self.grace_s >= 0):
            raise CloudSimError(f"grace must be a number of seconds >= 0, not {self.grace_s}")

    @property
    def mode(self) -> str:
        """``strict``, ``borrow``, ``borrow+reclaim`` (or ``strict+reclaim``)."""
        return self.enforcement + ("+reclaim" if self.reclaim else "")


@dataclasses.dataclass
class _VM:
    uuid: str
    project: str
    platform: str
    cores: int
    placed_at: float
    ends_at: float
    service: bool
    borrowed: bool
    #: The beneficiary of the reclaim that takes it (None: not a victim).
    victim_for: str | None = None


@dataclasses.dataclass
class _Request:
    number: int
    project: str
    cores: int
    service: bool
    submitted_at: float


@dataclasses.dataclass(frozen=True)
class Sample:
    """One project at one allocator run (for timelines)."""

    time_s: float
    project: str
    #: platform -> cores in use
    use: Mapping[str, int]
    #: platform -> entitled cores
    entitled: Mapping[str, int]
    waiting: int


@dataclasses.dataclass(frozen=True)
class Result:
    """One run: fairness and utilisation per platform, and what borrowing and reclaim did."""

    cloud: str
    mode: str
    #: platform -> time-weighted Jain's index (see the module's docstring)
    fairness: Mapping[str, float]
    #: platform -> busy cores over capacity, time-weighted
    utilisation: Mapping[str, float]
    #: busy cores over all cores, time-weighted
    total_utilisation: float
    borrowed: int
    reclaims: int
    reclaimed_cores: int
    #: Requests refused on arrival (each waits and is retried).
    refused: int
    #: Per reclaim: seconds from when its beneficiary became short on the platform
    #: (waiting, with room for a whole VM in its entitlement) to the victim's end.
    reclaim_delays: tuple[float, ...] = ()
    #: Decisions that took a VM that was not a loan, or left its project's victims under
    #: way taking it below its entitlement (reclaim.plan's promise: always 0).
    wrong_victims: int = 0
    samples: tuple[Sample, ...] = ()

    @property
    def mean_fairness(self) -> float:
        return sum(self.fairness.values()) / len(self.fairness)

    @property
    def worst_fairness(self) -> float:
        return min(self.fairness.values())


# Events at one instant go in this order: VMs end, the allocator runs,
# projects change state, then the rest. A reclaim's victim ending at an
# allocator run frees its cores before the retries.
_END, _TICK, _ACTIVITY = 0, 1, 2


class _Engine:
    def __init__(self, cloud: Cloud, settings: Settings, seed: int, record: bool) -> None:
        self.cloud = cloud
        self.settings = settings
        self.rng = np.random.default_rng([seed, 45])
        self.record = record
        self.two_level = TwoLevel(
            first=settings.first,
            second=settings.second,
            metric=settings.metric,
            corunner=settings.corunner,
            seed=seed,
        )
        self.capacity = {p.name: p.cores for p in cloud.platforms}
        self.spec = {p.name: p for p in cloud.projects}
        if len(self.spec) != len(cloud.projects):
            raise CloudSimError(f"{cloud.name}: a project is named twice")
        self.active = dict.fromkeys(self.spec, False)
        views = [self._view(p.name, {}, 0) for p in cloud.projects]
        self.affinity = entitlements.affinities(
            settings.metric, views, cloud.platforms, cloud.table
        )
        self.order = {
            name: sorted(self.capacity, key=lambda p, n=name: (-self.affinity[n].get(p, 0.0), p))
            for name in self.spec
        }
        self.use = {p: dict.fromkeys(self.spec, 0) for p in self.capacity}
        self.busy = dict.fromkeys(self.capacity, 0)
        self.entitled: dict[str, dict[str, int]] = {p: {} for p in self.capacity}
        self.vms: dict[str, _VM] = {}
        self.waiting: list[_Request] = []
        self.waiting_cores = dict.fromkeys(self.spec, 0)
        self.services = dict.fromkeys(self.spec, 0)  # service cores running or waiting
        self.events: list[tuple[float, int, int, str, object]] = []
        self.counter = itertools.count()
        self.numbers = itertools.count()
        self.now = 0.0
        self.plans: dict[tuple, dict[str, dict[str, int]]] = {}
        self.fair_area = dict.fromkeys(self.capacity, 0.0)
        self.busy_area = dict.fromkeys(self.capacity, 0.0)
        self.fair_now = dict.fromkeys(self.capacity, 1.0)
        self.borrowed = 0
        self.reclaims = 0
        self.reclaimed_cores = 0
        self.refused = 0
        self.delays: list[float] = []
        self.wrong_victims = 0
        #: (project, platform) -> since when it has been short there (see _fairness)
        self.short_since: dict[tuple[str, str], float] = {}
        self.samples: list[Sample] = []

    # -- the allocator -------------------------------------------------

    def _view(
        self, name: str, running: Mapping[str, int], refused: int
    ) -> entitlements.ProjectView:
        spec = self.spec[name]
        return entitlements.ProjectView(
            name=name,
            weight=spec.weight,
            declared=spec.declared if spec.standing or self.active[name] else 0,
            running=dict(running),
            refused=refused,
            application=spec.application,
        )

    def allocate(self) -> None:
        views = [
            self._view(
                name,
                {p: self.use[p][name] for p in self.capacity if self.use[p][name]},
                self.waiting_cores[name],
            )
            for name in self.spec
        ]
        key = tuple((v.name, v.demand) for v in views)
        allocation = self.plans.get(key)
        if allocation is None:
            plan = entitlements.allocate(
                self.two_level, views, self.cloud.platforms, self.cloud.table, {}
            )
            allocation = {name: dict(cores) for name, cores in plan.allocation.items()}
            self.plans[key] = allocation
        for platform in self.capacity:
            self.entitled[platform] = {
                name: allocation.get(name, {}).get(platform, 0) for name in self.spec
            }

    # -- placement -----------------------------------------------------

    def _free(self, platform: str) -> int:
        return self.capacity[platform] - self.busy[platform]

    def _place(self, request: _Request, borrow: bool) -> bool:
        """Place ``request`` within its entitlement, or (``borrow``) onto idle cores."""
        name, cores = request.project, request.cores
        for platform in self.order[name]:
            if (
                self.use[platform][name] + cores <= self.entitled[platform].get(name, 0)
                and self._free(platform) >= cores
            ):
                self._start(request, platform, borrowed=False)
                return True
        if borrow:
            for platform in self.order[name]:
                if self._free(platform) >= cores:
                    self._start(request, platform, borrowed=True)
                    return True
        return False

    def _start(self, request: _Request, platform: str, borrowed: bool) -> None:
        spec = self.spec[request.project]
        life = math.inf if request.service else spec.lifetime.draw(self.rng)
        vm = _VM(
            uuid=f"vm-{request.number}",
            project=request.project,
            platform=platform,
            cores=request.cores,
            placed_at=self.now,
            ends_at=self.now + life,
            service=request.service,
            borrowed=borrowed,
        )
        self.vms[vm.uuid] = vm
        self.use[platform][vm.project] += vm.cores
        self.busy[platform] += vm.cores
        self.borrowed += borrowed
        if math.isfinite(vm.ends_at):
            self._push(vm.ends_at, _END, "end", vm.uuid)

    def _admit(self, request: _Request) -> None:
        if not self._place(request, self.settings.enforcement == BORROW):
            self.refused += 1
            self.waiting.append(request)
            self.waiting_cores[request.project] += request.cores

    def _top_up(self, name: str) -> None:
        """A tenant keeps its declaration asked for while active."""
        if not self.active[name]:
            return
        spec = self.spec[name]
        asked = sum(self.use[p][name] for p in self.capacity) + self.waiting_cores[name]
        while asked + spec.vm_cores <= spec.declared:
            service = self.services[name] + spec.vm_cores <= spec.services
            if service:
                self.services[name] += spec.vm_cores
            request = _Request(next(self.numbers), name, spec.vm_cores, service, self.now)
            asked += spec.vm_cores
            self._admit(request)

    def _retry(self, only: str | None = None) -> None:
        """Waiting requests again: those within their entitlement first, then borrowers."""
        for borrow in (False, True):
            if borrow and self.settings.enforcement != BORROW:
                break
            # A project's requests are all of one size: once one fails in a
            # pass, the rest of that project's fail too (placing only fills).
            blocked: set[str] = set()
            still = []
            for request in self.waiting:
                name = request.project
                if (only is None or name == only) and name not in blocked:
                    if self._place(request, borrow):
                        self.waiting_cores[name] -= request.cores
                        continue
                    blocked.add(name)
                still.append(request)
            self.waiting = still

    # -- reclaim -------------------------------------------------------

    def _unmet(self) -> dict[str, list[reclaim.Demand]]:
        """platform -> demands: each project's waiting cores over its platforms with room."""
        waiting = self.waiting_cores
        demands: dict[str, list[reclaim.Demand]] = {p: [] for p in self.capacity}
        for name, left in waiting.items():
            for platform in self.order[name]:
                if left <= 0:
                    break
                vm_cores = self.spec[name].vm_cores
                room = self.entitled[platform].get(name, 0) - self.use[platform][name]
                room -= room % vm_cores  # whole VMs: a request needs its cores on one platform
                if room > 0:
                    take = min(left, room)
                    demands[platform].append(reclaim.Demand(name, take, unit=vm_cores))
                    left -= take
        return demands

    def _reclaim(self) -> None:
        demands = self._unmet()
        for platform in self.capacity:
            if not demands[platform]:
                continue
            on = [vm for vm in self.vms.values() if vm.platform == platform]
            state = reclaim.PlatformState(
                name=platform,
                capacity=self.capacity[platform],
                entitled=self.entitled[platform],
                use=dict(self.use[platform]),
            )
            # Victims under way are still loans that run: plan() counts them as taken.
            loans = [
                reclaim.Loan(vm.uuid, vm.project, platform, vm.cores, vm.placed_at)
                for vm in on
                if vm.borrowed
            ]
            pending = [
                reclaim.Pending(vm.uuid, vm.victim_for, vm.cores)
                for vm in on
                if vm.victim_for is not None
            ]
            decision = reclaim.plan(state, loans, demands[platform], pending)
            for taken in decision.reclaims:
                vm = self.vms[taken.victim.instance_uuid]
                vm.victim_for = taken.beneficiary
                self.reclaims += 1
                self.reclaimed_cores += vm.cores
                when = min(vm.ends_at, self.now + self.settings.grace_s)
                since = self.short_since.get((taken.beneficiary, platform), self.now)
                self.delays.append(when - since)
                if when < vm.ends_at:
                    vm.ends_at = when
                    self._push(when, _END, "end", vm.uuid)
            self._check_victims(platform, on, {r.victim.project for r in decision.reclaims})

    def _check_victims(self, platform: str, on: Sequence[_VM], losing: set[str]) -> None:
        """reclaim.plan's promise, checked after every decision: only loans are victims, and
        a project it takes from keeps its entitlement once all its victims under way end.

        (A project whose other VMs end on their own while its victims wait out
        the grace may still drop below: the decision could not know.)"""
        going: dict[str, int] = {}
        for vm in on:
            if vm.victim_for is not None:
                if not vm.borrowed:
                    self.wrong_victims += 1
                going[vm.project] = going.get(vm.project, 0) + vm.cores
        for name in losing:
            if self.use[platform][name] - going[name] < self.entitled[platform].get(name, 0):
                self.wrong_victims += 1

    # -- events --------------------------------------------------------

    def _push(self, when: float, order: int, kind: str, payload: object) -> None:
        heapq.heappush(self.events, (when, order, next(self.counter), kind, payload))

    def _end(self, uuid: str) -> None:
        vm = self.vms.get(uuid)
        if vm is None or vm.ends_at != self.now:
            return  # ended earlier (a reclaim brought its end forward)
        del self.vms[uuid]
        self.use[vm.platform][vm.project] -= vm.cores
        self.busy[vm.platform] -= vm.cores
        if vm.service:
            self.services[vm.project] -= vm.cores
        if vm.victim_for is not None:
            self._retry(only=vm.victim_for)
        self._top_up(vm.project)

    def _activity(self, name: str, active: bool) -> None:
        self.active[name] = active
        if not active:
            for request in self.waiting:
                if request.project == name and request.service:
                    self.services[name] -= request.cores
            self.waiting = [r for r in self.waiting if r.project != name]
            self.waiting_cores[name] = 0
        self._top_up(name)

    def _tick(self) -> None:
        self.allocate()
        self._retry()
        if self.settings.reclaim:
            self._reclaim()
        if self.record:
            waiting = self.waiting_cores
            for name in self.spec:
                self.samples.append(
                    Sample(
                        self.now,
                        name,
                        {p: self.use[p][name] for p in self.capacity},
                        {p: self.entitled[p].get(name, 0) for p in self.capacity},
                        waiting[name],
                    )
                )

    # -- metrics -------------------------------------------------------

    def _fairness(self, platform: str) -> float:
        values = []
        for name, spec in self.spec.items():
            use = self.use[platform][name]
            room = max(0, self.entitled[platform].get(name, 0) - use)
            # Short only by whole VMs: a project's requests are all of its VM size.
            room -= room % spec.vm_cores
            target = use + min(self.waiting_cores[name], room)
            if target > use:
                self.short_since.setdefault((name, platform), self.now)
            else:
                self.short_since.pop((name, platform), None)
            if target > 0:
                values.append(min(1.0, use / target))
        if not values:
            return 1.0
        # Everyone with a target has nothing: Jain's index is 0/0; nobody is served.
        return evaluation.jain(values) if any(values) else 0.0

    def _advance(self, when: float) -> None:
        dt = when - self.now
        if dt > 0:
            for platform in self.capacity:
                self.fair_area[platform] += dt * self.fair_now[platform]
                self.busy_area[platform] += dt * self.busy[platform]
        self.now = when

    def run(self) -> Result:
        horizon = self.cloud.horizon_s
        for spec in self.cloud.projects:
            for start, end in spec.active:
                if start < horizon:
                    self._push(start, _ACTIVITY, "on", spec.name)
                    if end < horizon:
                        self._push(end, _ACTIVITY, "off", spec.name)
        for k in range(math.ceil(horizon / self.settings.interval_s)):
            self._push(k * self.settings.interval_s, _TICK, "tick", None)
        while self.events and self.events[0][0] < horizon:
            when, _, _, kind, payload = heapq.heappop(self.events)
            self._advance(when)
            if kind == "end":
                self._end(payload)
            elif kind == "tick":
                self._tick()
            else:
                self._activity(payload, kind == "on")
            if not self.events or self.events[0][0] > when:
                self.fair_now = {p: self._fairness(p) for p in self.capacity}
        self._advance(horizon)
        return Result(
            cloud=self.cloud.name,
            mode=self.settings.mode,
            fairness={p: area / horizon for p, area in self.fair_area.items()},
            utilisation={
                p: area / (horizon * self.capacity[p]) if self.capacity[p] else 0.0
                for p, area in self.busy_area.items()
            },
            total_utilisation=sum(self.busy_area.values())
            / (horizon * sum(self.capacity.values())),
            borrowed=self.borrowed,
            reclaims=self.reclaims,
            reclaimed_cores=self.reclaimed_cores,
            refused=self.refused,
            reclaim_delays=tuple(self.delays),
            wrong_victims=self.wrong_victims,
            samples=tuple(self.samples),
        )


def simulate(cloud: Cloud, settings: Settings, seed: int = 0, record: bool = False) -> Result:
    """Run ``cloud`` under ``settings``; ``record`` keeps every project at every allocator run."""
    if not cloud.platforms or not any(p.cores for p in cloud.platforms):
        raise CloudSimError(f"{cloud.name}: no platform has cores")
    if not (math.isfinite(cloud.horizon_s) and cloud.horizon_s > 0):
        raise CloudSimError(f"{cloud.name}: the horizon must be > 0 seconds")
    return _Engine(cloud, settings, seed, record).run()
