"""The trial cloud under an interference model: its profiles feed every
model, its measurements fit the fitted kinds, and the checker judges shared
hosts with the filter's own rule."""

from __future__ import annotations

from pathlib import Path

import fixtures
import testtools

from devcloud import checker, cli, config, models, workload
from devcloud.layout import Run
from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.interference import model_registry
from hpc_nova_scheduler.interference.base import Tenant
from hpc_nova_scheduler.interference.rule import ModelRule
from hpc_nova_scheduler.pairwise import forest
from hpc_nova_scheduler.runtime import trees

GROUPS = {"h1": "xeon", "h2": "xeon", "h3": "epyc", "h4": "epyc"}
PROFILES = {p.name: p for p in workload.profile_records()}


def server(uuid, host, tag, name, app_class=AppClass.ASYNC_HPC, count=1):
    return checker.Server(uuid, host, checker.Asked(tag, app_class, 10.0, name, count))


def rule(model, profiles=PROFILES) -> ModelRule:
    return ModelRule(model, config.INTERFERENCE_TOLERANCE, profiles)


def fitted_forest() -> forest.PairForest:
    samples = forest.samples_from_records(workload.measured_pairs(), PROFILES)
    return forest.PairForest().fit(samples)


class TestInterferenceViolations(testtools.TestCase):
    def test_only_hosts_predicted_past_the_tolerance_are_violations(self) -> None:
        for model in (model_registry.load("ivmp"), fitted_forest()):
            placed = [
                # CG next to MG: predicted well past 10 % by both models.
                server("1", "h1", "a", "CG"),
                server("2", "h1", "b", "MG"),
                # EP next to LU: a few percent.
                server("3", "h2", "c", "EP"),
                server("4", "h2", "d", "LU"),
                # One request's two VMs alone on a host: nothing to judge.
                server("5", "h3", "e", "CG", count=2),
                server("6", "h3", "e", "CG", count=2),
                # A plain server is left to Nova and never judged.
                server("7", "h4", "f", "CG"),
                server("8", "h4", "g", None, app_class=None),
            ]
            found, shared = checker.interference_violations(placed, rule(model), GROUPS)
            self.assertEqual(2, shared, model.name)
            self.assertEqual(1, len(found), (model.name, found))
            self.assertTrue(found[0].startswith("h1 (xeon): predicted slowdown"), found)
            self.assertIn(f"({model.name})", found[0])

    def test_two_requests_of_one_application_are_two_tenants(self) -> None:
        # Two MG requests share h1: the forest predicts MG next to MG past 10 %.
        placed = [server("1", "h1", "a", "MG"), server("2", "h1", "b", "MG")]
        found, shared = checker.interference_violations(placed, rule(fitted_forest()), GROUPS)
        self.assertEqual((1, 1), (len(found), shared), found)
        # The same two VMs as one request's: alone on the host, no violation.
        placed = [server("1", "h1", "a", "MG", count=2), server("2", "h1", "a", "MG", count=2)]
        found, shared = checker.interference_violations(placed, rule(fitted_forest()), GROUPS)
        self.assertEqual(([], 0), (found, shared))

    def test_a_co_runner_the_model_cannot_judge_is_a_violation(self) -> None:
        placed = [server("1", "h1", "a", "EP"), server("2", "h1", "b", "UNPROFILED")]
        found, _ = checker.interference_violations(
            placed, rule(model_registry.load("ivmp")), GROUPS
        )
        self.assertEqual(1, len(found))
        self.assertIn("no profile of UNPROFILED", found[0])

    def test_a_model_replaces_the_cache_thresholds_not_the_other_rules(self) -> None:
        heavy = checker.Asked("a", AppClass.SYNC_HPC, 70.0, "CG", 1)
        more = checker.Asked("b", AppClass.EXTREME_HPC, 40.0, "MG", 1)
        placed = [checker.Server("1", "h1", heavy), checker.Server("2", "h1", more)]
        kwargs = {"alpha": 100.0, "beta": 60.0, "harmful": frozenset(), "groups": GROUPS}
        with_thresholds = checker.host_violations(placed, **kwargs)
        self.assertEqual(3, len(with_thresholds), with_thresholds)
        without = checker.host_violations(placed, cache_thresholds=False, **kwargs)
        self.assertEqual(1, len(without), without)
        self.assertIn("ExtremeHPC host shared", without[0])


class TestTrialData(testtools.TestCase):
    def test_every_model_reads_what_the_profiles_hold(self) -> None:
        profiles, runs = workload.measured_runs()
        by_name = {p.name: p for p in profiles}
        self.assertLessEqual(set(PROFILES), set(by_name))
        runtime = trees.RuntimeTrees(trees=5).fit(trees.samples_from_runs(runs, by_name))
        self.assertEqual(["epyc", "xeon"], sorted(runtime.host_types))
        for model in (
            model_registry.load("ivmp"),
            model_registry.load("ivmp-base"),
            fitted_forest(),
            runtime,
        ):
            for group in ("xeon", "epyc"):
                tenants = [Tenant.of(p, 1, group) for p in PROFILES.values()]
                model.check(tenants)  # no MissingFeatures
                self.assertEqual(len(tenants), len(model.predict(tenants).slowdowns))

    def test_the_written_datasets_read_back(self) -> None:
        folder = fixtures.TempDir()
        self.useFixture(folder)
        where = Path(folder.path)
        profiles_file, pairs = models._write_datasets(where, "pair-forest")
        self.assertEqual(
            sorted(PROFILES), sorted(p.name for p in datafiles.read_profiles(str(profiles_file)))
        )
        self.assertEqual(21, len(datafiles.read_interferences(str(pairs))))
        _, runs = models._write_datasets(where, "runtime-trees")
        self.assertEqual(len(workload.measured_runs()[1]), len(datafiles.read_runs(str(runs))))
        self.assertRaises(models.ModelError, models._write_datasets, where, "ivmp")
        written, _ = workload.write_profile_files(where)
        self.assertEqual(workload.profile_records(), datafiles.read_profiles(str(written)))


class TestConfiguration(testtools.TestCase):
    def test_the_model_reaches_nova_conf_and_the_options(self) -> None:
        root = Path(self.useFixture(fixtures.TempDir()).path)
        run = Run.new(
            root,
            mysql="mysql+pymysql://root@127.0.0.1",
            rabbit="rabbit://guest:guest@127.0.0.1:5672",
            computes=1,
            scheduler_workers=1,
            plugin=True,
            interference_model="pair-forest",
        )
        run.ports = {"placement": 1, "glance": 2, "neutron": 3, "nova": 4}
        self.assertIn("interference_model = pair-forest\n", config.nova_conf(run).read_text())
        parser = cli.build_parser()
        self.assertEqual("cache-score", parser.parse_args(["up"]).interference_model)
        self.assertIsNone(parser.parse_args(["stress"]).interference_model)
        args = parser.parse_args(["stress", "--interference-model", "ivmp"])
        self.assertEqual("ivmp", args.interference_model)
        self.assertFalse(models.is_predictive("cache-score"))
        self.assertTrue(models.is_predictive("my-stored-forest"))
