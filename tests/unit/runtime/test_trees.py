"""Seed 000's runtime-trees: fitted on the shaped dataset, validated on real co-runners."""

from __future__ import annotations

import functools
import os
import statistics

import fixtures
import skops.io
import testtools

from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.core.records import ProfileRecord, SoloRun
from hpc_nova_scheduler.interference import model_registry, stored
from hpc_nova_scheduler.interference.base import MissingFeatures, Tenant
from hpc_nova_scheduler.runtime import shaped, trees
from tests.unit.cmd.test_cli import run

#: Fewer trees than the paper's 100 keep the tests quick; the benchmark uses 100.
TREES = 25


@functools.cache
def dataset() -> shaped.Dataset:
    return shaped.dataset(seed=3)


@functools.cache
def profiles() -> dict[str, ProfileRecord]:
    return {p.name: p for p in dataset().profiles}


def samples(runs) -> list[trees.RunSample]:
    return trees.samples_from_runs(runs, profiles())


@functools.cache
def fitted() -> trees.RuntimeTrees:
    return trees.RuntimeTrees(trees=TREES).fit(samples(dataset().training))


def tenant(name: str, vms: int = 1, host_type: str | None = "T1") -> Tenant:
    return Tenant.of(profiles()[name], vms, host_type)


class TestRuntimeTrees(testtools.TestCase):
    def test_registered_and_host_typed(self) -> None:
        model = model_registry.load("runtime-trees")
        self.assertIsInstance(model, trees.RuntimeTrees)
        self.assertTrue(model.host_typed)
        self.assertTrue(model_registry.is_stored_kind("runtime-trees"))

    def test_the_paper_s_learner(self) -> None:
        model = fitted()
        self.assertEqual({"CG", "LAMMPS", "NAMD", "Zeusmp2", "bigdata"}, set(model.families))
        ensemble = model.families["CG"]
        self.assertEqual(TREES, len(ensemble.estimators_))
        self.assertEqual("DecisionTreeRegressor", type(ensemble.estimators_[0]).__name__)
        self.assertEqual(trees.MIN_LEAF, ensemble.estimators_[0].min_samples_leaf)
        self.assertGreater(ensemble.estimators_[0].ccp_alpha, 0.0)
        self.assertEqual(("T1", "T2"), model.host_types)
        self.assertEqual(sorted(trees.SEED_METRICS), list(model.metrics))

    def test_validated_on_real_co_runners_it_beats_the_solo_run_time(self) -> None:
        # Fitted on solo and synthetic co-runs, judged on runs next to the
        # other applications, as seed 000 validates.
        held = samples(dataset().validation)
        estimates = fitted().runtimes([s.tenants() for s in held], first_only=True)
        errors = [abs(e - s.runtime) / s.runtime for (e,), s in zip(estimates, held, strict=True)]
        naive = [
            abs(s.profile.solo_runs[s.host_type].runtime - s.runtime) / s.runtime for s in held
        ]
        self.assertLess(statistics.fmean(errors), 0.15)
        self.assertLess(statistics.fmean(errors), statistics.fmean(naive) / 2)

    def test_cross_validation_per_family(self) -> None:
        some = samples(dataset().training[::3])
        checked = trees.cross_validate(trees.RuntimeTrees(trees=10), some, 3)
        self.assertEqual({"CG", "LAMMPS", "NAMD", "Zeusmp2", "bigdata"}, set(checked.errors))
        self.assertLess(checked.average, 25.0)
        self.assertEqual(len(some), sum(checked.runs.values()))

    def test_network_bound_pair_predicted_worse_than_a_light_one(self) -> None:
        model = fitted()
        heavy = model.predict([tenant("CG", 4), tenant("NAMD", 4)])
        light = model.predict([tenant("LAMMPS", 2, "T2"), tenant("WordCountSpark", 2, "T2")])
        self.assertGreater(heavy.worst, 25.0)
        self.assertLess(light.worst, 10.0)
        self.assertTrue(all(s >= 0 for s in heavy.slowdowns + light.slowdowns))

    def test_slowdown_is_against_the_same_vms_alone(self) -> None:
        model = fitted()
        alone = model.predict([tenant("LAMMPS", 4)])
        self.assertEqual((0.0,), alone.slowdowns)

    def test_what_it_cannot_judge_is_named(self) -> None:
        model = fitted()
        self.assertRaises(
            trees.NotFitted, model_registry.load("runtime-trees").predict, [tenant("CG")]
        )
        error = self.assertRaises(
            MissingFeatures, model.predict, [tenant("CG", host_type=None), tenant("NAMD")]
        )
        self.assertIn("the host's type", str(error))
        error = self.assertRaises(
            MissingFeatures, model.predict, [tenant("CG", host_type="T9"), tenant("NAMD")]
        )
        self.assertIn("training runs on host type T9", str(error))
        bare = Tenant.of(ProfileRecord("bare", solo_runs={"T2": SoloRun(5.0)}), 1, "T1")
        error = self.assertRaises(MissingFeatures, model.predict, [tenant("CG"), bare])
        self.assertIn("solo_runs.T1", str(error))
        few = Tenant.of(
            ProfileRecord("few", solo_runs={"T1": SoloRun(5.0, {"cpu_user": 1.0})}), 1, "T1"
        )
        error = self.assertRaises(MissingFeatures, model.predict, [tenant("CG"), few])
        self.assertIn("solo_runs.T1.metrics.cpu_idle", str(error))
        # A synthetic workload has no model of its own: its slowdown is unknown.
        error = self.assertRaises(
            MissingFeatures, model.predict, [tenant("CG"), tenant("synthetic-net-3")]
        )
        self.assertIn("family synthetic", str(error))

    def test_one_call_per_family_answers_every_host(self) -> None:
        model = fitted()
        hosts = [
            [tenant("CG", 2), tenant("NAMD", 2)],
            [tenant("GrepSpark", 1, "T2"), tenant("TeraGen", 3, "T2")],
            [tenant("LAMMPS")],
        ]
        together = model.predict_many(hosts)
        self.assertEqual([model.predict(h) for h in hosts], together)

    def test_stored_with_skops_and_its_versions(self) -> None:
        model = fitted()
        again = trees.RuntimeTrees.loads(model.dumps())
        hosts = [s.tenants() for s in samples(dataset().validation[:30])]
        self.assertEqual(model.runtimes(hosts), again.runtimes(hosts))
        self.assertEqual((model.metrics, model.host_types), (again.metrics, again.host_types))
        self.assertEqual({"python", "numpy", "scikit-learn", "skops"}, set(again.versions))
        # Deflated: well under MariaDB's default 16 MB packet.
        self.assertLess(len(model.dumps()), 4_000_000)

    def test_loading_trusts_nothing_but_scikit_learn_and_numpy(self) -> None:
        self.assertRaises(stored.StoredModelError, trees.RuntimeTrees.loads, b"not a model")
        foreign = skops.io.dumps({"kind": "runtime-trees", "families": fixtures.TempDir()})
        error = self.assertRaises(stored.StoredModelError, trees.RuntimeTrees.loads, foreign)
        self.assertIn("do not trust", str(error))
        forest = skops.io.dumps({"kind": "pair-forest"})
        self.assertRaises(stored.StoredModelError, trees.RuntimeTrees.loads, forest)

    def test_bad_parameters_and_too_few_runs(self) -> None:
        self.assertRaises(ValueError, trees.RuntimeTrees, trees=0)
        self.assertRaises(ValueError, trees.RuntimeTrees, min_leaf=0)
        self.assertRaises(ValueError, trees.RuntimeTrees, prune=1.5)
        one = samples(dataset().training[:1])
        error = self.assertRaises(ValueError, trees.RuntimeTrees().fit, one)
        self.assertIn("one measured run", str(error))


class TestCommand(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        data = dataset()
        self.profiles = self.path("profiles.yaml")
        with open(self.profiles, "w") as stream:
            datafiles.write_profiles(stream, data.profiles, "yaml")
        self.training = self.path("training.yaml")
        with open(self.training, "w") as stream:
            datafiles.write_runs(stream, data.training, "yaml")
        self.validation = self.path("validation.csv")
        with open(self.validation, "w") as stream:
            datafiles.write_runs(stream, data.validation, "csv")

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def test_fit_evaluate_predict(self) -> None:
        saved = self.path("trees.skops")
        code, out, err = run(
            "model", "fit", "--model", "runtime-trees", "--param", "trees=15",
            "--profiles", self.profiles, self.training, "--save", saved,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("5 families, host types T1, T2", out)
        self.assertIn("5-fold cross-validation per family: mean error", out)
        self.assertIn("seed 000 reports 21.84%", out)
        code, out, err = run(
            "model", "evaluate", "--model", "runtime-trees", "--profiles", self.profiles,
            "--load", saved, self.validation,
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertIn("runtime-trees over 224 runs of", out)
        mean = float(out.split("mean error ")[-1].split("%")[0])
        self.assertLess(mean, 15.0)
        code, out, err = run(
            "model", "predict", "--model", "runtime-trees", "--profiles", self.profiles,
            "--load", saved, "--host-type", "T1", "CG", "NAMD",
        )  # fmt: skip
        self.assertEqual(0, code, err)
        self.assertRegex(out.splitlines()[-1], r"^predicted interference: \d+\.\d\d%$")

    def test_clear_errors(self) -> None:
        saved = self.path("trees.skops")
        code, _, err = run(
            "model", "predict", "--model", "runtime-trees", "--profiles", self.profiles,
            "CG", "NAMD",
        )  # fmt: skip
        self.assertEqual(1, code)
        self.assertIn("--host-type", err)
        code, _, err = run(
            "model", "fit", "--model", "runtime-trees", "--profiles", self.profiles,
            self.training,
        )  # fmt: skip
        self.assertIn("--save FILE or --store NAME", err)
        bad = self.path("bad.yaml")
        with open(bad, "w") as stream:
            stream.write("runs:\n- {application: CG, host_type: T1, runtime: -3}\n")
        code, _, err = run(
            "model", "fit", "--model", "runtime-trees", "--profiles", self.profiles, bad,
            "--save", saved,
        )  # fmt: skip
        self.assertEqual(1, code)
        self.assertIn("bad.yaml:2: runtime", err)
        unknown = self.path("unknown.yaml")
        with open(unknown, "w") as stream:
            stream.write("runs:\n- {application: CG, host_type: T1, runtime: 3, co_runners: X}\n")
        code, _, err = run(
            "model", "fit", "--model", "runtime-trees", "--profiles", self.profiles, unknown,
            "--save", saved,
        )  # fmt: skip
        self.assertIn("no profile named 'X'", err)
        self.assertFalse(os.path.exists(saved))
