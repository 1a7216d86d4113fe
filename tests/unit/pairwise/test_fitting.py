"""Seed 001's forest fitted to measured pairs through the fitting protocol."""

from __future__ import annotations

import os

import fixtures
import testtools
import yaml

from hpc_nova_scheduler.interference import fitting, model_registry
from hpc_nova_scheduler.pairwise import forest
from hpc_nova_scheduler.pairwise.fitting import ForestFitting
from tests.unit.pairwise.test_forest import applications, records


class TestForestFitting(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        apps = applications(12)
        self.dataset = os.path.join(self.useFixture(fixtures.TempDir()).path, "pairs.yaml")
        pairs = [
            {
                "app_a": r.app_a,
                "app_b": r.app_b,
                "slowdown_a": r.slowdown_a,
                "slowdown_b": r.slowdown_b,
            }
            for r in records(apps)
        ]
        with open(self.dataset, "w") as stream:
            yaml.safe_dump({"interferences": pairs}, stream)
        by_name = {a.name: a for a in apps}
        self.data = fitting.Measurements(self.dataset, "profiles", lambda: by_name)

    def test_registered_and_kept(self) -> None:
        found = fitting.of(model_registry.load("pair-forest"))
        self.assertIsInstance(found, ForestFitting)
        self.assertTrue(found.keeps)

    def test_fit_then_evaluate(self) -> None:
        fitted = ForestFitting().fit(forest.PairForest(trees=6), self.data, 3, 0)
        self.assertIsInstance(fitted.model, forest.PairForest)
        self.assertEqual(
            f"fit over 132 measured pairs of {self.dataset} (10 counters each side, 6 trees)",
            fitted.output[0],
        )
        self.assertTrue(fitted.report.startswith("3-fold cross-validation over 132 pairs: R^2 "))
        self.assertTrue(fitted.output[1].endswith("(seed 001 reports R^2 about 0.80)"))
        (line,) = ForestFitting().evaluate(fitted.model, self.data, verbose=True)
        self.assertTrue(line.startswith(f"pair-forest over 132 measured pairs of {self.dataset}"))

    def test_an_unfitted_forest_cannot_be_evaluated(self) -> None:
        error = self.assertRaises(
            fitting.FitError, ForestFitting().evaluate, forest.PairForest(), self.data, False
        )
        self.assertIn("model pair-forest is not fitted", str(error))
