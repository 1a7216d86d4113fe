"""nova-api validates hpc: extra specs through the plugin's entry point."""

from __future__ import annotations

from nova.tests.functional.api import client

from tests.functional import base


class TestExtraSpecValidation(base.NovaTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.flavor_id = self._create_flavor(memory_mb=512, vcpu=1, disk=1, ephemeral=0)

    def set_specs(self, specs: dict, microversion: str = "2.86") -> dict:
        self.admin_api.microversion = microversion
        return self.admin_api.post_extra_spec(self.flavor_id, {"extra_specs": specs})

    def assert_rejected(self, specs: dict, key: str, reason: str) -> None:
        error = self.assertRaises(client.OpenStackApiException, self.set_specs, specs)
        self.assertEqual(400, error.response.status_code)
        self.assertIn(key, error.response.text)
        self.assertIn(reason, error.response.text)

    def test_valid_specs_are_stored(self) -> None:
        specs = {"hpc:app_class": "synchpc", "hpc:cache_score": "16", "hpc:app_name": "LU.C.16"}
        self.set_specs(specs)
        self.assertEqual(specs, self.admin_api.get_extra_specs(self.flavor_id))

    def test_bad_values_are_rejected_naming_the_key(self) -> None:
        for specs, key, reason in (
            ({"hpc:app_class": "MegaHPC"}, "hpc:app_class", "unknown application class"),
            ({"hpc:cache_score": "-1"}, "hpc:cache_score", "negative"),
            ({"hpc:cache_score": "nan"}, "hpc:cache_score", "not a finite number"),
            ({"hpc:cache_score": "Infinity"}, "hpc:cache_score", "not a finite number"),
            ({"hpc:cache_score": "many"}, "hpc:cache_score", "not a number"),
            ({"hpc:cache_score": "1e300"}, "hpc:cache_score", "beyond any measurement"),
            ({"hpc:app_name": ""}, "hpc:app_name", "empty"),
            ({"hpc:rack": "r1"}, "hpc:rack", "not appear to be a valid extra spec"),
        ):
            self.assert_rejected(specs, key, reason)
        self.assertEqual({}, self.admin_api.get_extra_specs(self.flavor_id))

    def test_one_bad_spec_rejects_the_whole_request(self) -> None:
        self.assert_rejected(
            {"hpc:app_class": "SyncHPC", "hpc:cache_score": "x"}, "hpc:cache_score", "not a number"
        )
        self.assertEqual({}, self.admin_api.get_extra_specs(self.flavor_id))

    def test_update_of_one_key_is_validated(self) -> None:
        self.set_specs({"hpc:app_class": "AsyncHPC"})
        self.admin_api.microversion = "2.86"
        error = self.assertRaises(
            client.OpenStackApiException,
            self.admin_api.put_extra_spec,
            self.flavor_id,
            "hpc:app_class",
            {"hpc:app_class": "Fast"},
        )
        self.assertEqual(400, error.response.status_code)
        self.assertIn("hpc:app_class", error.response.text)

    def test_microversions_before_2_86_do_not_validate(self) -> None:
        # Nova's own behaviour: validation is opt-in by microversion. The
        # scheduler still parses the values and refuses what it cannot read.
        self.set_specs({"hpc:app_class": "MegaHPC"}, microversion="2.85")
        self.assertEqual(
            {"hpc:app_class": "MegaHPC"}, self.admin_api.get_extra_specs(self.flavor_id)
        )

    def test_server_boots_with_hpc_flavor_and_hint(self) -> None:
        self.set_specs(
            {"hpc:app_class": "SyncHPC", "hpc:cache_score": "7.5", "hpc:app_name": "ChaNGa.4"}
        )
        server = self.boot(self.flavor_id, hints={"hpc_app_name": "ChaNGa.8"})
        self.assertEqual("compute", server["OS-EXT-SRV-ATTR:host"])
