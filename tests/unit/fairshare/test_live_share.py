"""The filter's fair-share rules without Nova: platforms, choices, claim checks, templates."""

from __future__ import annotations

import datetime

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare import in_force as force
from hpc_nova_scheduler.fairshare import platforms
from hpc_nova_scheduler.fairshare.live_allocation import unmet_refusals

NOW = datetime.datetime(2026, 11, 25, 12, 0, 0)
NODES = [platforms.Node(f"a{i}", f"a{i}", 4) for i in range(3)] + [
    platforms.Node(f"i{i}", f"i{i}", 4) for i in range(3)
]
TAGS = {f"a{i}": {"hpc:cpu_group": frozenset({"amd"})} for i in range(3)} | {
    f"i{i}": {"hpc:cpu_group": frozenset({"intel"})} for i in range(3)
}


def in_force(allocation, templates=None, affinity=None) -> force.InForce:
    cloud = platforms.build_cloud(NODES, TAGS)
    return force.InForce(
        generation=1,
        created_at=NOW,
        allocation=allocation,
        templates=templates or {},
        affinity=affinity or {},
        governed=frozenset(allocation),
        cloud=platforms.cloud_from_json(platforms.cloud_as_json(cloud)),
    )


class TestPlatforms(testtools.TestCase):
    def test_platform_tag_overrides_the_cpu_group_and_cpu_info(self) -> None:
        tags = {"h": {"hpc:platform": frozenset({"fast"}), "hpc:cpu_group": frozenset({"g"})}}
        self.assertEqual("fast", platforms.platform_of("h", tags, None))
        self.assertEqual("g", platforms.platform_of("h", {"h": {"hpc:cpu_group": {"g"}}}, None))
        info = {"vendor": "AMD", "model": "EPYC"}
        self.assertEqual("AMD/EPYC", platforms.platform_of("h", {}, info))

    def test_a_host_in_two_platforms_and_a_platform_without_cores_are_errors(self) -> None:
        tags = {"h": {"hpc:platform": frozenset({"x", "y"})}}
        error = self.assertRaises(
            platforms.FairshareError, platforms.build_cloud, [platforms.Node("h", "h", 4)], tags
        )
        self.assertIn("host h is in two platforms", str(error))
        error = self.assertRaises(
            platforms.FairshareError,
            platforms.build_cloud,
            [platforms.Node("h", "h", 0)],
            {"h": {"hpc:platform": frozenset({"x"})}},
        )
        self.assertEqual("platform x has no cores (1 hosts, 0 vCPUs)", str(error))

    def test_the_cloud_round_trips_through_a_generation(self) -> None:
        cloud = platforms.build_cloud(NODES, TAGS)
        again = platforms.cloud_from_json(platforms.cloud_as_json(cloud))
        self.assertEqual(cloud.platforms, again.platforms)
        self.assertEqual(dict(cloud.platform_of), dict(again.platform_of))
        self.assertEqual(12, again.cores("amd"))

    def test_stale_after_two_intervals(self) -> None:
        entitlements = in_force({"p": {"amd": 4}})
        self.assertFalse(entitlements.stale(300, NOW + datetime.timedelta(seconds=600)))
        self.assertTrue(entitlements.stale(300, NOW + datetime.timedelta(seconds=601)))


KEYS = [node.key for node in NODES]


class TestChoices(testtools.TestCase):
    def test_entitled_platforms_come_first_by_affinity_then_borrowed_ones(self) -> None:
        entitlements = in_force(
            {"p": {"amd": 4, "intel": 4}, "q": {"intel": 8}},
            affinity={"p": {"amd": 1.0, "intel": 2.0}},
        )
        found = force.choices(entitlements, entitlements.cloud, "p", 4, KEYS, {}, hpc_conf.STRICT)
        self.assertEqual(["intel", "amd"], [c.platform for c in found])
        used = {"p": {"i0": 4}}
        found = force.choices(entitlements, entitlements.cloud, "p", 4, KEYS, used, hpc_conf.BORROW)
        self.assertEqual(
            [("amd", False), ("intel", True)], [(c.platform, c.borrowed) for c in found]
        )

    def test_templates_steer_hosts(self) -> None:
        templates = {"amd": [{"slots": [["p", 4]], "nodes": 2}, {"slots": [["q", 4]], "nodes": 1}]}
        entitlements = in_force({"p": {"amd": 8}, "q": {"amd": 4}}, templates=templates)
        used = {"q": {"a0": 4}, "p": {"a1": 2}}
        (choice,) = force.choices(
            entitlements, entitlements.cloud, "p", 2, KEYS, used, hpc_conf.STRICT
        )
        self.assertEqual(frozenset({"a1", "a2"}), choice.preferred)


@st.composite
def situations(draw):
    projects = ["p", "q", "r"]
    allocation = {
        name: {pl: draw(st.integers(0, 12)) for pl in ("amd", "intel")} for name in projects
    }
    use = {
        name: {key: draw(st.integers(0, 4)) for key in draw(st.sets(st.sampled_from(KEYS)))}
        for name in projects
    }
    cores = draw(st.integers(1, 8))
    enforcement = draw(st.sampled_from([hpc_conf.STRICT, hpc_conf.BORROW]))
    return allocation, use, cores, enforcement


class TestEntitlementInvariants(testtools.TestCase):
    @settings(max_examples=300, deadline=None)
    @given(situations())
    def test_a_choice_never_exceeds_an_entitlement_or_the_idle_cores(self, situation) -> None:
        allocation, use, cores, enforcement = situation
        entitlements = in_force(allocation)
        cloud = entitlements.cloud
        for choice in force.choices(entitlements, cloud, "p", cores, KEYS, use, enforcement):
            keys = {k for k, p in cloud.platform_of.items() if p == choice.platform}
            mine = sum(c for k, c in use["p"].items() if k in keys)
            total = sum(c for by_key in use.values() for k, c in by_key.items() if k in keys)
            if choice.borrowed:
                self.assertEqual(hpc_conf.BORROW, enforcement)
                self.assertLessEqual(total + cores, cloud.cores(choice.platform))
            else:
                self.assertLessEqual(mine + cores, allocation["p"][choice.platform])
            # The check under the claim's lock agrees with the choice.
            self.assertIsNone(choice.refusal(use))
            # And refuses once the cores are spent by a concurrent claim.
            spent = {**use, "p": {**use["p"], "a0" if choice.platform == "amd" else "i0": 99}}
            self.assertIsNotNone(choice.refusal(spent))


def _refusal(second: int, cores: int):
    at = NOW + datetime.timedelta(seconds=second)
    return db_api.Refusal("p", "blast", cores, at)


def _placed(second: int, cores: int):
    at = NOW + datetime.timedelta(seconds=second)
    uuid = f"vm-{second}-{cores}"
    return db_api.RunningRecord(
        uuid, "a0", AppClass.ASYNC_HPC, 0.0, project_id="p", placed_at=at, cores=cores
    )


EVENTS = st.lists(st.tuples(st.integers(0, 20), st.integers(1, 8)), max_size=8)


class TestUnmetRefusals(testtools.TestCase):
    """Cores placed after a refusal meet it: a retried request is not demand twice."""

    def test_a_retry_meets_the_refusal_and_a_later_refusal_counts(self) -> None:
        self.assertEqual({"p": 4}, unmet_refusals([_refusal(0, 4)], []))
        self.assertEqual({}, unmet_refusals([_refusal(0, 4)], [_placed(1, 4)]))
        self.assertEqual(
            {"p": 2}, unmet_refusals([_refusal(0, 4), _refusal(2, 2)], [_placed(1, 4)])
        )
        # Placed at the same instant as the refusal: taken as its retry.
        self.assertEqual({}, unmet_refusals([_refusal(0, 4)], [_placed(0, 4)]))
        # Placed before any refusal: meets nothing.
        self.assertEqual({"p": 4}, unmet_refusals([_refusal(5, 4)], [_placed(1, 4)]))

    @settings(max_examples=200, deadline=None)
    @given(refused=EVENTS, placed=EVENTS)
    def test_unmet_cores_never_exceed_the_refused_or_go_negative(self, refused, placed) -> None:
        refusals = [_refusal(s, c) for s, c in refused]
        records = [_placed(s, c) for s, c in placed]
        unmet = unmet_refusals(refusals, records).get("p", 0)
        self.assertGreaterEqual(unmet, 0)
        self.assertLessEqual(unmet, sum(c for _, c in refused))
        if refused:
            last = max(s for s, _ in refused)
            # Whatever ran before, the cores refused last wait until a later placement.
            after = sum(c for s, c in placed if s >= last)
            at_last = sum(c for s, c in refused if s == last)
            self.assertGreaterEqual(unmet, at_last - after)
        else:
            self.assertEqual(0, unmet)
