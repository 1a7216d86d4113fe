"""What ``fairshare reclaim list | plan`` and ``fairshare show`` print of reclaim."""

from __future__ import annotations

import datetime
import json

import testtools

from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.fairshare import live_reclaim, reclaim, reclaim_report

T0 = datetime.datetime(2026, 11, 29, 1, 0, 0)


def _loan(uuid, project, cores, minute, kind=reclaim.BORROWED, rack="r1") -> reclaim.Loan:
    return reclaim.Loan(
        uuid, project, "amd", cores, T0 + datetime.timedelta(minutes=minute), kind, {"rack": rack}
    )


def _platform(demands, loans, pending=(), entitled=None, use=None, idle=0, by_rack=None):
    """A platform of 16 cores: pa entitled to 8, pb to 8 (unless told)."""
    entitled = entitled or {"pa": 8, "pb": 8}
    use = use or {"pb": 16 - idle}
    state = reclaim.PlatformState("amd", 16, entitled, use, idle_by_domain={"rack": by_rack or {}})
    decision = reclaim.plan(state, loans, demands, pending)
    return live_reclaim.PlatformPlan(state, decision, tuple(demands), tuple(loans), tuple(pending))


class NeedsTests(testtools.TestCase):
    def test_a_need_met_by_victims(self) -> None:
        found = _platform(
            [reclaim.Demand("pa", 8)], [_loan("b1", "pb", 4, 1), _loan("b2", "pb", 4, 2)]
        )
        (need,) = reclaim_report.needs(found)
        self.assertEqual(
            ("amd", "pa", 8, (), 8, 0, 0, 2, 8, 0),
            (
                need.platform,
                need.project,
                need.asks,
                need.levels,
                need.entitled,
                need.in_use,
                need.under_way,
                need.victims,
                need.taken,
                need.unserved,
            ),
        )
        self.assertEqual("2 victim(s) free 8 cores", need.why)

    def test_idle_cores_and_reclaims_under_way_are_said(self) -> None:
        found = _platform(
            [reclaim.Demand("pa", 8)],
            [_loan("b1", "pb", 4, 1), _loan("b2", "pb", 4, 2)],
            pending=[reclaim.Pending("b2", "pa", 4)],
            use={"pb": 12},
        )
        (need,) = reclaim_report.needs(found)
        self.assertEqual((4, 0, 0), (need.under_way, need.taken, need.unserved))
        self.assertEqual("reclaims under way free 4 cores; idle cores cover 4", need.why)

    def test_an_unserved_need_says_why(self) -> None:
        # pb is at its entitlement: none of its VMs is borrowed beyond it.
        found = _platform(
            [reclaim.Demand("pa", 4)], [_loan("b1", "pb", 4, 1)], use={"pb": 8, "pc": 8}
        )
        (need,) = reclaim_report.needs(found)
        self.assertEqual((0, 4), (need.taken, need.unserved))
        self.assertIn("no loan on amd can be taken without leaving its project below", need.why)

    def test_a_required_level_is_named_and_met_in_one_rack(self) -> None:
        found = _platform(
            [reclaim.Demand("pa", 8, "rack")],
            [_loan("b1", "pb", 4, 1, rack="r1"), _loan("b2", "pb", 4, 2, rack="r2")],
        )
        (need,) = reclaim_report.needs(found)
        self.assertEqual(("rack",), need.levels)
        self.assertEqual(8, need.unserved)
        self.assertIn("no rack of amd can hold 8 cores", need.why)
        self.assertTrue(reclaim_report.needs_domains(live_reclaim.Plan(1, (found,))))

    def test_a_project_at_its_entitlement_gets_nothing_taken_back(self) -> None:
        found = _platform(
            [reclaim.Demand("pa", 4)], [_loan("b1", "pb", 4, 1)], use={"pa": 8, "pb": 8}
        )
        (need,) = reclaim_report.needs(found)
        self.assertIn("uses 8 of its 8 cores: at its entitlement", need.why)
        self.assertFalse(reclaim_report.needs_domains(live_reclaim.Plan(1, (found,))))

    def test_plan_json_is_strict_json(self) -> None:
        found = _platform(
            [reclaim.Demand("pa", 4)],
            [_loan("b1", "pb", 4, 1), _loan("p1", "pb", 4, 3, reclaim.PREEMPTIBLE)],
            pending=[reclaim.Pending("x", "pb", 2)],
        )
        value = reclaim_report.plan_json(live_reclaim.Plan(3, (found,)))
        self.assertEqual(value, json.loads(strictjson.dumps(value)))
        self.assertEqual((3, 1, 4), (value["generation"], value["reclaims"], value["cores"]))
        amd = value["platforms"]["amd"]
        # The preemptible VM goes first, though the borrowed one is older.
        (victim,) = amd["reclaims"]
        self.assertEqual(
            ("p1", "preemptible", "2026-11-29T01:03:00", "pa", {"rack": "r1"}),
            (
                victim["instance_uuid"],
                victim["kind"],
                victim["placed_at"],
                victim["beneficiary"],
                victim["domains"],
            ),
        )
        self.assertEqual(["pa"], [n["project"] for n in amd["needs"]])
        self.assertEqual([], amd["needs"][0]["levels"])
        self.assertEqual(
            [{"instance_uuid": "x", "beneficiary": "pb", "cores": 2}], amd["under_way"]
        )


def _record(id_, state, error=None, acted=None) -> loans_db.ReclaimRecord:
    return loans_db.ReclaimRecord(
        id_,
        f"vm{id_}",
        "pb",
        "amd",
        4,
        reclaim.BORROWED,
        "pa",
        "pa asks",
        "stop",
        state,
        T0,
        T0 + datetime.timedelta(seconds=300),
        acted,
        1 if error else 0,
        error,
    )


class ListTests(testtools.TestCase):
    def test_rows_and_counts(self) -> None:
        records = [
            _record(3, loans_db.FAILED, error="HttpException: 409"),
            _record(2, loans_db.ACTED, acted=T0 + datetime.timedelta(seconds=305)),
            _record(1, loans_db.ACTED, acted=T0),
        ]
        rows = reclaim_report.reclaim_rows(records)
        self.assertEqual([3, 2, 1], [r["id"] for r in rows])
        self.assertEqual(
            {
                "id": 3,
                "state": "failed",
                "mode": "stop",
                "instance_uuid": "vm3",
                "project": "pb",
                "platform": "amd",
                "cores": 4,
                "kind": "borrowed",
                "beneficiary": "pa",
                "requested_at": "2026-11-29T01:00:00",
                "act_after": "2026-11-29T01:05:00",
                "acted_at": None,
                "attempts": 1,
                "error": "HttpException: 409",
                "reason": "pa asks",
            },
            rows[0],
        )
        self.assertEqual("2026-11-29T01:05:05", rows[1]["acted_at"])
        # The order of the states' life, not of the rows.
        self.assertEqual(
            [("acted", 2), ("failed", 1)], list(reclaim_report.count_by_state(records).items())
        )


def _stored(uuid, project, kind, cores, host, stopped=False, platform="amd"):
    return loans_db.LoanRecord(uuid, project, platform, cores, kind, T0, 0, stopped, host, host)


class LentTests(testtools.TestCase):
    def test_running_loans_per_project_platform_and_kind(self) -> None:
        loans = [
            _stored("b1", "pb", reclaim.BORROWED, 4, "a0"),
            _stored("b2", "pb", reclaim.BORROWED, 4, "a1"),
            _stored("p1", "pb", reclaim.PREEMPTIBLE, 2, "i0"),
            # Stopped by a reclaim: it holds nothing.
            _stored("b3", "pb", reclaim.BORROWED, 8, "a1", stopped=True),
            # On a host the generation does not know: where it was placed.
            _stored("p2", "pa", reclaim.PREEMPTIBLE, 1, "new", platform="intel"),
        ]
        platform_of = {"a0": "amd", "a1": "amd", "i0": "intel"}
        self.assertEqual(
            {
                "pb": {"amd": {"borrowed": 8}, "intel": {"preemptible": 2}},
                "pa": {"intel": {"preemptible": 1}},
            },
            reclaim_report.lent_by_platform(loans, platform_of),
        )
