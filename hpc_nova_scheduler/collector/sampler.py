"""One interval's samples of a host and its instances, from resctrl's counters.

``llc_occupancy`` is a level (bytes in the cache now); ``mbm_total_bytes``
and ``mbm_local_bytes`` count bytes since the monitoring group was made, so
bandwidth is their growth over the seconds between two reads. The first
read of a group gives its occupancy only; a counter that went down (the
group was made again, the RMID recycled) starts over and gives no
bandwidth that time.

What cannot be read is left out of the sample and said once per metric
and kind of problem, through ``say``: the kernel's ``Unavailable`` can
come and go on every group of a busy host, and one line a minute of the
same news helps no one.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from hpc_nova_scheduler.characterise.counters import (
    ResctrlMount,
    ResctrlSample,
    add_samples,
    read_mon_data,
)
from hpc_nova_scheduler.collector.once import SayOnce
from hpc_nova_scheduler.db.measured import HostReport, InstanceSample

#: resctrl's byte counters and the bandwidth each gives.
BANDWIDTH = {"mbm_total_bytes": "mbm_total_bps", "mbm_local_bytes": "mbm_local_bps"}
#: The resctrl counters the sampler reads and the metrics they give.
MEASURES = {"llc_occupancy": "llc_occupancy", **BANDWIDTH}


@dataclasses.dataclass(frozen=True)
class _Read:
    """A group's byte counters at one moment (monotonic seconds)."""

    at: float
    counts: Mapping[str, float]


class Sampler:
    """Samples of one host's resctrl mount, interval after interval."""

    def __init__(self, host: str, mount: ResctrlMount, say: Callable[[str], None]) -> None:
        self.host = host
        self.mount = mount
        self.tell = SayOnce(say)
        self._last: dict[str, _Read] = {}
        self.problem = mount.problem()
        if self.problem is not None:
            self.tell(f"{self.problem}: no LLC occupancy or memory bandwidth measured")
        features = set(mount.features())
        self.measures = tuple(metric for counter, metric in MEASURES.items() if counter in features)
        missing = [c for c in MEASURES if c not in features]
        if self.problem is None and missing:
            self.tell(f"resctrl at {mount.root} does not monitor {', '.join(missing)}: left out")

    def _values(self, name: str, sample: ResctrlSample, now: float, what: str) -> dict[str, float]:
        for counter, why in sorted(sample.unreadable.items()):
            # Once per counter and what the file held (Unavailable, Error, ...).
            self.tell(
                f"{counter} unreadable ({why}, first seen for {what}); "
                "left out wherever it is, said once",
                kind=("unreadable", counter, why.rsplit(": ", 1)[-1]),
            )
        values = {}
        if "llc_occupancy" in sample.values:
            values["llc_occupancy"] = sample.values["llc_occupancy"]
        counts = {c: sample.values[c] for c in BANDWIDTH if c in sample.values}
        before = self._last.get(name)
        if before is not None and now > before.at:
            for counter, metric in BANDWIDTH.items():
                if counter in counts and counter in before.counts:
                    grown = counts[counter] - before.counts[counter]
                    if grown >= 0:
                        values[metric] = grown / (now - before.at)
        self._last[name] = _Read(now, counts)
        return values

    def sample(
        self, groups: Mapping[str, Sequence[Path]], now: float, wall: datetime.datetime
    ) -> tuple[HostReport, list[InstanceSample]]:
        """The host's report and one sample per instance of ``groups`` (instance -> its
        monitoring groups, added up), read at monotonic ``now`` and wall time ``wall``."""
        samples = []
        if self.problem is None:
            for uuid, paths in sorted(groups.items()):
                read = add_samples([read_mon_data(path / "mon_data") for path in paths])
                values = self._values(uuid, read, now, f"instance {uuid}")
                samples.append(InstanceSample(uuid, wall, values))
            totals = self._values("", self.mount.totals(), now, f"host {self.host}")
        else:
            totals = {}
        # Groups of instances gone: their last reads are of no further use.
        for name in set(self._last) - set(groups) - {""}:
            del self._last[name]
        report = HostReport(
            self.host,
            wall,
            llc_bytes=self.mount.llc_bytes() if self.problem is None else None,
            totals=totals,
            measures=self.measures if self.problem is None else (),
            problems=(self.problem,) if self.problem else (),
        )
        return report, samples
