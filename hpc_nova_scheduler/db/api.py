"""Access to the plugin database through oslo.db's enginefacade.

:class:`Database` is the one way in: the command line builds one from a URL,
the scheduler from ``[hpc_scheduler]`` options. Every operation runs in its
own transaction; bulk imports are a single transaction, so a failure leaves
the database as it was.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Sequence

from oslo_config import cfg
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_log import log as logging
from sqlalchemy import delete, select
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord
from hpc_nova_scheduler.db import migration, models

LOG = logging.getLogger(__name__)

# Concurrent importers or schedulers may race on the same rows; oslo.db
# turns MariaDB/PostgreSQL deadlocks into DBDeadlock, and the whole
# transaction is simply run again.
_retry_on_deadlock = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True, retry_interval=0.1, inc_retry_interval=True
)


class DatabaseUnavailable(Exception):
    """The plugin database is not configured or cannot be reached."""


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
class RunningVM:
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


_CLASSES = {member.value: member for member in AppClass}


def _running_columns() -> tuple:
    table = models.AppRunning.__table__
    return (
        table.c.instance_uuid,
        table.c.host,
        table.c.app_class,
        table.c.cache_score,
        table.c.app_name,
        table.c.nodename,
        table.c.request_id,
        table.c.project_id,
        table.c.created_at,
    )


def _running_from_tuple(row) -> RunningVM:
    uuid, host, app_class, cache_score, app_name, nodename, request_id, project_id, created = row
    return RunningVM(
        instance_uuid=uuid,
        host=host,
        app_class=_CLASSES.get(app_class) or AppClass.parse(app_class),
        cache_score=cache_score,
        app_name=app_name,
        nodename=nodename,
        request_id=request_id,
        project_id=project_id,
        placed_at=created,
    )


def _chunks(values: Sequence[str], size: int = 500) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


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
    )


def _profile_columns(record: ProfileRecord) -> dict:
    return {
        "app_class": record.app_class.value,
        "cache_score": record.cache_score,
        "sllc_score": record.sllc_score,
        "dram_score": record.dram_score,
        "net_score": record.net_score,
        "solo_runtime": record.solo_runtime,
        "counters": dict(record.counters) or None,
        "description": record.description,
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


def _apply(row: object, columns: dict) -> bool:
    changed = False
    for name, value in columns.items():
        current = getattr(row, name)
        if name == "counters":
            current = current or None
        if current != value:
            setattr(row, name, value)
            changed = True
    return changed


class Database:
    """The plugin database at one URL."""

    def __init__(self, url: str | None, *, max_retries: int = 0, retry_interval: int = 1) -> None:
        if not url:
            raise DatabaseUnavailable(
                f"no database configured: set [{hpc_conf.GROUP_NAME}] connection "
                "or pass --connection"
            )
        self.url = url
        self._tx = enginefacade.transaction_context()
        self._tx.configure(
            connection=url,
            max_retries=max_retries,
            retry_interval=retry_interval,
            sqlite_fk=True,
        )

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

    def _writer(self):
        return self._tx.writer.using(_Context())

    def _reader(self):
        return self._tx.reader.using(_Context())

    # -- application profiles -------------------------------------------

    @_retry_on_deadlock
    def import_profiles(self, records: Sequence[ProfileRecord]) -> ImportResult:
        """Create or update the profiles named by ``records``, all or none."""
        result = ImportResult()
        with self._writer() as session:
            existing = (
                {
                    row.name: row
                    for row in session.scalars(
                        select(models.AppProfile).where(
                            models.AppProfile.name.in_([r.name for r in records])
                        )
                    )
                }
                if records
                else {}
            )
            for record in records:
                columns = _profile_columns(record)
                row = existing.get(record.name)
                if row is None:
                    session.add(models.AppProfile(name=record.name, **columns))
                    result.created += 1
                elif _apply(row, columns):
                    result.updated += 1
                else:
                    result.unchanged += 1
        return result

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
    def delete_profiles(self, names: Iterable[str]) -> int:
        with self._writer() as session:
            return session.execute(
                delete(models.AppProfile).where(models.AppProfile.name.in_(list(names)))
            ).rowcount

    # -- interference ----------------------------------------------------

    @_retry_on_deadlock
    def import_interferences(self, records: Sequence[InterferenceRecord]) -> ImportResult:
        """Create or update pairwise interference records, all or none."""
        result = ImportResult()
        with self._writer() as session:
            names = sorted({r.app_a for r in records})
            existing = (
                {
                    (row.app_a, row.app_b, row.source): row
                    for row in session.scalars(
                        select(models.AppInterference).where(
                            models.AppInterference.app_a.in_(names)
                        )
                    )
                }
                if records
                else {}
            )
            for record in records:
                columns = {
                    "slowdown_a": record.slowdown_a,
                    "slowdown_b": record.slowdown_b,
                    "measured_at": record.measured_at,
                }
                row = existing.get(record.key)
                if row is None:
                    session.add(
                        models.AppInterference(
                            app_a=record.app_a,
                            app_b=record.app_b,
                            source=record.source,
                            **columns,
                        )
                    )
                    result.created += 1
                elif _apply(row, columns):
                    result.updated += 1
                else:
                    result.unchanged += 1
        return result

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

    # -- running applications --------------------------------------------

    @_retry_on_deadlock
    def record_running(self, vms: Sequence[RunningVM]) -> None:
        """Insert or refresh ``app_running`` rows, keyed by instance."""
        with self._writer() as session:
            existing = (
                {
                    row.instance_uuid: row
                    for row in session.scalars(
                        select(models.AppRunning).where(
                            models.AppRunning.instance_uuid.in_([vm.instance_uuid for vm in vms])
                        )
                    )
                }
                if vms
                else {}
            )
            for vm in vms:
                columns = {
                    "host": vm.host,
                    "nodename": vm.nodename,
                    "app_name": vm.app_name,
                    "app_class": vm.app_class.value,
                    "cache_score": vm.cache_score,
                    "request_id": vm.request_id,
                    "project_id": vm.project_id,
                }
                row = existing.get(vm.instance_uuid)
                if row is None:
                    session.add(models.AppRunning(instance_uuid=vm.instance_uuid, **columns))
                else:
                    _apply(row, columns)

    @_retry_on_deadlock
    def forget_running(self, instance_uuids: Iterable[str]) -> int:
        with self._writer() as session:
            return session.execute(
                delete(models.AppRunning).where(
                    models.AppRunning.instance_uuid.in_(list(instance_uuids))
                )
            ).rowcount

    def list_running(self, hosts: Iterable[str] | None = None) -> list[RunningVM]:
        table = models.AppRunning.__table__
        query = select(*_running_columns()).order_by(table.c.host, table.c.instance_uuid)
        if hosts is not None:
            query = query.where(table.c.host.in_(list(hosts)))
        with self._reader() as session:
            return [_running_from_tuple(row) for row in session.execute(query)]

    def running_of_class(self, app_class: AppClass) -> list[RunningVM]:
        """Every row of one application class (ExtremeHPC rows are few)."""
        table = models.AppRunning.__table__
        with self._reader() as session:
            return [
                _running_from_tuple(row)
                for row in session.execute(
                    select(*_running_columns()).where(table.c.app_class == app_class.value)
                )
            ]

    def running_for(self, hosts: Iterable[str], instance_uuids: Iterable[str]) -> list[RunningVM]:
        """Rows on any of ``hosts`` or for any of ``instance_uuids``.

        The scheduler asks this for every candidate host of every request,
        so it reads plain columns rather than ORM objects.
        """
        table = models.AppRunning.__table__
        columns = _running_columns()
        found: dict[str, RunningVM] = {}
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
