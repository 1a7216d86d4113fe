"""One compute host's collector: every interval, its instances measured into the plugin database.

A read (:meth:`Collector.collect`):

1. the running domains, from libvirt's status files;
2. their monitoring groups, made where missing, removed where gone;
3. the samples of the host and each instance (:class:`~.sampler.Sampler`);
4. each instance's decayed mean and recent peak (:mod:`..measured.reduce`),
   kept in memory and read back from the database when the collector
   starts, so that a restart does not start the figures over;
5. one transaction: the host's report, the samples, the figures.

Every problem is said once through ``say`` (the service logs it as a
warning); none stops the next read. A failed write is said and the next
read writes afresh: samples are measurements of a moment, not a queue.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from oslo_utils import timeutils

from hpc_nova_scheduler.characterise.counters import ResctrlMount
from hpc_nova_scheduler.collector import domains as domains_mod
from hpc_nova_scheduler.collector.groups import MonitoringGroups
from hpc_nova_scheduler.collector.once import SayOnce
from hpc_nova_scheduler.collector.perf import CgroupCPI
from hpc_nova_scheduler.collector.sampler import Sampler
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db.measured import Figure, HostReport, InstanceSample
from hpc_nova_scheduler.measured import reduce


@dataclasses.dataclass(frozen=True)
class Settings:
    host: str
    resctrl_root: Path
    libvirt_run_dir: Path
    half_life: float
    retention: datetime.timedelta
    #: Where cgroups are mounted, for CPI; None: CPI is not measured.
    cgroup_root: Path | None = None


@dataclasses.dataclass(frozen=True)
class Collected:
    """What one read measured and wrote."""

    report: HostReport
    samples: list[InstanceSample]
    figures: Mapping[str, Mapping[str, Figure]]


class Collector:
    """The collector of one host."""

    def __init__(
        self,
        database: db_api.Database,
        settings: Settings,
        say: Callable[[str], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime.datetime] = timeutils.utcnow,
        threads: Callable[[int], set[int]] | None = None,
    ) -> None:
        self.database = database
        self.settings = settings
        self._once = SayOnce(say)
        self._clock = clock
        self._now = now
        mount = ResctrlMount(settings.resctrl_root)
        self.sampler = Sampler(settings.host, mount, say)
        extra = {} if threads is None else {"threads": threads}
        self.groups = MonitoringGroups(mount, say, **extra)
        self.cpi = None if settings.cgroup_root is None else CgroupCPI(settings.cgroup_root, say)
        self._figures: dict[str, dict[str, Figure]] | None = None

    def _known_figures(self) -> dict[str, dict[str, Figure]]:
        if self._figures is None:
            found = self.database.measured_instances(hosts=[self.settings.host])
            self._figures = {uuid: dict(row.figures) for uuid, row in found.items()}
        return self._figures

    def collect(self) -> Collected:
        """One read of the host and its instances, written to the database."""
        found = domains_mod.running(self.settings.libvirt_run_dir)
        for line in found.skipped:
            self._once(f"skipped a libvirt status file: {line}")
        groups = self.groups.sync(found.domains) if self.sampler.problem is None else {}
        report, samples = self.sampler.sample(groups, self._clock(), self._now())
        if self.cpi is not None:
            report, samples = _with_cpi(report, samples, self.cpi, found.domains)
        figures = self._known_figures()
        for sample in samples:
            figures[sample.instance_uuid] = reduce.fold(
                figures.get(sample.instance_uuid, {}),
                sample.values,
                sample.taken_at,
                self.settings.half_life,
            )
        running = {domain.uuid for domain in found.domains}
        for uuid in set(figures) - running:
            del figures[uuid]
        written = {uuid: figures[uuid] for uuid in sorted(running) if figures.get(uuid)}
        self.database.record_measurements(
            report, samples, written, retention=self.settings.retention
        )
        return Collected(report, samples, written)

    def close(self) -> None:
        """Close the perf counters (the collector stops)."""
        if self.cpi is not None:
            self.cpi.close()


def _with_cpi(
    report: HostReport, samples: list[InstanceSample], cpi: CgroupCPI, domains
) -> tuple[HostReport, list[InstanceSample]]:
    """The report and samples with each domain's CPI of this interval."""
    if cpi.problem is not None:
        return dataclasses.replace(report, problems=(*report.problems, cpi.problem)), samples
    found = cpi.sample(domains)
    by_uuid = {s.instance_uuid: s for s in samples}
    for uuid, value in found.items():
        sample = by_uuid.get(uuid)
        values = {**(sample.values if sample is not None else {}), "cpi": value}
        by_uuid[uuid] = InstanceSample(uuid, report.reported_at, values)
    measures = tuple(dict.fromkeys((*report.measures, "cpi")))
    return dataclasses.replace(report, measures=measures), [by_uuid[u] for u in sorted(by_uuid)]
