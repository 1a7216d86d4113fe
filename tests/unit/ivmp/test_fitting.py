"""Seed 004's models refitted to measured hosts through the fitting protocol."""

from __future__ import annotations

import os
import random

import fixtures
import testtools
import yaml

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference import fitting, model_registry
from hpc_nova_scheduler.interference.base import Tenant
from hpc_nova_scheduler.ivmp import model as ivmp
from hpc_nova_scheduler.ivmp.fitting import IvmpFitting

TRUTH = (0.5, 0.3, 0.2)


class TestIvmpFitting(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        rng = random.Random(5)
        self.profiles = {
            f"app{i}": ProfileRecord(
                f"app{i}",
                sllc_score=rng.random() * 0.3,
                dram_score=rng.random() * 0.3,
                net_score=rng.random() * 0.4,
            )
            for i in range(10)
        }
        truth = ivmp.IvmpBase(TRUTH)
        hosts = []
        for _ in range(20):
            apps = rng.sample(sorted(self.profiles), rng.randint(2, 5))
            level = truth.predict([Tenant.of(self.profiles[a]) for a in apps]).worst
            hosts.append({"applications": apps, "interference": level})
        self.dataset = os.path.join(self.useFixture(fixtures.TempDir()).path, "hosts.yaml")
        with open(self.dataset, "w") as stream:
            yaml.safe_dump({"hosts": hosts}, stream)
        self.data = fitting.Measurements(self.dataset, "profiles", lambda: self.profiles)

    def test_registered_for_both_models(self) -> None:
        for name in ("ivmp", "ivmp-base"):
            found = fitting.of(model_registry.load(name))
            self.assertIsInstance(found, IvmpFitting)
            self.assertFalse(found.keeps, "the outcome is the printed coefficients")

    def test_fit_recovers_the_coefficients_and_says_how_to_use_them(self) -> None:
        fitted = IvmpFitting().fit(ivmp.IvmpBase(), self.data, 5, 0)
        for got, wanted in zip(fitted.model.coefficients, TRUTH, strict=True):
            self.assertAlmostEqual(wanted, got, 9)
        fit, folds, use = fitted.output
        self.assertTrue(fit.startswith(f"fit over {self.dataset}: T_SLLC*G_SLLC 0.5000"))
        self.assertTrue(folds.startswith("5-fold cross-validation: R^2 1.000"))
        self.assertEqual("use with: --model ivmp-base --param coefficients=0.5,0.3,0.2", use)
        one = IvmpFitting().fit(ivmp.IvmpBase(), self.data, 1, 0)
        self.assertEqual("too few hosts for cross-validation", one.output[1])

    def test_too_few_hosts_is_a_fit_error(self) -> None:
        with open(self.dataset, "w") as stream:
            yaml.safe_dump(
                {"hosts": [{"applications": ["app1", "app2"], "interference": 3}]}, stream
            )
        error = self.assertRaises(
            fitting.FitError, IvmpFitting().fit, ivmp.IvmpExtended(), self.data, 5, 0
        )
        self.assertIn(f"{self.dataset}: model ivmp has 4 coefficients", str(error))
