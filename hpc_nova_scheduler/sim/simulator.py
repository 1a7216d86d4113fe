"""Discrete-event replay of a job log on a simulated cloud.

Each job (n processors, m MB, t seconds) becomes n VMs of one core and m/n
MB, as in seed 003 section VII, placed as one request by the same
:func:`hpc_nova_scheduler.core.algorithm.plan` that nova-scheduler runs
(for blind policies, by its per-class twin; see :mod:`.cloud`). A
job starts when all its VMs are placed (gang start), runs, and frees them.
The queue is first come, first served. With backfilling, later jobs may
start while the head waits: *greedy* starts any that fits; *EASY* (the
standard of Slurm's backfill, Alea and Batsim) first gives the head a
reservation, the earliest time enough cores free up by the running jobs'
requested run times (SWF field 9; the actual run time where it is
missing), and starts a later job only if it fits now and either ends by
then or leaves the head its cores. The reservation counts cores, as those
schedulers count nodes; memory and host boundaries can still delay the
head past it. With ``batches`` arrivals are held for a window and placed
together by a batch planner, the rest falling back to the queue (see
:mod:`.batches`). With a topology (:mod:`.topology`) a job of several VMs
may carry the tenant's constraints: one that fits no domain of its
required level even on the idle cloud is refused at arrival and counted,
any other waits as a job that does not fit now does (EASY's reservation
still counts cores alone). Deterministic for a given seed.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import heapq
import itertools
import math
import random
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from hpc_nova_scheduler.core.algorithm import NO_TOPOLOGY, PlacementRequest
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference.base import (
    InterferenceModel,
    MissingFeatures,
    ModelNotReady,
    Tenant,
)
from hpc_nova_scheduler.interference.rule import ModelRule
from hpc_nova_scheduler.measured.pressure import DECLARED, SOURCES, counted_score
from hpc_nova_scheduler.planners.base import BatchApp
from hpc_nova_scheduler.sim import batches as batching
from hpc_nova_scheduler.sim import phases
from hpc_nova_scheduler.sim.cloud import (
    ClassedCloud,
    CompiledCloud,
    PlannedCloud,
    Shortfall,
    StateClassedCloud,
)
from hpc_nova_scheduler.sim.interference import NoInterference, SlowdownModel
from hpc_nova_scheduler.sim.settings import ClusterShape, Scenario
from hpc_nova_scheduler.sim.swf import Job

#: Host contents whose predicted slowdowns a replay keeps (then starts afresh).
PREDICTION_CACHE = 200_000


@dataclasses.dataclass(frozen=True)
class Outcome:
    job_id: int
    submit: float
    start: float
    end: float
    processors: int
    #: The run time the job would have had alone (after ``runtime_factor``).
    nominal_run: float
    #: How many domains of each topology level the job's VMs were in,
    #: outermost first (measured only when the replay is asked to).
    spans: tuple[int, ...] = ()


@dataclasses.dataclass
class Result:
    scenario: str
    outcomes: list[Outcome]
    never_fit: list[int]
    unfinished: int
    total_cores: int
    #: The levels the outcomes' ``spans`` count, outermost first; empty
    #: when the replay did not measure them.
    levels: tuple[str, ...] = ()
    #: Jobs refused at arrival because no domain of their required level
    #: holds them even on the idle cloud.
    topology_refused: list[int] = dataclasses.field(default_factory=list)
    #: What the scheduler counted running jobs' cache scores with.
    cache_source: str = DECLARED

    def multi_vm_jobs(self) -> int:
        """Completed jobs of several VMs: those whose VMs could be apart."""
        return sum(1 for o in self.outcomes if o.processors > 1)

    def one_domain_share(self, level: str) -> float | None:
        """The share of completed jobs of several VMs whose VMs were all in
        one domain of ``level``; None without such jobs or spans."""
        if level not in self.levels:
            return None
        depth = self.levels.index(level)
        multi = [o for o in self.outcomes if o.processors > 1]
        if not multi:
            return None
        return sum(1 for o in multi if o.spans[depth] == 1) / len(multi)

    @property
    def makespan(self) -> float:
        return max((o.end for o in self.outcomes), default=0.0)

    def first_end(self) -> float | None:
        """When the first job ended, after the first arrival; None if none did."""
        return min((o.end for o in self.outcomes), default=None)

    def completed_by(self, time: float) -> int:
        ends = sorted(o.end for o in self.outcomes)
        return bisect.bisect_right(ends, time)

    def mean_wait(self) -> float:
        if not self.outcomes:
            return 0.0
        return sum(o.start - o.submit for o in self.outcomes) / len(self.outcomes)

    def mean_bounded_slowdown(self, bound: float = 10.0) -> float:
        """Mean of max(1, (wait + run) / max(run, bound)), the usual bounded slowdown.

        The max with 1 is Feitelson's: a job shorter than ``bound`` that did
        not wait would otherwise count as faster than alone (0.5 for 5 s).
        """
        if not self.outcomes:
            return 0.0
        return sum(
            max(1.0, (o.end - o.submit) / max(o.end - o.start, bound)) for o in self.outcomes
        ) / len(self.outcomes)

    def bounded_slowdowns(self, bound: float = 10.0) -> list[float]:
        """Each completed job's bounded slowdown, as :meth:`mean_bounded_slowdown` counts it."""
        return [max(1.0, (o.end - o.submit) / max(o.end - o.start, bound)) for o in self.outcomes]

    def stretches(self) -> list[float]:
        """Each completed job's run time over its run time alone at speed 1."""
        return [(o.end - o.start) / o.nominal_run for o in self.outcomes if o.nominal_run > 0]

    def mean_interference(self) -> float:
        """Mean of run time over the run time alone at speed 1: what co-runners
        and slower hosts cost, 1.0 for nothing."""
        runs = [(o.end - o.start) / o.nominal_run for o in self.outcomes if o.nominal_run > 0]
        return sum(runs) / len(runs) if runs else 1.0

    def utilisation(self) -> float:
        """Busy core-seconds over cores x makespan."""
        span = self.makespan - min((o.submit for o in self.outcomes), default=0.0)
        if span <= 0:
            return 0.0
        busy = sum((o.end - o.start) * o.processors for o in self.outcomes)
        return busy / (self.total_cores * span)


# Finishes first at equal times: they free room; a window's end after its arrivals.
_ARRIVAL, _FINISH, _WINDOW = 1, 0, 2
#: A job's change of phase; a measured score coming to count (see :mod:`.phases`).
_PHASE, _MEASURE = 3, 4
#: What the idle cloud says of an arriving job: it holds it, never would,
#: or would but for the job's topology constraints.
_PLACEABLE, _NEVER, _TOPOLOGY = object(), object(), object()


@dataclasses.dataclass
class _Running:
    """A started job; with an interference model its pace changes over time."""

    job: Job
    arrival: float
    start: float
    nominal: float
    #: Work left, in seconds at full speed, as of ``since``.
    remaining: float
    since: float
    pace: float = 1.0
    version: int = 0
    #: The domains of each level its VMs are in, when the replay counts them.
    spans: tuple[int, ...] = ()
    #: Its declared cache score, that of its current phase (what the ground
    #: truth reads) and the one the scheduler counts it with now.
    declared: float = 0.0
    true_score: float = 0.0
    planned: float = 0.0
    #: Work left, at full speed, when its phase changes; None: no change ahead.
    phase_left: float | None = None


def _application_name(application_id: str) -> str:
    """The name a job's application (its id) has among the jobs' profiles."""
    return f"job{application_id}"


class Simulator:
    """Replays jobs on one cluster shape under one scenario.

    ``cache_scores`` gives every job a cache score drawn uniformly from the
    range (seeded, the same draw for every scenario); ``interference``
    slows co-located jobs down (see :mod:`hpc_nova_scheduler.sim.interference`);
    ``progress`` is called with the number of jobs settled (finished or found
    never to fit) as the replay advances; ``memory_scale`` multiplies every
    job's memory (to ask what bigger-memory applications would do).

    ``interference`` is a model of :mod:`.interference` (slowdown per VM
    from cache scores) or any model of :mod:`hpc_nova_scheduler.interference`
    (slowdown per application from profiles). Such models, as ground truth
    or as the scenario's ``admission``, need each job's profile: every job
    gets one drawn from ``profiles`` (seeded, the same draw under every
    scenario), with its own cache score from ``cache_scores``; without
    ``profiles`` a job's profile is its cache score alone.

    ``batches`` holds arrivals for a window and places them with a batch
    planner (:mod:`.batches`); a planner that reads an interference model
    needs ``profiles`` as such models do. The blind classes keep no hosts
    one by one, so batches replay on state classes or host by host.

    ``host_classes``: None picks the fastest engine that replays the
    scenario exactly (blind classes, then the compiled kernel over every
    host, then state classes, else plan() over every host); False forces
    plan() over every host (the reference).

    ``spans`` counts, for every job, the domains of each level of the
    shape's topology its VMs were in (from the hosts it got, as the shape
    nests them: also for a scenario whose placement sees the racks alone).
    ``span_cost`` (percent, an assumption of ours, off by default) stretches
    the run time of a job by that much for each domain beyond the first it
    spans at the outermost level (blocks under ``block,rack``).

    ``drift`` changes some jobs' true cache scores as they run, and the
    scenario's ``cache_source`` decides what the scheduler counts running
    jobs with, measured as ``measuring`` says (by default the product's
    lag and saturation): see :mod:`.phases`. Either replays on plan() over
    every host, which can rescore a running job.
    """

    def __init__(
        self,
        shape: ClusterShape,
        scenario: Scenario,
        *,
        seed: int = 0,
        all_at_once: bool = False,
        backfill: bool | str = False,
        backfill_depth: int = 64,
        cache_scores: tuple[float, float] | None = None,
        interference: SlowdownModel | InterferenceModel | None = None,
        progress: Callable[[int], None] | None = None,
        memory_scale: float = 1.0,
        host_classes: bool | None = None,
        profiles: Sequence[ProfileRecord] = (),
        batches: batching.BatchArrivals | None = None,
        spans: bool = False,
        span_cost: float = 0.0,
        drift: phases.PhaseDrift | None = None,
        measuring: phases.Measuring | None = None,
    ) -> None:
        self.shape = shape
        if scenario.cache_source not in SOURCES:
            raise ValueError(
                f"scenario {scenario.name}: cache source {scenario.cache_source!r} "
                f"is not one of {', '.join(SOURCES)}"
            )
        self.drift = drift if drift is not None and drift.active else None
        self.measuring = measuring or phases.Measuring.of_product()
        #: Whether what jobs do, or what the scheduler believes of them, changes as they run.
        self._phased = self.drift is not None or scenario.cache_source != DECLARED
        if self._phased:
            if host_classes:
                raise ValueError(
                    f"scenario {scenario.name}: drifting phases and measured cache scores "
                    "replay on plan() over every host, not on host classes"
                )
            host_classes = False
        if span_cost < 0:
            raise ValueError(f"span_cost must be 0 or more, not {span_cost!r}")
        self.span_cost = span_cost
        #: Whether to count each job's domains (a span cost needs them).
        self.spans = spans or span_cost > 0
        self.scenario = scenario
        self.seed = seed
        self.all_at_once = all_at_once
        #: None, "greedy" or "easy"; True means greedy, as it always did.
        self.backfill = {False: None, True: "greedy", None: None}.get(backfill, backfill)
        if self.backfill not in (None, "greedy", "easy"):
            raise ValueError(f"backfill must be greedy or easy, not {backfill!r}")
        self.backfill_depth = backfill_depth
        self.cache_scores = cache_scores
        self.interference = (
            None if isinstance(interference, NoInterference | None) else interference
        )
        self.progress = progress
        self.memory_scale = memory_scale
        self.profiles = tuple(profiles)
        self.batches = batches
        #: Whether jobs need profiles: a shared model judges, slows or plans them.
        self._profiled = (
            isinstance(self.interference, InterferenceModel)
            or scenario.admission is not None
            or bool(batches and batches.features())
        )
        if batches and batches.features() and not self.profiles:
            raise ValueError(
                f"batch planner {batches.planner.name} reads {', '.join(batches.features())}: "
                "give the jobs profiles to draw from"
            )
        if scenario.admission is not None and scenario.policy.blind:
            raise ValueError(f"scenario {scenario.name}: a blind policy admits by room alone")
        blind_fit = scenario.policy.blind and self.interference is None and batches is None
        state_refusal = StateClassedCloud.refusal(shape, scenario)
        classes_fit = blind_fit or not state_refusal
        if host_classes and not classes_fit:
            raise ValueError(f"host classes cannot replay {scenario.name}: {state_refusal}")
        #: Plan per class of hosts (None: whenever the scenario allows).
        self.host_classes = classes_fit if host_classes is None else host_classes
        #: The engine: blind classes, state classes, or plan() over every host.
        self.engine = "hosts"
        if self.host_classes:
            self.engine = "blind classes" if blind_fit else "state classes"
            if not blind_fit and not CompiledCloud.refusal(shape, scenario):
                self.engine = "compiled hosts"

    def run(self, jobs: Iterable[Job], until: float | None = None) -> Result:
        """Replay ``jobs``; stop at simulated time ``until`` if given."""
        rng = random.Random(self.seed)
        # A draw of its own, so that cache scores are those of a replay without profiles.
        profile_rng = random.Random(f"profiles-{self.seed}")
        engine = {
            "blind classes": ClassedCloud,
            "state classes": StateClassedCloud,
            "compiled hosts": CompiledCloud,
            "hosts": PlannedCloud,
        }[self.engine]
        self._cloud = engine(self.shape, self.scenario)
        #: Each job's profile by application name (one per job: its own cache score).
        self._profile_of: dict[str, ProfileRecord] = {}
        #: Which of ``profiles`` each job's application was drawn as.
        self._drawn_of: dict[str, int] = {}
        #: The truth's slowdowns by host content, and by host since the last change.
        self._predicted: dict[tuple, tuple[float, ...]] = {}
        self._row_slowdowns: dict[int, dict[str, float]] = {}
        #: The profiles the scheduler knows: the jobs' own, but for the cache
        #: scores of running jobs when those drift or are measured.
        self._known_profile_of = {} if self._phased else self._profile_of
        #: Each job's declared cache score, by application id (its job id).
        self._score_of: dict[str, float] = {}
        #: Each job's change of phase, by application id (its job id): the
        #: same under every scenario and cache source of one seed.
        self.phase_of: dict[str, phases.Phase] = {}
        draws = phases.PhaseDraws(self.drift, self.seed) if self.drift else None
        self._rule = None
        if self.scenario.admission is not None:
            self._rule = ModelRule(
                self.scenario.admission, self.scenario.tolerance, self._known_profile_of
            )
        self._releases = 0
        self._speeds = self.shape.speeds()
        #: Each host's processor group: the host type a model may tell apart.
        self._host_types = self.shape.host_types()
        self._uniform_speed = all(speed == 1.0 for speed in self._speeds)
        #: Each host's domain per level, when the replay counts spans.
        self._codes = self.shape.domain_codes() if self.spans else None
        #: Refused jobs: (jobs finished, hosts freed, what it lacked) at the time.
        self._refused: dict[int, tuple[int, int, Shortfall | None]] = {}
        self._events: list[tuple[float, int, int, object]] = []
        self._order = itertools.count()
        self._running: dict[str, _Running] = {}
        #: Held arrivals by the end of their window.
        self._held: dict[float, list[tuple[Job, float, float]]] = {}
        self._kinds = batching.kinds_of(self.shape.host_kinds())
        first_submit: float | None = None
        for job in jobs:
            if first_submit is None:
                first_submit = job.submit
            arrival = 0.0 if self.all_at_once else job.submit - first_submit
            score = rng.uniform(*self.cache_scores) if self.cache_scores else 0.0
            if self._profiled:
                profile = self._job_profile(job, score, profile_rng)
                self._profile_of[self._app_name(job)] = profile
                self._known_profile_of[self._app_name(job)] = profile
            self._score_of[str(job.job_id)] = score
            phase = draws.next(score) if draws else None
            if phase is not None:
                self.phase_of[str(job.job_id)] = phase
            self._push(arrival, _ARRIVAL, (job, score))
        queue: collections.deque[tuple[Job, float, float]] = collections.deque()
        outcomes: list[Outcome] = []
        never_fit: list[int] = []
        topology_refused: list[int] = []
        reported = 0
        while self._events:
            now, kind, _, payload = heapq.heappop(self._events)
            if until is not None and now > until:
                break
            if kind == _WINDOW:
                self._plan_window(now, queue)
            elif kind == _PHASE:
                self._change_phase(*payload, now)
            elif kind == _MEASURE:
                self._measure(*payload)
            elif kind == _FINISH:
                app_id, version = payload
                running = self._running.get(app_id)
                if running is None or running.version != version:
                    continue  # superseded: the job's pace changed since
                self._finish(app_id, now)
                job = running.job
                outcomes.append(
                    Outcome(
                        job.job_id,
                        running.arrival,
                        running.start,
                        now,
                        job.processors,
                        running.nominal,
                        running.spans,
                    )
                )
            else:
                job, score = payload
                placeable = self._placeable_when_empty(job, score)
                if placeable is _NEVER:
                    never_fit.append(job.job_id)
                elif placeable is _TOPOLOGY:
                    topology_refused.append(job.job_id)
                elif self.batches is not None:
                    self._hold((job, score, now))
                else:
                    queue.append((job, score, now))
            self._dispatch(now, queue)
            settled = len(outcomes) + len(never_fit) + len(topology_refused)
            if self.progress is not None and settled != reported:
                self.progress(settled)
                reported = settled
        return Result(
            self.scenario.name,
            outcomes,
            never_fit,
            unfinished=len(queue)
            + len(self._running)
            + sum(len(held) for held in self._held.values()),
            total_cores=self.shape.total_cores,
            levels=self.shape.levels if self.spans else (),
            topology_refused=topology_refused,
            cache_source=self.scenario.cache_source,
        )

    def _memory_per_vm(self, job: Job) -> float:
        return (job.memory_mb or 0.0) * self.memory_scale / job.processors

    def _push(self, time: float, kind: int, payload: object) -> None:
        heapq.heappush(self._events, (time, kind, next(self._order), payload))

    def _dispatch(self, now: float, queue) -> None:
        while queue and self._start(queue[0], now):
            queue.popleft()
        if not self.backfill or not queue:
            return
        easy = self.backfill == "easy"
        if easy:
            shadow, extra = self._reservation(queue[0][0], now)
        # The backfill_depth jobs behind the head, not one fewer.
        for entry in list(itertools.islice(queue, 1, 1 + self.backfill_depth)):
            job = entry[0]
            in_time = True
            if easy:
                in_time = now + self._estimate(job) <= shadow
                if not in_time and job.processors > extra:
                    continue
            if self._start(entry, now):
                queue.remove(entry)
                if not in_time:
                    extra -= job.processors

    def _estimate(self, job: Job) -> float:
        """What the scheduler believes a job will run: its request, else its run."""
        if job.requested_time > 0:
            return job.requested_time
        return job.run_time * self.scenario.runtime_factor

    def _reservation(self, head: Job, now: float) -> tuple[float, int]:
        """EASY's shadow time for the head, and the cores it leaves spare then."""
        free = self._cloud.free_cores()
        if free >= head.processors:
            return now, free - head.processors
        ends = sorted(
            (max(now, running.start + self._estimate(running.job)), running.job.processors)
            for running in self._running.values()
        )
        for end, cores in ends:
            free += cores
            if free >= head.processors:
                return end, free - head.processors
        return math.inf, 0

    @staticmethod
    def _app_name(job: Job) -> str:
        return _application_name(str(job.job_id))

    def _job_profile(self, job: Job, score: float, rng: random.Random) -> ProfileRecord:
        if not self.profiles:
            return ProfileRecord(self._app_name(job), cache_score=score)
        index = rng.randrange(len(self.profiles))
        drawn = self.profiles[index]
        self._drawn_of[self._app_name(job)] = index
        # The job runs the drawn application under its own name: it keeps
        # that application's family, which a runtime model is fitted per.
        return dataclasses.replace(
            drawn, name=self._app_name(job), cache_score=score, family=drawn.runtime_family
        )

    def _request(self, job: Job, score: float, topology: bool = True) -> PlacementRequest:
        """The job as one request; ``topology`` False leaves out its constraints."""
        app_class = self.scenario.app_class or (
            AppClass.SYNC_HPC if job.processors > 1 else AppClass.ASYNC_HPC
        )
        # One VM is inside every domain: only jobs of several carry constraints.
        constrained = topology and job.processors > 1
        return PlacementRequest(
            ApplicationProfile(app_class, score, self._app_name(job) if self._profiled else None),
            Resources(1, self._memory_per_vm(job), 0),
            job.processors,
            str(job.job_id),
            self.scenario.topology if constrained else NO_TOPOLOGY,
        )

    def _placeable_when_empty(self, job: Job, score: float) -> object:
        """Whether the job could start on the idle cloud (:data:`_PLACEABLE`);
        if not, it never will: :data:`_NEVER`, or :data:`_TOPOLOGY` when only
        its topology constraints refuse it.

        Nova would refuse such a request at once (no valid host); a queue
        that kept it would block behind it forever.
        """
        if self.shape.idle_capacity(self._memory_per_vm(job)) < job.processors:
            return _NEVER
        policy = self.scenario.policy
        constrained = policy.topology and not self.scenario.topology.empty and job.processors > 1
        if not (policy.cache_criteria or policy.classes or policy.homogeneity or constrained):
            return _PLACEABLE  # no thresholds, classes, groups or constraints: room is all
        if self._cloud.plans_on_empty(self._request(job, score), self._rule):
            return _PLACEABLE
        if constrained and self._cloud.plans_on_empty(
            self._request(job, score, topology=False), self._rule
        ):
            return _TOPOLOGY
        return _NEVER

    def _start(self, entry, now: float) -> bool:
        job, score, arrival = entry
        refused = self._refused.get(job.job_id)
        if refused is not None and not self._may_fit_again(*refused):
            return False
        if not self._try_start(job, score, arrival, now):
            cloud = self._cloud
            self._refused[job.job_id] = (self._releases, cloud.hosts_freed, cloud.shortfall)
            return False
        self._refused.pop(job.job_id, None)
        return True

    def _may_fit_again(self, releases: int, hosts_freed: int, shortfall: Shortfall | None) -> bool:
        """Whether a job refused when ``releases`` jobs had finished, on
        ``hosts_freed`` hosts, lacking ``shortfall``, is worth trying again."""
        # Placing VMs only ever takes room, cache budget and hosts away, so a
        # job refused since the last release would be refused again. A
        # release is a finished job, or a running one the scheduler comes to
        # count with a lower cache score (see _measure). (An interference
        # model need not be monotone: a host may come to admit a job after
        # another joins it. The replay waits for the next release.)
        if releases == self._releases:
            return False
        # Nor do releases that cannot make up what it lacked let it fit.
        return shortfall is None or shortfall.may_fit_after(self._cloud.hosts_freed - hosts_freed)

    def _try_start(self, job: Job, score: float, arrival: float, now: float) -> bool:
        request = self._request(job, score)
        if not self._cloud.start(request, self._rule):
            return False
        self._launch(job, arrival, now, request.application_id)
        return True

    def _launch(self, job: Job, arrival: float, now: float, app_id: str) -> None:
        """Run a job whose VMs were just placed."""
        score = self._score_of[app_id]
        nominal = job.run_time * self.scenario.runtime_factor
        spans = self._spans(app_id, job) if self.spans else ()
        # The network's cost is the job's own, whatever its co-runners do:
        # more work, so that interference and host speed still apply to it.
        work = nominal * (1 + self.span_cost / 100.0 * (spans[0] - 1)) if spans else nominal
        running = _Running(
            job,
            arrival,
            now,
            nominal,
            remaining=work,
            since=now,
            spans=spans,
            declared=score,
            true_score=score,
            planned=score,
        )
        phase = self.phase_of.get(app_id)
        if phase is not None:
            running.phase_left = work * (1.0 - phase.point)
        self._running[app_id] = running
        if self.scenario.cache_source != DECLARED:
            self._measure_later(app_id, score, now)
        if self.interference is None and self._uniform_speed:
            self._push(now + work, _FINISH, (app_id, 0))
            if running.phase_left is not None:
                self._push(now + work - running.phase_left, _PHASE, (app_id, 0))
        else:
            self._repace(self._affected(app_id) | {app_id}, now)

    def _change_phase(self, app_id: str, version: int, now: float) -> None:
        """The job's next phase begins: its co-runners now meet what it really does."""
        running = self._running.get(app_id)
        if running is None or running.version != version or running.phase_left is None:
            return  # superseded: the job's pace changed since
        running.phase_left = None
        running.true_score = self.phase_of[app_id].score
        if self._profiled:
            name = _application_name(app_id)
            self._profile_of[name] = dataclasses.replace(
                self._profile_of[name], cache_score=running.true_score
            )
        if self.scenario.cache_source != DECLARED:
            self._measure_later(app_id, running.true_score, now)
        # Every job on its hosts is judged again, as when a job arrives.
        self._repace(self._affected(app_id) | {app_id}, now)

    def _measure_later(self, app_id: str, true_score: float, now: float) -> None:
        """The measured score of a phase of ``true_score`` begun at ``now``
        counts once it has been measured for the lag."""
        self._push(
            now + self.measuring.lag, _MEASURE, (app_id, self.measuring.measured(true_score))
        )

    def _measure(self, app_id: str, measured: float) -> None:
        """The scheduler counts the running job with its measured score from now on."""
        running = self._running.get(app_id)
        if running is None:
            return  # it ended before it was measured
        planned = counted_score(self.scenario.cache_source, running.declared, measured)
        if planned == running.planned:
            return
        lower = planned < running.planned
        running.planned = planned
        self._cloud.rescore(app_id, planned)
        if self._profiled:
            name = _application_name(app_id)
            self._known_profile_of[name] = dataclasses.replace(
                self._known_profile_of[name], cache_score=planned
            )
        # A lower score leaves the cache thresholds budget they did not have:
        # a refused job may fit now, so it counts as a release. An admission
        # model need not be monotone: there any change may let one in.
        if lower or self._rule is not None:
            self._releases += 1

    def _spans(self, app_id: str, job: Job) -> tuple[int, ...]:
        """How many domains of each level the job's hosts are in."""
        codes = self._codes
        if job.processors == 1:
            return (1,) * len(codes)
        rows = np.asarray(self._cloud.rows_of(app_id), dtype=np.int64)
        return tuple(len(np.unique(level[rows])) for level in codes)

    def _hold(self, entry: tuple[Job, float, float]) -> None:
        """Keep an arrival for the end of its window."""
        end = batching.boundary(entry[2], self.batches.window)
        if end not in self._held:
            self._held[end] = []
            self._push(end, _WINDOW, end)
        self._held[end].append(entry)

    def _batch_app(self, job: Job, kind: batching.Kind) -> BatchApp | None:
        """The job as a planner sees it on hosts of ``kind``; None if one cannot hold it."""
        memory = self._memory_per_vm(job)
        if not kind.takes(job.processors, memory):
            return None
        cpu, mem = kind.demand(job.processors, memory)
        name = self._app_name(job)
        # A planner that reads no features still names each application.
        return BatchApp(self._known_profile_of.get(name) or ProfileRecord(name), cpu, mem)

    def _plan_window(self, now: float, queue) -> None:
        """Place a window's jobs with the batch planner, the rest falling back
        to the queue in arrival order; while jobs wait there the window joins
        them instead. (Windows end in time order, so the queue stays in
        arrival order.)"""
        entries = self._held.pop(now)
        starts, left = [], entries
        if not queue:
            starts, left = batching.plan_window(
                self.batches,
                entries,
                self._kinds,
                batching.empty_rows(self._cloud),
                lambda entry, kind: self._batch_app(entry[0], kind),
            )
        for (job, score, arrival), row in starts:
            request = self._request(job, score)
            batching.start_on(self._cloud, request, row)
            self._launch(job, arrival, now, request.application_id)
        queue.extend(left)

    def _finish(self, app_id: str, now: float) -> None:
        neighbours = self._affected(app_id)
        self._cloud.finish(app_id)
        self._releases += 1
        del self._running[app_id]
        neighbours.discard(app_id)
        self._repace(neighbours, now)

    def _affected(self, app_id: str) -> set[str]:
        """The applications whose pace ``app_id`` arriving or leaving changes
        (itself included while it runs).

        Only an interference model couples jobs: host speeds do not.
        """
        if self.interference is None:
            return set()
        cloud = self._cloud
        return {vm.application_id for row in cloud.rows_of(app_id) for vm in cloud.vms_on(row)}

    def _repace(self, app_ids: Iterable[str], now: float) -> None:
        """Settle the work done at the old pace and reschedule at the new one."""
        app_ids = sorted(app_ids)
        if isinstance(self.interference, InterferenceModel):
            # The hosts changed: judge every host these jobs touch, in one batch.
            self._row_slowdowns = {}
            rows = {row for app_id in app_ids for row in self._cloud.rows_of(app_id)}
            self._predict_rows(sorted(rows))
        for app_id in app_ids:
            running = self._running[app_id]
            running.remaining = max(0.0, running.remaining - (now - running.since) * running.pace)
            running.since = now
            running.pace = self._pace(app_id)
            running.version += 1
            self._push(now + running.remaining / running.pace, _FINISH, (app_id, running.version))
            if running.phase_left is not None:
                # The phase changes once the work left comes down to phase_left.
                ahead = max(0.0, running.remaining - running.phase_left) / running.pace
                self._push(now + ahead, _PHASE, (app_id, running.version))

    def _pace(self, app_id: str) -> float:
        """Work per second: each VM runs at its host's speed over its slowdown,
        and a tightly coupled job advances at the pace of its slowest VM."""
        cloud = self._cloud
        slowest = math.inf
        for row in cloud.rows_of(app_id):
            slowdown = 1.0
            if isinstance(self.interference, InterferenceModel):
                slowdown = self._application_slowdown(row, app_id)
            elif self.interference is not None:
                # What the VMs really do: the scheduler may count them otherwise.
                vms = cloud.vms_on(row)
                own = next(vm for vm in vms if vm.application_id == app_id)
                others = list(vms)
                others.remove(own)
                slowdown = self.interference.slowdown(
                    self._running[app_id].true_score,
                    [self._running[vm.application_id].true_score for vm in others],
                )
            slowest = min(slowest, self._speeds[row] / slowdown)
        return slowest

    def _application_slowdown(self, row: int, app_id: str) -> float:
        """Run-time factor of ``app_id`` on host ``row`` under a shared model."""
        found = self._row_slowdowns.get(row)
        if found is None:
            self._predict_rows([row])
            found = self._row_slowdowns[row]
        return found[app_id]

    def _predict_rows(self, rows: Iterable[int]) -> None:
        """The truth's slowdowns on each host of ``rows``, learned models asked once.

        A host is known by what the model reads: its type and, per
        application, the profile drawn for it, its cache score and its VMs
        there. Hosts alike share one prediction, kept across events.
        """
        if len(self._predicted) > PREDICTION_CACHE:
            self._predicted.clear()
        asked: dict[tuple, list[Tenant]] = {}
        wanted: list[tuple[int, tuple, list[str]]] = []
        for row in rows:
            counts = collections.Counter(vm.application_id for vm in self._cloud.vms_on(row))
            host_type = self._host_types[row]
            described = sorted(
                (self._drawn_of.get(name, -1), profile.cache_score, counts[app], app)
                for app in counts
                for name in (_application_name(app),)
                for profile in (self._profile_of[name],)
            )
            key = (host_type, tuple(d[:3] for d in described))
            apps = [d[3] for d in described]
            wanted.append((row, key, apps))
            if key not in self._predicted and key not in asked:
                asked[key] = [
                    Tenant.of(self._profile_of[_application_name(app)], counts[app], host_type)
                    for app in apps
                ]
        if asked:
            try:
                predictions = self.interference.predict_many(list(asked.values()))
            except (MissingFeatures, ModelNotReady) as error:
                raise ValueError(
                    f"the ground truth {self.interference.name} cannot judge a host: {error}"
                ) from None
            for key, prediction in zip(asked, predictions, strict=True):
                self._predicted[key] = prediction.slowdowns
        for row, key, apps in wanted:
            slowdowns = self._predicted[key]
            self._row_slowdowns[row] = {
                app: 1.0 + value / 100.0 for app, value in zip(apps, slowdowns, strict=True)
            }
