"""cache-pressure as a shared model: the simulator's old truth, per application."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference.base import Tenant
from hpc_nova_scheduler.interference.cache_pressure import CachePressureModel
from hpc_nova_scheduler.sim import interference


class TestCachePressure(testtools.TestCase):
    def test_the_documented_example(self) -> None:
        tenant = Tenant.of(ProfileRecord("a", cache_score=25), 4)
        self.assertAlmostEqual(
            100 * (25 / 60) * (40 / 60), CachePressureModel().predict([tenant]).worst, 9
        )

    def test_alone_no_slowdown(self) -> None:
        tenant = Tenant.of(ProfileRecord("a", cache_score=90))
        self.assertEqual((0.0,), CachePressureModel().predict([tenant]).slowdowns)

    @settings(max_examples=100, deadline=None)
    @given(
        st.lists(st.tuples(st.floats(0, 50), st.integers(1, 4)), min_size=1, max_size=5),
        st.floats(10, 100),
        st.floats(0, 3),
    )
    def test_same_as_the_per_vm_model(self, apps, knee, gain) -> None:
        shared = CachePressureModel(knee, gain)
        per_vm = interference.CachePressure(knee, gain)
        tenants = [
            Tenant.of(ProfileRecord(f"a{i}", cache_score=s), n) for i, (s, n) in enumerate(apps)
        ]
        scores = [s for s, n in apps for _ in range(n)]
        prediction = shared.predict(tenants)
        for (score, _), slowdown in zip(apps, prediction.slowdowns, strict=True):
            others = list(scores)
            others.remove(score)
            expected = per_vm.slowdown(score, others)
            self.assertAlmostEqual(expected, 1 + slowdown / 100, delta=1e-9)

    def test_parameters_are_checked(self) -> None:
        self.assertRaises(ValueError, CachePressureModel, 0, 1)
        self.assertRaises(ValueError, CachePressureModel, 60, -1)
