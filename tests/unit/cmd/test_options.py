"""The option types: what they accept, and the message for what they refuse."""

from __future__ import annotations

import argparse

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.cmd import options


class TestOptionTypes(testtools.TestCase):
    def refuses(self, parse, text: str, message: str) -> None:
        error = self.assertRaises(argparse.ArgumentTypeError, parse, text)
        self.assertIn(message, str(error))

    def test_numbers(self) -> None:
        self.assertEqual(3, options.positive_int("3"))
        self.assertEqual(0, options.non_negative_int("0"))
        self.assertEqual(0.5, options.positive_float("0.5"))
        self.assertEqual(0.0, options.non_negative_float("0"))
        self.refuses(options.positive_int, "0", "must be at least 1")
        self.refuses(options.positive_int, "1.5", "not a whole number")
        self.refuses(options.non_negative_int, "-1", "must be 0 or more")
        self.refuses(options.positive_float, "0", "must be above 0")
        for bad in ("nan", "inf", "-inf", "1e400"):
            self.refuses(options.non_negative_float, bad, "not a finite number")
        self.refuses(options.non_negative_float, "x", "not a number")

    def test_counts_and_percent_changes(self) -> None:
        self.assertIsNone(options.count_or_all("all"))
        self.assertIsNone(options.count_or_all(" ALL "))
        self.assertEqual(10, options.count_or_all("10"))
        self.refuses(options.count_or_all, "0", "must be at least 1")
        self.assertEqual(-99.0, options.percent_change("-99"))
        self.refuses(options.percent_change, "-100", "must be above -100")

    def test_durations(self) -> None:
        self.assertEqual(3600.0, options.duration("1"))
        self.assertEqual(90.0, options.duration("90s"))
        self.assertEqual(5400.0, options.duration("90m"))
        self.assertEqual(2 * 86400.0, options.duration("2d"))
        self.refuses(options.duration, "soon", "is not a duration")
        self.refuses(options.duration, "-1", "must be a positive duration")
        self.refuses(options.duration, "0h", "must be a positive duration")

    def test_cache_ranges_and_lists(self) -> None:
        self.assertEqual((0.0, 30.0), options.cache_range("0:30"))
        self.assertEqual((5.0, 5.0), options.cache_range("5:5"))
        self.refuses(options.cache_range, "30:0", "LOW must not exceed HIGH")
        self.refuses(options.cache_range, "30", "expected LOW:HIGH")
        self.refuses(options.cache_range, "a:b", "not a number")
        parse = options.comma_list(options.non_negative_float)
        self.assertEqual([40.0, 60.0], parse("40, 60,"))
        self.refuses(parse, " , ", "expected at least one value")
        self.refuses(parse, "40,-1", "must be 0 or more")

    def test_durations_are_described_in_their_own_unit(self) -> None:
        for seconds, text in (
            (99, "99 s"),
            (90 * 60, "90 m"),
            (3600, "1 h"),
            (86400, "24 h"),
            (2 * 86400, "2 d"),
            (1000 * 86400, "1000 d"),
            (0.5, "0.5 s"),
        ):
            self.assertEqual(text, options.describe_duration(seconds))
        # As the user wrote it, where it came from an option.
        for typed, text in (
            ("36.5h", "36.5 h"),
            ("99s", "99 s"),
            ("24", "24 h"),
            ("1000d", "1000 d"),
        ):
            self.assertEqual(text, options.describe_duration(options.duration(typed)))

    @given(st.floats(min_value=1e-3, max_value=1e10))
    def test_a_description_reads_back_close_to_the_duration(self, seconds: float) -> None:
        number, unit = options.describe_duration(seconds).split()
        back = float(number) * options.UNITS[unit]
        self.assertLess(abs(back - seconds), 1e-3 * seconds + 1e-9)
