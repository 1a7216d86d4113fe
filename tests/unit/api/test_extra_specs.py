"""The hpc: validators as Nova's own registry loads and applies them."""

from __future__ import annotations

import fixtures
import testtools
from nova import exception
from nova.api.validation.extra_specs import validators

from hpc_nova_scheduler.api import extra_specs


class ValidatorTestCase(testtools.TestCase):
    """Each test validates as one request of its own.

    The validators join the keys of one API call by the request id of the
    current oslo.context, which an earlier test in the same thread may have
    left behind: its keys must not count as this test's.
    """

    def setUp(self) -> None:
        super().setUp()
        self.useFixture(
            fixtures.MonkeyPatch(f"{extra_specs.__name__}._CALL", extra_specs._CallSpecs())
        )


class TestRegistration(ValidatorTestCase):
    def test_nova_loads_our_validators_through_the_entry_point(self) -> None:
        for name in ("hpc:app_class", "hpc:cache_score", "hpc:app_name", "hpc:preemptible"):
            self.assertIsInstance(validators.VALIDATORS[name], extra_specs.HpcExtraSpecValidator)
        self.assertIn("hpc", validators.NAMESPACES)

    def test_every_validator_is_documented(self) -> None:
        for validator in extra_specs.register():
            self.assertTrue(validator.description)
            self.assertTrue(validator.value["description"])


class TestValidation(ValidatorTestCase):
    def test_good_values(self) -> None:
        for name, value in (
            ("hpc:app_class", "ExtremeHPC"),
            ("hpc:app_class", "nonhpc"),
            ("hpc:cache_score", "0"),
            ("hpc:cache_score", "7.5"),
            ("hpc:app_name", "LU.C.16"),
            ("hpc:preemptible", "true"),
            ("hpc:preemptible", "False"),
        ):
            validators.validate(name, value)

    def test_bad_values_name_the_key(self) -> None:
        for name, value, reason in (
            ("hpc:app_class", "Turbo", "unknown application class 'Turbo'"),
            ("hpc:cache_score", "-1", "negative"),
            ("hpc:cache_score", "NaN", "not a finite number"),
            ("hpc:cache_score", "inf", "not a finite number"),
            ("hpc:cache_score", "lots", "not a number"),
            ("hpc:app_name", "", "empty"),
            ("hpc:preemptible", "maybe", "expected true or false, got 'maybe'"),
        ):
            error = self.assertRaises(exception.ValidationError, validators.validate, name, value)
            self.assertIn(f"extra spec '{name}'", str(error))
            self.assertIn(reason, str(error))

    def test_unknown_hpc_key_is_rejected(self) -> None:
        error = self.assertRaises(exception.ValidationError, validators.validate, "hpc:racks", "1")
        self.assertIn("hpc:racks", str(error))

    def test_other_namespaces_are_not_ours(self) -> None:
        validators.validate("hpcx:anything", "1")


class TestIdleTrait(ValidatorTestCase):
    def test_ours_takes_the_key_from_novas_custom_trait_validator(self) -> None:
        self.assertIsInstance(
            validators.VALIDATORS["trait:CUSTOM_HPC_IDLE"], extra_specs.NarrowingTraitValidator
        )
        validators.validate("trait:CUSTOM_HPC_IDLE", "required")
        validators.validate("trait:CUSTOM_HPC_IDLE", "forbidden")

    def test_a_bad_value_names_the_key(self) -> None:
        error = self.assertRaises(
            exception.ValidationError, validators.validate, "trait:CUSTOM_HPC_IDLE", "yes"
        )
        self.assertIn("extra spec 'trait:CUSTOM_HPC_IDLE'", str(error))
        self.assertIn("expected required or forbidden, got 'yes'", str(error))
