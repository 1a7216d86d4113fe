"""CombinationTable: run times beside co-runners, and the estimate for unmeasured pairs."""

from __future__ import annotations

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.core.sharing import SharingError
from hpc_nova_scheduler.fairshare import affinity
from hpc_nova_scheduler.fairshare.combinations import CombinationTable

# A ran alone on p and q, B on p only; nobody on r.
SOLO = {("A", "p"): 100.0, ("A", "q"): 200.0, ("B", "p"): 50.0}


class TestEstimatedSolo(testtools.TestCase):
    def test_a_measured_pair_is_its_measurement(self) -> None:
        table = CombinationTable(SOLO)
        self.assertEqual(100.0, table.estimated_solo("A", "p"))
        self.assertEqual(200.0, table.estimated_solo("A", "q"))

    def test_an_unmeasured_pair_is_the_mean_of_the_applications_solo_times(self) -> None:
        table = CombinationTable(SOLO)
        self.assertEqual(150.0, table.estimated_solo("A", "r"))  # (100 + 200) / 2
        self.assertEqual(50.0, table.estimated_solo("B", "q"))  # its only one

    def test_solo_runtime_still_tells_an_unmeasured_pair(self) -> None:
        table = CombinationTable(SOLO)
        self.assertIsNone(table.solo_runtime("B", "q"))
        self.assertIsNone(table.solo_runtime("A", "r"))

    def test_runtime_of_an_unmeasured_pair_is_the_estimate(self) -> None:
        table = CombinationTable(SOLO)
        self.assertEqual(50.0, table.runtime("B", "q", frozenset({"B"})))
        self.assertEqual(150.0, table.runtime("A", "r", frozenset({"A", "B"})))

    def test_a_given_slowdown_stretches_the_estimate(self) -> None:
        table = CombinationTable(SOLO, corunner_normalised={("B", "q"): 20.0})
        self.assertAlmostEqual(60.0, table.runtime("B", "q", frozenset({"A", "B"})))

    def test_co_runner_runs_elsewhere_do_not_stretch_it(self) -> None:
        # B is slowed 40 % on p; nothing says how it fares beside others on q.
        table = CombinationTable(SOLO, {("B", "p", frozenset({"A", "B"})): 70.0})
        self.assertAlmostEqual(70.0, table.runtime("B", "p", frozenset({"B"})))
        self.assertEqual(50.0, table.runtime("B", "q", frozenset({"A", "B"})))

    def test_an_application_never_measured_alone_is_refused_by_name(self) -> None:
        table = CombinationTable(SOLO)
        error = self.assertRaises(SharingError, table.estimated_solo, "C", "p")
        self.assertEqual("no solo run time of C on any platform", str(error))
        error = self.assertRaises(SharingError, table.runtime, "C", "p", frozenset({"C"}))
        self.assertIn("no solo run time of C", str(error))

    @given(st.lists(st.floats(1.0, 1e5), min_size=1, max_size=5))
    def test_the_estimate_is_the_neutral_epa(self, seconds: list[float]) -> None:
        # Its EPA on the unmeasured platform, were the estimate measured, is 1.0.
        platforms = [f"p{i}" for i in range(len(seconds))]
        solo = {("A", p): s for p, s in zip(platforms, seconds, strict=True)}
        estimate = CombinationTable(solo).estimated_solo("A", "new")
        epa = affinity.egocentric({**solo, ("A", "new"): estimate}, ["A"], [*platforms, "new"])
        self.assertAlmostEqual(affinity.NEUTRAL, epa["A"]["new"], places=9)
