"""The configuration files of one run, as an operator would write them.

One ``nova.conf`` serves every Nova service; each compute adds a small file
with its own ``host`` and state paths, passed as a second ``--config-file``.
Nova 34 no longer ships the ``noauth2`` pipeline, so the compute API gets a
copy of Nova's ``api-paste.ini`` without ``authtoken``: Nova's own
``keystonecontext`` middleware then builds the request context from the
identity headers a client sends (``X-User-Id``, ``X-Project-Id``,
``X-Roles``), which is what ``noauth2`` did. In ``authtoken``'s place,
:mod:`devcloud.identity` turns a service token of an agreed form into those
headers: the stand-in for Keystone through which ``hpc-scheduler-agent``
reaches Nova with keystoneauth options (``[hpc_scheduler_agent]``, for
fair-share reclaim). Placement keeps its
``noauth2``; Glance runs its unauthenticated pipeline. Every service listens
on 127.0.0.1 only. Neutron runs its API only (ML2, no agents): servers
boot without networks, and Nova asks Neutron for their ports.
"""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

from devcloud import identity, racks
from devcloud.layout import Run
from hpc_nova_scheduler.demo.resctrl_tree import ResctrlTree

#: Nova's stock fake driver with a realistic size (10 vCPU, 8 GB).
COMPUTE_DRIVER = "fake.MediumFakeDriver"
#: ``fake.MediumFakeDriver``'s node, as ``devcloud.operator.node_places`` reports it.
MEDIUM_VCPUS, MEDIUM_MEMORY_MB = 10, 8192
#: Under ``up --nodes``: the plugin's fake driver with racks of shaped
#: nodes, which :mod:`devcloud.compute_pool` grafts onto ``nova.virt.fake``
#: (Nova loads drivers from there only).
MULTI_NODE_DRIVER = "fake.HpcMultiNodeFakeDriver"
#: Under ``up --measured``: ``fake.MediumFakeDriver`` leaving libvirt's status
#: files and resctrl groups, which :mod:`devcloud.measured_compute` grafts.
MEASURED_DRIVER = "fake.MeasuredFakeDriver"
#: ``[hpc_collector]`` of the measured computes: a read every 2 s, a
#: decayed mean with a half-life of 10 s, so that a phase shows in seconds.
COLLECTOR_INTERVAL, COLLECTOR_HALF_LIFE = 2, 10.0
#: ``[hpc_scheduler]`` under ``up --measured``: scores count after three
#: reads, and the agent live-migrates off hosts over their limit for 15 s.
MEASURED = {
    "measured_min_samples": 3,
    "measured_stale_after": 20,
    "measured_rebalance_interval": 5,
    "measured_rebalance_sustain": 15,
    "measured_rebalance_cooldown": 60,
    "measured_rebalance_dry_run": False,
}
#: The node layout ``devcloud.compute_pool --layout`` reads, in ``etc/``.
NODES_FILE = "nodes.json"
HPC_FILTERS = "hpc_nova_scheduler.scheduler.filters.all_filters"
HPC_WEIGHERS = "hpc_nova_scheduler.scheduler.weights.all_weighers"
NOVA_FILTERS = [
    "ComputeFilter",
    "ComputeCapabilitiesFilter",
    "ImagePropertiesFilter",
    "ServerGroupAntiAffinityFilter",
    "ServerGroupAffinityFilter",
]
#: Cache thresholds of the trial cloud (alpha, beta): the stress load is
#: made to reach them.
ALPHA, BETA = 100.0, 60.0
#: Percent, as ``[hpc_scheduler] interference_tolerance``.
INTERFERENCE_TOLERANCE = 10.0
#: The trial cloud's ``[hpc_scheduler] reconcile_interval`` (a run may set
#: another: :attr:`Run.reconcile_interval`).
RECONCILE_INTERVAL = Run.reconcile_interval
#: ``[hpc_scheduler] fairshare_interval`` under ``--fairness``: longer than a
#: stress, so that a generation changes during the load only when its inputs
#: (demand, VMs running, refusals) do, and never goes stale (two intervals).
FAIRSHARE_INTERVAL = 600
#: ``fairshare_interval`` with ``fairshare_reclaim`` on: short, so that
#: refusals count as unmet demand for a short while only and reclaims follow
#: them within a stress of a few minutes (the option's minimum is 10).
RECLAIM_INTERVAL = 30
#: ``[hpc_scheduler] fairshare_reclaim_grace`` of the trial cloud by default.
RECLAIM_GRACE = 10
#: ``fairshare_reclaim`` values, as ``[hpc_scheduler]`` takes them.
RECLAIM_MODES = ("off", "stop", "shelve", "delete")
#: Who hpc-scheduler-agent is to Nova: its service token (:mod:`devcloud.identity`).
AGENT_USER, AGENT_PROJECT, AGENT_ROLES = (
    "hpc-scheduler-agent",
    "service",
    ("admin", "member", "reader"),
)
#: The paste filter that reads service tokens, where ``authtoken`` was.
TOKEN_FILTER = "devtoken"


def _data_file(*parts: str) -> Path:
    path = Path(sysconfig.get_path("data"), "etc", *parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; is its package installed in this venv?")
    return path


class Multi(tuple):
    """The values of a multi-valued option, one line each in the file."""


def _write(path: Path, sections: dict[str, dict[str, object]]) -> Path:
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        for key, value in options.items():
            values = value if isinstance(value, Multi) else (value,)
            lines.extend(f"{key} = {_value(v)}" for v in values)
        lines.append("")
    path.write_text("\n".join(lines))
    return path


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def nova_paste(run: Run) -> Path:
    """Nova's api-paste.ini, trusting identity headers and service tokens
    (:mod:`devcloud.identity`) instead of Keystone."""
    text = _data_file("nova", "api-paste.ini").read_text()
    trusted = text.replace(" authtoken keystonecontext ", f" {TOKEN_FILTER} keystonecontext ")
    if trusted == text:
        raise RuntimeError("Nova's api-paste.ini has no 'authtoken keystonecontext' pipeline")
    trusted += (
        f"\n[filter:{TOKEN_FILTER}]\n"
        f"paste.filter_factory = {identity.__name__}:{identity.filter_factory.__name__}\n"
    )
    path = run.path / "etc" / "api-paste.ini"
    path.write_text(trusted)
    return path


def agent_token() -> str:
    """hpc-scheduler-agent's token for Nova's API: an admin of the service project."""
    return identity.token(AGENT_USER, AGENT_PROJECT, AGENT_ROLES)


def fairshare_interval(run: Run) -> int:
    """``[hpc_scheduler] fairshare_interval`` of the run (under ``--fairness``)."""
    return FAIRSHARE_INTERVAL if run.reclaim == "off" else RECLAIM_INTERVAL


def nova_conf(run: Run) -> Path:
    etc, state = run.path / "etc", run.path / "state"
    filters = list(NOVA_FILTERS) + (["HpcPlacementFilter"] if run.plugin else [])
    sections: dict[str, dict[str, object]] = {
        "DEFAULT": {
            "transport_url": run.transport_url,
            "compute_driver": COMPUTE_DRIVER,
            "state_path": state / "nova",
            "my_ip": "127.0.0.1",
            "initial_cpu_allocation_ratio": 4.0,
            "initial_ram_allocation_ratio": 1.5,
            "debug": False,
        },
        "api": {"auth_strategy": "keystone"},
        "wsgi": {"api_paste_config": etc / "api-paste.ini"},
        "api_database": {"connection": run.database_url("nova_api")},
        "database": {"connection": run.database_url("nova")},
        "placement": {
            "auth_type": "admin_token",
            "endpoint": run.url("placement"),
            "token": "admin",
            # A pooled connection that gunicorn closed as idle the moment it
            # was reused fails with "connection reset". Without a retry, a
            # node whose first report met that stayed out of Placement (the
            # tracker's walk is off, below): one of 10,000 in a bring-up.
            "connect_retries": 5,
        },
        "glance": {"endpoint_override": run.url("glance")},
        "neutron": {
            "auth_type": "noauth",
            "user_id": "nova",
            "project_id": "service",
            "endpoint": run.url("neutron"),
            "endpoint_override": run.url("neutron"),
        },
        "oslo_concurrency": {"lock_path": state / "locks"},
        "conductor": {"workers": 2},
        "scheduler": {
            "workers": run.scheduler_workers,
            # `up` runs cell_v2 discover_hosts itself, as an operator would.
            "discover_hosts_in_cells_interval": -1,
            "max_attempts": 3,
        },
        "filter_scheduler": {
            "available_filters": Multi(("nova.scheduler.filters.all_filters", HPC_FILTERS)),
            "weight_classes": ["nova.scheduler.weights.all_weighers", HPC_WEIGHERS],
            "enabled_filters": filters,
        },
        "hpc_scheduler": {
            "connection": run.database_url("hpc"),
            "database_failure_policy": run.policy,
            "cache_threshold": ALPHA,
            "sync_cache_threshold": BETA,
            "interference_tolerance": INTERFERENCE_TOLERANCE,
            "interference_model": run.interference_model,
            # Records of servers the stress deletes converge within this.
            "reconcile_interval": run.reconcile_interval,
            "cache_pressure_source": run.cache_source,
        },
        # The agent's own credentials for Nova's API (fair-share reclaim),
        # through the stand-in for Keystone.
        "hpc_scheduler_agent": {
            "auth_type": "admin_token",
            "endpoint": f"{run.url('nova')}/v2.1",
            "token": agent_token(),
        },
        "oslo_messaging_rabbit": {"heartbeat_timeout_threshold": 30},
        # The stress load is bounded by the computes, not by project quotas.
        "quota": {"instances": -1, "cores": -1, "ram": -1},
    }
    if run.fairness != "none":
        sections["hpc_scheduler"].update(
            {
                "fairness_policy": run.fairness,
                "fairshare_enforcement": run.enforcement,
                "fairshare_interval": fairshare_interval(run),
                "fairshare_reclaim": run.reclaim,
                "fairshare_reclaim_grace": run.reclaim_grace,
            }
        )
    if run.topology:
        # One nova.conf serves nova-api too, which checks the tenants'
        # hpc:topology_* extra specs against the same levels.
        sections["hpc_scheduler"]["topology_levels"] = list(run.levels)
    if not run.plugin:
        sections["filter_scheduler"]["weight_classes"] = ["nova.scheduler.weights.all_weighers"]
    if run.placement_results is not None:
        sections["scheduler"]["max_placement_results"] = run.placement_results
    if run.nodes:
        sections["DEFAULT"]["compute_driver"] = MULTI_NODE_DRIVER
        for section, options in SCALE.items():
            sections.setdefault(section, {}).update(options)
    if run.idle_trait_interval:
        # The agent narrows Placement's sample for ExtremeHPC and SyncHPC
        # flavors that require the traits (docs: admin/scale-narrowing).
        sections["hpc_scheduler"]["idle_trait_interval"] = run.idle_trait_interval
        sections["hpc_scheduler"]["roomy_rack_trait"] = True
    if run.measured:
        sections["hpc_scheduler"].update(MEASURED)
    if run.timing:
        _log_scheduler_timing(sections)
    return _write(etc / "nova.conf", sections)


def _log_scheduler_timing(sections: dict[str, dict[str, object]]) -> None:
    """The scheduler's own timing of ``select_destinations``, in its log: the
    DEBUG lines of :data:`devcloud.scale.TIMING_LOG_LEVELS` over oslo.log's
    default levels, and versioned notifications written to the log."""
    from oslo_log import log as oslo_logging

    from devcloud import scale

    sections["DEFAULT"]["default_log_levels"] = [
        *oslo_logging.get_default_log_levels(),
        *scale.TIMING_LOG_LEVELS,
    ]
    sections["oslo_messaging_notifications"] = {"driver": "log"}
    sections["notifications"] = {"notification_format": "versioned"}


#: nova.conf settings of an ``up --nodes`` cloud: thousands of nodes on a
#: two-core machine. Each is what Nova's default would cost at 10,000 nodes.
SCALE: dict[str, dict[str, object]] = {
    "DEFAULT": {
        # The resource tracker walks every node of its service at each
        # interval, with conductor calls and Placement requests per node:
        # 10,000 nodes take this machine about 25 minutes to walk, so even
        # an hourly walk would keep it 40 % busy, and a walk at 900 s stalled
        # a bring-up. Off: the tracker still updates a node at every claim
        # and deletion; the walk only reconciles with the hypervisor, which
        # the fake driver never contradicts.
        "update_resources_interval": -1,
        # Service heartbeats, a database write each through the conductor:
        # 250 services every 10 s are 25 writes/s for nothing. A service is
        # down after missing several reports.
        "report_interval": 60,
        "service_down_time": 300,
        # Bring-up has every service create its nodes at once, and the
        # conductor's answers can take longer than Nova's 60 s then.
        "rpc_response_timeout": 300,
        # Each service refreshes every instance's network info in turn, one
        # conductor and Neutron call each (Nova's default: every 60 s).
        "heal_instance_info_cache_interval": 600,
    },
    "compute": {
        # The report client asks Placement for each node's inventory, traits
        # and aggregates every 300 s by default (~100 requests/s at 10,000
        # nodes); the computes' own changes reach Placement without it, and
        # Nova's API mirrors host aggregates into Placement itself.
        "resource_provider_association_refresh": 0,
    },
    # MariaDB allows 151 connections. A conductor or scheduler worker may
    # open 5 + 50 per database by default, which a bring-up storm reaches;
    # capped, the workers queue for a connection instead of being refused.
    "database": {"max_pool_size": 5, "max_overflow": 10},
    "api_database": {"max_pool_size": 5, "max_overflow": 10},
    # A pool process runs many services on one interpreter lock: its
    # heartbeat thread can be late under a burst; RabbitMQ must not drop
    # the connection for it.
    "oslo_messaging_rabbit": {"heartbeat_timeout_threshold": 120},
}


def compute_conf(run: Run, host: str) -> Path:
    state = run.path / "state" / host
    sections: dict[str, dict[str, object]] = {
        "DEFAULT": {"host": host, "state_path": state, "instances_path": state / "instances"}
    }
    if run.measured:
        # Read by the compute's driver, which writes there what libvirtd
        # and the kernel would, and by the host's collector.
        folder = run.measured_folder(host)
        sections["DEFAULT"]["compute_driver"] = MEASURED_DRIVER
        sections["hpc_collector"] = {
            "libvirt_run_dir": folder / "qemu",
            "resctrl_root": folder / "resctrl",
            # The guests' cgroups of the fake PMU (devcloud.fake_pmu).
            "cgroup_root": folder / "cgroup",
            "interval": COLLECTOR_INTERVAL,
            "half_life": COLLECTOR_HALF_LIFE,
        }
    return _write(run.path / "etc" / f"{host}.conf", sections)


def measured_hosts(run: Run) -> None:
    """Each compute's resctrl mount, laid out as the kernel lays one out."""
    for host in hosts(run):
        ResctrlTree(run.measured_folder(host) / "resctrl").lay_out()
        for sub in ("qemu", "cgroup"):
            (run.measured_folder(host) / sub).mkdir(parents=True, exist_ok=True)


def placement_conf(run: Run) -> Path:
    return _write(
        run.path / "etc" / "placement.conf",
        {
            "DEFAULT": {"debug": False},
            "api": {"auth_strategy": "noauth2"},
            "placement_database": {"connection": run.database_url("placement")},
            "oslo_policy": {"enforce_scope": False, "enforce_new_defaults": False},
        },
    )


def glance_conf(run: Run) -> Path:
    paste = run.path / "etc" / "glance-api-paste.ini"
    paste.write_text(_data_file("glance", "glance-api-paste.ini").read_text())
    images = run.path / "images"
    return _write(
        run.path / "etc" / "glance-api.conf",
        {
            "DEFAULT": {"enabled_backends": "fs:file", "debug": False},
            "database": {"connection": run.database_url("glance")},
            "paste_deploy": {"config_file": paste, "flavor": ""},
            "glance_store": {"default_backend": "fs"},
            "fs": {"filesystem_store_datadir": images / "store"},
            "os_glance_staging_store": {"filesystem_store_datadir": images / "staging"},
            "os_glance_tasks_store": {"filesystem_store_datadir": images / "tasks"},
            "oslo_policy": {"enforce_scope": False, "enforce_new_defaults": False},
        },
    )


def neutron_conf(run: Run) -> Path:
    """Neutron's API with ML2 and no agents: servers boot with no network,
    and Nova asks Neutron only for their ports (none)."""
    etc = run.path / "etc"
    _write(
        etc / "ml2_conf.ini",
        {
            "ml2": {
                "type_drivers": "local,flat",
                "tenant_network_types": "local",
                "mechanism_drivers": "",
                "extension_drivers": "",
            }
        },
    )
    return _write(
        etc / "neutron.conf",
        {
            "DEFAULT": {
                "core_plugin": "ml2",
                "service_plugins": "",
                "auth_strategy": "noauth",
                "transport_url": run.transport_url,
                "api_paste_config": _data_file("neutron", "api-paste.ini"),
                "notify_nova_on_port_status_changes": False,
                "notify_nova_on_port_data_changes": False,
                "debug": False,
            },
            "database": {"connection": run.database_url("neutron")},
            "oslo_concurrency": {"lock_path": run.path / "state" / "locks"},
            "oslo_policy": {"enforce_scope": False, "enforce_new_defaults": False},
        },
    )


def cell_conf(run: Run, cell: int) -> Path:
    """What a cell after the first overrides in nova.conf for its conductor and
    computes: its own database and its own message queue."""
    return _write(
        run.path / "etc" / f"cell{cell}.conf",
        {
            "DEFAULT": {"transport_url": run.cell_transport_url(cell)},
            "database": {"connection": run.database_url(f"nova_cell{cell}")},
        },
    )


def cell_files(run: Run, cell: int) -> list[str]:
    """``--config-file`` arguments a service of ``cell`` takes after nova.conf."""
    if cell == 1:
        return []
    return ["--config-file", str(run.path / "etc" / f"cell{cell}.conf")]


def write_all(run: Run) -> None:
    nova_paste(run)
    neutron_conf(run)
    nova_conf(run)
    placement_conf(run)
    glance_conf(run)
    for cell in range(2, run.cells + 1):
        cell_conf(run, cell)
    if run.nodes:
        nodes_file(run)
        return
    for index in range(run.computes):
        compute_conf(run, compute_host(index))
    if run.measured:
        measured_hosts(run)


def nodes_file(run: Run) -> Path:
    """Every rack's nodes and their shapes, for the compute pools' driver."""
    path = run.path / "etc" / NODES_FILE
    path.write_text(json.dumps(racks.layout(run.nodes, run.rack_size), indent=1))
    return path


def compute_host(index: int) -> str:
    return f"compute-{index:02d}"


def host_of(run: Run, index: int) -> str:
    """The host of the compute service numbered ``index``."""
    return racks.host_name(index) if run.nodes else compute_host(index)


def hosts(run: Run) -> list[str]:
    """Every compute service host of the run, in order."""
    return [host_of(run, index) for index in range(run.computes)]
