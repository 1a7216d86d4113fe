"""``[hpc_scheduler] fairness_policy`` on the trial cloud: three projects with shares.

Before a load under fair share, :func:`prepare` does what an operator
does, with the operator's commands: it gives three Keystone projects a
share (``fairshare share set``), imports run times of their applications on
the trial's processor groups (``fairshare runs import``), declares each
project's demand for its application (``fairshare demand set
--application``) and writes a first generation (``fairshare allocate``), so
that entitlements are in force from the first request. The cloud has no
Keystone: a project is the ``X-Project-Id`` its client sends
(:func:`devcloud.operator.connect`). A fourth project has no share: the
scheduler places its requests as without fair share.

After the load, :func:`generations` reads every generation the
allocators wrote meanwhile, which the checker holds the projects to
(:func:`devcloud.checker.entitlement_violations`).
"""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path

import sqlalchemy as sa

from devcloud import services, workload
from devcloud.layout import Run
from hpc_nova_scheduler.db import models as hpc_models

Say = Callable[[str], None]
#: ``fairness_policy`` values (``none``: off), as ``[hpc_scheduler]`` takes them.
POLICIES = ("none", "equal", "paf", "aaf", "pa-rr")
ENFORCEMENTS = ("strict", "borrow")


@dataclasses.dataclass(frozen=True)
class Project:
    """A project of the trial, and the one application its HPC requests run."""

    name: str
    #: Share weight; None: the project has no share (it is not governed).
    weight: float | None
    #: Its HPC requests' application; None: any of the trial's.
    application: str | None
    #: Cores declared with ``fairshare demand set``.
    demand: int = 0
    #: The share of the load its clients wait before their first request.
    idle_share: float = 0.0
    #: Requests each of its clients keeps alive (None: the stress's default).
    keep_alive: int | None = None


#: Together the three ask for more than the 80 cores of the default cloud
#: (eight computes of 10 vCPUs, two processor groups), so that entitlements
#: bind; their applications prefer different processor groups (RUN_TIMES).
PROJECTS = (
    Project("fair-a", 2.0, "LU", 48),
    Project("fair-b", 1.0, "CG", 32),
    Project("fair-c", 1.0, "FT", 32),
    Project("no-share", None, None),
)
#: The trial under ``fairshare_reclaim``: a project returning after being
#: idle, as in the issue. fair-a sends nothing for the first part of the
#: load, while fair-b and fair-c keep many requests alive and, under
#: ``borrow``, borrow the cores fair-a leaves idle (their VMs placed beyond
#: their entitlement are loans). Then fair-a asks: refused, its refusals are
#: unmet demand, the next generation entitles it, and the agent reclaims
#: loans for it where no core is idle. No project declares demand: all unmet
#: demand is requests refused, which the stress sees and times (a declared
#: demand not running would drive reclaims no request of the load shows).
RECLAIM_PROJECTS = (
    Project("fair-a", 2.0, "LU", 0, idle_share=0.4),
    Project("fair-b", 1.0, "CG", 0, keep_alive=12),
    Project("fair-c", 1.0, "FT", 0, keep_alive=12),
    Project("no-share", None, None),
)
#: Cache scores of the governed projects' requests: the lowest of the trial,
#: so that a platform's hosts take more cores than the platform has before
#: the cache thresholds refuse them, and entitlements bind first.
CACHE_SCORES = (min(workload.CACHE_SCORES),)
#: Solo run times in seconds of the governed applications per processor
#: group (:data:`devcloud.operator.CPU_GROUPS`), made up: LU runs best on
#: xeon, CG on epyc, FT about as well on both.
RUN_TIMES = {
    "LU": {"xeon": 100.0, "epyc": 160.0},
    "CG": {"xeon": 150.0, "epyc": 90.0},
    "FT": {"xeon": 120.0, "epyc": 110.0},
}


def trial(reclaim: str) -> tuple[Project, ...]:
    """The projects of the trial with ``fairshare_reclaim`` set to ``reclaim``."""
    return PROJECTS if reclaim == "off" else RECLAIM_PROJECTS


def governed(projects: tuple[Project, ...] = PROJECTS) -> dict[str, Project]:
    return {p.name: p for p in projects if p.weight is not None}


def write_runs(path: Path) -> Path:
    """The runs file: each application alone, and beside each other one, on
    each group; a co-run is slower by the trial's pair slowdown
    (:func:`devcloud.workload.measured_pairs`)."""
    slowdown = {(r.app_a, r.app_b): r.slowdown_a for r in workload.measured_pairs()}
    slowdown.update({(r.app_b, r.app_a): r.slowdown_b for r in workload.measured_pairs()})
    with path.open("w", newline="") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(("application", "platform", "runtime_s", "corunners"))
        for application, times in sorted(RUN_TIMES.items()):
            for platform, solo in sorted(times.items()):
                writer.writerow((application, platform, f"{solo:g}", ""))
                for other in sorted(RUN_TIMES):
                    if other != application:
                        slower = solo * (1 + slowdown[(application, other)] / 100)
                        writer.writerow((application, platform, f"{slower:.3f}", other))
    return path


def _hpc(run: Run, *args: str) -> str:
    command = [services.tool("hpc-nova-scheduler"), "--config-file"]
    return services.run_command(run, [*command, str(run.path / "etc/nova.conf"), *args])


def _allocate(run: Run) -> dict:
    """``fairshare allocate --format json``, as the operator runs it; its JSON."""
    output = _hpc(run, "fairshare", "allocate", "--format", "json")
    # Nova may log before the JSON: it starts at the first line that opens it.
    start = output.index("{") if output.startswith("{") else output.index("\n{") + 1
    return json.JSONDecoder().raw_decode(output, start)[0]


def prepare(run: Run, say: Say) -> int:
    """Shares, runs and demand of the trial's projects (:func:`trial`), and a
    generation in force; the generation's number. Idempotent: a second
    stress sets the same values and writes a new generation."""
    runs = write_runs(run.path / "etc" / "fairshare-runs.csv")
    _hpc(run, "fairshare", "runs", "import", str(runs))
    for project in governed(trial(run.reclaim)).values():
        _hpc(run, "fairshare", "share", "set", project.name, f"{project.weight:g}")
        _hpc(
            run,
            "fairshare",
            "demand",
            "set",
            project.name,
            str(project.demand),
            "--application",
            str(project.application),
        )
    output = _allocate(run)
    say(
        f"fair share {output['policy']}, fairshare_enforcement {run.enforcement}: "
        f"generation {output['generation']}, entitlements {output['allocation']}"
    )
    return int(output["generation"])


@dataclasses.dataclass(frozen=True)
class Generations:
    """The generations written from one on: what the checker reads of them."""

    numbers: tuple[int, ...]
    #: project -> platform -> the largest entitlement over the generations.
    most: dict[str, dict[str, int]]
    #: host name -> platform, and platform -> cores, of the newest generation.
    platform_of: dict[str, str]
    capacity: dict[str, int]


def latest(url: str) -> int:
    """The newest generation's number in the plugin database at ``url`` (0: none yet)."""
    engine = sa.create_engine(url)
    table = hpc_models.FairshareGeneration.__table__
    try:
        with engine.connect() as connection:
            return int(connection.scalar(sa.select(sa.func.max(table.c.generation))) or 0)
    finally:
        engine.dispose()


def generations(url: str, first: int, last: int) -> Generations:
    """Every generation from ``first`` to ``last`` still stored in the plugin
    database at ``url`` (the allocator keeps the newest hundred)."""
    engine = sa.create_engine(url)
    table = hpc_models.FairshareGeneration.__table__
    allocations = hpc_models.FairshareAllocation.__table__
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.select(table.c.generation, table.c.templates)
                .where(table.c.generation.between(first, last))
                .order_by(table.c.generation)
            ).all()
            cores = connection.execute(
                sa.select(allocations.c.project, allocations.c.platform, allocations.c.cores).where(
                    allocations.c.generation.between(first, last)
                )
            ).all()
    finally:
        engine.dispose()
    most: dict[str, dict[str, int]] = {}
    for project, platform, value in cores:
        by_platform = most.setdefault(project, {})
        by_platform[platform] = max(by_platform.get(platform, 0), int(value))
    platform_of, capacity = stored_cloud(json.loads(rows[-1][1]) if rows else {})
    return Generations(tuple(r[0] for r in rows), most, platform_of, capacity)


def stored_cloud(templates: Mapping) -> tuple[dict[str, str], dict[str, int]]:
    """Host name -> platform and platform -> cores, as a generation stores its cloud
    (``{"cloud": {"platforms": [[name, nodes, cores_per_node]], "hosts": {key: name}}}``;
    a host key is the host's name, with ``/node`` where they differ)."""
    cloud = templates.get("cloud", {}) if isinstance(templates, Mapping) else {}
    capacity = {name: nodes * size for name, nodes, size in cloud.get("platforms", [])}
    platform_of = {key.split("/", 1)[0]: name for key, name in cloud.get("hosts", {}).items()}
    return platform_of, capacity
