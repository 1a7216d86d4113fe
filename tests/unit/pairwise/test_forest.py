"""Seed 001's pairwise forest: fitting, predicting hosts, storing with skops."""

from __future__ import annotations

import os
import random

import fixtures
import skops.io
import testtools
import yaml

from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord
from hpc_nova_scheduler.interference import model_registry, stored
from hpc_nova_scheduler.interference.base import MissingFeatures, Tenant
from hpc_nova_scheduler.pairwise import forest
from tests.unit.cmd.test_cli import run

COUNTERS = forest.GENERIC_COUNTERS


def applications(count: int, seed: int = 1) -> list[ProfileRecord]:
    rng = random.Random(seed)
    return [
        ProfileRecord(f"app{i}", counters={c: rng.random() for c in COUNTERS}) for i in range(count)
    ]


def truth(primary: ProfileRecord, interferer: ProfileRecord) -> float:
    """A made-up degradation: cache-hungry pairs hurt each other."""
    a, b = primary.counters, interferer.counters
    return 60 * a["cache_misses"] * b["cache_references"] + 10 * b["CPU_usage"] - 3


def records(apps: list[ProfileRecord]) -> list[InterferenceRecord]:
    return [
        InterferenceRecord(a.name, b.name, truth(a, b), truth(b, a))
        for i, a in enumerate(apps)
        for b in apps[i + 1 :]
    ]


class TestForest(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.apps = applications(24)
        by_name = {a.name: a for a in self.apps}
        self.samples = forest.samples_from_records(records(self.apps), by_name)

    def test_the_paper_s_hyper_parameters(self) -> None:
        fitted = forest.PairForest().fit(self.samples)
        params = fitted.forest.get_params()
        self.assertEqual(22, params["n_estimators"])
        self.assertEqual("sqrt", params["max_features"])
        self.assertEqual(2, params["min_samples_split"])
        self.assertTrue(params["bootstrap"])
        self.assertEqual(6, forest.PairForest(trees=6).fit(self.samples).forest.n_estimators)
        self.assertEqual(sorted(COUNTERS), list(fitted.counters))

    def test_it_learns_the_pairs(self) -> None:
        r2, error = forest.cross_validate(forest.PairForest(), self.samples, 5)
        self.assertGreater(r2, 0.6)
        self.assertLess(error, 8)

    def test_a_host_adds_the_pairs(self) -> None:
        fitted = forest.PairForest().fit(self.samples)
        a, b, c = (Tenant.of(p) for p in self.apps[:3])
        pairs = fitted.degradations([(a.profile, b.profile), (a.profile, c.profile)]).tolist()
        prediction = fitted.predict([a, b, c])
        self.assertAlmostEqual(sum(pairs), prediction.slowdowns[0], 9)
        self.assertEqual((0.0,), fitted.predict([a]).slowdowns)
        self.assertTrue(all(s >= 0 for s in prediction.slowdowns))

    def test_not_fitted_and_missing_counters_are_named(self) -> None:
        model = model_registry.load("pair-forest")
        two = [Tenant.of(p) for p in self.apps[:2]]
        self.assertRaises(forest.NotFitted, model.predict, two)
        fitted = model.fit(self.samples)
        bare = Tenant.of(ProfileRecord("bare", counters={"cycles": 1.0}))
        error = self.assertRaises(MissingFeatures, fitted.predict, [two[0], bare])
        self.assertIn("counters.CPU_usage", str(error))

    def test_stored_with_skops_and_its_versions(self) -> None:
        fitted = forest.PairForest(trees=6).fit(self.samples)
        again = forest.PairForest.loads(fitted.dumps())
        pairs = [(s.primary, s.interferer) for s in self.samples[:20]]
        self.assertEqual(fitted.degradations(pairs).tolist(), again.degradations(pairs).tolist())
        self.assertEqual({"python", "numpy", "scikit-learn", "skops"}, set(again.versions))

    def test_loading_trusts_nothing_but_scikit_learn_and_numpy(self) -> None:
        self.assertRaises(stored.StoredModelError, forest.PairForest.loads, b"not a model")
        foreign = skops.io.dumps({"kind": "pair-forest", "forest": fixtures.TempDir()})
        error = self.assertRaises(stored.StoredModelError, forest.PairForest.loads, foreign)
        self.assertIn("do not trust", str(error))
        other = skops.io.dumps({"kind": "something else"})
        self.assertRaises(stored.StoredModelError, forest.PairForest.loads, other)


class TestCommand(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        apps = applications(16)
        self.profiles = os.path.join(self.dir, "profiles.yaml")
        with open(self.profiles, "w") as stream:
            yaml.safe_dump({"profiles": [a.to_mapping() for a in apps]}, stream)
        self.pairs = os.path.join(self.dir, "pairs.yaml")
        with open(self.pairs, "w") as stream:
            yaml.safe_dump(
                {
                    "interferences": [
                        {
                            "app_a": r.app_a,
                            "app_b": r.app_b,
                            "slowdown_a": r.slowdown_a,
                            "slowdown_b": r.slowdown_b,
                        }
                        for r in records(apps)
                    ]
                },
                stream,
            )
        self.stored = os.path.join(self.dir, "forest.skops")

    def model(self, *argv: str) -> tuple[int, str, str]:
        return run("--config-file", "/dev/null", "model", *argv)

    def test_fit_store_predict_evaluate(self) -> None:
        code, out, err = self.model(
            "fit", "--model", "pair-forest", "--param", "trees=6",
            "--profiles", self.profiles, "--save", self.stored, self.pairs,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("fit over 240 measured pairs", out)
        self.assertIn("5-fold cross-validation over 240 pairs: R^2", out)
        self.assertIn("made with python", out)
        code, out, err = self.model(
            "predict", "--model", "pair-forest", "--load", self.stored,
            "--profiles", self.profiles, "app1", "app2", "app3",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertTrue(out.splitlines()[-1].startswith("predicted interference: "))
        code, out, err = self.model(
            "evaluate", "--model", "pair-forest", "--load", self.stored,
            "--profiles", self.profiles, self.pairs,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("pair-forest over 240 measured pairs", out)

    def test_errors(self) -> None:
        code, _, err = self.model(
            "fit", "--model", "pair-forest", "--profiles", self.profiles, self.pairs
        )
        self.assertEqual(1, code)
        self.assertIn("--save FILE", err)
        code, _, err = self.model(
            "predict", "--model", "pair-forest", "--profiles", self.profiles, "app1", "app2"
        )
        self.assertEqual(1, code)
        self.assertIn("is not fitted", err)
        with open(self.stored, "wb") as stream:
            stream.write(b"junk")
        code, _, err = self.model(
            "predict", "--model", "pair-forest", "--load", self.stored,
            "--profiles", self.profiles, "app1", "app2",
        )  # fmt: skip
        self.assertEqual(1, code)
        self.assertIn("not a stored model", err)

    def test_stored_in_the_plugin_database(self) -> None:
        url = f"sqlite:///{os.path.join(self.dir, 'plugin.sqlite')}"

        def cli(*argv: str) -> tuple[int, str, str]:
            return run("--config-file", "/dev/null", "--connection", url, *argv)

        self.assertEqual(0, cli("db", "sync")[0])
        code, out, err = cli(
            "model", "fit", "--model", "pair-forest", "--param", "trees=6",
            "--profiles", self.profiles, "--store", "my-forest", self.pairs,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("interference_model = my-forest", out)
        code, out, err = cli("model", "list", "--stored")
        self.assertEqual(0, code, err)
        self.assertIn("| my-forest ", out)
        self.assertIn("scikit-learn", out)
        code, out, err = cli(
            "model", "predict", "--model", "pair-forest", "--stored", "my-forest",
            "--profiles", self.profiles, "app1", "app2",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        code, _, err = cli(
            "model", "predict", "--model", "pair-forest", "--stored", "nope",
            "--profiles", self.profiles, "app1", "app2",
        )  # fmt: skip
        self.assertEqual(1, code)
        self.assertIn("--stored nope: no model stored under that name", err)


class TestBatch(testtools.TestCase):
    def test_many_hosts_in_one_call_are_each_host_alone(self) -> None:
        apps = applications(20)
        by_name = {a.name: a for a in apps}
        fitted = forest.PairForest(trees=6).fit(forest.samples_from_records(records(apps), by_name))
        hosts = [
            [Tenant.of(a) for a in apps[i : i + size]]
            for i, size in ((0, 3), (5, 2), (9, 1), (12, 4))
        ]
        self.assertEqual([fitted.predict(h) for h in hosts], fitted.predict_many(hosts))
