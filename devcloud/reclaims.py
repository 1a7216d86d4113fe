"""What the stress sees of fair-share reclaim: the plugin database, polled during the load.

A reclaim's victim must have been a loan when it was chosen, but a loan
lives only as long as its VM's record, and the agent prunes it: the
watch (:class:`Watch`) reads ``fairshare_loans`` every second and keeps the
union, with the first row seen of each VM, so that the checker judges the
agent's choice against what the scheduler recorded when it placed the VM
(:func:`devcloud.checker.wrong_victims`). It also keeps every reclaim in its
latest state (those requested since the watch began: a cloud keeps the
reclaims of earlier loads), every VM placement (``app_running``, with when
it was placed), every refusal (pruned after four intervals), every
generation and what each project used at each look, for the room used after
a reclaim, the time from unmet demand to freed cores and the victims'
projects left below their entitlement.

It reads through the operator's account, which the ``plugin-db`` fault does
not lock; a read that fails (a fault) is tried again at the next look.
"""

from __future__ import annotations

import collections
import datetime
import json
import threading

import sqlalchemy as sa

from devcloud import checker, fairshare
from hpc_nova_scheduler.db import models as hpc_models

#: Seconds between two looks.
POLL = 1.0


class Watch(threading.Thread):
    """Polls the plugin database at ``url`` until :meth:`stop`."""

    def __init__(self, url: str, poll: float = POLL) -> None:
        super().__init__(name="stress-reclaim-watch", daemon=True)
        self.url = url
        self.poll = poll
        self.loans: dict[str, checker.LoanSeen] = {}
        self.reclaims: dict[int, checker.ReclaimSeen] = {}
        #: instance uuid -> (project, host, placed_at, cores).
        self.records: dict[str, tuple[str, str, datetime.datetime, int]] = {}
        #: id -> every refusal (for entitlement, or entitled with no host).
        self.refusals: dict[int, checker.Refused] = {}
        #: Reclaims of earlier loads (the newest id before this one): not judged.
        self.baseline = _newest_reclaim(url)
        #: Every generation written during the load, by number.
        self.generations: dict[int, checker.GenerationSeen] = {}
        #: What each look saw the projects use, as fair share counts it.
        self.uses: list[checker.UseSeen] = []
        self.looks = 0
        self.failed_looks = 0
        self._done = threading.Event()

    def stop(self) -> None:
        """A last look, then stop."""
        self._done.set()
        self.join()

    def run(self) -> None:
        engine = sa.create_engine(self.url, pool_pre_ping=True)
        try:
            while True:
                last = self._done.is_set()
                try:
                    with engine.connect() as connection:
                        self.look(connection)
                    self.looks += 1
                except sa.exc.SQLAlchemyError:
                    self.failed_looks += 1
                if last:
                    return
                self._done.wait(self.poll)
        finally:
            engine.dispose()

    def look(self, connection) -> None:
        self._generations(connection)
        loans = hpc_models.FairshareLoan.__table__
        uncounted = set()
        for row in connection.execute(sa.select(loans)).mappings():
            if row["stopped"] or row["kind"] != checker.BORROWED:
                # Fair share counts neither a stopped VM nor a preemptible one.
                uncounted.add(row["instance_uuid"])
            if row["instance_uuid"] not in self.loans:
                self.loans[row["instance_uuid"]] = checker.LoanSeen(
                    row["instance_uuid"],
                    row["project"],
                    row["platform"],
                    int(row["cores"]),
                    row["kind"],
                    int(row["over_by"]),
                )
        reclaims = hpc_models.FairshareReclaim.__table__
        query = sa.select(reclaims).where(reclaims.c.id > self.baseline)
        for row in connection.execute(query).mappings():
            self.reclaims[int(row["id"])] = checker.ReclaimSeen(
                int(row["id"]),
                row["instance_uuid"],
                row["project"],
                row["platform"],
                int(row["cores"]),
                row["kind"],
                row["beneficiary"],
                row["state"],
                row["requested_at"],
                row["acted_at"],
                row["error"],
            )
        running = hpc_models.AppRunning.__table__
        query = sa.select(
            running.c.instance_uuid,
            running.c.project_id,
            running.c.host,
            running.c.created_at,
            running.c.cores,
        )
        platform_of = self._platform_of()
        use: dict[tuple[str, str], int] = collections.Counter()
        for uuid, project, host, placed_at, cores in connection.execute(query):
            if uuid not in self.records and project and placed_at is not None:
                self.records[uuid] = (project, host, placed_at, int(cores or 0))
            if project and uuid not in uncounted and host in platform_of:
                use[(project, platform_of[host])] += int(cores or 0)
        # Stamped after the reads: a look stamped before an act read nothing after it.
        self.uses.append(checker.UseSeen(_utc_now(), dict(use)))
        refusals = hpc_models.FairshareRefusal.__table__
        query = sa.select(
            refusals.c.id, refusals.c.project, refusals.c.cores, refusals.c.created_at
        )
        for number, project, cores, at in connection.execute(query):
            self.refusals[int(number)] = checker.Refused(project, int(cores), at)

    def _generations(self, connection) -> None:
        generations = hpc_models.FairshareGeneration.__table__
        allocations = hpc_models.FairshareAllocation.__table__
        newest = max(self.generations, default=0)
        rows = connection.execute(
            sa.select(
                generations.c.generation, generations.c.created_at, generations.c.templates
            ).where(generations.c.generation > newest)
        ).all()
        if not rows:
            return
        cores = collections.defaultdict(dict)
        for number, project, platform, value in connection.execute(
            sa.select(
                allocations.c.generation,
                allocations.c.project,
                allocations.c.platform,
                allocations.c.cores,
            ).where(allocations.c.generation > newest)
        ):
            cores[int(number)].setdefault(project, {})[platform] = int(value)
        for number, created_at, templates in rows:
            stored = json.loads(templates) if isinstance(templates, str) else templates
            platform_of, _ = fairshare.stored_cloud(stored or {})
            self.generations[int(number)] = checker.GenerationSeen(
                int(number), created_at, cores.get(int(number), {}), platform_of
            )

    def _platform_of(self) -> dict[str, str]:
        if not self.generations:
            return {}
        return self.generations[max(self.generations)].platform_of

    def placed(self, platform_of: dict[str, str]) -> list[checker.Placed]:
        """Every VM recorded during the load, on the platform of its host."""
        return [
            checker.Placed(uuid, project, platform_of.get(host, f"?{host}"), at, cores)
            for uuid, (project, host, at, cores) in sorted(self.records.items())
        ]


def _newest_reclaim(url: str) -> int:
    """The newest reclaim's id in the plugin database at ``url`` (0: none)."""
    engine = sa.create_engine(url)
    table = hpc_models.FairshareReclaim.__table__
    try:
        with engine.connect() as connection:
            return int(connection.scalar(sa.select(sa.func.max(table.c.id))) or 0)
    finally:
        engine.dispose()


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
