"""The one protocol by which ``model fit`` and ``model evaluate`` reach every system."""

from __future__ import annotations

import os

import fixtures
import testtools
import yaml

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference import fitting, model_registry

PROFILES = {
    "a": ProfileRecord("a", cache_score=30),
    "b": ProfileRecord("b", cache_score=50),
}


class TestFitting(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dataset = os.path.join(self.useFixture(fixtures.TempDir()).path, "hosts.yaml")
        hosts = [
            {"applications": ["a", "b"], "interference": 3.0},
            {"applications": ["a", "a"], "interference": 14.0},
        ]
        with open(self.dataset, "w") as stream:
            yaml.safe_dump({"hosts": hosts}, stream)

    def data(self, profiles=PROFILES) -> fitting.Measurements:
        return fitting.Measurements(self.dataset, "the test's profiles", lambda: profiles)

    def test_every_registered_model_has_a_fitting(self) -> None:
        for name in model_registry.names():
            self.assertIsInstance(fitting.of(model_registry.load(name)), fitting.Fitting, name)

    def test_a_model_without_its_own_is_evaluated_over_hosts_and_not_refitted(self) -> None:
        model = model_registry.load("cache-score")
        found = fitting.of(model)
        self.assertIsInstance(found, fitting.MeasuredHosts)
        self.assertFalse(found.keeps)
        error = self.assertRaises(fitting.FitError, found.fit, model, self.data(), 5, 0)
        self.assertEqual("model cache-score cannot be refitted by this command", str(error))
        table, line = found.evaluate(model, self.data(), verbose=True)
        self.assertEqual(("host", "measured (%)", "predicted (%)", "error"), table.headings)
        self.assertEqual(("a + b", "3.00", "0.00", "3.00"), table.rows[0])
        self.assertTrue(line.startswith(f"cache-score over 2 hosts of {self.dataset}: R^2 "))
        self.assertEqual(1, len(found.evaluate(model, self.data(), verbose=False)))

    def test_a_missing_profile_names_the_dataset_line(self) -> None:
        model = model_registry.load("cache-score")
        error = self.assertRaises(
            fitting.FitError, fitting.of(model).evaluate, model, self.data({}), False
        )
        self.assertEqual(
            f"no profile named 'a' in the test's profiles (needed by {self.dataset}:2)",
            str(error),
        )

    def test_error_summary(self) -> None:
        self.assertEqual(
            "mean absolute error 6.00 points, median 4.00, under 10 points in 67%",
            fitting.error_summary([1.0, 4.0, 13.0]),
        )
