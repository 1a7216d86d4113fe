"""Configuration options of the plugin, all in the ``[hpc_scheduler]`` group.

The options are read from nova.conf by the scheduler and from the files given
to the ``hpc-nova-scheduler`` command. ``oslo-config-generator`` finds them
through the ``oslo.config.opts`` entry point (:func:`list_opts`).
"""

from __future__ import annotations

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
Seconds between two sweeps of ``app_running`` by each nova-scheduler worker.

The scheduler updates the records of the hosts it looks at while it places
VMs; a sweep repairs the rest from Nova's databases, as ``hpc-nova-scheduler
reconcile`` does: records of deleted instances go, records of moved ones
follow them. 0 turns sweeping off.
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
database is down. Every sweep (``reconcile_interval``) copies the profiles
and the interference table into it. While the database is down, the
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

ALL_OPTS = threshold_opts + record_opts + database_opts


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register the plugin's options on ``conf`` (idempotent)."""
    conf.register_group(_group())
    conf.register_opts(ALL_OPTS, group=GROUP_NAME)


def list_opts() -> list[tuple[cfg.OptGroup, list[cfg.Opt]]]:
    """Entry point for oslo-config-generator."""
    return [(_group(), ALL_OPTS)]


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


CONF = cfg.CONF
register_opts(CONF)
