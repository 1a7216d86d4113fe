"""Configuration options of the plugin, all in the ``[hpc_scheduler]`` group.

The options are read from nova.conf by the scheduler and from the files given
to the ``hpc-nova-scheduler`` command. ``oslo-config-generator`` finds them
through the ``oslo.config.opts`` entry point (:func:`list_opts`).
"""

from __future__ import annotations

import dataclasses

from oslo_config import cfg

GROUP_NAME = "hpc_scheduler"

GROUP_HELP = """
Options of hpc-nova-scheduler, the HPC-aware placement plugin for
nova-scheduler. Flavors opt in through extra specs in the ``hpc`` namespace
(``hpc:app_class``, ``hpc:cache_score``, ``hpc:app_name``); hosts are tagged
through host aggregate metadata (``hpc:rack``, ``hpc:cpu_group``).
"""


def _group() -> cfg.OptGroup:
    # A fresh group each time: oslo.config copies a registered group only
    # shallowly, so one shared OptGroup would share option overrides
    # between ConfigOpts instances.
    return cfg.OptGroup(name=GROUP_NAME, title="HPC-aware scheduling", help=GROUP_HELP)


REJECT = "reject"
DEGRADE = "degrade"

threshold_opts = [
    cfg.FloatOpt(
        "cache_threshold",
        default=200.0,
        min=0.0,
        help="""
Total cache score any host may carry (seed 003's alpha).

A VM is not placed on a host if the cache scores of the VMs already there
plus its own would exceed this value. Cache scores are in units of 100K
last-level cache misses per second. Seed 003 gives no number beyond
"alpha >> beta"; the default is a little over three times the default
``sync_cache_threshold``. It must not be below ``sync_cache_threshold``.
""",
    ),
    cfg.FloatOpt(
        "sync_cache_threshold",
        default=60.0,
        min=0.0,
        help="""
Total cache score allowed on a host that runs or receives SyncHPC VMs (seed
003's beta).

SyncHPC applications tolerate less interference: when the request is SyncHPC
or the host already runs a SyncHPC VM, the host's cache total after placement
must not exceed this value. 60 performed best in seed 003's case study (beta
= 100 packed cache-heavy applications too tightly, beta = 40 left cores idle).
""",
    ),
    cfg.FloatOpt(
        "interference_tolerance",
        default=10.0,
        min=0.0,
        help="""
Slowdown, in percent, above which a recorded pair of applications counts as
harmful and is never co-located, and that no application may be predicted to
exceed under a predictive ``interference_model``.

A pair in the ``app_interferences`` table is harmful when either application
suffers a slowdown above this value when sharing a host with the other.
""",
    ),
    cfg.StrOpt(
        "interference_model",
        default="cache-score",
        help="""
How the scheduler judges whether applications may share a host.

``cache-score`` is seed 003's rule: the cache scores on a host within
``cache_threshold`` and ``sync_cache_threshold``. ``ivmp`` and ``ivmp-base``
are seed 004's regression models over the SLLC, DRAM and network access
scores of the profiles: a host is admitted only if every application there,
new and existing, keeps its predicted slowdown within
``interference_tolerance``. ``pair-forest`` (seed 001), ``runtime-trees``
(seed 000, which tells hosts apart by their processor group), or any other
name, reads the fitted model stored under that name in the plugin database
(``hpc-nova-scheduler model fit --store NAME``); until one is stored it
admits no shared host. Under a predictive model every co-runner needs a
profile with the model's features; a host running one without is not
admitted. Other models register in the ``hpc_nova_scheduler.interference_models``
entry-point namespace (``hpc-nova-scheduler model list``). An unknown name
makes every HPC request fail with a message naming it.
""",
    ),
]

record_opts = [
    cfg.IntOpt(
        "claim_timeout",
        default=600,
        min=1,
        help="""
Seconds a scheduler's claim on hosts lasts at most.

Before Nova places the first VM of an HPC request, the plugin claims the
cache budget and dedication its plan needs (and one slot on each alternate
host) in the plugin database, so that requests scheduled at the same time by
other threads or nova-scheduler workers count them. A claim ends as soon as
its VMs are recorded and their builds have settled (active, failed or
deleted); this timeout only ends the claims of a scheduler that died or lost
its request midway. It should exceed the time a build can take, including a
reschedule to an alternate host.
""",
    ),
    cfg.IntOpt(
        "reconcile_interval",
        default=60,
        min=0,
        help="""
Seconds between two sweeps of ``app_running`` by ``hpc-scheduler-agent``.

The scheduler updates the records of the hosts it looks at while it places
VMs; the agent's sweep repairs the rest from Nova's databases, as
``hpc-nova-scheduler reconcile`` does: records of deleted instances go,
records of moved ones follow them. Each sweep also keeps the fallback copy
(``fallback_connection``) ready. 0 turns sweeping off.
""",
    ),
]

database_opts = [
    cfg.StrOpt(
        "connection",
        secret=True,
        help="""
SQLAlchemy URL of the plugin's own database, which holds application
profiles, running-application records and interference measurements, for
example ``mysql+pymysql://hpc:secret@db.example.org/hpc_scheduler``.
Create or upgrade its tables with ``hpc-nova-scheduler db sync``. When
unset the database counts as unreachable and ``database_failure_policy``
applies.
""",
    ),
    cfg.StrOpt(
        "database_failure_policy",
        default=REJECT,
        choices=[
            (
                REJECT,
                "HPC requests fail with NoValidHost until the database "
                "answers again; nothing is placed on guesses.",
            ),
            (
                DEGRADE,
                "HPC requests go on being placed, from what Nova itself knows "
                "(flavors, request hints, Placement) and the local copy of "
                "``fallback_connection``, keeping every rule; when there is no "
                "copy, from Nova alone, with profiles and the interference "
                "table skipped.",
            ),
        ],
        help="""
What happens to requests of an HPC class (ExtremeHPC, SyncHPC, AsyncHPC) when
the plugin's database cannot be reached or holds an unusable record.

NonHPC requests always fail open: they are placed as Nova would place them.
Every occurrence is logged with the reason.
""",
    ),
    cfg.StrOpt(
        "fallback_connection",
        secret=True,
        help="""
SQLAlchemy URL of a local copy that keeps placement safe while the plugin
database is down. Every sweep of ``hpc-scheduler-agent`` on this host
(``reconcile_interval``) copies the profiles, the interference table and
the entitlements into it. While the database is down, the
scheduler workers of this host claim and record placements in it, so that
they still see each other's, and keep off hosts where Placement shows VMs
they know nothing of; once the database answers again the copy's
placements are handed over to it. Unset: the SQLite file
``hpc_scheduler_fallback.sqlite`` in Nova's ``state_path``. Set it empty
to go without a copy (``degrade`` then places from Nova's data alone, and
concurrent workers may break the rules). Workers on other hosts have copies
of their own and do not see this one's: where scheduler workers run on
several hosts, prefer ``database_failure_policy = reject``.
""",
    ),
    cfg.IntOpt(
        "max_retries",
        default=0,
        min=-1,
        help="""
How many times to retry the first connection to the plugin's database
(-1 retries forever). The default does not retry, so that a database outage
costs the scheduler one failed attempt rather than a stall; add
``connect_timeout`` to the URL's query string to bound that attempt.
""",
    ),
    cfg.IntOpt(
        "retry_interval",
        default=1,
        min=0,
        help="Seconds between retries of the first connection to the database.",
    ),
]

#: ``fairness_policy`` values and the first-level policy each one runs.
FAIRNESS_POLICIES = {"equal": "fairness", "paf": "paf", "aaf": "aaf", "pa-rr": "pa-rr"}
NO_FAIRNESS = "none"
STRICT = "strict"
BORROW = "borrow"

RECLAIM_OFF = "off"
RECLAIM_STOP = "stop"
RECLAIM_SHELVE = "shelve"
RECLAIM_DELETE = "delete"
RECLAIM_MODES = (RECLAIM_OFF, RECLAIM_STOP, RECLAIM_SHELVE, RECLAIM_DELETE)

fairness_opts = [
    cfg.StrOpt(
        "fairness_policy",
        default=NO_FAIRNESS,
        choices=[
            (NO_FAIRNESS, "No fair share: placement as without it."),
            ("equal", "Seed 002's Fairness: equal cores per project, platform by platform."),
            ("paf", "Provider Affinity First: each platform to the projects that gain most."),
            ("aaf", "Application Affinity First: each project to its best platforms."),
            ("pa-rr", "Platform-Affinity Round Robin (seed 002's best): rounds of top picks."),
        ],
        help="""
How the cores of each platform (processor group) are shared among the
Keystone projects that have a share (``hpc-nova-scheduler fairshare share
set``), seed 002's first level. An allocator in one scheduler worker at a
time turns shares, demand, decayed usage and run times into entitlements
per project and platform; the placement filter keeps each project's HPC
requests within them (``fairshare_enforcement``) and on its best platforms
first (``platform_affinity``). ``none`` keeps placement exactly as without
fair share.
""",
    ),
    cfg.StrOpt(
        "platform_affinity",
        default="rpa",
        choices=[
            ("throughput", "Tasks per hour of the application on the platform."),
            ("epa", "Egocentric: the application's speed there against its own mean."),
            ("rpa", "Reciprocal: EPA against the other projects' EPA there."),
        ],
        help="How a project's affinity to a platform is measured from the run times.",
    ),
    cfg.StrOpt(
        "corunner_policy",
        default="maf",
        choices=[
            ("allcore", "A node runs one project's VMs only."),
            ("random", "Projects share nodes at random."),
            ("maf", "Mutual Affinity First: pairs that slow each other least share nodes."),
            ("ca-rr", "Co-runner Affinity Round Robin, fairest between co-runners."),
        ],
        help="""
Seed 002's second level: which projects' VMs share a node. It yields node
templates that the placement filter follows when it picks hosts.
""",
    ),
    cfg.StrOpt(
        "corunner_affinity",
        default="normalised",
        choices=[
            ("raw", "Run time beside the co-runners."),
            ("normalised", "Slowdown beside the co-runners against the solo run time."),
        ],
        help="How ``maf`` and ``ca-rr`` rank co-runner sets.",
    ),
    cfg.IntOpt(
        "fairshare_top_percent",
        default=50,
        min=1,
        max=50,
        help="Seed 002's k: the share of best platforms a project picks from per round, percent.",
    ),
    cfg.IntOpt(
        "fairshare_core_unit",
        default=1,
        min=1,
        max=1024,
        help="Seed 002's D_unit: cores handed out per pick of the first level.",
    ),
    cfg.IntOpt(
        "fairshare_node_unit",
        default=1,
        min=1,
        max=1024,
        help="Seed 002's P_unit: nodes per template step of ``ca-rr``.",
    ),
    cfg.IntOpt(
        "fairshare_half_life",
        default=7 * 24 * 3600,
        min=0,
        max=365 * 24 * 3600,
        help="""
Seconds after which a project's past usage counts half (Slurm's
PriorityDecayHalfLife). 0 forgets usage at once: entitlements then depend on
shares and demand only.
""",
    ),
    cfg.StrOpt(
        "fairshare_enforcement",
        default=STRICT,
        choices=[
            (STRICT, "A request beyond its project's entitlement gets NoValidHost."),
            (
                BORROW,
                "A request beyond its project's entitlement may use cores of a "
                "platform that no project is using; they are taken back only "
                "with fairshare_reclaim.",
            ),
        ],
        help="What the placement filter does with a request beyond its project's entitlement.",
    ),
    cfg.StrOpt(
        "fairshare_reclaim",
        default=RECLAIM_OFF,
        choices=[
            (RECLAIM_OFF, "Borrowed and preemptible VMs are never taken back."),
            (
                RECLAIM_STOP,
                "Stop the victim. It keeps its host and its Placement allocation: "
                "the cores it frees serve others only where Placement has room "
                "(cpu_allocation_ratio above 1), but nothing of it is lost.",
            ),
            (
                RECLAIM_SHELVE,
                "Shelve and offload the victim: its host and allocation are freed, "
                "its disk is kept as an image; the tenant unshelves it later.",
            ),
            (RECLAIM_DELETE, "Delete the victim."),
        ],
        help="""
How ``hpc-scheduler-agent`` takes back borrowed cores. After each allocator
run, when a project below its entitlement on a platform has unmet demand
(declared demand not running, or requests refused for its entitlement in
the last interval) and the platform has no idle cores for it, the agent
chooses victims among the VMs that may be taken back: preemptible VMs
(flavor extra spec ``hpc:preemptible = true``) first, then VMs placed beyond
their project's entitlement under ``fairshare_enforcement = borrow``, from
the project furthest over its entitlement, youngest first, as few as cover
the demand, and never so many that their project falls below its own
entitlement. Each victim's server gets the metadata key ``hpc:reclaim_at``
(when, and why); ``fairshare_reclaim_grace`` seconds later the agent stops,
shelves or deletes it through Nova's API with the credentials of the
``[hpc_scheduler_agent]`` group. Nothing else is ever taken back.
""",
    ),
    cfg.IntOpt(
        "fairshare_reclaim_grace",
        default=300,
        min=0,
        max=7 * 24 * 3600,
        help="""
Seconds between marking a victim (metadata key ``hpc:reclaim_at``) and
stopping, shelving or deleting it: the tenant's time to save its work. The
time from unmet demand to freed cores is at most one ``fairshare_interval``
plus this grace, plus the second between two looks of the agent for due
reclaims.
""",
    ),
    cfg.IntOpt(
        "fairshare_reclaim_attempts",
        default=3,
        min=1,
        max=100,
        help="""
Calls of Nova's API per reclaim before it is reported as failed (one per
look of the agent, every few seconds). A failed reclaim keeps covering its
beneficiary's demand, so no second victim is taken for it: the operator
acts on it (``hpc-nova-scheduler fairshare reclaim list`` shows it).
""",
    ),
    cfg.IntOpt(
        "fairshare_interval",
        default=300,
        min=10,
        max=24 * 3600,
        help="""
Seconds between two runs of the allocator (in ``hpc-scheduler-agent``). It
also runs as soon as demand or usage changes (a project's VMs end, a request is refused for its
entitlement) and on ``hpc-nova-scheduler fairshare allocate``.
Entitlements older than two intervals count as stale: the filter then
places as if ``fairness_policy`` were ``none`` and says so in its log.
""",
    ),
]

topology_opts = [
    cfg.ListOpt(
        "topology_levels",
        default=["rack"],
        help="""
The network topology's levels above the host, outermost first (for example
``block,rack`` or ``pod,block,rack``).

Each level is read from the host aggregate metadata key ``hpc:<level>``; the
host is always the innermost level and is not named here. A host without a
value at some level is a domain of its own at that level, as a host without
a rack always was. Tenants name these levels in the flavor extra specs
``hpc:topology_required``, ``hpc:topology_preferred`` and
``hpc:topology_segment_level`` (``host`` is always accepted too).

With the default single level ``rack``, placement orders racks exactly as
seed 003 does (the rack with the most room first). With more levels than
one, the plan is a best fit at every level, innermost first: among the
domains that can hold the whole application, the one with the least room
left, so that large empty domains stay whole for large applications.
Names are lower-case letters, digits, ``-`` and ``_``; ``host``,
``cpu_group``, ``platform``, ``app_class`` and ``app_name`` are reserved.
An empty value or an empty name (``block,,rack``) is an error: leave the
option out for the single level ``rack``.
""",
    ),
]

narrowing_opts = [
    cfg.IntOpt(
        "idle_trait_interval",
        default=0,
        min=0,
        max=3600,
        help="""
Seconds between two runs of ``hpc-scheduler-agent``'s ``idle-traits``
task; 0 (the default) turns it off.

nova-scheduler asks Placement for at most ``[scheduler]
max_placement_results`` candidates (1000 by default), and every host with
room for the flavor is one: in a large cloud whose first candidates each
hold some VM, an ExtremeHPC request, which needs a host to its application
alone, would be refused while empty hosts exist beyond the sample. With
this task on, one agent (the holder of a lease) keeps the Placement trait
``CUSTOM_HPC_IDLE`` on exactly the compute nodes that hold no instance,
and ExtremeHPC flavors require it (flavor extra spec
``trait:CUSTOM_HPC_IDLE=required``): Placement then samples idle hosts
only. A node freed gets the trait within one interval; a node that
receives a VM loses it within one interval (meanwhile the placement filter
refuses it, as before). A run writes only the providers that changed, and
never touches another trait. The agent reaches Placement with nova.conf's
``[placement]`` credentials, as nova-scheduler does.
""",
    ),
    cfg.BoolOpt(
        "roomy_rack_trait",
        default=False,
        help="""
Whether the ``idle-traits`` task (``idle_trait_interval``) also keeps the
Placement trait ``CUSTOM_HPC_ROOMY_RACK`` on every host of the roomiest
racks: as many whole racks (the innermost of ``topology_levels``) as
``[scheduler] max_placement_results`` hosts hold, roomiest first by the
free vCPUs of hosts no other application holds as ExtremeHPC.

Placement's "first" candidates are a hash-ordered sample of every host
with room, so each rack shows only some of its hosts: in a fragmented
cloud a SyncHPC request that one rack would hold can see no rack with
room for it. A SyncHPC flavor that requires the trait (flavor extra spec
``trait:CUSTOM_HPC_ROOMY_RACK=required``) is offered whole racks instead.
Such a flavor is confined to those racks: a request larger than their
room is refused, as it would be on any sample of that many hosts.
""",
    ),
]

measured_opts = [
    cfg.StrOpt(
        "cache_pressure_source",
        default="declared",
        choices=[
            ("declared", "each VM counts with its declared cache score (flavor, profile)"),
            (
                "measured",
                "a VM measured long enough on a host that reports counts with its "
                "measured score, the others with their declared one",
            ),
            ("max", "the larger of the declared and the measured score"),
        ],
        help="""
Where the cache scores of the VMs already running on a host come from, in
the cache thresholds (``cache_threshold``, ``sync_cache_threshold``), the
interference models and the claims' checks. Measured scores come from
``hpc-scheduler-collector`` on the compute hosts (resctrl's LLC occupancy):

    measured score = measured_full_llc_score * occupancy / the host's LLC size

A new application, a VM with fewer than ``measured_min_samples`` samples, and
a VM on a host whose last report is older than ``measured_stale_after``
count with their declared score, and so do the VMs of a new request: they
have not run yet. A VM being moved counts with its own measured score.
""",
    ),
    cfg.IntOpt(
        "measured_stale_after",
        default=60,
        min=1,
        help="""
Seconds after which a host's collector report, or one instance's figures,
no longer count: the VMs there count with their declared scores again.
Keep it a few times ``[hpc_collector] interval``.
""",
    ),
    cfg.IntOpt(
        "measured_min_samples",
        default=6,
        min=1,
        help="""
Samples an instance needs before its measured score counts (one a
``[hpc_collector] interval``): until then it counts with its declared score.
""",
    ),
    cfg.FloatOpt(
        "measured_full_llc_score",
        default=60.0,
        min=0.0,
        help="""
The cache score of a VM that holds a host's whole last-level cache. The
default is ``sync_cache_threshold``'s default: a host whose cache is full
takes no further SyncHPC co-runner.
""",
    ),
    cfg.FloatOpt(
        "measured_bandwidth_weight_multiplier",
        default=1.0,
        help="""
Multiplier of ``MeasuredBandwidthWeigher`` (in ``[filter_scheduler]
weight_classes`` through ``hpc_nova_scheduler.scheduler.weights.all_weighers``):
positive prefers the hosts whose collectors measure the least memory
bandwidth used, that is the most headroom; 0 turns it off. It weighs only
under ``cache_pressure_source`` ``measured`` or ``max``.
""",
    ),
    cfg.IntOpt(
        "measured_rebalance_interval",
        default=0,
        min=0,
        help="""
Seconds between two looks of ``hpc-scheduler-agent``'s ``measured-rebalance``
task at the hosts' cache pressure (0, the default: off; it also does
nothing under ``cache_pressure_source = declared``). A host whose total,
counted as placement counts it, stays over its limit (``sync_cache_threshold``
where a SyncHPC VM runs, ``cache_threshold`` otherwise) for
``measured_rebalance_sustain`` seconds gets the fewest of its VMs live-migrated
that bring it back within the limit; nova-scheduler chooses where they go.
ExtremeHPC VMs never move. One agent acts at a time (a lease).
""",
    ),
    cfg.IntOpt(
        "measured_rebalance_sustain",
        default=300,
        min=0,
        help="""
Seconds a host's cache pressure must stay over its limit, at every look,
before ``measured-rebalance`` moves VMs off it: a burst shorter than this
moves nothing.
""",
    ),
    cfg.IntOpt(
        "measured_rebalance_cooldown",
        default=900,
        min=0,
        help="""
Seconds after ``measured-rebalance`` acted on a host before it may act on
that host again, so that the moved VMs' measurements settle first.
""",
    ),
    cfg.BoolOpt(
        "measured_rebalance_dry_run",
        default=True,
        help="""
Only log (at INFO) which VMs ``measured-rebalance`` would move off which
host, and why; move nothing. Turn it off once the log says what you expect.
""",
    ),
]

ALL_OPTS = (
    threshold_opts
    + record_opts
    + database_opts
    + fairness_opts
    + topology_opts
    + narrowing_opts
    + measured_opts
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register the plugin's options on ``conf`` (idempotent)."""
    conf.register_group(_group())
    conf.register_opts(ALL_OPTS, group=GROUP_NAME)


AGENT_GROUP_NAME = "hpc_scheduler_agent"

AGENT_GROUP_HELP = """
How ``hpc-scheduler-agent`` reaches Nova's API (keystoneauth options, as
Nova's own ``[placement]`` group): its own service credentials, used to mark,
stop, shelve or delete the victims of fair-share reclaim
(``[hpc_scheduler] fairshare_reclaim``). Only the agent reads them.
"""


def agent_group() -> cfg.OptGroup:
    return cfg.OptGroup(
        name=AGENT_GROUP_NAME, title="hpc-scheduler-agent's access to Nova", help=AGENT_GROUP_HELP
    )


def agent_opts() -> list[cfg.Opt]:
    """keystoneauth's session, auth and adapter options for the compute service."""
    from keystoneauth1 import loading as ks_loading

    adapter = ks_loading.get_adapter_conf_options(include_deprecated=False)
    for opt in adapter:
        if opt.dest == "service_type":
            opt.default = "compute"
        if opt.dest == "valid_interfaces":
            opt.default = ["internal", "public"]
    return (
        ks_loading.get_session_conf_options()
        + ks_loading.get_auth_common_conf_options()
        + ks_loading.get_auth_plugin_conf_options("password")
        + ks_loading.get_auth_plugin_conf_options("v3password")
        + adapter
    )


def register_agent_opts(conf: cfg.ConfigOpts) -> None:
    """Register ``[hpc_scheduler_agent]`` on ``conf`` (the agent, once; idempotent)."""
    from keystoneauth1 import loading as ks_loading

    if AGENT_GROUP_NAME in conf:
        return
    conf.register_group(agent_group())
    ks_loading.register_session_conf_options(conf, AGENT_GROUP_NAME)
    ks_loading.register_auth_conf_options(conf, AGENT_GROUP_NAME)
    ks_loading.register_adapter_conf_options(conf, AGENT_GROUP_NAME, include_deprecated=False)
    conf.set_default("service_type", "compute", group=AGENT_GROUP_NAME)
    conf.set_default("valid_interfaces", ["internal", "public"], group=AGENT_GROUP_NAME)


COLLECTOR_GROUP_NAME = "hpc_collector"

COLLECTOR_GROUP_HELP = """
Options of ``hpc-scheduler-collector``, which runs on each compute host and
measures every instance's last-level cache occupancy and memory bandwidth
(resctrl) into the plugin database (``[hpc_scheduler] connection``). Only
the collector reads them.
"""


def collector_group() -> cfg.OptGroup:
    return cfg.OptGroup(
        name=COLLECTOR_GROUP_NAME,
        title="hpc-scheduler-collector on the compute hosts",
        help=COLLECTOR_GROUP_HELP,
    )


collector_opts = [
    cfg.IntOpt(
        "interval",
        default=10,
        min=1,
        help="""
Seconds between two reads of the host and its instances. Each read writes
one sample per instance and the host's report in one transaction.
""",
    ),
    cfg.StrOpt(
        "resctrl_root",
        default="/sys/fs/resctrl",
        help="""
Where resctrl is mounted (``mount -t resctrl resctrl /sys/fs/resctrl``).
Without it, or on a processor without RDT or AMD QoS monitoring, the
collector says so once at start and records no occupancy or bandwidth.
""",
    ),
    cfg.StrOpt(
        "libvirt_run_dir",
        default="/run/libvirt/qemu",
        help="""
libvirt's folder of running QEMU domains' status files, where the
collector finds the instances of its host (the domain's UUID is Nova's
instance UUID) and their QEMU processes.
""",
    ),
    cfg.StrOpt(
        "cgroup_root",
        default="/sys/fs/cgroup",
        help="""
Where the cgroup file system is mounted. The collector counts the CPU
cycles and instructions of each domain's cgroup there with perf
(cgroup v2, or v1's ``perf_event`` controller) for its cycles per
instruction (CPI). A host whose processor exposes no such counters (most
virtual machines) or that forbids counting them says so once at start and
records no CPI. Empty: CPI is not measured.
""",
    ),
    cfg.StrOpt(
        "host",
        help="""
The name the host's measurements are recorded under: the compute host's
name as nova-scheduler knows it. Unset: nova.conf's ``[DEFAULT] host``,
as nova-compute uses it.
""",
    ),
    cfg.FloatOpt(
        "half_life",
        default=300.0,
        min=1.0,
        help="""
Seconds after which a sample weighs half in an instance's decayed mean and
recent peak: a shorter half-life follows phases sooner, a longer one
smooths them out.
""",
    ),
    cfg.IntOpt(
        "retention",
        default=3600,
        min=60,
        help="""
Seconds the raw samples are kept in the plugin database; an instance's
reduced figures not refreshed for as long are dropped too.
""",
    ),
]


def register_collector_opts(conf: cfg.ConfigOpts) -> None:
    """Register ``[hpc_collector]`` on ``conf`` (the collector, once; idempotent)."""
    if COLLECTOR_GROUP_NAME in conf:
        return
    conf.register_group(collector_group())
    conf.register_opts(collector_opts, group=COLLECTOR_GROUP_NAME)


def list_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    """Entry point for oslo-config-generator."""
    return [
        (_group(), ALL_OPTS),
        (agent_group(), agent_opts()),
        (collector_group(), collector_opts),
    ]


class ConfigurationError(ValueError):
    """The options contradict each other."""


def check_thresholds(conf: cfg.ConfigOpts) -> None:
    """Raise :class:`ConfigurationError` unless alpha >= beta."""
    group = conf[GROUP_NAME]
    if group.cache_threshold < group.sync_cache_threshold:
        raise ConfigurationError(
            f"[{GROUP_NAME}] cache_threshold ({group.cache_threshold}) is below "
            f"sync_cache_threshold ({group.sync_cache_threshold}); alpha must be >= beta"
        )


@dataclasses.dataclass(frozen=True)
class FairnessSettings:
    """The fair-share options, read and checked together."""

    #: The first-level policy's registered name (``fairness``, ``paf``...).
    first_level: str
    #: ``fairness_policy`` as the operator wrote it.
    policy: str
    platform_affinity: str
    corunner_policy: str
    corunner_affinity: str
    top_percent: int
    core_unit: int
    node_unit: int
    half_life: int
    enforcement: str
    interval: int
    #: ``fairshare_reclaim``: off, stop, shelve or delete.
    reclaim: str = RECLAIM_OFF
    reclaim_grace: int = 300
    reclaim_attempts: int = 3


FAIRNESS_OPTION_NAMES = tuple(opt.dest for opt in fairness_opts)


def fairness_settings(conf: cfg.ConfigOpts) -> FairnessSettings | None:
    """The fair-share options; None when ``fairness_policy = none``.

    :class:`ConfigurationError` names the first option with a bad value
    (oslo.config checks choices and ranges only when an option is read).
    """
    group = conf[GROUP_NAME]
    values = {}
    for name in FAIRNESS_OPTION_NAMES:
        try:
            values[name] = getattr(group, name)
        except (ValueError, cfg.Error) as error:
            raise ConfigurationError(f"[{GROUP_NAME}] {name}: {_reason(error)}") from None
    if values["fairness_policy"] == NO_FAIRNESS:
        return None
    return FairnessSettings(
        first_level=FAIRNESS_POLICIES[values["fairness_policy"]],
        policy=values["fairness_policy"],
        platform_affinity=values["platform_affinity"],
        corunner_policy=values["corunner_policy"],
        corunner_affinity=values["corunner_affinity"],
        top_percent=values["fairshare_top_percent"],
        core_unit=values["fairshare_core_unit"],
        node_unit=values["fairshare_node_unit"],
        half_life=values["fairshare_half_life"],
        enforcement=values["fairshare_enforcement"],
        interval=values["fairshare_interval"],
        reclaim=values["fairshare_reclaim"],
        reclaim_grace=values["fairshare_reclaim_grace"],
        reclaim_attempts=values["fairshare_reclaim_attempts"],
    )


def _reason(error: Exception) -> str:
    # oslo.config's message repeats the option's name and spans lines.
    text = " ".join(str(error).split())
    marker = " is not valid: "
    return text.split(marker, 1)[1] if marker in text else text


CONF = cfg.CONF
register_opts(CONF)
