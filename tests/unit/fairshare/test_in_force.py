"""The entitlements in force with loans: borrowed and preemptible choices (issue 45)."""

from __future__ import annotations

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.fairshare import in_force as force
from tests.unit.fairshare.test_live_share import KEYS, in_force

PREEMPTIBLE = db_api.PREEMPTIBLE_USE
CAPACITY = 12  # three 4-core hosts per platform


def platforms(found: list[force.Choice]) -> list[tuple[str, str | None]]:
    return [(c.platform, c.loan) for c in found]


class TestLoans(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.entitlements = in_force({"p": {"amd": 4}, "q": {"intel": 8}})
        self.cloud = self.entitlements.cloud

    def choices(self, use, cores=4, enforcement=hpc_conf.STRICT, preemptible=False):
        return force.choices(
            self.entitlements, self.cloud, "p", cores, KEYS, use, enforcement, preemptible
        )

    def test_entitled_choices_are_no_loans(self) -> None:
        (choice,) = self.choices({})
        self.assertEqual(("amd", None), (choice.platform, choice.loan))
        self.assertFalse(choice.idle_only)
        self.assertEqual(0, choice.over_by({"p": {"a0": 4}}))

    def test_a_borrowed_choice_is_over_by_the_cores_beyond_the_entitlement(self) -> None:
        use = {"p": {"a0": 4}}
        found = self.choices(use, cores=2, enforcement=hpc_conf.BORROW)
        self.assertEqual([("amd", db_api.BORROWED), ("intel", db_api.BORROWED)], platforms(found))
        amd, intel = found
        # 4 used + 2 more against 4 entitled; on intel p has no entitlement.
        self.assertEqual(2, amd.over_by(use))
        self.assertEqual(2, intel.over_by(use))
        # Under the lock the use may have grown: over_by reads it there.
        self.assertEqual(5, amd.over_by({"p": {"a0": 4, "a1": 3}}))
        # Preemptible cores are no project's use.
        self.assertEqual(2, amd.over_by({**use, PREEMPTIBLE: {"a1": 4}}))

    def test_preemptible_takes_idle_cores_under_either_enforcement(self) -> None:
        # p has spent its entitlement: a preemptible request still goes, to
        # every platform with idle cores, as a preemptible loan.
        use = {"p": {"a0": 4}, "q": {"i0": 4, "i1": 4}}
        for enforcement in (hpc_conf.STRICT, hpc_conf.BORROW):
            found = self.choices(use, cores=4, enforcement=enforcement, preemptible=True)
            self.assertEqual(
                [("amd", db_api.PREEMPTIBLE), ("intel", db_api.PREEMPTIBLE)], platforms(found)
            )
            for choice in found:
                self.assertTrue(choice.idle_only)
                self.assertFalse(choice.borrowed)
                self.assertIsNone(choice.preferred)
                self.assertEqual(0, choice.over_by(use))
                self.assertIsNone(choice.refusal(use))
        # Only the idle cores count: 12 - 4 - 4 - 1 = 3 on intel, whoever's.
        busy = {**use, PREEMPTIBLE: {"i2": 1}}
        self.assertEqual(["amd"], [c.platform for c in self.choices(busy, 4, preemptible=True)])
        # A claim chosen before that preemptible VM came is refused under the lock.
        self.assertEqual("intel has 3 idle cores, 4 asked", found[1].refusal(busy))

    def test_preemptible_cores_fill_a_platform_but_spend_no_entitlement(self) -> None:
        use = {PREEMPTIBLE: {"a0": 4, "a1": 4, "a2": 4}}
        # amd is full, though p's entitlement is untouched: no claim there
        # until the agent takes the preemptible VMs back (the refusal is
        # the unmet demand that makes it).
        self.assertEqual([], self.choices(use))
        (choice,) = self.choices({})
        self.assertEqual(("amd", None), (choice.platform, choice.loan))
        self.assertIsNone(choice.refusal({}))
        self.assertEqual(
            "amd has 0 idle cores, 4 asked within p's entitlement: loans hold the rest "
            "until reclaimed",
            choice.refusal(use),
        )
        # A borrowed or preemptible claim finds no idle core there.
        self.assertEqual(
            [("intel", db_api.BORROWED)],
            [c for c in platforms(self.choices(use, 8, hpc_conf.BORROW)) if c[1]],
        )
        self.assertEqual(["intel"], [c.platform for c in self.choices(use, 4, preemptible=True)])
        self.assertNotIn(
            PREEMPTIBLE, force.describe_refusal(self.entitlements, self.cloud, "p", 8, use)
        )

    def test_no_idle_cores_says_how_many_each_platform_has(self) -> None:
        use = {"q": {"i0": 4, "i1": 4}, PREEMPTIBLE: {"a0": 4, "a1": 4, "a2": 2}}
        self.assertEqual([], self.choices(use, cores=5, preemptible=True))
        self.assertEqual(
            "project p: 5 preemptible cores, more than any platform has idle "
            "(generation 1; idle cores per platform: amd 2, intel 4)",
            force.describe_no_idle_cores(self.entitlements, self.cloud, "p", 5, use),
        )

    def test_node_templates_do_not_see_preemptible_vms(self) -> None:
        templates = {"amd": [{"slots": [["p", 4]], "nodes": 2}, {"slots": [["q", 4]], "nodes": 1}]}
        entitlements = in_force({"p": {"amd": 8}, "q": {"amd": 4}}, templates=templates)
        # a0 runs q, a1 runs p and a preemptible VM, a2 only a preemptible one.
        use = {"q": {"a0": 4}, "p": {"a1": 2}, PREEMPTIBLE: {"a1": 1, "a2": 1}}
        (choice,) = force.choices(entitlements, entitlements.cloud, "p", 2, KEYS, use, "strict")
        self.assertEqual(frozenset({"a1", "a2"}), choice.preferred)


@st.composite
def claim_sequences(draw):
    """Entitlements within each platform's cores, and requests in a row."""
    allocation: dict[str, dict[str, int]] = {name: {} for name in ("p", "q", "r")}
    for platform in ("amd", "intel"):
        left = CAPACITY
        for name in ("p", "q", "r"):
            cores = draw(st.integers(0, left))
            allocation[name][platform] = cores
            left -= cores
    requests = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["p", "q", "r", "s"]),  # s has no share
                st.integers(1, 6),
                st.booleans(),  # preemptible
                st.integers(0, 2),  # how stale the view the choice was made on
                st.integers(0, 2),  # the host of the platform the VMs land on
            ),
            max_size=25,
        )
    )
    enforcement = draw(st.sampled_from([hpc_conf.STRICT, hpc_conf.BORROW]))
    return allocation, requests, enforcement


def _on(use, owner: str, keys) -> int:
    return sum(c for key, c in use.get(owner, {}).items() if key in keys)


class TestClaimSequences(testtools.TestCase):
    @settings(max_examples=300, deadline=None)
    @given(claim_sequences())
    def test_no_sequence_of_claims_spends_an_entitlement_twice(self, drawn) -> None:
        """Choices made on stale views, checked under the lock as claims are:

        a project's own (non-preemptible) use never exceeds its entitlement
        under ``strict``; under ``borrow`` only borrowed claims go beyond it,
        each recording exactly the overage it makes; a loan never takes more
        than the idle cores; preemptible claims never touch a project's use.
        """
        allocation, requests, enforcement = drawn
        entitlements = in_force(allocation)
        cloud = entitlements.cloud
        use: dict[str, dict[str, int]] = {}
        views = [{}]
        for project, cores, preemptible, lag, host in requests:
            view = views[max(0, len(views) - 1 - lag)]
            found = force.choices(
                entitlements, cloud, project, cores, KEYS, view, enforcement, preemptible
            )
            if project not in entitlements.governed and not preemptible:
                continue  # not governed: the filter never asks
            for choice in found:
                if choice.refusal(use) is None:
                    break
            else:
                continue
            keys = cloud.keys[choice.platform]
            before_mine = _on(use, project, keys)
            before_total = sum(_on(use, owner, keys) for owner in use)
            over = choice.over_by(use)
            owner = PREEMPTIBLE if choice.loan == db_api.PREEMPTIBLE else project
            key = sorted(keys)[host]
            use = {
                **use,
                owner: {**use.get(owner, {}), key: use.get(owner, {}).get(key, 0) + cores},
            }
            views.append(use)
            mine = _on(use, project, keys)
            limit = allocation.get(project, {}).get(choice.platform, 0)
            self.assertEqual(preemptible, choice.loan == db_api.PREEMPTIBLE)
            if preemptible:
                self.assertEqual(before_mine, mine)
                self.assertEqual(0, over)
            elif choice.loan == db_api.BORROWED:
                self.assertEqual(hpc_conf.BORROW, enforcement)
                self.assertEqual(max(0, mine - limit), over)
            else:
                self.assertLessEqual(mine, limit)
            if choice.idle_only:
                self.assertLessEqual(before_total + cores, cloud.cores(choice.platform))
            if enforcement == hpc_conf.STRICT:
                for name, by_platform in allocation.items():
                    for platform, entitled in by_platform.items():
                        self.assertLessEqual(_on(use, name, cloud.keys[platform]), entitled)
