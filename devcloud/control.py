"""``up``, ``status`` and ``down``: the life of one run.

``up`` does what an operator does, in the same order: databases, the
RabbitMQ virtual host, configuration files, ``placement-manage db sync``,
``glance-manage db_sync``, ``nova-manage api_db sync``, ``cell_v2
map_cell0``, ``cell_v2 create_cell``, ``db sync``, ``hpc-nova-scheduler db
sync`` and the profile import, then the services, ``cell_v2
discover_hosts`` once every compute has reported to Placement, and finally
aggregates, flavors and an image through the APIs.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import sqlalchemy as sa

from devcloud import (
    SOURCE_TREE,
    backends,
    config,
    memory,
    models,
    operator,
    racks,
    services,
    workload,
)
from devcloud.layout import Run, current, mark_current

Say = Callable[[str], None]

#: How long a restarted nova-scheduler that is still running may take to
#: report: long, since only a hung one reaches it (one that exits fails at
#: once), and a filled cloud of 10,000 nodes on a busy machine took more
#: than two minutes.
RESTART_TIMEOUT = 1800.0


def _nova_manage(run: Run, *args: str) -> str:
    return services.run_command(
        run, [services.tool("nova-manage"), "--config-file", str(run.path / "etc/nova.conf"), *args]
    )


def _setup_databases(run: Run, say: Say) -> None:
    etc = run.path / "etc"
    say("placement-manage db sync")
    services.run_command(
        run,
        [
            services.tool("placement-manage"),
            "--config-file",
            str(etc / "placement.conf"),
            "db",
            "sync",
        ],
    )
    say("glance-manage db_sync")
    services.run_command(
        run,
        [services.tool("glance-manage"), "--config-file", str(etc / "glance-api.conf"), "db_sync"],
    )
    say("neutron-db-manage upgrade heads")
    services.run_command(
        run,
        [
            services.tool("neutron-db-manage"),
            "--config-file",
            str(etc / "neutron.conf"),
            "--config-file",
            str(etc / "ml2_conf.ini"),
            "upgrade",
            "heads",
        ],
    )
    say("nova-manage api_db sync; cell_v2 map_cell0; cell_v2 create_cell; db sync")
    _nova_manage(run, "api_db", "sync")
    _nova_manage(
        run, "cell_v2", "map_cell0", "--database_connection", run.database_url("nova_cell0")
    )
    _nova_manage(run, "cell_v2", "create_cell", "--name", "cell1", "--verbose")
    _nova_manage(run, "db", "sync")
    for cell in range(2, run.cells + 1):
        say(f"nova-manage cell_v2 create_cell --name cell{cell}; db sync --local_cell")
        _nova_manage(
            run,
            "cell_v2",
            "create_cell",
            "--name",
            f"cell{cell}",
            "--database_connection",
            run.database_url(f"nova_cell{cell}"),
            "--transport-url",
            run.cell_transport_url(cell),
            "--verbose",
        )
        services.run_command(
            run,
            [
                services.tool("nova-manage"),
                "--config-file",
                str(run.path / "etc/nova.conf"),
                *config.cell_files(run, cell),
                "db",
                "sync",
                "--local_cell",
            ],
        )
    say("hpc-nova-scheduler db sync; profile import; interference import")
    hpc = [services.tool("hpc-nova-scheduler"), "--config-file", str(etc / "nova.conf")]
    services.run_command(run, [*hpc, "db", "sync"])
    profiles, interferences = workload.write_profile_files(run.path / "etc")
    services.run_command(run, [*hpc, "profile", "import", str(profiles)])
    services.run_command(run, [*hpc, "interference", "import", str(interferences)])


def _no_control_socket() -> list[str]:
    """Several gunicorn masters run side by side: none may take the shared socket.

    gunicorn 25.1 gave each master a control socket at one default path;
    2025.1's gunicorn (23.0) has none, nor the option that turns it off.
    """
    major, minor = (int(part) for part in metadata.version("gunicorn").split(".")[:2])
    return ["--no-control-socket"] if (major, minor) >= (25, 1) else []


def _gunicorn(
    run: Run, name: str, app: str, env: dict[str, str], workers: int, *, ours: bool = False
) -> None:
    """Serve ``app`` on the run's port for ``name``.

    ``ours``: the application is one of :mod:`devcloud.wsgi`'s, which gunicorn
    (started in the run's folder) finds only in the source tree.
    """
    port = run.ports[name]
    source = ["--pythonpath", str(SOURCE_TREE)] if ours else []
    service = services.spawn(
        run,
        name,
        [
            services.tool("gunicorn"),
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--worker-class",
            "gthread",
            "--threads",
            "8",
            "--timeout",
            "120",
            *_no_control_socket(),
            *source,
            app,
        ],
        env=env,
        url=run.url(name),
    )
    services.wait_http(service)


def _start_services(run: Run, say: Say) -> None:
    etc = str(run.path / "etc")
    say(f"placement, glance, neutron and nova APIs under gunicorn on ports {run.ports}")
    _gunicorn(
        run, "placement", "placement.wsgi.api:application", {"OS_PLACEMENT_CONFIG_DIR": etc}, 2
    )
    _gunicorn(run, "glance", "glance.wsgi.api:application", {"OS_GLANCE_CONFIG_DIR": etc}, 1)
    _gunicorn(
        run,
        "neutron",
        "devcloud.wsgi:neutron()",
        {"OS_NEUTRON_CONFIG_DIR": etc, "OS_NEUTRON_CONFIG_FILES": "neutron.conf;ml2_conf.ini"},
        1,
        ours=True,
    )
    _gunicorn(
        run,
        "nova",
        "devcloud.wsgi:nova()",
        {
            "OS_NOVA_CONFIG_DIR": etc,
            "OS_NOVA_CONFIG_FILES": "api-paste.ini;nova.conf",
            # Native threads under gunicorn's threaded workers: Nova 33 and
            # 34's API chooses them itself; Nova 31's would patch eventlet
            # in each worker, whose threads then hang.
            "OS_NOVA_DISABLE_EVENTLET_PATCHING": "1",
        },
        2,
        ours=True,
    )
    nova_conf = ["--config-file", str(run.path / "etc/nova.conf")]
    say(f"nova-conductor and nova-scheduler ({run.scheduler_workers} workers)")
    services.spawn(run, "nova-conductor", [services.tool("nova-conductor"), *nova_conf])
    for cell in range(2, run.cells + 1):
        # cell1's conductor is the one above, which also serves the API level.
        say(f"nova-conductor of cell{cell}")
        services.spawn(
            run,
            f"nova-conductor-cell{cell}",
            [services.tool("nova-conductor"), *nova_conf, *config.cell_files(run, cell)],
        )
    services.spawn(run, "nova-scheduler", [services.tool("nova-scheduler"), *nova_conf])
    if run.plugin:
        say("hpc-scheduler-agent (sweep, fallback copy, fair-share allocator)")
        services.spawn(run, AGENT, agent_command(run))
    cells = f" in {run.cells} cells" if run.cells > 1 else ""
    if run.nodes:
        _start_pools(run, nova_conf, cells, say)
        return
    driver = config.MEASURED_DRIVER if run.measured else config.COMPUTE_DRIVER
    say(f"{run.computes} nova-compute on {driver}{cells}")
    compute = [services.tool("nova-compute")]
    if run.measured:
        compute = [sys.executable, "-m", "devcloud.measured_compute"]
    for index in range(run.computes):
        host = config.compute_host(index)
        services.spawn(
            run,
            f"nova-compute-{host}",
            [
                *compute,
                *nova_conf,
                *config.cell_files(run, run.cell_of(index)),
                "--config-file",
                str(run.path / "etc" / f"{host}.conf"),
            ],
            env=_source_tree_env() if run.measured else None,
        )
    if run.measured:
        _start_measuring(run, say)


def _source_tree_env() -> dict[str, str]:
    """devcloud is importable from the source tree only."""
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join(filter(None, (str(SOURCE_TREE), path)))}


def collector_command(run: Run, host: str) -> list[str]:
    """``hpc-scheduler-collector`` of one compute, with that compute's nova.conf,
    counting CPI on the fake PMU (:mod:`devcloud.measured_collector`)."""
    return [
        sys.executable,
        "-m",
        "devcloud.measured_collector",
        "--config-file",
        str(run.path / "etc/nova.conf"),
        "--config-file",
        str(run.path / "etc" / f"{host}.conf"),
    ]


def _start_measuring(run: Run, say: Say) -> None:
    """The processors' counters, and a collector on every compute, as on real hosts."""
    say(
        f"{COUNTERS} (the cache-pressure ground truth) and {run.computes} "
        f"hpc-scheduler-collector, every {config.COLLECTOR_INTERVAL} s"
    )
    services.spawn(
        run,
        COUNTERS,
        [sys.executable, "-m", "devcloud.counters", "--folder", str(run.measured_folder())],
        env=_source_tree_env(),
    )
    for host in config.hosts(run):
        services.spawn(
            run, f"{COLLECTOR}-{host}", collector_command(run, host), env=_source_tree_env()
        )


def pool_command(run: Run, hosts: Sequence[str], cell: int) -> list[str]:
    """:mod:`devcloud.compute_pool` for ``hosts`` (of one cell), run as a
    module of this interpreter from the source tree."""
    return [
        sys.executable,
        "-m",
        "devcloud.compute_pool",
        "--layout",
        str(run.path / "etc" / config.NODES_FILE),
        "--hosts",
        ",".join(hosts),
        "--config-file",
        str(run.path / "etc/nova.conf"),
        *config.cell_files(run, cell),
    ]


def _start_pools(run: Run, nova_conf: list[str], cells: str, say: Say) -> None:
    hosts = config.hosts(run)
    cell_of = {host: run.cell_of(index) for index, host in enumerate(hosts)}
    groups = racks.pools(hosts, list(cell_of.values()), run.services_per_process)
    say(
        f"{run.computes} nova-compute services of {run.rack_size} nodes ({run.nodes} nodes) "
        f"on {config.MULTI_NODE_DRIVER}{cells}, in {len(groups)} processes of up to "
        f"{run.services_per_process}"
    )
    for number, group in enumerate(groups):
        services.spawn(
            run,
            f"{POOL}-{number:02d}",
            pool_command(run, group, cell_of[group[0]]),
            env=_source_tree_env(),
        )


#: The processes of ``up --nodes``' compute services.
POOL = "nova-compute-pool"

#: The plugin's service of background work, next to nova-scheduler.
AGENT = "hpc-scheduler-agent"
#: Under ``up --measured``: a collector per compute, and the counters behind them.
COLLECTOR = "hpc-scheduler-collector"
COUNTERS = "devcloud-counters"


def agent_command(run: Run) -> list[str]:
    """``hpc-scheduler-agent`` with the scheduler's nova.conf.

    Run as a module of this interpreter: a checkout used in place has the
    package but may not have the console script.
    """
    return [
        sys.executable,
        "-m",
        "hpc_nova_scheduler.agent.main",
        "--config-file",
        str(run.path / "etc/nova.conf"),
    ]


def _follow_with_agent(run: Run, say: Say) -> None:
    """The agent as the plugin is: started, reloaded with the new nova.conf, or stopped."""
    running = [s for s in run.services_named(AGENT) if services.group_alive(s.pid)]
    if not run.plugin:
        for agent in services.stop_all(running):
            run.services.remove(agent)
            say(f"hpc-scheduler-agent stopped (pid {agent.pid})")
        run.save()
        return
    if running:
        for agent in running:
            # SIGHUP: the agent reads nova.conf again, its tasks follow.
            os.kill(agent.pid, signal.SIGHUP)
        say("hpc-scheduler-agent reloaded (SIGHUP)")
        return
    for stale in run.services_named(AGENT):
        run.services.remove(stale)
    services.spawn(run, AGENT, agent_command(run))
    say("hpc-scheduler-agent started")


#: Seconds without progress after which ``up`` gives up waiting for the computes.
STALL_TIMEOUT = 300.0


def _poll_every(expected: int) -> float:
    """Seconds between looks: a few for a small cloud, longer for a large one."""
    return min(10.0, 2.0 + expected / 1000)


def _providers(conn) -> set[str]:
    """Every resource provider's name, in one request (Placement does not page)."""
    response = conn.placement.get("/resource_providers", microversion="1.14")
    response.raise_for_status()
    return {rp["name"] for rp in response.json()["resource_providers"]}


def _provider_rows(run: Run) -> set[str]:
    """Every resource provider's name, from Placement's database.

    Listing 10,000 providers through the API takes Placement seconds of
    the CPU it needs to register the nodes, every few seconds of a
    bring-up; the operator's read of its table costs nothing.
    """
    engine = sa.create_engine(run.database_url("placement", as_plugin=False))
    try:
        with engine.connect() as connection:
            return set(connection.execute(sa.text("SELECT name FROM resource_providers")).scalars())
    finally:
        engine.dispose()


def _wait(what: str, expected: set[str], found, run: Run, say: Say, stall: float) -> None:
    """Wait until ``found()`` holds ``expected``: fail when nothing more
    turned up for ``stall`` seconds (a slow machine gets there slowly, a
    broken one not at all), or when a service of the run died."""
    last, moved = -1, time.monotonic()
    reported = 0.0
    while True:
        for service in run.services:
            services.check_running(service)
        have = expected & found()
        if len(have) == len(expected):
            return
        now = time.monotonic()
        if len(have) > last:
            last, moved = len(have), now
        if now - reported > 30 and len(expected) > 50:
            say(f"{what}: {len(have)} of {len(expected)}")
            reported = now
        if now - moved > stall:
            missing = sorted(expected - have)
            raise services.ServiceError(
                f"{what}: {len(missing)} missing after {stall:.0f} s without progress: "
                f"{missing[:20]}{' ...' if len(missing) > 20 else ''}"
            )
        time.sleep(_poll_every(len(expected)))


def _wait_for_computes(run: Run, conn, say: Say, stall: float = STALL_TIMEOUT) -> None:
    hosts = set(config.hosts(run))
    nodes = set(racks.node_names(run.nodes, run.rack_size)) if run.nodes else hosts
    say(f"waiting for every {'node' if run.nodes else 'compute'} to report to Placement")
    # Progress from Placement's table, then the API's word for it.
    _wait("nodes in Placement", nodes, lambda: _provider_rows(run), run, say, stall)
    _wait("nodes in Placement's API", nodes, lambda: _providers(conn), run, say, stall)
    say("nova-manage cell_v2 discover_hosts")
    _nova_manage(run, "cell_v2", "discover_hosts", "--verbose")

    def up() -> set[str]:
        return {
            s.host
            for s in conn.compute.services(binary="nova-compute")
            if s.state == "up" and s.status == "enabled"
        }

    _wait("compute services up in Nova", hosts, up, run, say, stall)
    if run.nodes:
        # The hypervisors API pages (at most 1000 each); the SDK follows the links.
        _wait(
            "hypervisors in Nova",
            nodes,
            lambda: {h.name for h in conn.compute.hypervisors()},
            run,
            say,
            stall,
        )


def up(
    root: Path,
    *,
    mysql: str,
    rabbit: str,
    computes: int,
    scheduler_workers: int,
    plugin: bool,
    say: Say,
    keep_on_failure: bool = False,
    policy: str = "reject",
    interference_model: str = "cache-score",
    fairness: str = "none",
    enforcement: str = "strict",
    topology: Sequence[tuple[str, int]] = (),
    cells: int = 1,
    reclaim: str = "off",
    reclaim_grace: int = config.RECLAIM_GRACE,
    nodes: int = 0,
    rack_size: int = racks.RACK_SIZE,
    services_per_process: int = racks.SERVICES_PER_PROCESS,
    placement_results: int | None = None,
    timing: bool = False,
    idle_trait_interval: int = 0,
    reconcile_interval: int = config.RECONCILE_INTERVAL,
    measured: bool = False,
) -> Run:
    """Set up and start a cloud. ``nodes``: racks of ``rack_size`` nodes,
    a compute service each (``computes`` is then unused), several services
    to a process; ``topology`` then names the levels above the rack."""
    if nodes and measured:
        raise ValueError("measured computes have one node each: not with nodes")
    if nodes:
        computes = racks.services_for(nodes, rack_size)
        topology = racks.topology(topology)
    else:
        rack_size = operator.shape(topology)[-1][1]
        services_per_process = 0
    root.mkdir(parents=True, exist_ok=True)
    run = Run.new(
        root,
        mysql=mysql,
        rabbit=rabbit,
        computes=computes,
        scheduler_workers=scheduler_workers,
        plugin=plugin,
        policy=policy,
        interference_model=interference_model,
        fairness=fairness,
        enforcement=enforcement,
        topology=[(level, int(n)) for level, n in topology],
        cells=cells,
        reclaim=reclaim,
        reclaim_grace=reclaim_grace,
        nodes=nodes,
        rack_size=rack_size,
        services_per_process=services_per_process,
        placement_results=placement_results,
        timing=timing,
        idle_trait_interval=idle_trait_interval,
        reconcile_interval=reconcile_interval,
        measured=measured,
    )
    run.ports = {name: services.free_port() for name in ("placement", "glance", "neutron", "nova")}
    run.save()
    mark_current(root, run)
    say(f"run {run.run_id} in {run.folder}")
    started = time.monotonic()
    try:
        backends.create_vhost(run)
        backends.create_databases(run)
        backends.create_plugin_account(run)
        config.write_all(run)
        _setup_databases(run, say)
        models.prepare(run, run.interference_model, say)
        _start_services(run, say)
        conn = operator.connect(run)
        _wait_for_computes(run, conn, say)
        keys = " / ".join(f"hpc:{level}" for level in run.levels)
        groups = "" if run.nodes else " / hpc:cpu_group"
        say(f"aggregates {keys}{groups} ({describe_topology(run)}), flavors, image")
        # Under --nodes the plugin reads each node's processor from cpu_info.
        operator.tag_hosts(
            conn, run.computes, run.topology, config.hosts(run), tag_cpu_groups=not run.nodes
        )
        run.image_id = operator.upload_image(conn)
        run.flavors = workload.create_flavors(conn, run.levels)
        run.save()
    except BaseException:
        if not keep_on_failure:
            say("setup failed; stopping what was started (--keep-on-failure keeps it)")
            down(run, say=say, keep_files=True)
        raise
    say(f"up in {time.monotonic() - started:.0f} s")
    for line in memory.table(memory.usage(run)):
        say(line)
    return run


def describe_topology(run: Run) -> str:
    """``topology_levels = block,rack: 2 blocks, 4 racks``; by default, racks."""
    domains = operator.domains(run.computes, run.topology, config.hosts(run))
    counts = ", ".join(
        f"{len({mine[level] for mine in domains.values()})} {level}s" for level in run.levels
    )
    return f"topology_levels = {','.join(run.levels)}: {counts}"


def status(run: Run) -> list[tuple[str, int, str, str]]:
    rows = []
    for service in run.services:
        state = "running" if services.group_alive(service.pid) else "stopped"
        workers = services.children(service.pid)
        detail = service.url or ""
        if workers and service.name in (
            "nova-scheduler",
            "nova-conductor",
            "nova",
            "placement",
            AGENT,
        ):
            detail = f"{detail} workers {' '.join(map(str, workers))}".strip()
        rows.append((service.name, service.pid, state, detail))
    return rows


def down(run: Run, *, say: Say, keep_files: bool = False) -> None:
    # Computes and schedulers first, so that nothing they do in their last
    # moments finds the APIs gone; each group at once.
    apis = [s for s in run.services if s.url]
    for group in ([s for s in run.services if not s.url], apis):
        for service in services.stop_all(group):
            say(f"stopped {service.name} (pid {service.pid})")
    if run.databases:
        dropped = backends.drop_databases(run)
        say(f"dropped databases {', '.join(dropped)}")
        run.databases = []
    if backends.delete_vhost(run):
        say(f"deleted RabbitMQ virtual host {run.vhost}")
        run.vhost = None
    run.save()
    if not keep_files:
        shutil.rmtree(run.folder, ignore_errors=True)
        link = run.path.parent / "current"
        if link.is_symlink() and not link.exists():
            link.unlink()
        say(f"removed {run.folder}")


def load_current(root: Path) -> Run:
    folder = current(root)
    if folder is None or not (folder / "cloud.json").is_file():
        raise services.ServiceError(f"no cloud under {root}; run 'tools/cloud.py up' first")
    return Run.load(folder)


def set_plugin(run: Run, on: bool, *, say: Say, timeout: float = RESTART_TIMEOUT) -> None:
    """Enable or disable HpcPlacementFilter: rewrite nova.conf, restart nova-scheduler."""
    run.plugin = on
    _restart_scheduler(run, f"with the plugin {'on' if on else 'off'}", say=say, timeout=timeout)


def set_policy(run: Run, policy: str, *, say: Say, timeout: float = RESTART_TIMEOUT) -> None:
    """Set ``database_failure_policy``: rewrite nova.conf, restart nova-scheduler."""
    run.policy = policy
    _restart_scheduler(run, f"with database_failure_policy = {policy}", say=say, timeout=timeout)


def set_interference_model(
    run: Run, name: str, *, say: Say, timeout: float = RESTART_TIMEOUT
) -> None:
    """Set ``interference_model``: rewrite nova.conf, restart nova-scheduler."""
    run.interference_model = name
    _restart_scheduler(run, f"with interference_model = {name}", say=say, timeout=timeout)


def set_fairness(
    run: Run,
    policy: str,
    enforcement: str,
    *,
    say: Say,
    reclaim: str | None = None,
    reclaim_grace: int | None = None,
    timeout: float = RESTART_TIMEOUT,
) -> None:
    """Set ``fairness_policy``, ``fairshare_enforcement`` and (unless None)
    ``fairshare_reclaim`` and its grace: rewrite nova.conf, restart
    nova-scheduler, reload the agent."""
    run.fairness, run.enforcement = policy, enforcement
    if reclaim is not None:
        run.reclaim = reclaim
    if reclaim_grace is not None:
        run.reclaim_grace = reclaim_grace
    why = f"with fairness_policy = {policy}"
    if policy != "none":
        why += (
            f", fairshare_enforcement = {enforcement}, fairshare_reclaim = {run.reclaim}"
            + (f" (grace {run.reclaim_grace} s)" if run.reclaim != "off" else "")
            + f", fairshare_interval = {config.fairshare_interval(run)}"
        )
    _restart_scheduler(run, why, say=say, timeout=timeout)


def set_placement_results(
    run: Run, n: int | None, *, say: Say, timeout: float = RESTART_TIMEOUT
) -> None:
    """Set ``[scheduler] max_placement_results`` (None: Nova's default):
    rewrite nova.conf, restart nova-scheduler."""
    run.placement_results = n
    shown = "Nova's default" if n is None else n
    _restart_scheduler(run, f"with max_placement_results = {shown}", say=say, timeout=timeout)


def set_idle_trait_interval(
    run: Run, seconds: int, *, say: Say, timeout: float = RESTART_TIMEOUT
) -> None:
    """Set ``[hpc_scheduler] idle_trait_interval`` (0: off), and with it
    ``roomy_rack_trait``: rewrite nova.conf, restart nova-scheduler, reload
    the agent, which keeps the traits."""
    run.idle_trait_interval = seconds
    why = f"with idle_trait_interval = {seconds}" + (" and roomy_rack_trait" if seconds else "")
    _restart_scheduler(run, why, say=say, timeout=timeout)


def set_cache_source(run: Run, source: str, *, say: Say, timeout: float = RESTART_TIMEOUT) -> None:
    """Set ``cache_pressure_source``: rewrite nova.conf, restart nova-scheduler,
    reload the agent (its measured rebalance counts as placement does)."""
    run.cache_source = source
    _restart_scheduler(run, f"with cache_pressure_source = {source}", say=say, timeout=timeout)


def _restart_scheduler(run: Run, why: str, *, say: Say, timeout: float) -> None:
    config.nova_conf(run)
    run.save()
    conn = operator.connect(run)
    (scheduler,) = run.services_named("nova-scheduler")
    before = {s.id: s.updated_at for s in conn.compute.services(binary="nova-scheduler")}
    services.stop(scheduler)
    restarted = services.replace(run, scheduler)
    say(f"nova-scheduler restarted {why}")
    _follow_with_agent(run, say)
    # One that exited fails at once (RESTART_TIMEOUT says why it is long).
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        services.check_running(restarted)
        now = {s.id: s.updated_at for s in conn.compute.services(binary="nova-scheduler")}
        if any(now.get(key) != value for key, value in before.items()):
            return
        time.sleep(1)
    raise services.ServiceError(f"nova-scheduler did not report back in {timeout:.0f} s")
