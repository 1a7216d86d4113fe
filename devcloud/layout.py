"""Where one run of the cloud keeps its files, and what it has started.

A run lives in a folder of its own (``etc/`` for configuration, ``logs/``,
``state/`` for the services' state paths) with ``cloud.json``, which names
the run's databases, RabbitMQ virtual host, ports and every process ``up``
started, so that ``status``, ``stress`` and ``down`` act on exactly those.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import urllib.parse
from pathlib import Path

STATE_FILE = "cloud.json"
#: Databases of one run, by role; each is created as ``<prefix>_<role>``.
DATABASE_ROLES = ("nova_api", "nova_cell0", "nova", "placement", "glance", "neutron", "hpc")


@dataclasses.dataclass
class Service:
    """One process started by ``up``; it leads a process group of its own."""

    name: str
    pid: int
    command: list[str]
    log: str
    #: ``http://host:port`` for WSGI services.
    url: str | None = None


@dataclasses.dataclass
class Run:
    """One cloud: its folder, names and processes."""

    folder: str
    run_id: str
    mysql: str
    rabbit: str
    computes: int
    scheduler_workers: int
    plugin: bool
    ports: dict[str, int] = dataclasses.field(default_factory=dict)
    services: list[Service] = dataclasses.field(default_factory=list)
    #: What ``up`` made outside the folder, for ``down`` to remove.
    databases: list[str] = dataclasses.field(default_factory=list)
    vhost: str | None = None
    image_id: str | None = None
    flavors: dict[str, str] = dataclasses.field(default_factory=dict)
    #: The plugin's own database account (user, password): an operator
    #: gives the plugin an account of its own, and a fault can lock it.
    hpc_account: tuple[str, str] | None = None
    #: ``[hpc_scheduler] database_failure_policy`` of the schedulers.
    policy: str = "reject"
    #: ``[hpc_scheduler] interference_model`` of the schedulers.
    interference_model: str = "cache-score"
    #: ``[hpc_scheduler] fairness_policy`` of the schedulers (``none``: off).
    fairness: str = "none"
    #: ``[hpc_scheduler] fairshare_enforcement``, written while fairness is on.
    enforcement: str = "strict"
    #: ``[hpc_scheduler] fairshare_reclaim`` (off, stop, shelve, delete),
    #: written while fairness is on, and ``fairshare_reclaim_grace``.
    reclaim: str = "off"
    reclaim_grace: int = 10
    #: ``up --topology``: the levels above the host, outermost first, each
    #: with how many domains of the next level (hosts, for the last) one of
    #: its domains holds, as ``simulate --topology`` reads them; empty: racks
    #: of :data:`devcloud.operator.RACK_SIZE` hosts and the default levels.
    topology: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    #: ``up --cells``: Nova cells holding the computes (cell1, cell2, ...).
    cells: int = 1
    #: The RabbitMQ virtual hosts of the cells after the first, for ``down``.
    cell_vhosts: list[str] = dataclasses.field(default_factory=list)
    #: ``up --nodes``: nodes of the cloud, ``computes`` compute services of
    #: a rack each, several per process (:mod:`devcloud.compute_pool`);
    #: 0: one node per compute process, as before.
    nodes: int = 0
    #: Nodes per rack: under ``--nodes`` the nodes of one compute service,
    #: else the hosts of the innermost topology level (4 by default).
    rack_size: int = 4
    #: ``up --services-per-process`` (under ``--nodes``).
    services_per_process: int = 0
    #: ``[scheduler] max_placement_results``; None: Nova's default (1000).
    placement_results: int | None = None
    #: nova-scheduler logs the start and end of each ``select_destinations``
    #: (:mod:`devcloud.scale`), for ``benchmarks/control_plane_scale.py``.
    timing: bool = False
    #: ``[hpc_scheduler] idle_trait_interval`` (0: off); when on, the agent
    #: also keeps the roomy racks' trait (``roomy_rack_trait``).
    idle_trait_interval: int = 0
    #: ``[hpc_scheduler] reconcile_interval``: short in the trial cloud, so
    #: that the stress sees records of deleted servers converge; the scale
    #: benchmark runs the product's default.
    reconcile_interval: int = 10
    #: ``up --measured``: each compute's guests measured by an
    #: ``hpc-scheduler-collector`` of its own, on a generated resctrl tree
    #: that :mod:`devcloud.counters` drives (one node per compute only).
    measured: bool = False
    #: ``[hpc_scheduler] cache_pressure_source`` of the schedulers and the agent.
    cache_source: str = "declared"

    @property
    def levels(self) -> tuple[str, ...]:
        """``[hpc_scheduler] topology_levels`` of the run (the default: rack)."""
        return tuple(level for level, _ in self.topology) or ("rack",)

    @classmethod
    def new(cls, root: Path, **settings) -> Run:
        run_id = secrets.token_hex(3)
        folder = root / f"run-{run_id}"
        for sub in ("etc", "logs", "state", "images"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        return cls(folder=str(folder), run_id=run_id, **settings)

    @property
    def path(self) -> Path:
        return Path(self.folder)

    def measured_folder(self, host: str | None = None) -> Path:
        """``<run>/measured``, or one compute's folder in it (``qemu/``, ``resctrl/``)."""
        folder = self.path / "measured"
        return folder if host is None else folder / host

    def database_roles(self) -> tuple[str, ...]:
        """Every database of the run: cell1 is ``nova``, further cells ``nova_cell<N>``."""
        return DATABASE_ROLES + tuple(f"nova_cell{n}" for n in range(2, self.cells + 1))

    def cell_of(self, index: int) -> int:
        """The cell (1, 2, ...) of the compute numbered ``index``: contiguous
        blocks of computes, so that racks do not straddle cells."""
        return index * self.cells // max(self.computes, 1) + 1

    def cell_transport_url(self, cell: int) -> str:
        """Each cell after the first has a message queue of its own, as in Nova's
        cells v2 layout: its conductor and computes talk only there."""
        if cell == 1:
            return self.transport_url
        return f"{self.rabbit.rstrip('/')}/{self.vhost}-cell{cell}"

    def database(self, role: str) -> str:
        return f"hpc{self.run_id}_{role}"

    def database_url(self, role: str, *, as_plugin: bool = True) -> str:
        """The URL of a database of the run; the plugin's through its own
        account, unless ``as_plugin`` is False (an operator's check, which a
        locked plugin account must not stop)."""
        server = self.mysql.rstrip("/")
        if role == "hpc" and self.hpc_account and as_plugin:
            user, password = self.hpc_account
            parts = urllib.parse.urlsplit(server)
            host = parts.hostname or "127.0.0.1"
            port = f":{parts.port}" if parts.port else ""
            server = f"{parts.scheme}://{user}:{password}@{host}{port}"
        return f"{server}/{self.database(role)}?charset=utf8mb4"

    @property
    def transport_url(self) -> str:
        return f"{self.rabbit.rstrip('/')}/{self.vhost or ''}"

    def url(self, service: str) -> str:
        return f"http://127.0.0.1:{self.ports[service]}"

    def services_named(self, prefix: str) -> list[Service]:
        return [s for s in self.services if s.name == prefix or s.name.startswith(prefix + "-")]

    def save(self) -> None:
        target = self.path / STATE_FILE
        scratch = target.with_suffix(".tmp")
        scratch.write_text(json.dumps(dataclasses.asdict(self), indent=2))
        os.replace(scratch, target)

    @classmethod
    def load(cls, folder: Path) -> Run:
        data = json.loads((folder / STATE_FILE).read_text())
        data["services"] = [Service(**s) for s in data.get("services", [])]
        data["topology"] = [(level, int(n)) for level, n in data.get("topology", [])]
        return cls(**data)


def current(root: Path) -> Path | None:
    """The run ``up`` made last under ``root`` (the ``current`` link)."""
    link = root / "current"
    if not link.exists():
        return None
    return link.resolve()


def mark_current(root: Path, run: Run) -> None:
    link = root / "current"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(run.path.name)
