"""CPI2's victims and suspects from the measured CPI of each application's VMs."""

from __future__ import annotations

import statistics

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.measured import suspects
from hpc_nova_scheduler.measured.suspects import MeasuredVM


def vm(uuid: str, app: str, host: str, cpi: float | None, occupancy: float = 0.0) -> MeasuredVM:
    return MeasuredVM(uuid, app, host, cpi, occupancy)


class TestFind(testtools.TestCase):
    def test_a_slow_vm_and_the_other_applications_on_its_host(self) -> None:
        found = suspects.find(
            [
                vm("v", "A", "cn1", 3.0),
                vm("s1", "A", "cn2", 1.0),
                vm("s2", "A", "cn3", 1.2),
                vm("loud", "B", "cn1", 0.9, occupancy=40.0),
                vm("quiet", "C", "cn1", None, occupancy=1.0),
                vm("far", "D", "cn2", 0.8),
            ]
        )
        (one,) = found
        self.assertEqual(("v", 1.1, 2), (one.victim.instance_uuid, one.siblings_cpi, one.siblings))
        self.assertEqual(["loud", "quiet"], [s.instance_uuid for s in one.suspects])
        self.assertAlmostEqual(3.0 / 1.1, one.excess)
        self.assertEqual({"loud", "quiet"}, suspects.suspect_uuids(found))

    def test_too_few_siblings_or_no_cpi_judge_nothing(self) -> None:
        lonely = [vm("v", "A", "cn1", 9.0), vm("s1", "A", "cn2", 1.0), vm("x", "B", "cn1", 1.0)]
        self.assertEqual([], suspects.find(lonely))
        self.assertEqual(1, len(suspects.find(lonely, min_siblings=1)))
        unmeasured = [
            vm("v", "A", "cn1", None),
            vm("s1", "A", "cn2", 1.0),
            vm("s2", "A", "cn2", 1.0),
        ]
        self.assertEqual([], suspects.find(unmeasured))
        self.assertRaises(ValueError, suspects.find, lonely, ratio=1.0)

    @given(
        st.lists(st.floats(0.1, 10.0), min_size=3, max_size=8),
        st.floats(1.01, 4.0),
    )
    def test_a_victim_exceeds_ratio_times_its_siblings_median(self, cpis, ratio) -> None:
        vms = [vm(f"vm-{i}", "A", f"cn{i}", cpi) for i, cpi in enumerate(cpis)]
        victims = {s.victim.instance_uuid for s in suspects.find(vms, ratio=ratio)}
        for index, cpi in enumerate(cpis):
            siblings = cpis[:index] + cpis[index + 1 :]
            expected = cpi > ratio * statistics.median(siblings)
            self.assertEqual(expected, f"vm-{index}" in victims)
