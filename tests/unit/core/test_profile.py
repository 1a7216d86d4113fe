"""Application classes and request profiles."""

from __future__ import annotations

import math

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.core import profile
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile, ProfileError


class TestAppClass(testtools.TestCase):
    def test_parse_is_case_insensitive_and_canonical(self) -> None:
        for text in ("extremehpc", "EXTREMEHPC", " ExtremeHpc "):
            self.assertIs(AppClass.EXTREME_HPC, AppClass.parse(text))
        self.assertEqual("SyncHPC", str(AppClass.parse("synchpc")))

    def test_unknown_class_names_the_key_and_choices(self) -> None:
        error = self.assertRaises(ProfileError, AppClass.parse, "SuperHPC")
        self.assertEqual("hpc:app_class", error.key)
        self.assertIn("ExtremeHPC, SyncHPC, AsyncHPC, NonHPC", str(error))

    def test_non_string_is_rejected(self) -> None:
        self.assertRaises(ProfileError, AppClass.parse, 3)

    def test_class_properties_follow_seed_003(self) -> None:
        self.assertEqual([AppClass.EXTREME_HPC], [c for c in AppClass if c.needs_dedicated_hosts])
        self.assertEqual(
            {AppClass.EXTREME_HPC, AppClass.SYNC_HPC}, {c for c in AppClass if c.topology_aware}
        )
        self.assertEqual([AppClass.NON_HPC], [c for c in AppClass if not c.needs_homogeneity])
        self.assertFalse(AppClass.NON_HPC.is_hpc)

    @given(st.sampled_from(list(AppClass)), st.lists(st.booleans(), min_size=1, max_size=12))
    def test_any_capitalisation_parses(self, member: AppClass, upper: list[bool]) -> None:
        text = "".join(
            ch.upper() if upper[i % len(upper)] else ch.lower() for i, ch in enumerate(member.value)
        )
        self.assertIs(member, AppClass.parse(text))


class TestCacheScore(testtools.TestCase):
    def test_valid_scores(self) -> None:
        self.assertEqual(47.0, profile.parse_cache_score("47"))
        self.assertEqual(7.5, profile.parse_cache_score(" 7.5 "))
        self.assertEqual(0.0, profile.parse_cache_score(0))
        self.assertEqual(1e3, profile.parse_cache_score("1e3"))

    def test_invalid_scores_name_the_key(self) -> None:
        for bad in ("-1", "nan", "NaN", "inf", "-inf", "abc", "", True, None, [], "1,5", "1e300"):
            error = self.assertRaises(ProfileError, profile.parse_cache_score, bad)
            self.assertEqual("hpc:cache_score", error.key, bad)

    def test_absurd_scores_say_why(self) -> None:
        error = self.assertRaises(ProfileError, profile.parse_cache_score, "1e300")
        self.assertIn("beyond any measurement", str(error))
        self.assertEqual(profile.MAX_CACHE_SCORE, profile.parse_cache_score("100000"))

    @given(st.floats(min_value=0, max_value=profile.MAX_CACHE_SCORE))
    def test_every_finite_non_negative_float_survives_a_round_trip(self, score: float) -> None:
        self.assertEqual(score, profile.parse_cache_score(repr(score)))

    @given(st.floats().filter(lambda x: math.isnan(x) or math.isinf(x) or x < 0))
    def test_no_negative_or_non_finite_float_is_accepted(self, score: float) -> None:
        self.assertRaises(ProfileError, profile.parse_cache_score, repr(score))


class TestAppName(testtools.TestCase):
    def test_names_are_stripped(self) -> None:
        self.assertEqual("LU.C.16", profile.parse_app_name("  LU.C.16 "))

    def test_empty_or_long_names_are_rejected(self) -> None:
        for bad in ("", "   ", "x" * 256, 5):
            self.assertRaises(ProfileError, profile.parse_app_name, bad)


class TestPreemptible(testtools.TestCase):
    def test_true_or_false_in_any_case(self) -> None:
        for text, expected in (("true", True), (" TRUE ", True), ("False", False), (True, True)):
            self.assertIs(expected, profile.parse_preemptible(text))

    def test_anything_else_names_the_key(self) -> None:
        for bad in ("maybe", "", "1", "yes", None, 1):
            error = self.assertRaises(ProfileError, profile.parse_preemptible, bad)
            self.assertEqual("hpc:preemptible", error.key)
            self.assertIn("expected true or false", str(error))

    def test_absent_is_false_and_the_profile_ignores_it(self) -> None:
        self.assertFalse(profile.preemptible_from_specs({}))
        self.assertFalse(profile.preemptible_from_specs(None))
        specs = {"hpc:preemptible": "true"}
        self.assertTrue(profile.preemptible_from_specs(specs))
        # Known in the namespace: alone, it makes a NonHPC request of the plugin.
        self.assertEqual(ApplicationProfile(), profile.profile_from_request(specs))
        self.assertTrue(profile.has_hpc_specs(specs))
        profile.validate_extra_spec("hpc:preemptible", "false")
        self.assertRaises(
            ProfileError, profile.preemptible_from_specs, {"hpc:preemptible": "maybe"}
        )


class TestProfileFromRequest(testtools.TestCase):
    def test_defaults_without_hpc_specs(self) -> None:
        self.assertEqual(ApplicationProfile(), profile.profile_from_request({"hw:cpu_policy": "x"}))
        self.assertEqual(ApplicationProfile(), profile.profile_from_request(None, None))

    def test_specs_make_one_immutable_profile(self) -> None:
        found = profile.profile_from_request(
            {"hpc:app_class": "synchpc", "hpc:cache_score": "16", "hpc:app_name": "LU.C.16"}
        )
        self.assertEqual(ApplicationProfile(AppClass.SYNC_HPC, 16.0, "LU.C.16"), found)
        self.assertRaises(AttributeError, setattr, found, "cache_score", 1.0)

    def test_hint_overrides_flavor_app_name(self) -> None:
        specs = {"hpc:app_class": "AsyncHPC", "hpc:app_name": "EP.B.4"}
        self.assertEqual(
            "EP.C.4", profile.profile_from_request(specs, {"hpc_app_name": ["EP.C.4"]}).app_name
        )
        self.assertEqual(
            "EP.C.4", profile.profile_from_request(specs, {"hpc_app_name": "EP.C.4"}).app_name
        )

    def test_bad_hint_names_the_hint(self) -> None:
        for hint in (
            [
                "",
            ],
            ["a", "b"],
            [" "],
        ):
            error = self.assertRaises(
                ProfileError, profile.profile_from_request, {}, {"hpc_app_name": hint}
            )
            self.assertEqual("hpc_app_name", error.key)

    def test_unknown_hpc_key_is_an_error(self) -> None:
        error = self.assertRaises(ProfileError, profile.profile_from_request, {"hpc:rack": "r1"})
        self.assertEqual("hpc:rack", error.key)

    def test_to_extra_specs_is_canonical_and_round_trips(self) -> None:
        original = ApplicationProfile(AppClass.EXTREME_HPC, 47.0, "IS.B.4")
        specs = original.to_extra_specs()
        self.assertEqual(
            {"hpc:app_class": "ExtremeHPC", "hpc:cache_score": "47", "hpc:app_name": "IS.B.4"},
            specs,
        )
        self.assertEqual(original, profile.profile_from_request(specs))

    @given(
        st.sampled_from(list(AppClass)),
        st.floats(min_value=0, max_value=profile.MAX_CACHE_SCORE),
        st.one_of(
            st.none(), st.text(min_size=1, max_size=40).filter(lambda s: s.strip() == s and s)
        ),
    )
    def test_profiles_round_trip_through_extra_specs(self, app_class, score, name) -> None:
        original = ApplicationProfile(app_class, score, name)
        self.assertEqual(original, profile.profile_from_request(original.to_extra_specs()))

    def test_has_hpc_specs(self) -> None:
        self.assertTrue(profile.has_hpc_specs({"hpc:app_class": "x"}))
        self.assertFalse(profile.has_hpc_specs({"hw:cpu_policy": "x", "hpcfoo": "y"}))
