"""Measured occupancy on the cache-score scale, and the score each VM counts with."""

from __future__ import annotations

import datetime

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.db.measured import Figure, HostReport, MeasuredInstance
from hpc_nova_scheduler.measured import pressure

NOW = datetime.datetime(2026, 11, 29, 12, 0, 0)
MiB = 2**20
LLC = 60 * MiB
A = "11111111-0000-0000-0000-00000000000a"


def instance(occupancy: float, samples: int = 10, age: float = 0.0, host: str = "cn1"):
    at = NOW - datetime.timedelta(seconds=age)
    return MeasuredInstance(
        A, host, at, {"llc_occupancy": Figure(occupancy, occupancy, samples, at)}
    )


def report(age: float = 0.0, llc: int | None = LLC) -> HostReport:
    return HostReport("cn1", NOW - datetime.timedelta(seconds=age), llc_bytes=llc)


def scores(source: str, found: MeasuredInstance, host: HostReport | None = None) -> pressure.Scores:
    settings = pressure.Settings(source=source, stale_after=60, min_samples=6, full_llc_score=60)
    return pressure.Scores(settings, {"cn1": host or report()}, {A: found}, NOW)


class TestScore(testtools.TestCase):
    def test_a_full_llc_is_the_full_score(self) -> None:
        self.assertEqual(60.0, pressure.measured_score(LLC, LLC, 60.0))
        self.assertEqual(15.0, pressure.measured_score(LLC / 4, LLC, 60.0))
        self.assertRaises(ValueError, pressure.measured_score, 1.0, 0, 60.0)

    def test_each_source(self) -> None:
        heavy = instance(LLC * 0.75)  # measures 45
        self.assertEqual(5.0, scores(pressure.DECLARED, heavy).score(A, 5.0))
        self.assertEqual(45.0, scores(pressure.MEASURED, heavy).score(A, 5.0))
        self.assertEqual(45.0, scores(pressure.MAX, heavy).score(A, 5.0))
        self.assertEqual(50.0, scores(pressure.MAX, heavy).score(A, 50.0))
        self.assertEqual(45.0, scores(pressure.MEASURED, heavy).score(A, 50.0))

    def test_declared_until_enough_fresh_samples(self) -> None:
        self.assertEqual(5.0, scores(pressure.MEASURED, instance(LLC, samples=5)).score(A, 5.0))
        self.assertEqual(
            5.0, scores(pressure.MEASURED, instance(LLC), report(age=61)).score(A, 5.0)
        )
        self.assertEqual(5.0, scores(pressure.MEASURED, instance(LLC, age=61)).score(A, 5.0))
        self.assertEqual(
            5.0, scores(pressure.MEASURED, instance(LLC), report(llc=None)).score(A, 5.0)
        )
        self.assertEqual(5.0, scores(pressure.MEASURED, instance(LLC, host="cn2")).score(A, 5.0))
        self.assertIsNone(scores(pressure.MEASURED, instance(LLC, samples=5)).measured(A))
        self.assertEqual(7.0, scores(pressure.MEASURED, instance(LLC)).score("someone-else", 7.0))

    def test_an_unknown_source_is_refused_naming_the_option(self) -> None:
        error = self.assertRaises(ValueError, pressure.Settings, source="guess")
        self.assertIn("cache_pressure_source", str(error))

    @given(
        st.floats(min_value=0, max_value=LLC),
        st.floats(min_value=0, max_value=500),
        st.sampled_from(pressure.SOURCES),
    )
    def test_max_is_never_below_either_and_declared_is_unchanged(self, occupancy, declared, source):
        found = scores(source, instance(occupancy)).score(A, declared)
        measured = pressure.measured_score(occupancy, LLC, 60.0)
        self.assertEqual(
            {"declared": declared, "measured": measured, "max": max(declared, measured)}[source],
            found,
        )
        self.assertLessEqual(measured, 60.0)

    @given(
        st.floats(min_value=0, max_value=500),
        st.one_of(st.none(), st.floats(min_value=0, max_value=500)),
        st.sampled_from(pressure.SOURCES),
    )
    def test_the_counted_score_is_the_scores_rule(self, declared, measured, source):
        # The simulator replays placement with counted_score: it must be the
        # rule Scores applies, so that the two cannot disagree.
        counted = pressure.counted_score(source, declared, measured)
        if measured is None or source == pressure.DECLARED:
            self.assertEqual(declared, counted)
        elif source == pressure.MEASURED:
            self.assertEqual(measured, counted)
        else:
            self.assertEqual(max(declared, measured), counted)
            self.assertGreaterEqual(counted, declared)
