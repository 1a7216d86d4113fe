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
        specs = {
            "hpc:app_class": "synchpc",
            "hpc:cache_score": "16",
            "hpc:app_name": "LU.C.16",
            "hpc:preemptible": "True",
        }
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
            ({"hpc:preemptible": "maybe"}, "hpc:preemptible", "expected true or false"),
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


REQUIRED = "hpc:topology_required"
PREFERRED = "hpc:topology_preferred"
SEGMENT = "hpc:topology_segment"
SEGMENT_LEVEL = "hpc:topology_segment_level"


class TestTopologySpecValidation(base.NovaTestCase):
    """The four topology specs, checked by nova-api against the cloud's levels."""

    def setUp(self) -> None:
        super().setUp()
        self.flavor_id = self._create_flavor(memory_mb=512, vcpu=1, disk=1, ephemeral=0)

    def set_specs(self, specs: dict, flavor_id: str | None = None) -> dict:
        self.admin_api.microversion = "2.86"
        return self.admin_api.post_extra_spec(flavor_id or self.flavor_id, {"extra_specs": specs})

    def stored(self, flavor_id: str | None = None) -> dict:
        return self.admin_api.get_extra_specs(flavor_id or self.flavor_id)

    def rejection(self, specs: dict, flavor_id: str | None = None) -> str:
        """The message of the 400 that ``specs`` get; nothing is stored."""
        before = self.stored(flavor_id)
        error = self.assertRaises(client.OpenStackApiException, self.set_specs, specs, flavor_id)
        self.assertEqual(400, error.response.status_code)
        self.assertEqual(before, self.stored(flavor_id))
        return error.response.json()["badRequest"]["message"]

    def assert_rejected(self, specs: dict, key: str, reason: str) -> None:
        message = self.rejection(specs)
        self.assertIn(f"extra spec '{key}'", message)
        self.assertIn(reason, message)

    def test_good_values_are_stored(self) -> None:
        specs = {REQUIRED: "rack", PREFERRED: "host", SEGMENT: "4", SEGMENT_LEVEL: "rack"}
        self.set_specs(specs)
        self.assertEqual(specs, self.stored())
        # Levels are case-insensitive, numbers may come as JSON numbers.
        self.set_specs({REQUIRED: "Rack", SEGMENT: 2, SEGMENT_LEVEL: "HOST"})
        self.assertEqual(
            {REQUIRED: "Rack", PREFERRED: "host", SEGMENT: "2", SEGMENT_LEVEL: "HOST"},
            self.stored(),
        )

    def test_bad_values_are_rejected_naming_the_key(self) -> None:
        for specs, key, reason in (
            ({REQUIRED: "pod"}, REQUIRED, "unknown topology level 'pod'"),
            ({REQUIRED: ""}, REQUIRED, "expected a topology level"),
            ({PREFERRED: "block"}, PREFERRED, "this cloud's levels are rack, host"),
            ({SEGMENT_LEVEL: "cpu_group"}, SEGMENT_LEVEL, "unknown topology level"),
            ({SEGMENT: "0", SEGMENT_LEVEL: "rack"}, SEGMENT, "below 1"),
            ({SEGMENT: 0, SEGMENT_LEVEL: "rack"}, SEGMENT, "below 1"),
            ({SEGMENT: "-3", SEGMENT_LEVEL: "rack"}, SEGMENT, "below 1"),
            ({SEGMENT: "x", SEGMENT_LEVEL: "rack"}, SEGMENT, "not a whole number"),
            ({SEGMENT: "1.5", SEGMENT_LEVEL: "rack"}, SEGMENT, "not a whole number"),
            ({SEGMENT: "100001", SEGMENT_LEVEL: "rack"}, SEGMENT, "above 100000"),
            ({"hpc:topology_segments": "2"}, "hpc:topology_segments", "not appear to be"),
        ):
            self.assert_rejected(specs, key, reason)
        self.assertEqual({}, self.stored())

    def test_update_of_one_key_is_validated(self) -> None:
        self.set_specs({SEGMENT: "2", SEGMENT_LEVEL: "rack"})
        self.admin_api.microversion = "2.86"
        error = self.assertRaises(
            client.OpenStackApiException,
            self.admin_api.put_extra_spec,
            self.flavor_id,
            SEGMENT,
            {SEGMENT: "0"},
        )
        self.assertEqual(400, error.response.status_code)
        self.assertIn(f"extra spec '{SEGMENT}'", error.response.json()["badRequest"]["message"])
        self.assertEqual({SEGMENT: "2", SEGMENT_LEVEL: "rack"}, self.stored())

    def test_levels_are_the_clouds_own(self) -> None:
        self.flags(topology_levels="block,rack", group="hpc_scheduler")
        for level in ("block", "rack", "host", "BLOCK"):
            self.set_specs({REQUIRED: level, SEGMENT: "2", SEGMENT_LEVEL: level})
        self.assert_rejected(
            {PREFERRED: "pod"},
            PREFERRED,
            "unknown topology level 'pod'; this cloud's levels are block, rack, host",
        )

    def test_a_bad_levels_option_is_a_one_line_400_naming_it(self) -> None:
        for value, reason in (
            ("block,host", "reserved"),
            ("rack,rack", "named twice"),
            ("block,Rack 2", "not a name"),
        ):
            self.flags(topology_levels=value, group="hpc_scheduler")
            message = self.rejection({REQUIRED: "rack"})
            self.assertIn(f"extra spec '{REQUIRED}' cannot be checked", message)
            self.assertIn("[hpc_scheduler] topology_levels", message)
            self.assertIn(reason, message)
            self.assertNotIn("\n", message)
            self.assertNotIn("Traceback", message)

    def test_keys_of_one_call_are_checked_together(self) -> None:
        self.flags(topology_levels="block,rack", group="hpc_scheduler")
        for specs, key, reason in (
            ({REQUIRED: "rack", PREFERRED: "block"}, PREFERRED, "not inside the required"),
            # The order of the keys in the body does not matter.
            ({PREFERRED: "block", REQUIRED: "rack"}, PREFERRED, "not inside the required"),
            ({REQUIRED: "rack", PREFERRED: "rack"}, PREFERRED, "not inside the required"),
            (
                {SEGMENT: "4", SEGMENT_LEVEL: "block", REQUIRED: "rack"},
                SEGMENT_LEVEL,
                "outside the required level 'rack'",
            ),
            # One level alone, the segment size missing from this call.
            ({SEGMENT_LEVEL: "block", REQUIRED: "rack"}, SEGMENT_LEVEL, "outside the required"),
        ):
            self.assert_rejected(specs, key, reason)
        self.assertEqual({}, self.stored())
        specs = {REQUIRED: "block", PREFERRED: "rack", SEGMENT: "4", SEGMENT_LEVEL: "rack"}
        self.set_specs(specs)
        self.assertEqual(specs, self.stored())

    def test_keys_of_other_calls_are_not_mixed_in(self) -> None:
        other = self._create_flavor(memory_mb=512, vcpu=1, disk=1, ephemeral=0)
        self.set_specs({REQUIRED: "rack"}, other)
        # Together with the other flavor's required rack this would be wrong.
        self.set_specs({PREFERRED: "rack", SEGMENT: "2", SEGMENT_LEVEL: "host"})
        self.assertEqual({PREFERRED: "rack", SEGMENT: "2", SEGMENT_LEVEL: "host"}, self.stored())
        self.assertEqual({REQUIRED: "rack"}, self.stored(other))

    def test_what_nova_api_cannot_see_is_left_to_the_scheduler(self) -> None:
        # Nova validates a body before reading the flavor and hands each
        # validator one key: a contradiction with a key stored by an earlier
        # call, and a missing partner key, pass nova-api. The scheduler
        # refuses such a flavor with NoValidHost and says why in its log.
        self.set_specs({REQUIRED: "rack"})
        self.set_specs({PREFERRED: "rack"})
        self.set_specs({SEGMENT: "3"})
        self.assertEqual({REQUIRED: "rack", PREFERRED: "rack", SEGMENT: "3"}, self.stored())


class TestIdleTraitValidation(base.NovaTestCase):
    """``trait:CUSTOM_HPC_IDLE=required`` is for ExtremeHPC flavors only."""

    IDLE = "trait:CUSTOM_HPC_IDLE"
    set_specs = TestExtraSpecValidation.set_specs
    assert_rejected = TestExtraSpecValidation.assert_rejected

    def setUp(self) -> None:
        super().setUp()
        self.flavor_id = self._create_flavor(memory_mb=512, vcpu=1, disk=1, ephemeral=0)

    def test_an_extreme_flavor_may_require_idle_hosts(self) -> None:
        for specs in (
            {"hpc:app_class": "ExtremeHPC", self.IDLE: "required"},
            {self.IDLE: "required", "hpc:app_class": "extremehpc"},
        ):
            self.set_specs(specs)
            self.assertEqual(specs, self.admin_api.get_extra_specs(self.flavor_id))

    def test_another_class_in_the_same_call_is_refused_naming_the_key(self) -> None:
        # Either order: whichever key nova-api validates last sees the other.
        for specs, key in (
            ({"hpc:app_class": "SyncHPC", self.IDLE: "required"}, self.IDLE),
            ({self.IDLE: "required", "hpc:app_class": "NonHPC"}, self.IDLE),
        ):
            self.assert_rejected(specs, key, "only ExtremeHPC flavors may require")
        self.assertEqual({}, self.admin_api.get_extra_specs(self.flavor_id))

    def test_a_bad_value_is_refused(self) -> None:
        self.assert_rejected({self.IDLE: "please"}, self.IDLE, "expected required or forbidden")

    def test_a_class_stored_before_is_left_to_the_scheduler(self) -> None:
        # Out of the validator's reach (it is handed one key, not the
        # flavor): the scheduler refuses this flavor's requests, naming the key.
        self.set_specs({"hpc:app_class": "SyncHPC"})
        self.set_specs({self.IDLE: "required"})
        self.assertEqual(
            {"hpc:app_class": "SyncHPC", self.IDLE: "required"},
            self.admin_api.get_extra_specs(self.flavor_id),
        )
