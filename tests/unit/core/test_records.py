"""Validation of profile and interference records."""

from __future__ import annotations

import datetime

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.core.profile import MAX_CACHE_SCORE, AppClass, ProfileError
from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord, parse_timestamp


class TestProfileRecord(testtools.TestCase):
    def test_from_mapping_with_strings(self) -> None:
        record = ProfileRecord.from_mapping(
            {
                "name": "LU.C.16",
                "app_class": "synchpc",
                "cache_score": "16",
                "sllc_score": "0.05",
                "dram_score": "",
                "net_score": None,
                "solo_runtime": "12.5",
                "counters": {"cycles": "3e9"},
                "description": " LU ",
            }
        )
        self.assertEqual(
            ProfileRecord(
                "LU.C.16", AppClass.SYNC_HPC, 16.0, 0.05, None, None, 12.5, {"cycles": 3e9}, "LU"
            ),
            record,
        )

    def test_defaults(self) -> None:
        self.assertEqual(ProfileRecord("x"), ProfileRecord.from_mapping({"name": "x"}))

    def test_each_bad_field_is_named(self) -> None:
        cases = {
            "name": {"name": " "},
            "app_class": {"name": "a", "app_class": "HPC"},
            "cache_score": {"name": "a", "cache_score": "-2"},
            "sllc_score": {"name": "a", "sllc_score": "1.5"},
            "dram_score": {"name": "a", "dram_score": "x"},
            "net_score": {"name": "a", "net_score": "-0.1"},
            "solo_runtime": {"name": "a", "solo_runtime": "0"},
            "counters.cycles": {"name": "a", "counters": {"cycles": "nan"}},
            "counters": {"name": "a", "counters": [1, 2]},
            "colour": {"name": "a", "colour": "red"},
        }
        for key, data in cases.items():
            error = self.assertRaises(ProfileError, ProfileRecord.from_mapping, data)
            self.assertEqual(key, error.key, data)

    @given(
        st.builds(
            ProfileRecord,
            name=st.text(min_size=1, max_size=30).map(str.strip).filter(bool),
            app_class=st.sampled_from(list(AppClass)),
            cache_score=st.floats(min_value=0, max_value=MAX_CACHE_SCORE),
            sllc_score=st.one_of(st.none(), st.floats(min_value=0, max_value=1)),
            counters=st.dictionaries(
                st.sampled_from(["cycles", "instructions", "cache_misses"]),
                st.floats(allow_nan=False, allow_infinity=False),
            ),
        )
    )
    def test_mapping_round_trip(self, record: ProfileRecord) -> None:
        record = ProfileRecord(
            **{**record.__dict__, "counters": dict(sorted(record.counters.items()))}
        )
        self.assertEqual(record, ProfileRecord.from_mapping(record.to_mapping()))


class TestInterferenceRecord(testtools.TestCase):
    def test_pairs_are_held_in_canonical_order(self) -> None:
        record = InterferenceRecord("LU", "EP", 3.0, 1.0)
        self.assertEqual(
            ("EP", "LU", 1.0, 3.0),
            (record.app_a, record.app_b, record.slowdown_a, record.slowdown_b),
        )
        self.assertEqual(record, InterferenceRecord("EP", "LU", 1.0, 3.0))
        self.assertEqual(("EP", "LU", "measured"), record.key)

    def test_from_mapping(self) -> None:
        record = InterferenceRecord.from_mapping(
            {
                "app_a": "B",
                "app_b": "A",
                "slowdown_a": "10",
                "slowdown_b": "-20",
                "source": "Predicted",
                "measured_at": "2011-06-01T12:00:00.123+02:00",
            }
        )
        self.assertEqual(
            InterferenceRecord(
                "A", "B", -20.0, 10.0, "predicted", datetime.datetime(2011, 6, 1, 10, 0, 0)
            ),
            record,
        )

    def test_bad_fields_are_named(self) -> None:
        good = {"app_a": "A", "app_b": "B", "slowdown_a": 1, "slowdown_b": 2}
        cases = {
            "app_b": {**good, "app_b": ""},
            "slowdown_a": {**good, "slowdown_a": "-100"},
            "slowdown_b": {**good, "slowdown_b": "inf"},
            "source": {**good, "source": "guessed"},
            "measured_at": {**good, "measured_at": "yesterday"},
            "extra": {**good, "extra": 1},
        }
        for key, data in cases.items():
            error = self.assertRaises(ProfileError, InterferenceRecord.from_mapping, data)
            self.assertEqual(key, error.key, data)
        error = self.assertRaises(
            ProfileError, InterferenceRecord.from_mapping, {**good, "slowdown_b": "1e300"}
        )
        self.assertEqual("slowdown_b", error.key)
        self.assertIn("must be at most 100000", str(error))

    def test_harmful_when_either_side_exceeds_the_tolerance(self) -> None:
        self.assertTrue(InterferenceRecord("A", "B", 2.0, 10.5).is_harmful(10.0))
        self.assertFalse(InterferenceRecord("A", "B", 10.0, -50.0).is_harmful(10.0))

    def test_timestamps(self) -> None:
        self.assertIsNone(parse_timestamp("", "t"))
        self.assertEqual(
            datetime.datetime(2011, 6, 1), parse_timestamp(datetime.date(2011, 6, 1), "t")
        )
        self.assertRaises(ProfileError, parse_timestamp, 12, "t")
