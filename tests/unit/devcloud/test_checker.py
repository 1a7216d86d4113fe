"""The stress checker finds each kind of violation, and only those."""

from __future__ import annotations

import testtools

from devcloud import checker
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api

GROUPS = {"h1": "xeon", "h2": "xeon", "h3": "epyc"}
HARMFUL = frozenset({("CG", "MG")})


def asked(tag, app_class, score=10.0, name=None, count=1):
    return checker.Asked(tag, app_class, score, name, count)


def check(*servers):
    return checker.host_violations(servers, alpha=100.0, beta=60.0, harmful=HARMFUL, groups=GROUPS)


class TestHostViolations(testtools.TestCase):
    def test_a_good_placement_has_none(self) -> None:
        sync = asked("a", AppClass.SYNC_HPC, 30.0, "LU", 2)
        plain = asked("b", None, 0.0)
        self.assertEqual(
            [],
            check(
                checker.Server("1", "h1", sync),
                checker.Server("2", "h2", sync),
                checker.Server("3", "h1", plain),
            ),
        )

    def test_each_kind_is_found(self) -> None:
        heavy = asked("a", AppClass.ASYNC_HPC, 70.0, "CG")
        more = asked("b", AppClass.ASYNC_HPC, 40.0, "MG")
        found = check(checker.Server("1", "h1", heavy), checker.Server("2", "h1", more))
        self.assertTrue(any("> alpha" in f for f in found), found)
        self.assertTrue(any("harmful pair CG+MG" in f for f in found), found)

        sync = asked("c", AppClass.SYNC_HPC, 40.0)
        other = asked("d", AppClass.ASYNC_HPC, 25.0)
        found = check(checker.Server("3", "h2", sync), checker.Server("4", "h2", other))
        self.assertEqual(1, len(found))
        self.assertIn("> beta", found[0])

        extreme = asked("e", AppClass.EXTREME_HPC, 5.0)
        plain = asked("f", None, 0.0)
        found = check(checker.Server("5", "h3", extreme), checker.Server("6", "h3", plain))
        self.assertEqual(1, len(found))
        self.assertIn("ExtremeHPC host shared", found[0])

        spread = asked("g", AppClass.SYNC_HPC, 5.0, count=2)
        found = check(checker.Server("7", "h1", spread), checker.Server("8", "h3", spread))
        self.assertEqual(1, len(found))
        self.assertIn("spans processor groups", found[0])


class TestRecords(testtools.TestCase):
    def test_lost_misplaced_and_stale_rows(self) -> None:
        hpc = asked("a", AppClass.SYNC_HPC, 10.0)
        plain = asked("b", None)
        servers = [
            checker.Server("1", "h1", hpc),
            checker.Server("2", "h2", hpc),
            checker.Server("3", "h1", plain),
        ]
        rows = [
            db_api.RunningRecord("2", "h3", AppClass.SYNC_HPC, 10.0),
            db_api.RunningRecord("9", "h1", AppClass.ASYNC_HPC, 10.0),
        ]
        found = checker.record_mismatches(servers, {"1", "2", "3"}, rows)
        self.assertEqual(
            ["lost", "misplaced", "stale"], sorted(line.split(":")[0] for line in found)
        )
