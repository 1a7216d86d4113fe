"""hpc-scheduler-collector counting CPI on the fake PMU (``up --measured``).

``python -m devcloud.measured_collector --config-file nova.conf
--config-file compute-00.conf``: the collector's own entry point
(:func:`hpc_nova_scheduler.collector.main.main`), with
:mod:`devcloud.fake_pmu` in place of ``perf_event_open`` and each guest's
cgroup; everything else (libvirt's status files, resctrl, the database) is
the collector's own.
"""

import sys
from pathlib import Path

from devcloud import fake_pmu
from hpc_nova_scheduler.collector import collector, main, perf


class FakePmuCPI(perf.CgroupCPI):
    """The collector's CPI counting, on the fake PMU (one CPU counts a guest)."""

    def __init__(self, cgroup_root: Path, say) -> None:
        super().__init__(
            cgroup_root, say, cpus=[0], opener=fake_pmu.open_counter, cgroup=fake_pmu.cgroup
        )


if __name__ == "__main__":
    collector.CgroupCPI = FakePmuCPI
    perf.read_counter = fake_pmu.read_counter
    sys.exit(main.main())
