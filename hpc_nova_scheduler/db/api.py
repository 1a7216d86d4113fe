"""Access to the plugin database through oslo.db's enginefacade.

:class:`Database` is the one way in: the command line builds one from a URL,
the scheduler from ``[hpc_scheduler]`` options. Every operation runs in its
own transaction; bulk imports are a single transaction, so a failure leaves
the database as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import hashlib
import json
import math
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from oslo_config import cfg
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_log import log as logging
from oslo_utils import timeutils
from sqlalchemy import bindparam, delete, event, func, select, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine, make_url

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.holders import host_key
from hpc_nova_scheduler.core.profile import AppClass, ProfileError
from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord, parse_solo_runs
from hpc_nova_scheduler.db import migration, models, sqlite_lock
from hpc_nova_scheduler.db.loans import LoanStore
from hpc_nova_scheduler.db.loans import lend as _lend
from hpc_nova_scheduler.db.measured import MeasuredStore

LOG = logging.getLogger(__name__)

# Concurrent importers or schedulers may race on the same rows; oslo.db
# turns MariaDB/PostgreSQL deadlocks into DBDeadlock, and the whole
# transaction is simply run again.
_retry_on_deadlock = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True, retry_interval=0.1, inc_retry_interval=True
)


#: Seconds a SQLite connection waits for the database's write lock.
SQLITE_LOCK_WAIT = sqlite_lock.WAIT


def _sqlite_file(url: str) -> str | None:
    """The file of a SQLite ``url``; None for an in-memory or URI database."""
    try:
        name = make_url(url).database
    except sa_exc.ArgumentError:
        return None  # opening it says what is wrong, as for any URL
    if not name or name == ":memory:" or name.startswith("file:"):
        return None
    return os.path.realpath(name)


class DatabaseUnavailable(Exception):
    """The plugin database is not configured or cannot be reached."""


#: What a call on :class:`Database` raises when the database fails it:
#: unreachable, or an error from oslo.db or SQLAlchemy.
ERRORS = (DatabaseUnavailable, db_exc.DBError, sa_exc.SQLAlchemyError)


@enginefacade.transaction_context_provider
class _Context:
    """Carrier for enginefacade's per-call transaction state."""


@dataclasses.dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


@dataclasses.dataclass(frozen=True)
class StoredModel:
    """A fitted interference model as stored: its kind, skops bytes, versions, report."""

    name: str
    kind: str
    data: bytes
    versions: dict[str, str]
    report: str | None
    updated_at: datetime.datetime


@dataclasses.dataclass(frozen=True)
class RunningRecord:
    """One row of ``app_running``."""

    instance_uuid: str
    host: str
    app_class: AppClass
    cache_score: float
    app_name: str | None = None
    nodename: str | None = None
    request_id: str | None = None
    project_id: str | None = None
    #: When the row was written, i.e. when the VM was placed.
    placed_at: datetime.datetime | None = dataclasses.field(default=None, compare=False)
    #: The claim the VM was placed under, if any.
    claim_id: str | None = None
    #: The VM's cores (its flavor's vCPUs), what fair share counts; 0: unknown.
    cores: int = 0

    @property
    def key(self) -> str:
        return host_key(self.host, self.nodename)


@dataclasses.dataclass(frozen=True)
class Claim:
    """One host's share of a claim: one row of ``app_claims``."""

    claim_id: str
    #: The first instance of the claim's request.
    instance_uuid: str
    application_id: str
    host: str
    nodename: str
    app_class: AppClass
    cache_score: float
    vms: int = 0
    spare: int = 0
    app_name: str | None = None
    project_id: str | None = None
    cell_uuid: str | None = None
    #: Cores of each planned VM, what fair share counts.
    cores: int = 0
    #: Fair share: ``borrowed`` or ``preemptible`` when its VMs may be taken
    #: back, the platform, and the project's cores beyond its entitlement.
    loan: str | None = None
    loan_platform: str | None = None
    loan_over: int | None = None

    @property
    def key(self) -> str:
        return host_key(self.host, self.nodename)


@dataclasses.dataclass(frozen=True)
class ClaimView:
    """What runs and is claimed, read under the claim's locks."""

    #: Rows on the claim's hosts, and every row of the application.
    running: list[RunningRecord]
    #: Live claims on the claim's hosts, and every live claim of the application.
    claims: list[Claim]
    #: Fair share: cores per project and host key on the hosts of ``Database.claim``'s
    #: ``use_hosts`` (recorded VMs and live claims' planned VMs); None if not asked.
    use: dict[str, dict[str, int]] | None = None


def lock_name(kind: str, name: str) -> str:
    """The ``app_locks`` row of a host or an application."""
    full = f"{kind}:{name}"
    if len(full) <= models.NAME_LENGTH:
        return full
    return f"{kind}#" + hashlib.sha256(name.encode()).hexdigest()


_CLASSES = {member.value: member for member in AppClass}


#: The columns of ``app_running`` and ``app_claim`` that the scheduler reads
#: as plain tuples (no ORM objects on its hot path), in the order of the
#: fields of :class:`RunningRecord` and :class:`Claim` they fill.
_RUNNING_FIELDS = (
    "instance_uuid",
    "host",
    "app_class",
    "cache_score",
    "app_name",
    "nodename",
    "request_id",
    "project_id",
    "created_at",
    "claim_id",
    "cores",
)
_CLAIM_FIELDS = (
    "claim_id",
    "instance_uuid",
    "application_id",
    "host",
    "nodename",
    "app_class",
    "cache_score",
    "vms",
    "spare",
    "app_name",
    "project_id",
    "cell_uuid",
    "cores",
    "loan",
    "loan_platform",
    "loan_over",
)


def _running_columns() -> tuple:
    table = models.AppRunning.__table__
    return tuple(table.c[name] for name in _RUNNING_FIELDS)


def _app_class(value: str) -> AppClass:
    return _CLASSES.get(value) or AppClass.parse(value)


# Positional, in the order the field lists give: the scheduler reads a row
# per VM on every candidate host.
def _running_from_tuple(row) -> RunningRecord:
    uuid, host, app_class, *rest = row
    return RunningRecord(uuid, host, _app_class(app_class), *rest)


def _claim_columns() -> tuple:
    table = models.AppClaim.__table__
    return tuple(table.c[name] for name in _CLAIM_FIELDS)


def _claim_from_tuple(row) -> Claim:
    claim_id, instance_uuid, application_id, host, nodename, app_class, *rest = row
    return Claim(
        claim_id, instance_uuid, application_id, host, nodename, _app_class(app_class), *rest
    )


def _live_claims_query():
    table = models.AppClaim.__table__
    return select(*_claim_columns()).where(table.c.expires_at >= timeutils.utcnow())


@functools.cache
def _of_class_queries():
    claims = models.AppClaim.__table__
    running = models.AppRunning.__table__
    return (
        select(*_claim_columns()).where(
            claims.c.expires_at >= bindparam("now"),
            claims.c.app_class == bindparam("app_class"),
        ),
        select(*_running_columns()).where(running.c.app_class == bindparam("app_class")),
    )


def _chunks(values: Sequence[str], size: int = 500) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _stored_from_row(row: models.FittedModel) -> StoredModel:
    return StoredModel(
        name=row.name,
        kind=row.kind,
        data=bytes(row.data),
        versions=json.loads(row.versions),
        report=row.report,
        updated_at=row.updated_at or row.created_at,
    )


def _profile_from_row(row: models.AppProfile) -> ProfileRecord:
    return ProfileRecord(
        name=row.name,
        app_class=AppClass.parse(row.app_class),
        cache_score=row.cache_score,
        sllc_score=row.sllc_score,
        dram_score=row.dram_score,
        net_score=row.net_score,
        solo_runtime=row.solo_runtime,
        counters=dict(sorted((row.counters or {}).items())),
        description=row.description,
        family=row.family,
        solo_runs=parse_solo_runs(row.solo_runs),
    )


def _profile_columns(record: ProfileRecord) -> dict:
    return {
        "name": record.name,
        "app_class": record.app_class.value,
        "cache_score": record.cache_score,
        "sllc_score": record.sllc_score,
        "dram_score": record.dram_score,
        "net_score": record.net_score,
        "solo_runtime": record.solo_runtime,
        "counters": dict(record.counters) or None,
        "description": record.description,
        "family": record.family,
        "solo_runs": {t: run.to_mapping() for t, run in record.solo_runs.items()} or None,
    }


def _interference_from_row(row: models.AppInterference) -> InterferenceRecord:
    return InterferenceRecord(
        app_a=row.app_a,
        app_b=row.app_b,
        slowdown_a=row.slowdown_a,
        slowdown_b=row.slowdown_b,
        source=row.source,
        measured_at=row.measured_at,
    )


def _interference_columns(record: InterferenceRecord) -> dict:
    return {
        "app_a": record.app_a,
        "app_b": record.app_b,
        "source": record.source,
        "slowdown_a": record.slowdown_a,
        "slowdown_b": record.slowdown_b,
        "measured_at": record.measured_at,
    }


def _claim_row(claim: Claim, expires: datetime.datetime) -> models.AppClaim:
    columns = {name: getattr(claim, name) for name in _CLAIM_FIELDS}
    columns["app_class"] = claim.app_class.value
    return models.AppClaim(**columns, expires_at=expires)


def _apply(row: object, columns: dict) -> bool:
    changed = False
    for name, value in columns.items():
        current = getattr(row, name)
        if name in ("counters", "solo_runs"):
            current = current or None
        if current != value:
            setattr(row, name, value)
            changed = True
    return changed


def _upsert(session, model: type, keys: Sequence[str], rows: Sequence[dict], where) -> ImportResult:
    """Create or update ``model`` rows, each given as all its columns.

    ``keys`` name the columns that identify a row; ``where`` selects the
    existing rows the batch may touch (one query for the whole batch).
    """
    result = ImportResult()
    if not rows:
        return result
    existing = {
        tuple(getattr(row, key) for key in keys): row
        for row in session.scalars(select(model).where(where))
    }
    for columns in rows:
        row = existing.get(tuple(columns[key] for key in keys))
        if row is None:
            session.add(model(**columns))
            result.created += 1
        elif _apply(row, {k: v for k, v in columns.items() if k not in keys}):
            result.updated += 1
        else:
            result.unchanged += 1
    return result


def _running_row(vm: RunningRecord) -> dict:
    columns = {
        "instance_uuid": vm.instance_uuid,
        "host": vm.host,
        "nodename": vm.nodename,
        "app_name": vm.app_name,
        "app_class": vm.app_class.value,
        "cache_score": vm.cache_score,
        "request_id": vm.request_id,
        "project_id": vm.project_id,
    }
    if vm.cores:
        # 0 is "unknown": a refresh that does not know the cores keeps them.
        columns["cores"] = vm.cores
    if vm.claim_id is not None:
        columns["claim_id"] = vm.claim_id
    return columns


def _upsert_running(session, vms: Sequence[RunningRecord]) -> None:
    rows = [_running_row(vm) for vm in vms]
    where = models.AppRunning.instance_uuid.in_([vm.instance_uuid for vm in vms])
    _upsert(session, models.AppRunning, ("instance_uuid",), rows, where)


#: Where a stored task run came from: a runs file, or a characterisation here.
RUN_SOURCES = ("import", "characterise")


@dataclasses.dataclass(frozen=True)
class StoredRun:
    """One row of ``fairshare_runs``: a measured task run of seed 002."""

    application: str
    platform: str
    runtime_s: float
    #: The co-runners, sorted; empty for a solo run.
    corunners: tuple[str, ...] = ()
    source: str = "import"


@dataclasses.dataclass
class RunImportResult:
    """What an import of task runs did, row by row."""

    added: int = 0
    removed: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return f"{self.added} added, {self.removed} removed, {self.unchanged} unchanged"


def _project(project: str) -> str:
    if not isinstance(project, str) or not project.strip():
        raise ProfileError("project", "empty")
    if len(project) > models.NAME_LENGTH:
        raise ProfileError("project", f"longer than {models.NAME_LENGTH} characters")
    return project


def _weight(weight: float) -> float:
    try:
        value = float(weight)
    except (TypeError, ValueError):
        raise ProfileError("weight", f"{weight!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ProfileError("weight", f"{weight!r} is not a positive finite number")
    return value


#: The most cores a demand may be: the largest SQL INTEGER, which is what
#: every backend stores the column in (PostgreSQL and MySQL refuse more).
MAX_CORES = 2**31 - 1


def _cores(cores: int) -> int:
    if isinstance(cores, bool) or not isinstance(cores, int):
        raise ProfileError("cores", f"{cores!r} is not an integer")
    if cores < 0:
        raise ProfileError("cores", f"{cores!r} is negative")
    if cores > MAX_CORES:
        raise ProfileError("cores", f"{cores!r} is more than {MAX_CORES}")
    return cores


def _run_key(run) -> tuple[str, str, str, float]:
    """(application, platform, corunners joined, runtime) of a TaskRun-like record."""
    for name in ("application", "platform"):
        value = getattr(run, name)
        if not isinstance(value, str) or not value.strip():
            raise ProfileError(name, "empty")
    runtime = float(run.runtime_s)
    if not math.isfinite(runtime) or runtime <= 0:
        raise ProfileError("runtime_s", f"{run.runtime_s!r} is not a positive finite number")
    corunners = tuple(run.corunners or ())
    if not all(isinstance(name, str) and name.strip() for name in corunners):
        raise ProfileError("corunners", f"{corunners!r} has an empty name")
    if any("+" in name for name in corunners):
        raise ProfileError("corunners", f"{corunners!r}: a name holds '+'")
    joined = "+".join(sorted(corunners))
    if len(joined) > models.CORUNNERS_LENGTH:
        raise ProfileError("corunners", f"longer than {models.CORUNNERS_LENGTH} characters")
    return run.application, run.platform, joined, runtime


@dataclasses.dataclass(frozen=True)
class Generation:
    """One allocator run as stored: its entitlements and node templates."""

    number: int
    created_at: datetime.datetime
    policy: str
    #: Cores per project, then per platform (only cores > 0 are stored).
    allocation: dict[str, dict[str, int]]
    #: What the allocator planned besides entitlements, as it wrote it (JSON):
    #: the second level's node templates, and the affinities requests follow.
    templates: dict[str, object]


#: The ``app_locks`` row that writers of generations take in turn.
GENERATION_LOCK = "fairshare:generation"


def _name(value: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(key, "empty")
    if len(value) > models.NAME_LENGTH:
        raise ProfileError(key, f"{value!r} is longer than {models.NAME_LENGTH} characters")
    return value


def _allocation_rows(allocation: Mapping[str, Mapping[str, int]]) -> list[tuple[str, str, int]]:
    """(project, platform, cores) of every positive entitlement, checked."""
    rows = []
    for project, platforms in allocation.items():
        _name(project, "project")
        if not isinstance(platforms, Mapping):
            raise ProfileError("allocation", f"{project}: {platforms!r} is not platform -> cores")
        for platform, cores in platforms.items():
            _name(platform, "platform")
            if _cores(cores) > 0:
                rows.append((project, platform, cores))
    return sorted(rows)


def _allocation_models(
    number: int, rows: Iterable[tuple[str, str, int]], at: datetime.datetime
) -> list[models.FairshareAllocation]:
    """The ``fairshare_allocations`` rows of generation ``number``."""
    return [
        models.FairshareAllocation(
            generation=number, project=project, platform=platform, cores=cores, created_at=at
        )
        for project, platform, cores in rows
    ]


def _usage_value(key: object, value: float) -> tuple[str, str, float]:
    if not isinstance(key, tuple) or len(key) != 2:
        raise ProfileError("usage", f"{key!r} is not a (project, platform) pair")
    project, platform = _name(key[0], "project"), _name(key[1], "platform")
    if isinstance(value, bool):
        raise ProfileError("usage", f"{project}/{platform}: {value!r} is not a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ProfileError("usage", f"{project}/{platform}: {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise ProfileError("usage", f"{project}/{platform}: {value!r} is not a finite number >= 0")
    return project, platform, number


def _naive_utc(at: datetime.datetime) -> datetime.datetime:
    # Columns hold naive UTC, as timeutils.utcnow() gives it.
    if not isinstance(at, datetime.datetime):
        raise ProfileError("at", f"{at!r} is not a datetime")
    if at.tzinfo is None:
        return at
    return at.astimezone(datetime.UTC).replace(tzinfo=None)


def _use_queries() -> tuple:
    """:func:`_cores_in_use`'s statements, (everywhere, on ``:hosts``) for claims then rows.

    Built once: the host names are an expanding parameter, bound per
    execution, so neither statement is built, nor its list coerced, per request.
    """
    claims = models.AppClaim.__table__
    running = models.AppRunning.__table__
    loans = models.FairshareLoan.__table__
    claimed = select(
        claims.c.project_id,
        claims.c.host,
        claims.c.nodename,
        claims.c.loan,
        func.sum(claims.c.vms * claims.c.cores),
    ).where(claims.c.expires_at >= bindparam("now"), claims.c.vms > 0)
    # A VM a reclaim has stopped runs nothing: its cores are not counted.
    recorded = (
        select(
            running.c.project_id,
            running.c.host,
            running.c.nodename,
            loans.c.kind,
            func.sum(running.c.cores),
        )
        .select_from(running.outerjoin(loans, loans.c.instance_uuid == running.c.instance_uuid))
        .where(func.coalesce(loans.c.stopped, 0) == 0)
    )
    found = []
    for query, host_column, group in (
        (
            claimed,
            claims.c.host,
            (claims.c.project_id, claims.c.host, claims.c.nodename, claims.c.loan),
        ),
        (
            recorded,
            running.c.host,
            (running.c.project_id, running.c.host, running.c.nodename, loans.c.kind),
        ),
    ):
        on_hosts = query.where(host_column.in_(bindparam("hosts", expanding=True)))
        found.append((query.group_by(*group), on_hosts.group_by(*group)))
    return tuple(found)


_USE_QUERIES = _use_queries()


#: Kinds of loan (``fairshare_loans.kind``, ``app_claims.loan``).
BORROWED = "borrowed"
PREEMPTIBLE = "preemptible"
#: The project name under which :func:`_cores_in_use` counts preemptible VMs:
#: no Keystone project is named so (its ids are hexadecimal).
PREEMPTIBLE_USE = "(preemptible)"


def _cores_in_use(session, hosts: Iterable[str] | None) -> dict[str, dict[str, int]]:
    """project -> host key -> cores of its recorded VMs and live claims' planned VMs.

    On ``hosts`` (names), or everywhere when None. Claims are read before
    rows, as in :meth:`Database._claim_view`: a VM moves from its claim to
    its row, never back. Spare slots are not counted: a rebuild on an
    alternate replaces a VM that failed, it does not add one. Preemptible
    VMs never count against their project's entitlement: their cores are
    under :data:`PREEMPTIBLE_USE`, so that a platform's total still holds
    them. VMs a reclaim stopped are not counted at all.
    """
    use: dict[str, dict[str, int]] = {}
    now = timeutils.utcnow()
    chunks = None if hosts is None else [list(c) for c in _chunks(sorted(set(hosts)))]
    for everywhere, on_hosts in _USE_QUERIES:
        if chunks is None:
            rows = session.execute(everywhere, {"now": now}).tuples()
        else:
            rows = (
                row
                for chunk in chunks
                for row in session.execute(on_hosts, {"now": now, "hosts": chunk}).tuples()
            )
        for project, host, nodename, loan, cores in rows:
            if project is None or not cores:
                continue
            if loan == PREEMPTIBLE:
                project = PREEMPTIBLE_USE
            by_host = use.setdefault(project, {})
            key = host_key(host, nodename)
            by_host[key] = by_host.get(key, 0) + int(cores)
    return use


#: The ``fairshare_lease`` row of the allocator.
ALLOCATOR_LEASE = "allocator"
#: The ``fairshare_lease`` row of the agent that writes the narrowing traits.
IDLE_TRAITS_LEASE = "idle_traits"
#: The ``fairshare_lease`` row of the agent that moves VMs off hosts measured over their limit.
MEASURED_REBALANCE_LEASE = "measured_rebalance"


@dataclasses.dataclass(frozen=True)
class Lease:
    """The allocator's lease row."""

    holder: str
    expires_at: datetime.datetime
    #: When usage was last charged.
    accounted_at: datetime.datetime | None
    #: A digest of the inputs of the last allocator run.
    digest: str | None


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A request refused for its project's entitlement."""

    project: str
    application: str | None
    cores: int
    at: datetime.datetime
    #: ``hpc:topology_required``'s level, when the request had one.
    topology_level: str | None = None


@dataclasses.dataclass(frozen=True)
class TaskRun:
    """The last run of one task of one agent (``agent_tasks``)."""

    task: str
    agent: str
    started_at: datetime.datetime
    finished_at: datetime.datetime
    interval_s: float | None
    #: None when the run succeeded.
    error: str | None


#: Task rows of an agent not heard of for this long are pruned.
TASK_RUNS_KEPT = datetime.timedelta(days=1)


class Database(LoanStore, MeasuredStore):
    """The plugin database at one URL."""

    def __init__(self, url: str | None, *, max_retries: int = 0, retry_interval: int = 1) -> None:
        if not url:
            raise DatabaseUnavailable(
                f"no database configured: set [{hpc_conf.GROUP_NAME}] connection "
                "or pass --connection"
            )
        self.url = url
        self._tx = enginefacade.transaction_context()
        extra = {}
        if url.startswith("sqlite") and "timeout=" not in url:
            # Scheduler threads queue for SQLite's one write lock; its
            # default wait of 5 s is too short when a machine is busy.
            extra["connection_parameters"] = f"timeout={SQLITE_LOCK_WAIT}"
        self._tx.configure(
            connection=url,
            max_retries=max_retries,
            retry_interval=retry_interval,
            sqlite_fk=True,
            **extra,
        )
        self._sqlite = url.startswith("sqlite")
        self._sqlite_path = _sqlite_file(url) if self._sqlite else None
        # An in-memory database is this handle's own.
        self._memory_write_lock = threading.RLock()

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts = hpc_conf.CONF) -> Database:
        group = conf[hpc_conf.GROUP_NAME]
        return cls(
            group.connection,
            max_retries=group.max_retries,
            retry_interval=group.retry_interval,
        )

    @property
    def engine(self) -> Engine:
        try:
            return self._tx.writer.get_engine()
        except db_exc.DBConnectionError as error:
            raise DatabaseUnavailable(f"cannot connect to the plugin database: {error}") from error

    def revision(self) -> str | None:
        """The schema revision, ``None`` before the first ``db sync``."""
        try:
            return migration.current_revision(self.engine)
        except (db_exc.DBConnectionError, sa_exc.OperationalError) as error:
            raise DatabaseUnavailable(f"cannot connect to the plugin database: {error}") from error

    def sync(self, revision: str = "head") -> str | None:
        """Create or upgrade the schema; return the revision reached."""
        self.revision()
        migration.upgrade(self.engine, revision)
        return self.revision()

    def dispose(self) -> None:
        self._tx.dispose_pool()

    @contextlib.contextmanager
    def _writer(self):
        if not self._sqlite:
            with self._tx.writer.using(_Context()) as session:
                yield session
            return
        if self._sqlite_path is None:
            lock = self._memory_write_lock
        else:
            lock = sqlite_lock.for_file(self._sqlite_path)
        # SQLite has one write lock for the whole file, and a connection that
        # read first and then writes is refused at once, without waiting,
        # when another holds it. Writers queue for it first (sqlite_lock):
        # threads of this process whichever handle they use, then processes.
        with contextlib.ExitStack() as turn, self._tx.writer.using(_Context()) as session:
            turn.enter_context(lock)
            # The turn ends with SQLite's lock, at the commit. Closing the
            # connection comes after, and oslo.db yields to other green
            # threads there: holding on through it would keep them queued.
            event.listen(session, "after_commit", lambda _session: turn.close())
            # Other processes may share the file (scheduler workers share
            # the fallback copy): take the write lock first, waiting for
            # it, so that no read-then-write transaction is refused halfway.
            session.execute(delete(models.AppLock).where(models.AppLock.name == ""))
            yield session

    def _reader(self):
        return self._tx.reader.using(_Context())

    # -- application profiles -------------------------------------------

    @_retry_on_deadlock
    def import_profiles(self, records: Sequence[ProfileRecord]) -> ImportResult:
        """Create or update the profiles named by ``records``, all or none."""
        rows = [_profile_columns(record) for record in records]
        where = models.AppProfile.name.in_([r.name for r in records])
        with self._writer() as session:
            return _upsert(session, models.AppProfile, ("name",), rows, where)

    def list_profiles(self, names: Iterable[str] | None = None) -> list[ProfileRecord]:
        query = select(models.AppProfile).order_by(models.AppProfile.name)
        if names is not None:
            query = query.where(models.AppProfile.name.in_(list(names)))
        with self._reader() as session:
            return [_profile_from_row(row) for row in session.scalars(query)]

    def get_profile(self, name: str) -> ProfileRecord | None:
        found = self.list_profiles([name])
        return found[0] if found else None

    @_retry_on_deadlock
    def store_model(
        self, name: str, kind: str, data: bytes, versions: dict[str, str], report: str | None
    ) -> bool:
        """Store a fitted model under ``name``, replacing one there; True if it was new."""
        with self._writer() as session:
            row = session.get(models.FittedModel, name)
            if row is None:
                session.add(
                    models.FittedModel(
                        name=name,
                        kind=kind,
                        generation=1,
                        data=data,
                        versions=json.dumps(versions, sort_keys=True),
                        report=report,
                    )
                )
                return True
            row.kind, row.data, row.report = kind, data, report
            row.generation += 1
            row.versions = json.dumps(versions, sort_keys=True)
            return False

    def stored_model(self, name: str) -> StoredModel | None:
        with self._reader() as session:
            row = session.get(models.FittedModel, name)
            return None if row is None else _stored_from_row(row)

    def stored_model_stamp(self, name: str) -> tuple[str, int] | None:
        """(kind, generation) of the model stored as ``name``, without its bytes."""
        query = select(models.FittedModel.kind, models.FittedModel.generation).where(
            models.FittedModel.name == name
        )
        with self._reader() as session:
            row = session.execute(query).first()
        return None if row is None else (row.kind, row.generation)

    def stored_models(self) -> list[StoredModel]:
        query = select(models.FittedModel).order_by(models.FittedModel.name)
        with self._reader() as session:
            return [_stored_from_row(row) for row in session.scalars(query)]

    @_retry_on_deadlock
    def delete_profiles(self, names: Iterable[str]) -> int:
        with self._writer() as session:
            return session.execute(
                delete(models.AppProfile).where(models.AppProfile.name.in_(list(names)))
            ).rowcount

    # -- interference ----------------------------------------------------

    @_retry_on_deadlock
    def import_interferences(self, records: Sequence[InterferenceRecord]) -> ImportResult:
        """Create or update pairwise interference records, all or none."""
        rows = [_interference_columns(record) for record in records]
        where = models.AppInterference.app_a.in_(sorted({r.app_a for r in records}))
        keys = ("app_a", "app_b", "source")
        with self._writer() as session:
            return _upsert(session, models.AppInterference, keys, rows, where)

    def list_interferences(
        self, app_names: Iterable[str] | None = None
    ) -> list[InterferenceRecord]:
        """Records, optionally only those involving one of ``app_names``."""
        query = select(models.AppInterference).order_by(
            models.AppInterference.app_a,
            models.AppInterference.app_b,
            models.AppInterference.source,
        )
        if app_names is not None:
            names = list(app_names)
            query = query.where(
                models.AppInterference.app_a.in_(names) | models.AppInterference.app_b.in_(names)
            )
        with self._reader() as session:
            return [_interference_from_row(row) for row in session.scalars(query)]

    # -- the fallback copy (see hpc_nova_scheduler.scheduler.fallback) ----

    @_retry_on_deadlock
    def replace_reference(
        self, profiles: Sequence[ProfileRecord], interferences: Sequence[InterferenceRecord]
    ) -> None:
        """Make the profiles and interference records exactly these, at once."""
        with self._writer() as session:
            session.execute(delete(models.AppInterference))
            session.execute(delete(models.AppProfile))
            session.flush()
            for record in profiles:
                session.add(models.AppProfile(**_profile_columns(record)))
            for record in interferences:
                session.add(models.AppInterference(**_interference_columns(record)))

    @_retry_on_deadlock
    def replace_entitlements(self, shares: Mapping[str, float], latest: Generation | None) -> None:
        """Make the shares and the only generation exactly these (the fallback copy's).

        The generation keeps its number and its time, so that it expires in
        the copy when it would have in the database.
        """
        rows = _allocation_rows(latest.allocation) if latest is not None else []
        with self._writer() as session:
            session.execute(delete(models.FairshareShare))
            session.execute(delete(models.FairshareAllocation))
            session.execute(delete(models.FairshareGeneration))
            session.flush()
            for project, weight in shares.items():
                session.add(
                    models.FairshareShare(project=_project(project), weight=_weight(weight))
                )
            if latest is None:
                return
            session.add(
                models.FairshareGeneration(
                    generation=latest.number,
                    created_at=latest.created_at,
                    policy=latest.policy,
                    templates=json.dumps(latest.templates, sort_keys=True),
                )
            )
            session.flush()
            session.add_all(_allocation_models(latest.number, rows, latest.created_at))

    def has_placements(self) -> bool:
        """Whether any ``app_running`` row or live claim is here."""
        running = models.AppRunning.__table__
        claims = models.AppClaim.__table__
        with self._reader() as session:
            if session.execute(select(running.c.id).limit(1)).first() is not None:
                return True
            live = claims.c.expires_at >= timeutils.utcnow()
            return session.execute(select(claims.c.id).where(live).limit(1)).first() is not None

    def hand_over(
        self, receive: Callable[[list[RunningRecord], list[Claim]], None]
    ) -> tuple[int, int]:
        """Pass every row and live claim to ``receive``, then forget them.

        Forgotten only if ``receive`` returns, and only what it was given:
        rows and claims written meanwhile by other processes stay for the
        next hand-over. Claims are read before rows (a VM goes from its
        claim to its row, never back), so a VM may be handed over twice,
        once as each, but never missed.
        """
        running = models.AppRunning.__table__
        claims = models.AppClaim.__table__
        with self._writer() as session:
            taken_claims = [_claim_from_tuple(row) for row in session.execute(_live_claims_query())]
            rows = [
                _running_from_tuple(row) for row in session.execute(select(*_running_columns()))
            ]
            if not taken_claims and not rows:
                return 0, 0
            receive(rows, taken_claims)
            for chunk in _chunks([vm.instance_uuid for vm in rows]):
                session.execute(delete(running).where(running.c.instance_uuid.in_(chunk)))
            for chunk in _chunks(sorted({claim.claim_id for claim in taken_claims})):
                session.execute(delete(claims).where(claims.c.claim_id.in_(chunk)))
            # Expired claims stand for nobody.
            session.execute(delete(claims).where(claims.c.expires_at < timeutils.utcnow()))
        return len(rows), len(taken_claims)

    @_retry_on_deadlock
    def adopt(
        self, rows: Sequence[RunningRecord], claims: Sequence[Claim], *, ttl: float
    ) -> tuple[int, int]:
        """Take rows and claims handed over from the fallback copy.

        A row is added only for an instance that has none here: a row
        written here is newer than the copy's. A claim is added unless it
        is here already, and lives ``ttl`` seconds from now. Returns how
        many rows and claims were added.
        """
        running = models.AppRunning.__table__
        table = models.AppClaim.__table__
        with self._writer() as session:
            known: set[str] = set()
            for chunk in _chunks([vm.instance_uuid for vm in rows]):
                known.update(
                    session.scalars(
                        select(running.c.instance_uuid).where(running.c.instance_uuid.in_(chunk))
                    )
                )
            added = [vm for vm in rows if vm.instance_uuid not in known]
            added = list({vm.instance_uuid: vm for vm in added}.values())
            if added:
                _upsert_running(session, added)
            present = {
                (claim_id, host, nodename)
                for claim_id, host, nodename in session.execute(
                    select(table.c.claim_id, table.c.host, table.c.nodename).where(
                        table.c.claim_id.in_(sorted({c.claim_id for c in claims}) or [""])
                    )
                )
            }
            expires = timeutils.utcnow() + datetime.timedelta(seconds=ttl)
            new_claims = [c for c in claims if (c.claim_id, c.host, c.nodename) not in present]
            for claim in new_claims:
                session.add(_claim_row(claim, expires))
        return len(added), len(new_claims)

    # -- running applications --------------------------------------------

    @_retry_on_deadlock
    def record_running(self, vms: Sequence[RunningRecord]) -> None:
        """Insert or refresh ``app_running`` rows, keyed by instance."""
        with self._writer() as session:
            _upsert_running(session, vms)

    @_retry_on_deadlock
    def forget_running(self, instance_uuids: Iterable[str]) -> int:
        with self._writer() as session:
            return session.execute(
                delete(models.AppRunning).where(
                    models.AppRunning.instance_uuid.in_(list(instance_uuids))
                )
            ).rowcount

    def list_running(self, hosts: Iterable[str] | None = None) -> list[RunningRecord]:
        table = models.AppRunning.__table__
        query = select(*_running_columns()).order_by(table.c.host, table.c.instance_uuid)
        if hosts is not None:
            query = query.where(table.c.host.in_(list(hosts)))
        with self._reader() as session:
            return [_running_from_tuple(row) for row in session.execute(query)]

    def application_hosts(self, application_id: str) -> set[tuple[str, str | None]]:
        """(host, node) where an application runs or holds a live claim of VMs.

        A server group's later members are held to the topology domain its
        earlier ones took, even on hosts that are full by now and so are
        not among the candidates.
        """
        running = models.AppRunning.__table__
        claims = models.AppClaim.__table__
        with self._reader() as session:
            found = {
                (host, node)
                for host, node in session.execute(
                    select(running.c.host, running.c.nodename).where(
                        running.c.request_id == application_id
                    )
                )
            }
            found.update(
                (host, node)
                for host, node in session.execute(
                    select(claims.c.host, claims.c.nodename).where(
                        claims.c.application_id == application_id,
                        claims.c.vms > 0,
                        claims.c.expires_at >= timeutils.utcnow(),
                    )
                )
            )
        return found

    def running_for(
        self, hosts: Iterable[str], instance_uuids: Iterable[str]
    ) -> list[RunningRecord]:
        """Rows on any of ``hosts`` or for any of ``instance_uuids``.

        The scheduler asks this for every candidate host of every request,
        so it reads plain columns rather than ORM objects.
        """
        table = models.AppRunning.__table__
        columns = _running_columns()
        found: dict[str, RunningRecord] = {}
        with self._reader() as session:
            for chunk in _chunks(sorted(set(hosts))):
                for row in session.execute(select(*columns).where(table.c.host.in_(chunk))):
                    found[row[0]] = _running_from_tuple(row)
            missing = sorted(set(instance_uuids) - found.keys())
            for chunk in _chunks(missing):
                for row in session.execute(
                    select(*columns).where(table.c.instance_uuid.in_(chunk))
                ):
                    found[row[0]] = _running_from_tuple(row)
        return list(found.values())

    # -- claims -----------------------------------------------------------

    @oslo_db_api.wrap_db_retry(
        max_retries=5,
        retry_interval=0.05,
        exception_checker=lambda error: isinstance(error, db_exc.DBDuplicateEntry),
    )
    def _ensure_locks(self, names: Sequence[str]) -> None:
        # Lock rows are created once, outside the claiming transaction, so
        # that it only ever locks existing rows; two schedulers creating the
        # same row at once collide harmlessly and try again.
        with self._writer() as session:
            table = models.AppLock.__table__
            existing = set(session.scalars(select(table.c.name).where(table.c.name.in_(names))))
            for name in names:
                if name not in existing:
                    session.add(models.AppLock(name=name, generation=0))

    @staticmethod
    def _lock(session, names: Sequence[str]) -> None:
        """Take the ``app_locks`` rows ``names`` (made by :meth:`_ensure_locks`) until commit."""
        locks = models.AppLock.__table__
        if session.get_bind().dialect.name == "sqlite":
            # SQLite has no row locks: the first write of a transaction
            # takes the database's write lock, which serialises claims.
            session.execute(
                update(locks)
                .where(locks.c.name.in_(names))
                .values(generation=locks.c.generation + 1)
            )
        else:
            session.execute(
                select(locks.c.name)
                .where(locks.c.name.in_(names))
                .order_by(locks.c.name)
                .with_for_update()
            ).all()

    @_retry_on_deadlock
    def claim(
        self,
        claims: Sequence[Claim],
        check: Callable[[ClaimView], str | None],
        *,
        ttl: float,
        extra_locks: Sequence[str] = (),
        use_hosts: Sequence[str] | None = None,
    ) -> str | None:
        """Write ``claims`` if ``check`` finds nothing against them; else say why.

        In one transaction: lock the claims' hosts and their application
        read what runs and is claimed there now, ask
        ``check``, and write the claims only if it answers None. Two
        schedulers claiming the same host are thereby serialised, and the
        second one sees the first one's claim. ``ttl`` seconds from now the
        claims expire, in case their scheduler never comes back to them.

        Fair share adds the lock of the claim's platform (``extra_locks``,
        names from :func:`lock_name`) and asks for the cores in use on all
        of the platform's hosts (``use_hosts``, host names), so that two
        schedulers never spend one entitlement, or one idle core, twice.
        """
        if not claims:
            return None
        application_id = claims[0].application_id
        hosts = sorted({claim.host for claim in claims})
        names = sorted(
            {lock_name("host", claim.key) for claim in claims}
            | {lock_name("app", application_id)}
            | set(extra_locks)
        )
        self._ensure_locks(names)
        with self._writer() as session:
            self._lock(session, names)
            view = self._claim_view(session, hosts, application_id)
            if use_hosts is not None:
                view = dataclasses.replace(view, use=_cores_in_use(session, use_hosts))
            reason = check(view)
            if reason is not None:
                return reason
            expires = timeutils.utcnow() + datetime.timedelta(seconds=ttl)
            for claim in claims:
                session.add(_claim_row(claim, expires))
        return None

    @staticmethod
    def _claim_view(session, hosts: Sequence[str], application_id: str) -> ClaimView:
        # Claims are read before rows. A VM goes from its claim to its row in
        # one transaction, never back, and on PostgreSQL each statement sees
        # what was committed when it started: read the other way round, a
        # VM recorded between the two reads would be in neither.
        claims = models.AppClaim.__table__
        claimed = [
            _claim_from_tuple(row)
            for row in session.execute(
                _live_claims_query().where(
                    claims.c.host.in_(list(hosts)) | (claims.c.application_id == application_id)
                )
            )
        ]
        running_table = models.AppRunning.__table__
        found: dict[str, RunningRecord] = {}
        for chunk in _chunks(hosts):
            for row in session.execute(
                select(*_running_columns()).where(running_table.c.host.in_(chunk))
            ):
                found[row[0]] = _running_from_tuple(row)
        for row in session.execute(
            select(*_running_columns()).where(running_table.c.request_id == application_id)
        ):
            found[row[0]] = _running_from_tuple(row)
        return ClaimView(list(found.values()), claimed)

    def live_claims(self, hosts: Iterable[str] | None = None) -> list[Claim]:
        """Claims not yet expired, on ``hosts`` if given."""
        with self._reader() as session:
            claims = [_claim_from_tuple(row) for row in session.execute(_live_claims_query())]
        if hosts is None:
            return claims
        # Live claims are those of requests being scheduled right now: few,
        # so they are read whole rather than through a list of every host.
        wanted = set(hosts)
        return [claim for claim in claims if claim.host in wanted]

    def of_class(self, app_class: AppClass) -> tuple[list[RunningRecord], list[Claim]]:
        """Every row and live claim of one class (ExtremeHPC ones are few).

        Claims are read first, in the same transaction: a VM moves from its
        claim to its row, never back, so it is never missed. Every request
        Nova schedules without HPC extra specs makes this read, so it goes
        through a plain connection and statements built once.
        """
        claims_query, rows_query = _of_class_queries()
        parameters = {"app_class": app_class.value, "now": timeutils.utcnow()}
        with self._tx.reader.connection.using(_Context()) as connection:
            claimed = [
                _claim_from_tuple(row) for row in connection.execute(claims_query, parameters)
            ]
            rows = [_running_from_tuple(row) for row in connection.execute(rows_query, parameters)]
        return rows, claimed

    @_retry_on_deadlock
    def record_placed(self, vm: RunningRecord, claim_id: str) -> None:
        """Record a VM the claim ``claim_id`` planned, and take it off the claim.

        Both in one transaction, so that a reader counts the VM exactly
        once: as the claim's or as the row.
        """
        claims = models.AppClaim.__table__
        with self._writer() as session:
            _upsert_running(session, [dataclasses.replace(vm, claim_id=claim_id)])
            session.flush()
            mine = (
                (claims.c.claim_id == claim_id)
                & (claims.c.host == vm.host)
                & (claims.c.nodename == (vm.nodename or vm.host))
            )
            _lend(session, vm, claim_id, mine)
            session.execute(
                update(claims).where(mine & (claims.c.vms > 0)).values(vms=claims.c.vms - 1)
            )
            session.execute(
                delete(claims).where(mine & (claims.c.vms <= 0) & (claims.c.spare <= 0))
            )

    @_retry_on_deadlock
    def release_claims(self, claim_ids: Iterable[str]) -> int:
        """End claims, planned VMs and spare slots alike."""
        ids = sorted(set(claim_ids))
        if not ids:
            return 0
        claims = models.AppClaim.__table__
        with self._writer() as session:
            return session.execute(delete(claims).where(claims.c.claim_id.in_(ids))).rowcount

    @_retry_on_deadlock
    def expire_claims(self) -> int:
        """Delete claims past their expiry (their scheduler went away)."""
        claims = models.AppClaim.__table__
        expired = claims.c.expires_at < timeutils.utcnow()
        # Looked for first: on SQLite even a DELETE of nothing takes the
        # database's write lock, and every request passes here.
        with self._reader() as session:
            if session.execute(select(claims.c.id).where(expired).limit(1)).first() is None:
                return 0
        with self._writer() as session:
            return session.execute(delete(claims).where(expired)).rowcount

    def open_claims(self) -> dict[str, tuple[str | None, list[str]]]:
        """Each live claim's cell and the instances known to belong to it.

        The first instance of the claim's request, and the VMs it placed
        (which carry the claim's id in ``app_running``).
        """
        claims = models.AppClaim.__table__
        running = models.AppRunning.__table__
        with self._reader() as session:
            found: dict[str, tuple[str | None, list[str]]] = {}
            for claim_id, instance_uuid, cell_uuid in session.execute(
                select(claims.c.claim_id, claims.c.instance_uuid, claims.c.cell_uuid)
                .where(claims.c.expires_at >= timeutils.utcnow())
                .distinct()
            ):
                found.setdefault(claim_id, (cell_uuid, [instance_uuid]))
            for chunk in _chunks(sorted(found)):
                for uuid, claim_id in session.execute(
                    select(running.c.instance_uuid, running.c.claim_id).where(
                        running.c.claim_id.in_(chunk)
                    )
                ):
                    if uuid not in found[claim_id][1]:
                        found[claim_id][1].append(uuid)
            return found

    # -- seed 002's fair share --------------------------------------------

    @_retry_on_deadlock
    def set_share(self, project: str, weight: float) -> None:
        """Give ``project`` the share weight ``weight`` (> 0), replacing its old one."""
        self._set_per_project(models.FairshareShare, "weight", _project(project), _weight(weight))

    def shares(self) -> dict[str, float]:
        """Each project's share weight, by project name."""
        return self._per_project(models.FairshareShare.weight)

    @_retry_on_deadlock
    def set_demand(self, project: str, cores: int, application: str | None = None) -> None:
        """Record that ``project`` asks for ``cores`` cores (>= 0) now, for ``application``."""
        project, cores = _project(project), _cores(cores)
        if application is not None:
            application = _name(application, "application")
        with self._writer() as session:
            row = session.get(models.FairshareDemand, project)
            if row is None:
                session.add(
                    models.FairshareDemand(project=project, cores=cores, application=application)
                )
            else:
                row.cores, row.application = cores, application

    def demand_applications(self) -> dict[str, str]:
        """The application each declared demand is for, where one was named."""
        table = models.FairshareDemand
        query = select(table.project, table.application).where(table.application.is_not(None))
        with self._reader() as session:
            return dict(sorted(session.execute(query).tuples()))

    def demand(self) -> dict[str, int]:
        """Each project's demand in cores, by project name."""
        return self._per_project(models.FairshareDemand.cores)

    def _set_per_project(self, model: type, field: str, project: str, value: object) -> None:
        """Set ``field`` of ``project``'s row of a one-value-per-project table."""
        with self._writer() as session:
            row = session.get(model, project)
            if row is None:
                session.add(model(project=project, **{field: value}))
            elif getattr(row, field) != value:
                setattr(row, field, value)

    def _per_project(self, column) -> dict:
        """project -> ``column`` of a one-value-per-project table, sorted by project."""
        query = select(column.class_.project, column)
        with self._reader() as session:
            return dict(sorted(session.execute(query).tuples()))

    @_retry_on_deadlock
    def clear_demand(self, project: str | None = None) -> int:
        """Forget ``project``'s demand, or every project's; the rows removed."""
        query = delete(models.FairshareDemand)
        if project is not None:
            query = query.where(models.FairshareDemand.project == _project(project))
        with self._writer() as session:
            return session.execute(query).rowcount

    @_retry_on_deadlock
    def import_runs(self, runs: Sequence, source: str = "import") -> RunImportResult:
        """Make ``runs`` the ``source`` runs of every application they name, all or none.

        ``runs`` are :class:`~hpc_nova_scheduler.fairshare.runs.TaskRun`-like
        (application, platform, runtime_s, corunners). An import replaces
        every ``source`` row of the applications it names and leaves other
        applications and sources alone, so importing the same runs twice
        changes nothing; rows are compared as a multiset, and only those that
        differ are removed or added.
        """
        if source not in RUN_SOURCES:
            raise ProfileError("source", f"{source!r} is not one of {', '.join(RUN_SOURCES)}")
        wanted = Counter(_run_key(run) for run in runs)
        applications = sorted({key[0] for key in wanted})
        table = models.FairshareRun
        result = RunImportResult()
        with self._writer() as session:
            existing: dict[tuple, list[int]] = {}
            for chunk in _chunks(applications):
                query = select(
                    table.id, table.application, table.platform, table.corunners, table.runtime_s
                ).where(table.source == source, table.application.in_(chunk))
                for row_id, *key in session.execute(query):
                    existing.setdefault(tuple(key), []).append(row_id)
            stale: list[int] = []
            for key, ids in existing.items():
                keep = min(len(ids), wanted.get(key, 0))
                result.unchanged += keep
                stale.extend(sorted(ids)[keep:])
            for key, count in wanted.items():
                for _ in range(count - len(existing.get(key, ()))):
                    application, platform, corunners, runtime = key
                    session.add(
                        table(
                            application=application,
                            platform=platform,
                            corunners=corunners,
                            runtime_s=runtime,
                            source=source,
                        )
                    )
                    result.added += 1
            for chunk in _chunks(stale):
                session.execute(delete(table).where(table.id.in_(chunk)))
            result.removed = len(stale)
        return result

    def runs(self, source: str | None = None) -> list[StoredRun]:
        """The stored task runs (of ``source`` only, if given), in a stable order."""
        table = models.FairshareRun
        query = select(table).order_by(table.id)
        if source is not None:
            query = query.where(table.source == source)
        with self._reader() as session:
            found = [
                StoredRun(
                    row.application,
                    row.platform,
                    row.runtime_s,
                    tuple(row.corunners.split("+")) if row.corunners else (),
                    row.source,
                )
                for row in session.scalars(query)
            ]
        # Sorted here, not in SQL: backends collate names differently.
        return sorted(found, key=lambda r: (r.application, r.platform, r.corunners, r.source))

    def write_generation(
        self,
        policy: str,
        allocation: Mapping[str, Mapping[str, int]],
        templates: Mapping[str, object],
    ) -> int:
        """Store a new generation of entitlements and node templates; its number.

        The number is the newest one + 1 (1 for the first), and the
        generation and its allocation rows (those with cores > 0) are
        written in one transaction. The primary key keeps two writers from
        both taking a number: the loser's insert fails, and it tries once
        more with the next one.
        """
        policy = _name(policy, "policy")
        rows = _allocation_rows(allocation)
        try:
            text = json.dumps(dict(templates), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise ProfileError("templates", f"not JSON: {error}") from None
        self._ensure_locks([GENERATION_LOCK])
        try:
            return self._write_generation(policy, rows, text)
        except db_exc.DBDuplicateEntry:
            LOG.debug("generation number taken by another writer, trying the next one")
            return self._write_generation(policy, rows, text)

    @_retry_on_deadlock
    def _write_generation(self, policy: str, rows: list[tuple[str, str, int]], text: str) -> int:
        generations = models.FairshareGeneration
        with self._writer() as session:
            if session.get_bind().dialect.name != "sqlite":
                # Writers queue on a lock row, so that the retry after a
                # collision does not collide again with the next write of
                # the same writer; SQLite's _writer already serialises them.
                locks = models.AppLock.__table__
                session.execute(
                    select(locks.c.name).where(locks.c.name == GENERATION_LOCK).with_for_update()
                ).all()
            newest = session.execute(select(func.max(generations.generation))).scalar()
            number = (newest or 0) + 1
            now = timeutils.utcnow()
            session.add(
                generations(generation=number, created_at=now, policy=policy, templates=text)
            )
            # The generation first: a duplicate number fails here, before
            # any allocation row is written.
            session.flush()
            session.add_all(_allocation_models(number, rows, now))
        return number

    def latest_generation(self) -> Generation | None:
        """The newest generation with its entitlements, None before the first."""
        generations = models.FairshareGeneration
        allocations = models.FairshareAllocation
        with self._reader() as session:
            row = session.scalars(
                select(generations).order_by(generations.generation.desc()).limit(1)
            ).first()
            if row is None:
                return None
            allocation: dict[str, dict[str, int]] = {}
            for project, platform, cores in sorted(
                session.execute(
                    select(allocations.project, allocations.platform, allocations.cores).where(
                        allocations.generation == row.generation
                    )
                ).tuples()
            ):
                allocation.setdefault(project, {})[platform] = cores
            return Generation(
                row.generation, row.created_at, row.policy, allocation, json.loads(row.templates)
            )

    @_retry_on_deadlock
    def prune_generations(self, keep: int) -> int:
        """Keep the newest ``keep`` (>= 1) generations, delete older ones; how many went."""
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ProfileError("keep", f"{keep!r} is not an integer >= 1")
        generations = models.FairshareGeneration
        with self._writer() as session:
            oldest_kept = session.execute(
                select(generations.generation)
                .order_by(generations.generation.desc())
                .offset(keep - 1)
                .limit(1)
            ).scalar()
            if oldest_kept is None:
                return 0
            session.execute(
                delete(models.FairshareAllocation).where(
                    models.FairshareAllocation.generation < oldest_kept
                )
            )
            return session.execute(
                delete(generations).where(generations.generation < oldest_kept)
            ).rowcount

    @_retry_on_deadlock
    def set_usage(self, usage: Mapping[tuple[str, str], float], at: datetime.datetime) -> None:
        """Replace the decayed usage of every (project, platform) given, as of ``at``.

        Usage is >= 0 and finite; pairs not given keep their rows.
        """
        values = sorted(_usage_value(key, value) for key, value in usage.items())
        at = _naive_utc(at)
        if not values:
            return
        table = models.FairshareUsage
        with self._writer() as session:
            for project, platform, number in values:
                row = session.get(table, (project, platform))
                if row is None:
                    session.add(
                        table(project=project, platform=platform, usage=number, updated_at=at)
                    )
                else:
                    # An explicit UPDATE: set on the row, an unchanged
                    # updated_at would give way to the column's onupdate (now).
                    session.execute(
                        update(table)
                        .where(table.project == project, table.platform == platform)
                        .values(usage=number, updated_at=at)
                    )

    def usage(self) -> dict[tuple[str, str], float]:
        """Each project's decayed usage per platform, by (project, platform)."""
        table = models.FairshareUsage
        query = select(table.project, table.platform, table.usage)
        with self._reader() as session:
            return {
                (project, platform): value
                for project, platform, value in sorted(session.execute(query).tuples())
            }

    # -- fair share inside nova-scheduler -----------------------------------

    def cores_in_use(self, hosts: Iterable[str] | None = None) -> dict[str, dict[str, int]]:
        """project -> host key -> cores recorded or claimed (:func:`_cores_in_use`)."""
        with self._reader() as session:
            return _cores_in_use(session, None if hosts is None else list(hosts))

    @_retry_on_deadlock
    def set_cores(self, cores: Mapping[str, int]) -> int:
        """Set the cores of recorded VMs by instance (the sweep fills in old rows)."""
        table = models.AppRunning.__table__
        changed = 0
        with self._writer() as session:
            for uuid, value in sorted(cores.items()):
                changed += session.execute(
                    update(table)
                    .where(table.c.instance_uuid == uuid, table.c.cores != _cores(value))
                    .values(cores=value)
                ).rowcount
        return changed

    @oslo_db_api.wrap_db_retry(
        max_retries=3,
        retry_interval=0.05,
        exception_checker=lambda error: isinstance(error, db_exc.DBDuplicateEntry),
    )
    @_retry_on_deadlock
    def take_lease(self, holder: str, ttl: float, name: str = ALLOCATOR_LEASE) -> Lease | None:
        """Hold the lease ``name`` for ``ttl`` more seconds; None if another holds it.

        The lease goes to whoever asks once its holder has let it expire: a
        scheduler worker that died loses it ``ttl`` seconds after its last
        renewal.
        """
        holder = _name(holder, "holder")
        table = models.FairshareLease
        now = timeutils.utcnow()
        expires = now + datetime.timedelta(seconds=ttl)
        with self._writer() as session:
            query = select(table).where(table.name == name)
            if session.get_bind().dialect.name != "sqlite":
                query = query.with_for_update()
            row = session.scalars(query).first()
            if row is None:
                session.add(table(name=name, holder=holder, expires_at=expires))
                session.flush()
                return Lease(holder, expires, None, None)
            if row.holder != holder and row.expires_at >= now:
                return None
            row.holder, row.expires_at = holder, expires
            return Lease(holder, expires, row.accounted_at, row.digest)

    def lease(self, name: str = ALLOCATOR_LEASE) -> Lease | None:
        table = models.FairshareLease
        with self._reader() as session:
            row = session.get(table, name)
            if row is None:
                return None
            return Lease(row.holder, row.expires_at, row.accounted_at, row.digest)

    @_retry_on_deadlock
    def release_lease(self, holder: str, name: str = ALLOCATOR_LEASE) -> bool:
        """Let the lease go at once (a worker that stops); False if ``holder`` did not hold it."""
        table = models.FairshareLease
        with self._writer() as session:
            return bool(
                session.execute(
                    update(table)
                    .where(table.name == name, table.holder == holder)
                    .values(expires_at=timeutils.utcnow() - datetime.timedelta(seconds=1))
                ).rowcount
            )

    @_retry_on_deadlock
    def mark_lease(
        self,
        holder: str,
        *,
        accounted_at: datetime.datetime | None = None,
        digest: str | None = None,
        name: str = ALLOCATOR_LEASE,
    ) -> bool:
        """Record, as the lease's holder, when usage was charged and the inputs' digest.

        False (and nothing written) when ``holder`` no longer holds the lease.
        """
        table = models.FairshareLease
        values: dict = {}
        if accounted_at is not None:
            values["accounted_at"] = _naive_utc(accounted_at)
        if digest is not None:
            values["digest"] = digest
        if not values:
            return True
        with self._writer() as session:
            return bool(
                session.execute(
                    update(table).where(table.name == name, table.holder == holder).values(**values)
                ).rowcount
            )

    @_retry_on_deadlock
    def forget_digest(self, name: str = ALLOCATOR_LEASE) -> None:
        """Make the allocator run at its holder's next look (shares or runs changed)."""
        table = models.FairshareLease
        with self._writer() as session:
            session.execute(update(table).where(table.name == name).values(digest=None))

    def record_refusal(
        self,
        project: str,
        application: str | None,
        cores: int,
        topology_level: str | None = None,
    ) -> None:
        """A request of ``project`` was refused for its entitlement."""
        with self._writer() as session:
            session.add(
                models.FairshareRefusal(
                    project=_project(project),
                    application=application,
                    cores=_cores(cores),
                    created_at=timeutils.utcnow(),
                    topology_level=topology_level,
                )
            )

    def refusals(self, since: datetime.datetime) -> list[Refusal]:
        """Refusals for entitlement at or after ``since``, oldest first."""
        table = models.FairshareRefusal
        query = (
            select(
                table.project,
                table.application,
                table.cores,
                table.created_at,
                table.topology_level,
            )
            .where(table.created_at >= _naive_utc(since))
            .order_by(table.created_at, table.id)
        )
        with self._reader() as session:
            return [Refusal(*row) for row in session.execute(query).tuples()]

    @_retry_on_deadlock
    def prune_refusals(self, before: datetime.datetime) -> int:
        table = models.FairshareRefusal
        with self._writer() as session:
            return session.execute(
                delete(table).where(table.created_at < _naive_utc(before))
            ).rowcount

    # -- hpc-scheduler-agent's task record ----------------------------------

    @_retry_on_deadlock
    def record_task(self, run: TaskRun) -> None:
        """Rewrite the row of ``run``'s task and agent; prune rows a day old."""
        table = models.AgentTask
        values = {
            "started_at": _naive_utc(run.started_at),
            "finished_at": _naive_utc(run.finished_at),
            "interval_s": run.interval_s,
            "error": run.error,
        }
        with self._writer() as session:
            # One agent writes its own rows only: no other writer races this one.
            row = session.get(table, (_name(run.task, "task"), _name(run.agent, "agent")))
            if row is None:
                session.add(table(task=run.task, agent=run.agent, **values))
            else:
                _apply(row, values)
            session.execute(
                delete(table).where(table.finished_at < values["finished_at"] - TASK_RUNS_KEPT)
            )

    def task_runs(self) -> list[TaskRun]:
        """Every agent's last run of every task, by task, the newest first."""
        table = models.AgentTask
        with self._reader() as session:
            rows = session.scalars(
                select(table).order_by(table.task, table.finished_at.desc(), table.agent)
            ).all()
            return [
                TaskRun(r.task, r.agent, r.started_at, r.finished_at, r.interval_s, r.error)
                for r in rows
            ]


class ConfiguredDatabase:
    """The plugin database of ``[hpc_scheduler] connection`` as set now.

    Opened at first use and opened again when the option changes (a service
    reloaded its configuration); shared by the threads of one process.
    """

    def __init__(self, conf: cfg.ConfigOpts = hpc_conf.CONF) -> None:
        self._conf = conf
        self._database: Database | None = None
        self._url: str | None = None
        self._lock = threading.Lock()

    def __call__(self) -> Database:
        with self._lock:
            url = self._conf[hpc_conf.GROUP_NAME].connection
            if self._database is None or self._url != url:
                if self._database is not None:
                    self._database.dispose()
                self._database = None
                self._url = url
                self._database = Database.from_conf(self._conf)
            return self._database

    @property
    def current(self) -> Database | None:
        """The database opened last (None: none yet)."""
        with self._lock:
            return self._database

    def dispose(self) -> None:
        """Close the connections (the database opens again at next use)."""
        with self._lock:
            database, self._database, self._url = self._database, None, None
        if database is not None:
            database.dispose()
