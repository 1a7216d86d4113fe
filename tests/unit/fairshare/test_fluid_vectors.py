"""The rate engine's vectorised sums against the formulas they stand for, term by term.

:func:`.fluid.renewals_of` counts the terms it knows to be 1.0 instead of
evaluating them, and :func:`.fluid.expected_tail` skips the points where
the integrand is 1.0; both must give what summing every term gives.
"""

from __future__ import annotations

import math

import numpy as np
import testtools
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from hpc_nova_scheduler.fairshare import fluid


def renewals_by_terms(x: float, task_cv: float) -> float:
    """m(x) with every term of the sum evaluated."""
    if x <= 0:
        return 0.0
    if task_cv == 0:
        return float(math.floor(x))
    if math.sqrt(x) * task_cv > fluid.DEPHASED:
        return x - (1.0 - task_cv * task_cv) / 2.0
    sigma = fluid.log_sigma(task_cv)
    first = float(special.ndtr((math.log(x) + sigma * sigma / 2.0) / sigma))
    k = np.arange(2, int(x + 8.0 * math.sqrt(max(x, 1.0)) * task_cv) + 4)
    return first + float(special.ndtr((x - k) / (np.sqrt(k) * task_cv)).sum())


def tail_on_every_point(groups: fluid.InFlight, task_cv: float) -> float:
    """The expected largest residual with the integrand worked out at every point."""
    sigma = fluid.log_sigma(task_cv)
    longest = max(runtime for runtime, _ in groups)
    x = np.linspace(0.0, longest * math.exp(8.0 * sigma), fluid.TAIL_POINTS + 1)[1:]
    log_below = np.zeros_like(x)
    for (runtime, age), cores in groups.items():
        if age is None:
            above = fluid.exceedance(x / runtime, sigma)
        else:
            begun = float(fluid.survival(np.array(age / runtime), sigma))
            above = fluid.survival((age + x) / runtime, sigma) / begun if begun > 0 else 0.0 * x
        log_below += cores * np.log1p(-np.minimum(above, 1.0 - 1e-15))
    beyond = np.concatenate(([1.0], -np.expm1(log_below)))
    return float(np.trapezoid(beyond, np.concatenate(([0.0], x))))


cvs = st.sampled_from([0.0, 0.05, 0.1, 0.3, 1.0])
groups = st.dictionaries(
    st.tuples(
        st.floats(1.0, 500.0),
        st.one_of(st.none(), st.floats(0.0, 500.0)),
    ),
    st.integers(1, 700),
    min_size=1,
    max_size=8,
)


class TestRenewals(testtools.TestCase):
    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.floats(-2.0, 3000.0), min_size=1, max_size=30), cvs)
    def test_as_summing_every_term(self, xs, task_cv) -> None:
        found = fluid.renewals_of(np.array(xs), task_cv)
        for x, m in zip(xs, found.tolist(), strict=True):
            # Only the order of the additions differs.
            self.assertAlmostEqual(renewals_by_terms(x, task_cv), m, delta=1e-12 * max(1.0, x))
            self.assertAlmostEqual(m, fluid.renewals(x, task_cv), delta=1e-12 * max(1.0, x))


class TestTail(testtools.TestCase):
    @settings(max_examples=150, deadline=None)
    @given(groups, cvs)
    def test_the_points_skipped_add_nothing(self, in_flight, task_cv) -> None:
        expected = tail_on_every_point(in_flight, task_cv)
        # The same numbers (a bound, not equality: vector code may round apart).
        self.assertAlmostEqual(
            expected, fluid.expected_tail(in_flight, task_cv), delta=1e-13 * expected
        )
