"""The measured cache scores a request plans with, read once, used by the claim's check too."""

from __future__ import annotations

import datetime
import types
from pathlib import Path

import fixtures
import testtools
from oslo_config import fixture as config_fixture
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.core.algorithm import PlacementRequest, Plan
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.criteria import InterferenceTable, Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db.measured import Figure, HostReport, MeasuredInstance
from hpc_nova_scheduler.measured import pressure
from hpc_nova_scheduler.scheduler import claims, measured_scores
from hpc_nova_scheduler.scheduler.fallback import DatabaseDown, FailurePolicy, FallbackStore

SYNC = ApplicationProfile(AppClass.SYNC_HPC, 10.0, "sync")
NOISY = "11111111-0000-0000-0000-000000000001"
ELSEWHERE = "11111111-0000-0000-0000-000000000002"
LLC = 60 * 2**20
UNREACHABLE = "mysql+pymysql://nobody:x@127.0.0.1:1/none?connect_timeout=1"


def host(name: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(host=name, nodename=name)


class MeasuredScoresTest(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(hpc_conf.CONF)).conf
        hpc_conf.register_opts(self.conf)
        folder = Path(self.useFixture(fixtures.TempDir()).path)
        self.database = db_api.Database(f"sqlite:///{folder / 'hpc.sqlite'}")
        self.addCleanup(self.database.dispose)
        self.database.sync()
        self.policy = FailurePolicy(FallbackStore())
        self.now = timeutils.utcnow()
        # NOISY holds the whole LLC of cn1; ELSEWHERE half of cn9's.
        for name, uuid, share in (("cn1", NOISY, 1.0), ("cn9", ELSEWHERE, 0.5)):
            figure = Figure(share * LLC, share * LLC, 10, self.now)
            self.database.record_measurements(
                HostReport(name, self.now, LLC, measures=("llc_occupancy",)),
                [],
                {uuid: {"llc_occupancy": figure}},
                retention=datetime.timedelta(hours=1),
            )

    def source(self, source: str, **more) -> None:
        self.conf.set_override("cache_pressure_source", source, group="hpc_scheduler")
        for name, value in more.items():
            self.conf.set_override(name, value, group="hpc_scheduler")

    def test_declared_reads_nothing(self) -> None:
        # The database is not even reachable: declared never asks it.
        unreachable = db_api.Database(UNREACHABLE)
        self.addCleanup(unreachable.dispose)
        found = measured_scores.read([host("cn1")], unreachable, SYNC, self.policy)
        self.assertEqual((None, unreachable), found)

    def test_measured_reads_the_candidate_hosts_only(self) -> None:
        self.source("measured")
        scores, database = measured_scores.read([host("cn1")], self.database, SYNC, self.policy)
        self.assertIs(self.database, database)
        self.assertEqual(60.0, scores.score(NOISY, 0.0))
        # cn9 is no candidate: its instance is not read.
        self.assertIsNone(scores.measured(ELSEWHERE))
        self.assertEqual(1, scores.counted)

    def test_a_moving_vm_is_read_on_its_source_host_and_planned_with_its_score(self) -> None:
        self.source("measured")
        # ELSEWHERE runs on cn9, no candidate of its move to cn1.
        scores, _ = measured_scores.read(
            [host("cn1")], self.database, SYNC, self.policy, moving=ELSEWHERE
        )
        self.assertEqual(30.0, scores.measured(ELSEWHERE))
        request = PlacementRequest(SYNC, Resources(1, 512, 1), 1, "app")
        planned = measured_scores.as_measured(request, scores, ELSEWHERE)
        self.assertEqual(30.0, planned.profile.cache_score)
        kept = (planned.profile.app_class, planned.profile.app_name)
        self.assertEqual((SYNC.app_class, SYNC.app_name), kept)
        # An instance without figures keeps the request as it was.
        self.assertIs(request, measured_scores.as_measured(request, scores, "unmeasured"))

    def test_the_options_reach_the_scores(self) -> None:
        self.source("max", measured_full_llc_score=30.0, measured_min_samples=11)
        scores, _ = measured_scores.read([host("cn1")], self.database, SYNC, self.policy)
        # Ten samples of eleven: declared.
        self.assertEqual(5.0, scores.score(NOISY, 5.0))
        self.source("max", measured_full_llc_score=30.0, measured_min_samples=10)
        scores, _ = measured_scores.read([host("cn1")], self.database, SYNC, self.policy)
        self.assertEqual(30.0, scores.score(NOISY, 5.0))
        self.assertEqual(45.0, scores.score(NOISY, 45.0))

    def test_a_failing_database_goes_through_the_failure_policy(self) -> None:
        self.source("measured")
        unreachable = db_api.Database(UNREACHABLE)
        self.addCleanup(unreachable.dispose)
        self.conf.set_override("database_failure_policy", "reject", group="hpc_scheduler")
        self.assertRaises(
            DatabaseDown, measured_scores.read, [host("cn1")], unreachable, SYNC, self.policy
        )
        # Degraded: the request goes on, every VM with its declared score.
        self.conf.set_override("database_failure_policy", "degrade", group="hpc_scheduler")
        scores, database = measured_scores.read([host("cn1")], unreachable, SYNC, self.policy)
        self.assertIsNone(scores)
        self.assertIsNot(unreachable, database)


class ClaimCheckTest(testtools.TestCase):
    """The claim's check judges the VMs by the scores the plan was made with."""

    def context(self, scores) -> claims.PlanContext:
        return claims.PlanContext(
            hosts=[host("cn1")],
            request=PlacementRequest(SYNC, Resources(1, 512, 1), 1, "app"),
            thresholds=Thresholds(200.0, 60.0),
            table=InterferenceTable(),
            instance_uuid="new-0",
            own=set(),
            scores=scores,
        )

    def test_a_measured_co_runner_fails_the_check_a_declared_one_passes(self) -> None:
        now = timeutils.utcnow()
        row = db_api.RunningRecord(NOISY, "cn1", AppClass.NON_HPC, 0.0, nodename="cn1")
        view = db_api.ClaimView(running=[row], claims=[])
        plan = Plan(("cn1",), None, ())
        self.assertIsNone(self.context(None).check(view, plan, {"cn1": 1}))
        scores = pressure.Scores(
            pressure.Settings(source=pressure.MEASURED, min_samples=1),
            {"cn1": HostReport("cn1", now, LLC)},
            {
                NOISY: MeasuredInstance(
                    NOISY, "cn1", now, {"llc_occupancy": Figure(LLC, LLC, 1, now)}
                )
            },
            now,
        )
        reason = self.context(scores).check(view, plan, {"cn1": 1})
        self.assertIsNotNone(reason)
        self.assertIn("cn1", reason)
