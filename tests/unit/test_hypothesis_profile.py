"""The tests' Hypothesis profile: a slow machine slows a test, it does not fail it."""

from __future__ import annotations

import time

import testtools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: Each example costs this much to generate, as on a loaded CI machine:
#: ten of them exceed what the too_slow health check allows by default.
SLOW_S = 0.25


def _slowly(value: int) -> int:
    time.sleep(SLOW_S)
    return value


class TestProfile(testtools.TestCase):
    def test_the_ci_profile_is_loaded(self) -> None:
        self.assertIsNone(settings.default.deadline)
        for check in (HealthCheck.too_slow, HealthCheck.data_too_large):
            self.assertIn(check, settings.default.suppress_health_check)

    @settings(max_examples=10, database=None)
    @given(st.builds(_slowly, st.integers(0, 9)))
    def test_slow_generation_is_not_a_failure(self, value: int) -> None:
        self.assertLessEqual(0, value)
