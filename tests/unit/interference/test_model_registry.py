"""Models by name through stevedore, and seed 003's rule as a model."""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference import model_registry
from hpc_nova_scheduler.interference.base import InterferenceModel, Tenant
from hpc_nova_scheduler.ivmp import model as ivmp


class TestRegistry(testtools.TestCase):
    def test_the_shipped_models_are_registered(self) -> None:
        self.assertTrue({"cache-score", "ivmp", "ivmp-base"} <= set(model_registry.names()))
        for name in model_registry.names():
            model = model_registry.load(name)
            self.assertIsInstance(model, InterferenceModel)
            self.assertEqual(name, model.name)

    def test_parameters_reach_the_model(self) -> None:
        model = model_registry.load("ivmp", max_apps=6, coefficients=[1, 0, 0, 0])
        self.assertIsInstance(model, ivmp.IvmpExtended)
        self.assertEqual(6, model.max_apps)

    def test_an_unknown_model_is_named(self) -> None:
        error = self.assertRaises(model_registry.UnknownModel, model_registry.load, "nope")
        self.assertIn("'nope'", str(error))
        self.assertIn("ivmp-base", str(error))


class TestCacheScore(testtools.TestCase):
    def tenant(self, score: float, cls: AppClass, vms: int = 1) -> Tenant:
        return Tenant.of(ProfileRecord(f"a{score}", app_class=cls, cache_score=score), vms)

    def test_alpha_and_beta(self) -> None:
        model = model_registry.load("cache-score", alpha=100, beta=40)
        async_ = AppClass.ASYNC_HPC
        self.assertTrue(model.admits([self.tenant(30, async_, 2), self.tenant(40, async_)], 0))
        self.assertFalse(model.admits([self.tenant(30, async_, 3), self.tenant(20, async_)], 0))
        sync = AppClass.SYNC_HPC
        self.assertTrue(model.admits([self.tenant(20, sync), self.tenant(20, async_)], 0))
        self.assertFalse(model.admits([self.tenant(20, sync), self.tenant(21, async_)], 0))

    def test_it_predicts_no_slowdown(self) -> None:
        model = model_registry.load("cache-score")
        prediction = model.predict([self.tenant(30, AppClass.SYNC_HPC, 2)])
        self.assertEqual((0.0,), prediction.slowdowns)
        self.assertEqual(60, prediction.score)
