"""``[hpc_scheduler] interference_model`` in real Nova: each model keeps the
pairs it predicts harmful apart and lets benign pairs share a host."""

from __future__ import annotations

from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.demo.fake_driver import Shape
from tests.functional import base

SEED_PROFILES = str(resources.example_profiles_dir() / "seed-applications.yaml")


class ModelCase:
    """A mixin: two hosts of one rack and processor group, the seed profiles loaded."""

    HOSTS = {"n1": Shape(vcpus=4), "n2": Shape(vcpus=4)}
    RACKS = {"r1": ["n1", "n2"]}
    CPU_GROUPS = {"g": ["n1", "n2"]}
    MODEL = "cache-score"

    def setUp(self) -> None:
        super().setUp()
        self.database.import_profiles(datafiles.read_profiles(SEED_PROFILES))
        self.flags(
            interference_model=self.MODEL, interference_tolerance=10.0, group="hpc_scheduler"
        )

    def app(self, name: str, **specs) -> str:
        return self.hpc_flavor(app_class="SyncHPC", app_name=name, **specs)

    def assert_apart(self, first: str, second: str) -> None:
        one = self.hosts_of(self.launch(first, 2))
        two = self.hosts_of(self.launch(second, 2))
        self.assertEqual(2, sum(one.values()))
        self.assertEqual(2, sum(two.values()))
        self.assertFalse(set(one) & set(two), (one, two))

    def assert_together(self, first: str, second: str) -> None:
        one = self.hosts_of(self.launch(first, 2))
        two = self.hosts_of(self.launch(second, 2))
        self.assertEqual(one, two)  # packed onto the same host
        self.assertEqual({2}, set(one.values()))


class TestIvmpBase(ModelCase, base.HpcTestCase):
    MODEL = "ivmp-base"

    def test_harmful_pair_never_shares_a_host(self) -> None:
        # Two instances of PTRANS.I1.P6: 40 % predicted, tolerance 10 %.
        self.assert_apart(self.app("PTRANS.I1.P6"), self.app("PTRANS.I1.P6"))
        # With both hosts taken, a third instance has nowhere to go.
        self.assert_refused(self.launch(self.app("PTRANS.I1.P6")))

    def test_benign_pair_shares_a_host(self) -> None:
        self.assert_together(self.app("DGEMM.I1.P6"), self.app("PKTM.I2.P6"))

    def test_a_co_runner_without_a_profile_is_not_joined(self) -> None:
        unknown = self.hpc_flavor(app_class="SyncHPC", app_name="NOT-PROFILED")
        self.assert_apart(unknown, self.app("PKTM.I2.P6"))


class TestIvmp(ModelCase, base.HpcTestCase):
    MODEL = "ivmp"

    def test_harmful_pair_never_shares_a_host(self) -> None:
        self.assert_apart(self.app("FFT.I1.P4"), self.app("FFT.I1.P4"))

    def test_benign_pair_shares_a_host(self) -> None:
        self.assert_together(self.app("DGEMM.I1.P6"), self.app("PKTM.I2.P6"))


class TestCacheScore(ModelCase, base.HpcTestCase):
    MODEL = "cache-score"
    HPC_FLAGS = {"cache_threshold": 200.0, "sync_cache_threshold": 60.0}

    def test_harmful_pair_never_shares_a_host(self) -> None:
        # Seed 003 judges per VM: 2 x 25 on a host, and one more would pass beta (60).
        self.assert_apart(self.app("A", cache_score=25), self.app("B", cache_score=25))

    def test_benign_pair_shares_a_host(self) -> None:
        self.assert_together(self.app("A", cache_score=10), self.app("B", cache_score=10))


class TestUnknownModel(ModelCase, base.HpcTestCase):
    MODEL = "no-such-model"

    def test_hpc_requests_fail_and_plain_ones_do_not(self) -> None:
        self.assert_refused(self.launch(self.app("PKTM.I2.P6")))
        self.assertEqual(1, sum(self.hosts_of(self.launch(self.hpc_flavor())).values()))
