"""The decayed mean and recent peak of an instance's samples."""

from __future__ import annotations

import datetime

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.measured import reduce

T0 = datetime.datetime(2026, 11, 29, 12, 0, 0)
HALF_LIFE = 300.0

values = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
gaps = st.floats(min_value=0, max_value=3600, allow_nan=False)
streams = st.lists(st.tuples(gaps, values), min_size=1, max_size=40)


def run(stream) -> reduce.Figure:
    figure, at = None, T0
    for gap, value in stream:
        at += datetime.timedelta(seconds=gap)
        figure = reduce.fold_one(figure, value, at, HALF_LIFE)
    return figure


class TestFold(testtools.TestCase):
    def test_the_first_sample_is_the_mean_and_the_peak(self) -> None:
        self.assertEqual(reduce.Figure(40.0, 40.0, 1, T0), reduce.fold_one(None, 40.0, T0, 60))

    def test_after_one_half_life_the_past_and_the_sample_weigh_the_same(self) -> None:
        first = reduce.fold_one(None, 100.0, T0, 60)
        later = T0 + datetime.timedelta(seconds=60)
        second = reduce.fold_one(first, 20.0, later, 60)
        self.assertEqual(
            (60.0, 60.0, 2, later), (second.mean, second.peak, second.samples, second.at)
        )
        # The peak decayed to 50 but never falls under the mean; a burst counts at once.
        third = reduce.fold_one(second, 500.0, later, 60)
        self.assertEqual(500.0, third.peak)

    def test_a_metric_the_sample_lacks_stays_as_it_was(self) -> None:
        before = {"llc_occupancy": reduce.Figure(5.0, 9.0, 3, T0)}
        after = reduce.fold(before, {"mbm_total_bps": 7.0}, T0 + datetime.timedelta(seconds=10), 60)
        self.assertEqual(before["llc_occupancy"], after["llc_occupancy"])
        self.assertEqual(
            reduce.Figure(7.0, 7.0, 1, T0 + datetime.timedelta(seconds=10)), after["mbm_total_bps"]
        )

    def test_an_older_sample_counts_as_taken_at_the_last_time(self) -> None:
        first = reduce.fold_one(None, 10.0, T0, 60)
        earlier = reduce.fold_one(first, 30.0, T0 - datetime.timedelta(seconds=60), 60)
        self.assertEqual((10.0, 30.0, T0), (earlier.mean, earlier.peak, earlier.at))

    def test_a_steady_value_stays_exactly_that_value(self) -> None:
        # Found by hypothesis: kept * x + (1 - kept) * x rounded one ulp above x.
        first = reduce.fold_one(None, 237.5625, T0, HALF_LIFE)
        later = T0 + datetime.timedelta(seconds=3215.243419079494)
        second = reduce.fold_one(first, 237.5625, later, HALF_LIFE)
        self.assertEqual((237.5625, 237.5625), (second.mean, second.peak))

    def test_bad_input_is_refused(self) -> None:
        self.assertRaises(ValueError, reduce.fold_one, None, -1.0, T0, 60)
        self.assertRaises(ValueError, reduce.fold_one, None, float("nan"), T0, 60)
        self.assertRaises(ValueError, reduce.weight, 1.0, 0.0)

    @given(streams)
    def test_the_mean_lies_within_the_samples_and_under_the_peak(self, stream) -> None:
        figure = run(stream)
        samples = [value for _, value in stream]
        tolerance = 1e-9 * max(samples) + 1e-9
        self.assertLessEqual(min(samples) - tolerance, figure.mean)
        self.assertLessEqual(figure.mean, max(samples) + tolerance)
        self.assertLessEqual(figure.mean, figure.peak + tolerance)
        self.assertGreaterEqual(figure.peak, samples[-1])
        self.assertLessEqual(figure.peak, max(samples))
        self.assertEqual(len(samples), figure.samples)

    @given(streams, values)
    def test_a_later_sample_weighs_more_than_an_earlier_one(self, stream, value) -> None:
        # The same value appended after a long quiet counts more than at once.
        quick = run([*stream, (0.0, value)])
        slow = run([*stream, (3 * HALF_LIFE, value)])
        self.assertLessEqual(abs(slow.mean - value), abs(quick.mean - value) + 1e-6 * (value + 1))
