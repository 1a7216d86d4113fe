"""What the compute hosts measured, in the plugin database (issue 47).

Each compute host's ``hpc-scheduler-collector`` writes, every interval and
in one transaction: its host's report (``measured_hosts``), the samples of
its instances (``measured_samples``, kept ``retention``) and each
instance's reduced figures (``measured_instances``). One collector writes
the rows of its own host and instances only, so collectors never contend
for a row; an instance that migrates is written by its new host's
collector from then on.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from collections.abc import Iterable, Mapping, Sequence

from oslo_utils import timeutils
from sqlalchemy import delete, or_, select

from hpc_nova_scheduler.db import models

#: Every metric a sample may carry: LLC occupancy (bytes), memory bandwidth
#: (bytes per second, all and local), cycles per instruction.
METRICS = ("llc_occupancy", "mbm_total_bps", "mbm_local_bps", "cpi")
#: The metrics a host's totals may carry.
HOST_METRICS = ("llc_occupancy", "mbm_total_bps", "mbm_local_bps")


class MeasuredError(ValueError):
    """A report that cannot be stored, in one line naming the key and the value."""


@dataclasses.dataclass(frozen=True)
class Figure:
    """One metric of one instance: its decayed mean, recent peak, samples and last time."""

    mean: float
    peak: float
    samples: int
    at: datetime.datetime


@dataclasses.dataclass(frozen=True)
class HostReport:
    """A host's collector's report of the host itself."""

    host: str
    reported_at: datetime.datetime
    #: The host's last-level cache, every cache domain together (None: unknown).
    llc_bytes: int | None = None
    #: The host's totals, of :data:`HOST_METRICS` (only those it could read).
    totals: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: The metrics the host can measure.
    measures: Sequence[str] = ()
    #: What it cannot, one line each.
    problems: Sequence[str] = ()


@dataclasses.dataclass(frozen=True)
class InstanceSample:
    """One read of one instance: only the metrics that could be read."""

    instance_uuid: str
    taken_at: datetime.datetime
    values: Mapping[str, float]


@dataclasses.dataclass(frozen=True)
class MeasuredInstance:
    instance_uuid: str
    host: str
    updated_at: datetime.datetime
    figures: Mapping[str, Figure]


def _naive(at: datetime.datetime) -> datetime.datetime:
    if not isinstance(at, datetime.datetime):
        raise MeasuredError(f"time: {at!r} is not a datetime")
    return timeutils.normalize_time(at)


def _checked(values: Mapping[str, float], allowed: Sequence[str], what: str) -> dict[str, float]:
    found = {}
    for metric, value in values.items():
        if metric not in allowed:
            raise MeasuredError(f"{what}: unknown metric {metric!r} (known: {', '.join(allowed)})")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise MeasuredError(f"{what}: {metric} = {value!r} is not a number")
        if not math.isfinite(value) or value < 0:
            raise MeasuredError(f"{what}: {metric} = {value!r} is not a finite number >= 0")
        found[metric] = float(value)
    return found


def _uuid(uuid: str) -> str:
    if not isinstance(uuid, str) or not uuid or len(uuid) > models.UUID_LENGTH:
        raise MeasuredError(f"instance: {uuid!r} is not an instance uuid")
    return uuid


def _figures_json(figures: Mapping[str, Figure], what: str) -> str:
    _checked({m: f.mean for m, f in figures.items()}, METRICS, f"{what} mean")
    _checked({m: f.peak for m, f in figures.items()}, METRICS, f"{what} peak")
    return json.dumps(
        {
            metric: {
                "mean": figure.mean,
                "peak": figure.peak,
                "samples": figure.samples,
                "at": _naive(figure.at).isoformat(),
            }
            for metric, figure in sorted(figures.items())
        },
        sort_keys=True,
    )


def _figures(text: str) -> dict[str, Figure]:
    return {
        metric: Figure(
            float(f["mean"]),
            float(f["peak"]),
            int(f["samples"]),
            datetime.datetime.fromisoformat(f["at"]),
        )
        for metric, f in json.loads(text).items()
    }


class MeasuredStore:
    """The :class:`~.api.Database` methods of measured interference (a mixin)."""

    def record_measurements(
        self,
        report: HostReport,
        samples: Sequence[InstanceSample],
        figures: Mapping[str, Mapping[str, Figure]],
        *,
        retention: datetime.timedelta,
    ) -> None:
        """One collector's interval: its host's report, its samples and its instances' figures.

        Samples of the host older than ``retention`` before the report are
        dropped, and so are the figures of its instances not measured for
        as long (they left the host, or were deleted).
        """
        host = report.host
        if not isinstance(host, str) or not host.strip() or len(host) > models.NAME_LENGTH:
            raise MeasuredError(f"host: {host!r} is not a host name")
        at = _naive(report.reported_at)
        totals = _checked(report.totals, HOST_METRICS, f"host {host}")
        unknown = sorted(set(report.measures) - set(METRICS))
        if unknown:
            raise MeasuredError(f"host {host}: unknown metric {unknown[0]!r} in measures")
        rows = [
            {
                "instance_uuid": _uuid(s.instance_uuid),
                "host": host,
                "taken_at": _naive(s.taken_at),
                **dict.fromkeys(METRICS),
                **_checked(s.values, METRICS, f"instance {s.instance_uuid}"),
            }
            for s in samples
        ]
        written = {
            _uuid(uuid): _figures_json(found, f"instance {uuid}") for uuid, found in figures.items()
        }
        cutoff = at - retention
        with self._writer() as session:
            row = session.get(models.MeasuredHost, host)
            values = {
                "reported_at": at,
                "llc_bytes": report.llc_bytes,
                **dict.fromkeys(HOST_METRICS),
                **totals,
                "measures": ",".join(m for m in METRICS if m in set(report.measures)),
                "problems": "\n".join(report.problems) or None,
            }
            if row is None:
                session.add(models.MeasuredHost(host=host, **values))
            else:
                for name, value in values.items():
                    setattr(row, name, value)
            if rows:
                session.execute(models.MeasuredSample.__table__.insert(), rows)
            table = models.MeasuredInstance
            if written:
                existing = {
                    r.instance_uuid: r
                    for r in session.scalars(
                        select(table).where(table.instance_uuid.in_(sorted(written)))
                    )
                }
                for uuid, text in written.items():
                    found = existing.get(uuid)
                    if found is None:
                        session.add(
                            table(instance_uuid=uuid, host=host, updated_at=at, figures=text)
                        )
                    else:
                        found.host, found.updated_at, found.figures = host, at, text
            samples_table = models.MeasuredSample
            session.execute(
                delete(samples_table).where(
                    samples_table.host == host, samples_table.taken_at < cutoff
                )
            )
            session.execute(delete(table).where(table.host == host, table.updated_at < cutoff))

    def measured_hosts(self, *, hosts: Iterable[str] | None = None) -> list[HostReport]:
        """Every host's last report (of ``hosts``, if given), by host name."""
        table = models.MeasuredHost
        query = select(table).order_by(table.host)
        if hosts is not None:
            query = query.where(table.host.in_(sorted(set(hosts))))
        with self._reader() as session:
            return [
                HostReport(
                    r.host,
                    r.reported_at,
                    r.llc_bytes,
                    {m: getattr(r, m) for m in HOST_METRICS if getattr(r, m) is not None},
                    tuple(m for m in r.measures.split(",") if m),
                    tuple(r.problems.splitlines()) if r.problems else (),
                )
                for r in session.scalars(query)
            ]

    def measured_instances(
        self, *, hosts: Iterable[str] | None = None, uuids: Iterable[str] | None = None
    ) -> dict[str, MeasuredInstance]:
        """The reduced figures of every instance (of ``hosts``, or of ``uuids``, if
        given; of either when both are), by instance."""
        table = models.MeasuredInstance
        query = select(table)
        wanted = []
        if hosts is not None:
            wanted.append(table.host.in_(sorted(set(hosts))))
        if uuids is not None:
            wanted.append(table.instance_uuid.in_(sorted(set(uuids))))
        if wanted:
            query = query.where(or_(*wanted))
        with self._reader() as session:
            return {
                r.instance_uuid: MeasuredInstance(
                    r.instance_uuid, r.host, r.updated_at, _figures(r.figures)
                )
                for r in session.scalars(query)
            }

    def measured_samples(self, instance_uuid: str) -> list[InstanceSample]:
        """The samples kept of one instance, oldest first."""
        table = models.MeasuredSample
        query = (
            select(table)
            .where(table.instance_uuid == instance_uuid)
            .order_by(table.taken_at, table.id)
        )
        with self._reader() as session:
            return [
                InstanceSample(
                    r.instance_uuid,
                    r.taken_at,
                    {m: getattr(r, m) for m in METRICS if getattr(r, m) is not None},
                )
                for r in session.scalars(query)
            ]
