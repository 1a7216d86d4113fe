"""The VM-level fair-share cloud: enforcement, borrowed VMs, reclaim (issue 45, part 5)."""

from __future__ import annotations

import dataclasses
import math

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.fairshare import cloud_scenarios, cloud_sim, workload
from hpc_nova_scheduler.fairshare.cloud_sim import (
    BORROW,
    STRICT,
    CloudSimError,
    Lifetime,
    ProjectSpec,
    Settings,
)


def whole_vms(cores: int, vm_cores: int = cloud_sim.VM_CORES) -> int:
    return cores - cores % vm_cores


class TestLifetime(testtools.TestCase):
    def test_the_three_forms(self) -> None:
        self.assertEqual(Lifetime("forever"), Lifetime.parse("forever"))
        self.assertEqual(Lifetime("fixed", 600.0), Lifetime.parse("600"))
        self.assertEqual(Lifetime("exp", 3600.0), Lifetime.parse(" exp:3600 "))
        self.assertEqual("exp:3600", Lifetime.parse("exp:3600").label)
        self.assertTrue(math.isinf(Lifetime.parse("forever").draw(None)))

    def test_bad_forms_name_the_value(self) -> None:
        for text, message in (
            ("soon", "expected forever, SECONDS or exp:SECONDS"),
            ("gamma:3", "expected forever, SECONDS or exp:SECONDS"),
            ("exp:x", "expected forever, SECONDS or exp:SECONDS"),
            ("0", "must be a number > 0, not 0.0"),
            ("exp:-5", "must be a number > 0, not -5.0"),
            ("inf", "must be a number > 0, not inf"),
        ):
            error = self.assertRaises(CloudSimError, Lifetime.parse, text)
            self.assertIn(message, str(error))


class TestInvariants(testtools.TestCase):
    @settings(max_examples=25, deadline=None)
    @given(
        st.lists(st.integers(1, 6), min_size=1, max_size=3),
        st.lists(
            st.tuples(
                st.integers(1, 12),
                st.integers(0, 6),
                st.floats(0, 20_000),
                st.floats(600, 40_000),
                st.sampled_from(["600", "exp:1800", "forever"]),
            ),
            min_size=2,
            max_size=4,
        ),
        st.sampled_from([0.0, 300.0, 900.0, 1800.0]),
        st.booleans(),
    )
    def test_reclaim_takes_only_loans_and_never_below_an_entitlement(
        self, nodes, tenants, grace, strict
    ) -> None:
        platforms = tuple(
            dataclasses.replace(p, nodes=n)
            for p, n in zip(workload.PLATFORMS[1:], nodes, strict=False)
        )
        applications = workload.APPLICATIONS
        projects = tuple(
            ProjectSpec(
                name=f"p{i}",
                application=applications[i % len(applications)],
                declared=4 * vms,
                active=((start, start + length),),
                lifetime=Lifetime.parse(life),
                services=4 * min(services, vms),
            )
            for i, (vms, services, start, length, life) in enumerate(tenants)
        )
        cloud = cloud_sim.Cloud("tiny", platforms, projects, 50_000.0, cloud_scenarios._times(0))
        result = cloud_sim.simulate(
            cloud, Settings(STRICT if strict else BORROW, True, grace_s=grace)
        )
        self.assertEqual(0, result.wrong_victims)
        if strict:
            self.assertEqual((0, 0), (result.borrowed, result.reclaims))
        for value in (*result.fairness.values(), *result.utilisation.values()):
            self.assertTrue(0.0 <= value <= 1.0 + 1e-9, result)
