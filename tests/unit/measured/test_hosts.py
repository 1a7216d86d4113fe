"""Each host's cache pressure under the three sources, side by side."""

from __future__ import annotations

import datetime

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.db.measured import Figure, HostReport, MeasuredInstance
from hpc_nova_scheduler.measured import hosts, pressure

NOW = datetime.datetime(2026, 11, 29, 12, 0, 0)
LLC = 60 * 2**20

vm_strategy = st.tuples(
    st.sampled_from(["cn1", "cn2"]),
    st.floats(0, 100),
    # Occupancy as a share of the LLC and samples, or no measurement.
    st.none() | st.tuples(st.floats(0, 1), st.integers(1, 12)),
)


def pressures(vms, source: str) -> dict[str, hosts.HostPressure]:
    running, instances = [], {}
    for index, (host, declared, measured) in enumerate(vms):
        uuid = f"vm-{index}"
        running.append(hosts.RunningScore(uuid, host, declared))
        if measured is not None:
            share, samples = measured
            figure = Figure(share * LLC, share * LLC, samples, NOW)
            instances[uuid] = MeasuredInstance(uuid, host, NOW, {"llc_occupancy": figure})
    reports = {"cn1": HostReport("cn1", NOW, LLC)}  # cn2 never reports
    settings = pressure.Settings(source=source, min_samples=6)
    found = hosts.host_pressures(running, settings, reports, instances, NOW)
    return {h.host: h for h in found}


class TestHostPressures(testtools.TestCase):
    @given(st.lists(vm_strategy, max_size=12))
    def test_in_force_is_the_column_of_its_source(self, vms) -> None:
        declared = pressures(vms, pressure.DECLARED)
        measured = pressures(vms, pressure.MEASURED)
        most = pressures(vms, pressure.MAX)
        for name, host in declared.items():
            self.assertEqual(host.declared, host.in_force)
            self.assertEqual(host.measured, measured[name].in_force)
            self.assertGreaterEqual(most[name].in_force, host.declared - 1e-9)
            self.assertGreaterEqual(most[name].in_force, host.measured - 1e-9)
            self.assertEqual(sum(1 for h, _, _ in vms if h == name), host.vms)
        # A host that never reported counts nothing as measured.
        if "cn2" in declared:
            self.assertEqual(0, declared["cn2"].measured_vms)
            self.assertEqual(declared["cn2"].declared, declared["cn2"].measured)
            self.assertTrue(declared["cn2"].stale)

    def test_a_reporting_host_without_recorded_vms_is_listed(self) -> None:
        (only,) = pressures([], pressure.MEASURED).values()
        self.assertEqual(
            ("cn1", 0, 0.0, False, 0.0), (only.host, only.vms, only.declared, only.stale, only.age)
        )
        self.assertIsNone(only.occupancy_share)
