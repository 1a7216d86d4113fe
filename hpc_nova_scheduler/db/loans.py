"""Loans and reclaims in the plugin database (issue 45).

A **loan** is a VM that may be taken back: placed beyond its project's
entitlement under ``borrow``, or of a preemptible flavor. Its claim says so
(``app_claims.loan``); when the VM is recorded, :func:`lend` copies that
into ``fairshare_loans`` in the same transaction. A loan lives as long as
its VM's ``app_running`` row: :meth:`LoanStore.loans` reads only those
with one, and :meth:`LoanStore.prune_loans` drops the rest.

A **reclaim** is one victim taken back, from request to outcome
(``fairshare_reclaims``). :meth:`LoanStore.request_reclaims` writes new
ones under the ``fairshare:reclaim`` lock, so that two agents (or an agent
and a command) never request the same VM twice.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Sequence

from oslo_utils import timeutils
from sqlalchemy import delete, exists, select, update

from hpc_nova_scheduler.db import models

#: Reclaim states.
REQUESTED = "requested"
ACTED = "acted"
FAILED = "failed"
CANCELLED = "cancelled"
RESTARTED = "restarted"
#: States of a reclaim whose victim has not been dealt with for good.
OPEN_STATES = (REQUESTED, ACTED)
#: States of a reclaim whose cores cover its beneficiary's demand while its
#: victim still counts: a failed one too, so that no second victim is taken
#: for the same demand (the operator acts on it).
COVERING_STATES = (REQUESTED, ACTED, FAILED)
STATES = (REQUESTED, ACTED, FAILED, CANCELLED, RESTARTED)

#: The lock row of reclaim requests.
RECLAIM_LOCK = "fairshare:reclaim"


def _naive(at: datetime.datetime) -> datetime.datetime:
    return timeutils.normalize_time(at)


@dataclasses.dataclass(frozen=True)
class LoanRecord:
    """One row of ``fairshare_loans``, with where its VM runs."""

    instance_uuid: str
    project: str
    platform: str
    cores: int
    kind: str
    placed_at: datetime.datetime
    over_by: int
    stopped: bool
    host: str
    nodename: str | None

    @property
    def key(self) -> str:
        from hpc_nova_scheduler.core.holders import host_key

        return host_key(self.host, self.nodename)


@dataclasses.dataclass(frozen=True)
class NewReclaim:
    """A reclaim to request: what the decision chose, and how it will be acted on."""

    instance_uuid: str
    project: str
    platform: str
    cores: int
    kind: str
    beneficiary: str
    reason: str


@dataclasses.dataclass(frozen=True)
class ReclaimRecord:
    """One row of ``fairshare_reclaims``."""

    id: int
    instance_uuid: str
    project: str
    platform: str
    cores: int
    kind: str
    beneficiary: str
    reason: str
    mode: str
    state: str
    requested_at: datetime.datetime
    act_after: datetime.datetime
    acted_at: datetime.datetime | None
    attempts: int
    error: str | None
    #: When the victim's server got ``hpc:reclaim_at`` (None: not yet).
    marked_at: datetime.datetime | None = None

    @property
    def open(self) -> bool:
        return self.state in OPEN_STATES


def lend(session, vm, claim_id: str, mine) -> None:
    """Copy the loan of ``vm``'s claim row (``mine``) into ``fairshare_loans``."""
    claims = models.AppClaim.__table__
    row = session.execute(
        select(claims.c.loan, claims.c.loan_platform, claims.c.loan_over, claims.c.project_id)
        .where(mine)
        .limit(1)
    ).first()
    if row is None or row.loan is None or not row.loan_platform:
        return
    loans = models.FairshareLoan.__table__
    if session.execute(
        select(loans.c.instance_uuid).where(loans.c.instance_uuid == vm.instance_uuid)
    ).first():
        return
    session.execute(
        loans.insert().values(
            instance_uuid=vm.instance_uuid,
            project=vm.project_id or row.project_id,
            platform=row.loan_platform,
            cores=int(vm.cores),
            kind=row.loan,
            placed_at=timeutils.utcnow(),
            over_by=int(row.loan_over or 0),
            stopped=0,
        )
    )


def _reclaim_from_row(row: models.FairshareReclaim) -> ReclaimRecord:
    return ReclaimRecord(
        row.id,
        row.instance_uuid,
        row.project,
        row.platform,
        row.cores,
        row.kind,
        row.beneficiary,
        row.reason,
        row.mode,
        row.state,
        row.requested_at,
        row.act_after,
        row.acted_at,
        row.attempts,
        row.error,
        row.marked_at,
    )


class LoanStore:
    """The :class:`~.api.Database` methods of loans and reclaims (a mixin)."""

    def loans(self) -> list[LoanRecord]:
        """Every loan whose VM is recorded, oldest first."""
        loans = models.FairshareLoan.__table__
        running = models.AppRunning.__table__
        query = (
            select(
                loans.c.instance_uuid,
                loans.c.project,
                loans.c.platform,
                loans.c.cores,
                loans.c.kind,
                loans.c.placed_at,
                loans.c.over_by,
                loans.c.stopped,
                running.c.host,
                running.c.nodename,
            )
            .select_from(loans.join(running, running.c.instance_uuid == loans.c.instance_uuid))
            .order_by(loans.c.placed_at, loans.c.instance_uuid)
        )
        with self._reader() as session:
            return [
                LoanRecord(*row[:7], bool(row[7]), *row[8:])
                for row in session.execute(query).tuples()
            ]

    def add_loan(self, loan: LoanRecord) -> None:
        """Record a loan directly (adoption of a VM placed before, tests)."""
        with self._writer() as session:
            session.merge(
                models.FairshareLoan(
                    instance_uuid=loan.instance_uuid,
                    project=loan.project,
                    platform=loan.platform,
                    cores=int(loan.cores),
                    kind=loan.kind,
                    placed_at=_naive(loan.placed_at),
                    over_by=int(loan.over_by),
                    stopped=int(loan.stopped),
                )
            )

    def prune_loans(self) -> int:
        """Drop loans whose VM is no longer recorded."""
        loans = models.FairshareLoan.__table__
        running = models.AppRunning.__table__
        orphan = ~exists().where(running.c.instance_uuid == loans.c.instance_uuid)
        with self._writer() as session:
            return session.execute(delete(loans).where(orphan)).rowcount

    def set_stopped(self, instance_uuid: str, stopped: bool) -> None:
        loans = models.FairshareLoan.__table__
        with self._writer() as session:
            session.execute(
                update(loans)
                .where(loans.c.instance_uuid == instance_uuid)
                .values(stopped=int(stopped))
            )

    def request_reclaims(
        self,
        reclaims: Sequence[NewReclaim],
        mode: str,
        grace: float,
        now: datetime.datetime | None = None,
    ) -> list[ReclaimRecord]:
        """Write ``reclaims`` as requested, skipping VMs with an open reclaim already."""
        if not reclaims:
            return []
        now = _naive(now or timeutils.utcnow())
        table = models.FairshareReclaim
        self._ensure_locks([RECLAIM_LOCK])
        written = []
        with self._writer() as session:
            self._lock(session, [RECLAIM_LOCK])
            busy = set(
                session.scalars(
                    select(table.instance_uuid).where(
                        table.instance_uuid.in_([r.instance_uuid for r in reclaims]),
                        table.state.in_(OPEN_STATES),
                    )
                )
            )
            for new in reclaims:
                if new.instance_uuid in busy:
                    continue
                busy.add(new.instance_uuid)
                row = table(
                    instance_uuid=new.instance_uuid,
                    project=new.project,
                    platform=new.platform,
                    cores=int(new.cores),
                    kind=new.kind,
                    beneficiary=new.beneficiary,
                    reason=new.reason,
                    mode=mode,
                    state=REQUESTED,
                    requested_at=now,
                    act_after=now + datetime.timedelta(seconds=grace),
                    attempts=0,
                )
                session.add(row)
                session.flush()
                written.append(_reclaim_from_row(row))
        return written

    def reclaims(
        self, states: Iterable[str] | None = None, limit: int | None = None
    ) -> list[ReclaimRecord]:
        """Reclaims in ``states`` (all when None), the newest first."""
        table = models.FairshareReclaim
        query = select(table).order_by(table.requested_at.desc(), table.id.desc())
        if states is not None:
            query = query.where(table.state.in_(list(states)))
        if limit is not None:
            query = query.limit(limit)
        with self._reader() as session:
            return [_reclaim_from_row(row) for row in session.scalars(query)]

    def update_reclaim(
        self,
        reclaim_id: int,
        *,
        state: str,
        expected: str | None = None,
        acted_at: datetime.datetime | None = None,
        attempts: int | None = None,
        error: str | None = None,
    ) -> bool:
        """Move a reclaim to ``state``; only from ``expected`` when given (False if it moved)."""
        table = models.FairshareReclaim.__table__
        values: dict = {"state": state, "error": error}
        if acted_at is not None:
            values["acted_at"] = _naive(acted_at)
        if attempts is not None:
            values["attempts"] = attempts
        where = table.c.id == reclaim_id
        if expected is not None:
            where = where & (table.c.state == expected)
        with self._writer() as session:
            return session.execute(update(table).where(where).values(**values)).rowcount == 1

    def mark_reclaim(self, reclaim_id: int, at: datetime.datetime) -> None:
        """Record that the victim's server carries ``hpc:reclaim_at`` since ``at``."""
        table = models.FairshareReclaim.__table__
        with self._writer() as session:
            session.execute(
                update(table).where(table.c.id == reclaim_id).values(marked_at=_naive(at))
            )

    def prune_reclaims(self, before: datetime.datetime) -> int:
        """Drop reclaims that ended (acted, failed, cancelled, restarted) before ``before``."""
        table = models.FairshareReclaim.__table__
        ended = ~table.c.state.in_([REQUESTED])
        with self._writer() as session:
            return session.execute(
                delete(table).where(ended & (table.c.requested_at < _naive(before)))
            ).rowcount
