"""One rule from a model's name to the model, for nova-scheduler and the commands."""

from __future__ import annotations

import dataclasses

import testtools

from hpc_nova_scheduler.interference import model_registry, resolver
from hpc_nova_scheduler.interference.base import InterferenceModel


@dataclasses.dataclass(frozen=True)
class Record:
    kind: str
    data: bytes = b""


class TestResolver(testtools.TestCase):
    def test_cache_score_means_no_model_for_admission(self) -> None:
        self.assertIsNone(resolver.admission_model(resolver.NO_MODEL))
        # As a model in its own right (a ground truth), it is one.
        self.assertEqual("cache-score", resolver.model("cache-score").name)

    def test_a_registered_model_is_built_with_its_parameters(self) -> None:
        model = resolver.admission_model("ivmp-base")
        self.assertIsInstance(model, InterferenceModel)
        self.assertTrue(resolver.is_plain("ivmp-base"))
        self.assertRaises(TypeError, resolver.model, "ivmp-base", params={"nonsense": 1.0})

    def test_a_fitted_kind_without_its_model(self) -> None:
        self.assertFalse(resolver.is_plain("pair-forest"))
        self.assertRaises(resolver.NoFittedModel, resolver.model, "pair-forest", fitted=True)
        # Unfitted, it refuses shared hosts; `model fit` starts from it.
        self.assertEqual("pair-forest", resolver.model("pair-forest").name)

    def test_a_stored_model_is_found_by_its_name(self) -> None:
        asked = []

        def lookup(name: str) -> Record | None:
            asked.append(name)
            return Record("ivmp")

        # ivmp is no stored kind: its bytes are refused, but they were looked up.
        error = self.assertRaises(
            model_registry.UnknownModel, resolver.model, "mine", lookup=lookup
        )
        self.assertEqual(["mine"], asked)
        self.assertIn("are not stored", str(error))

    def test_a_stored_model_of_another_kind_is_refused(self) -> None:
        error = self.assertRaises(
            model_registry.UnknownModel,
            resolver.from_record,
            Record("runtime-trees"),
            "pair-forest",
        )
        self.assertEqual("a runtime-trees model, not pair-forest", str(error))

    def test_a_name_that_means_nothing(self) -> None:
        error = self.assertRaises(model_registry.UnknownModel, resolver.model, "magic")
        self.assertIn("unknown interference model 'magic'", str(error))
        error = self.assertRaises(
            model_registry.UnknownModel, resolver.model, "magic", lookup=lambda name: None
        )
        self.assertIn("nor stored in the plugin database", str(error))
        # Told before any file is read: the file is beside the point.
        error = self.assertRaises(
            model_registry.UnknownModel, resolver.model, "magic", path="no/such/file"
        )
        self.assertIn("unknown interference model 'magic'", str(error))
