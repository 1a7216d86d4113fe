"""SQLAlchemy models of the plugin database.

The alembic migrations under ``migrations/`` create exactly this schema; a
test compares the two on every backend.
"""

from __future__ import annotations

import datetime

from oslo_db.sqlalchemy import types as oslo_types
from oslo_utils import timeutils
from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Double,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAME_LENGTH = 255
CLASS_LENGTH = 16
SOURCE_LENGTH = 32
UUID_LENGTH = 36
CORUNNERS_LENGTH = 1024

#: An application name: compared exactly, case included, on every backend
#: (MariaDB's default collations ignore case; migration 0004).
AppName = String(NAME_LENGTH).with_variant(
    mysql.VARCHAR(NAME_LENGTH, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
)

# Explicit names keep constraints identical across SQLite, MariaDB and
# PostgreSQL, so later migrations can drop or alter them by name.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _now() -> datetime.datetime:
    return timeutils.utcnow()


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class TimestampMixin:
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime, default=_now, nullable=False)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, onupdate=_now)


class AppProfile(TimestampMixin, Base):
    """An application measured alone: what every placement model reads.

    ``cache_score`` is seed 003's (100K LLC misses/s); ``sllc_score``,
    ``dram_score`` and ``net_score`` are seed 004's shared-resource access
    scores in [0, 1]; ``solo_runtime`` (s) and ``counters`` (mean of each
    counter or metric, by name) feed seed 001; ``family`` and ``solo_runs``
    (run time and metrics alone, by host type) feed seed 000.
    """

    __tablename__ = "app_profiles"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(AppName, nullable=False, unique=True)
    app_class: Mapped[str] = mapped_column(String(CLASS_LENGTH), nullable=False)
    cache_score: Mapped[float] = mapped_column(Double, nullable=False, default=0.0)
    sllc_score: Mapped[float | None] = mapped_column(Double)
    dram_score: Mapped[float | None] = mapped_column(Double)
    net_score: Mapped[float | None] = mapped_column(Double)
    solo_runtime: Mapped[float | None] = mapped_column(Double)
    counters: Mapped[dict | None] = mapped_column(oslo_types.JsonEncodedDict)
    description: Mapped[str | None] = mapped_column(Text)
    #: Seed 000: the runtime model's family, and solo runs by host type.
    family: Mapped[str | None] = mapped_column(AppName)
    solo_runs: Mapped[dict | None] = mapped_column(oslo_types.JsonEncodedDict)


class AppRunning(TimestampMixin, Base):
    """One VM of an application placed by (or known to) the scheduler.

    ``request_id`` ties together the VMs of one application instance (one
    multi-create request or one server group); ``created_at`` is when the VM
    was placed.
    """

    __tablename__ = "app_running"
    __table_args__ = (
        Index(None, "host"),
        Index(None, "app_name"),
        Index(None, "request_id"),
        Index(None, "claim_id"),
        # Requests left to Nova read only the ExtremeHPC rows.
        Index(None, "app_class"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), nullable=False, unique=True)
    host: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    nodename: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    app_name: Mapped[str | None] = mapped_column(AppName)
    app_class: Mapped[str] = mapped_column(String(CLASS_LENGTH), nullable=False)
    cache_score: Mapped[float] = mapped_column(Double, nullable=False, default=0.0)
    request_id: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    project_id: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    #: The claim this VM was placed under (see :class:`AppClaim`).
    claim_id: Mapped[str | None] = mapped_column(String(UUID_LENGTH))
    #: The VM's cores (its flavor's vCPUs), what fair share counts.
    cores: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")


class AppClaim(TimestampMixin, Base):
    """Room a scheduler has promised to one request and not yet used.

    A plan is claimed before Nova places its first VM, so that schedulers
    planning at the same moment (threads of one nova-scheduler worker or
    separate workers) count each other's VMs. One row per host of a claim:
    ``vms`` VMs of the plan not yet recorded in ``app_running`` and
    ``spare`` slots held for alternates, where Nova's conductor may rebuild
    a VM whose build failed. The row counts against the host like that many
    VMs of the application; it ends when its VMs are recorded and its
    builds have settled, or at ``expires_at`` if its scheduler went away.
    ``claim_id`` is new for every claim; ``instance_uuid`` is the first
    instance of its request, whose fate tells whether the request is still
    being built.
    """

    __tablename__ = "app_claims"
    __table_args__ = (
        UniqueConstraint("claim_id", "host", "nodename"),
        Index(None, "host"),
        Index(None, "application_id"),
        Index(None, "expires_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    claim_id: Mapped[str] = mapped_column(String(UUID_LENGTH), nullable=False)
    instance_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), nullable=False)
    application_id: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    host: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    nodename: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    cell_uuid: Mapped[str | None] = mapped_column(String(UUID_LENGTH))
    vms: Mapped[int] = mapped_column(Integer, nullable=False)
    spare: Mapped[int] = mapped_column(Integer, nullable=False)
    app_name: Mapped[str | None] = mapped_column(AppName)
    app_class: Mapped[str] = mapped_column(String(CLASS_LENGTH), nullable=False)
    cache_score: Mapped[float] = mapped_column(Double, nullable=False)
    project_id: Mapped[str | None] = mapped_column(String(NAME_LENGTH))
    expires_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    #: Cores of each planned VM, what fair share counts.
    cores: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    #: Fair share: ``borrowed`` or ``preemptible`` when the planned VMs may be
    #: taken back (None: within the entitlement, or no fair share), on which
    #: platform, and the project's cores beyond its entitlement with them.
    loan: Mapped[str | None] = mapped_column(String(CLASS_LENGTH))
    loan_platform: Mapped[str | None] = mapped_column(AppName)
    loan_over: Mapped[int | None] = mapped_column(Integer)


class AppLock(Base):
    """A row per host or application that claims lock while they check.

    Claiming takes these rows' locks (``SELECT ... FOR UPDATE`` on MariaDB
    and PostgreSQL, a write on SQLite) in name order, re-reads what runs on
    the hosts, checks the plan against it and writes the claim in the same
    transaction.
    """

    __tablename__ = "app_locks"

    name: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    generation: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class AppInterference(TimestampMixin, Base):
    """Pairwise interference of two applications sharing a host.

    Stored once per unordered pair and source, with ``app_a <= app_b``;
    ``slowdown_a`` is how much slower (percent) ``app_a`` runs next to
    ``app_b`` than alone, ``slowdown_b`` the converse. A negative slowdown
    is a speed-up. ``source`` says whether the record was measured in a
    characterisation run, predicted by a model, or set by an operator.
    """

    __tablename__ = "app_interferences"
    __table_args__ = (UniqueConstraint("app_a", "app_b", "source"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app_a: Mapped[str] = mapped_column(AppName, nullable=False)
    app_b: Mapped[str] = mapped_column(AppName, nullable=False)
    slowdown_a: Mapped[float] = mapped_column(Double, nullable=False)
    slowdown_b: Mapped[float] = mapped_column(Double, nullable=False)
    source: Mapped[str] = mapped_column(String(SOURCE_LENGTH), nullable=False)
    measured_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class FittedModel(TimestampMixin, Base):
    """A fitted interference model under a name (``model fit --store NAME``).

    ``data`` is what the model's kind writes with skops, never a pickle;
    ``versions`` (JSON) the libraries that made it; ``report`` its fit.
    """

    __tablename__ = "fitted_models"

    name: Mapped[str] = mapped_column(AppName, primary_key=True)
    kind: Mapped[str] = mapped_column(String(64), nullable=False)
    #: Incremented by every store under the name: how schedulers see a new fit.
    generation: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    data: Mapped[bytes] = mapped_column(
        LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb"), nullable=False
    )
    versions: Mapped[str] = mapped_column(Text, nullable=False)
    report: Mapped[str | None] = mapped_column(Text)


#: Seed 002's co-runners of a run, sorted and joined by '+' ('' alone).
Corunners = String(CORUNNERS_LENGTH).with_variant(
    mysql.VARCHAR(CORUNNERS_LENGTH, charset="utf8mb4", collation="utf8mb4_bin"),
    "mysql",
    "mariadb",
)


class FairshareShare(Base):
    """Seed 002: a project's share weight (its entitlement, relative to others)."""

    __tablename__ = "fairshare_shares"
    __table_args__ = (CheckConstraint("weight > 0", name="weight_positive"),)

    project: Mapped[str] = mapped_column(AppName, primary_key=True)
    weight: Mapped[float] = mapped_column(Double, nullable=False)
    updated_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, default=_now, onupdate=_now, nullable=False
    )


class FairshareDemand(Base):
    """Seed 002: the cores a project asks for now."""

    __tablename__ = "fairshare_demand"
    __table_args__ = (CheckConstraint("cores >= 0", name="cores_not_negative"),)

    project: Mapped[str] = mapped_column(AppName, primary_key=True)
    cores: Mapped[int] = mapped_column(Integer, nullable=False)
    #: The application the cores are for (None: not said).
    application: Mapped[str | None] = mapped_column(AppName)
    updated_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, default=_now, onupdate=_now, nullable=False
    )


class FairshareGeneration(Base):
    """One allocator run: its policy and the node templates it planned (JSON)."""

    __tablename__ = "fairshare_generations"

    generation: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime, default=_now, nullable=False)
    policy: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    #: One entry per node: megabytes at 10,000 nodes (TEXT holds 64 KB on MariaDB).
    templates: Mapped[str] = mapped_column(
        Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb"), nullable=False
    )


class FairshareAllocation(Base):
    """The cores of one platform that one allocator run gave one project."""

    __tablename__ = "fairshare_allocations"

    generation: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    project: Mapped[str] = mapped_column(AppName, primary_key=True)
    platform: Mapped[str] = mapped_column(AppName, primary_key=True)
    cores: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime, default=_now, nullable=False)


class FairshareUsage(Base):
    """A project's decayed usage of a platform, in best-equivalent core-seconds."""

    __tablename__ = "fairshare_usage"

    project: Mapped[str] = mapped_column(AppName, primary_key=True)
    platform: Mapped[str] = mapped_column(AppName, primary_key=True)
    usage: Mapped[float] = mapped_column(Double, nullable=False)
    updated_at: Mapped[datetime.datetime] = mapped_column(
        DateTime, default=_now, onupdate=_now, nullable=False
    )


class FairshareRun(Base):
    """One measured task run of a many-task application (seed 002's affinities).

    ``source`` is ``import`` (a runs file) or ``characterise`` (measured
    here); ``corunners`` is '' for a solo run.
    """

    __tablename__ = "fairshare_runs"
    __table_args__ = (Index(None, "application", "platform"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    application: Mapped[str] = mapped_column(AppName, nullable=False)
    platform: Mapped[str] = mapped_column(AppName, nullable=False)
    runtime_s: Mapped[float] = mapped_column(Double, nullable=False)
    corunners: Mapped[str] = mapped_column(Corunners, nullable=False)
    source: Mapped[str] = mapped_column(String(SOURCE_LENGTH), nullable=False)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime, default=_now, nullable=False)


class FairshareLease(Base):
    """The allocator's lease: the one scheduler worker that runs it, until when.

    ``accounted_at`` is when usage was last charged; ``digest`` sums up the
    inputs of the last run, so that a change of them triggers the next.
    """

    __tablename__ = "fairshare_lease"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    expires_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    accounted_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    digest: Mapped[str | None] = mapped_column(String(64))


class FairshareRefusal(Base):
    """A request refused for its project's entitlement: demand Nova cannot queue."""

    __tablename__ = "fairshare_refusals"
    __table_args__ = (Index(None, "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = mapped_column(AppName, nullable=False)
    application: Mapped[str | None] = mapped_column(AppName)
    cores: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime, default=_now, nullable=False)
    #: ``hpc:topology_required``'s level: the cores must share one domain of it.
    topology_level: Mapped[str | None] = mapped_column(AppName)


class FairshareLoan(Base):
    """A VM that may be taken back: borrowed beyond its project's entitlement, or preemptible.

    Written with the VM's ``app_running`` row (from its claim) and gone
    with it. ``over_by`` is the project's cores beyond its entitlement on
    the platform when the VM was placed (0 for a preemptible VM);
    ``stopped`` is set once a reclaim has stopped, shelved or deleted it:
    it runs nothing, so fair share does not count its cores.
    """

    __tablename__ = "fairshare_loans"
    __table_args__ = (Index(None, "platform"),)

    instance_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), primary_key=True)
    project: Mapped[str] = mapped_column(AppName, nullable=False)
    platform: Mapped[str] = mapped_column(AppName, nullable=False)
    cores: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str] = mapped_column(String(CLASS_LENGTH), nullable=False)
    placed_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    over_by: Mapped[int] = mapped_column(Integer, nullable=False)
    stopped: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")


class FairshareReclaim(Base):
    """One VM taken back for a project below its entitlement, from request to outcome.

    ``state``: ``requested`` (the tenant is told; the grace period runs
    until ``act_after``), ``acted`` (Nova's API stopped, shelved or deleted
    it), ``failed`` (the API refused it ``attempts`` times; ``error`` says
    why), ``cancelled`` (the VM went, or stopped being a loan, first) or
    ``restarted`` (a stopped victim was started again by its tenant).
    """

    __tablename__ = "fairshare_reclaims"
    __table_args__ = (Index(None, "state"), Index(None, "instance_uuid"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), nullable=False)
    project: Mapped[str] = mapped_column(AppName, nullable=False)
    platform: Mapped[str] = mapped_column(AppName, nullable=False)
    cores: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str] = mapped_column(String(CLASS_LENGTH), nullable=False)
    beneficiary: Mapped[str] = mapped_column(AppName, nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    mode: Mapped[str] = mapped_column(String(CLASS_LENGTH), nullable=False)
    state: Mapped[str] = mapped_column(String(CLASS_LENGTH), nullable=False)
    requested_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    act_after: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    acted_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    error: Mapped[str | None] = mapped_column(Text)
    #: When the victim's server got ``hpc:reclaim_at`` (None: not yet).
    marked_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class AgentTask(Base):
    """The last run of one task of one ``hpc-scheduler-agent``: one row each, rewritten.

    ``agent`` is ``host:pid``; ``error`` is None when the run succeeded;
    ``interval_s`` is the task's interval at that run, so that ``agent
    status`` tells a late task without reading the agent's configuration.
    """

    __tablename__ = "agent_tasks"

    task: Mapped[str] = mapped_column(String(64), primary_key=True)
    agent: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    started_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    finished_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    interval_s: Mapped[float | None] = mapped_column(Double)
    error: Mapped[str | None] = mapped_column(Text)


class MeasuredHost(Base):
    """What one compute host's ``hpc-scheduler-collector`` last reported of the host itself.

    ``measures`` lists the metrics the host can measure (comma-separated);
    ``problems`` says, one line each, what it cannot (no resctrl, no perf
    access). A host whose ``reported_at`` is older than
    ``measured_stale_after`` is stale: its figures are not used.
    """

    __tablename__ = "measured_hosts"

    host: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    reported_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    #: The last-level cache of the host, every cache domain together.
    llc_bytes: Mapped[int | None] = mapped_column(BigInteger)
    llc_occupancy: Mapped[float | None] = mapped_column(Double)
    mbm_total_bps: Mapped[float | None] = mapped_column(Double)
    mbm_local_bps: Mapped[float | None] = mapped_column(Double)
    measures: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False, default="")
    problems: Mapped[str | None] = mapped_column(Text)


class MeasuredSample(Base):
    """One read of one instance by its host's collector, kept ``measured_retention`` seconds.

    A metric the host could not read is NULL, never zero.
    """

    __tablename__ = "measured_samples"
    __table_args__ = (
        Index(None, "instance_uuid", "taken_at"),
        Index(None, "host", "taken_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), nullable=False)
    host: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    taken_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    llc_occupancy: Mapped[float | None] = mapped_column(Double)
    mbm_total_bps: Mapped[float | None] = mapped_column(Double)
    mbm_local_bps: Mapped[float | None] = mapped_column(Double)
    cpi: Mapped[float | None] = mapped_column(Double)


class MeasuredInstance(Base):
    """One instance's samples reduced: per metric a decayed mean and a recent peak.

    ``figures`` is JSON: ``{metric: {"mean", "peak", "samples", "at"}}``,
    only the metrics ever read. ``host`` is where it was last measured.
    """

    __tablename__ = "measured_instances"
    __table_args__ = (Index(None, "host"),)

    instance_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), primary_key=True)
    host: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    updated_at: Mapped[datetime.datetime] = mapped_column(DateTime, nullable=False)
    figures: Mapped[str] = mapped_column(Text, nullable=False)
