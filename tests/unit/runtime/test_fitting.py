"""Seed 000's runtime trees fitted to measured runs through the fitting protocol."""

from __future__ import annotations

import os

import fixtures
import testtools

from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.interference import fitting, model_registry
from hpc_nova_scheduler.runtime import trees
from hpc_nova_scheduler.runtime.fitting import PAPER_ERRORS, TreesFitting
from tests.unit.runtime.test_trees import dataset, profiles


class TestTreesFitting(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def measurements(self, name: str, runs) -> fitting.Measurements:
        path = os.path.join(self.dir, name)
        with open(path, "w") as stream:
            datafiles.write_runs(stream, runs, "yaml")
        return fitting.Measurements(path, "profiles", profiles)

    def test_registered_and_kept(self) -> None:
        found = fitting.of(model_registry.load("runtime-trees"))
        self.assertIsInstance(found, TreesFitting)
        self.assertTrue(found.keeps)

    def test_fit_then_evaluate_per_family(self) -> None:
        training = self.measurements("training.yaml", dataset().training[::4])
        fitted = TreesFitting().fit(trees.RuntimeTrees(trees=5), training, 3, 0)
        line, table, verdict = fitted.output
        self.assertIn("5 families, host types T1, T2", line)
        self.assertEqual(("family", "runs", "mean error (%)"), table.headings)
        self.assertEqual(
            ["CG", "LAMMPS", "NAMD", "Zeusmp2", "bigdata"], [row[0] for row in table.rows]
        )
        self.assertEqual(f"{fitted.report} ({PAPER_ERRORS})", verdict)
        validation = self.measurements("validation.yaml", dataset().validation[::8])
        runs, errors, summary = TreesFitting().evaluate(fitted.model, validation, verbose=True)
        self.assertEqual("co-runners", runs.headings[2])
        self.assertEqual(len(dataset().validation[::8]), len(runs.rows))
        self.assertEqual(5, len(errors.rows))
        self.assertIn(f"runtime-trees over {len(runs.rows)} runs of", summary)

    def test_an_unknown_co_runner_names_its_line(self) -> None:
        path = os.path.join(self.dir, "runs.yaml")
        with open(path, "w") as stream:
            stream.write("runs:\n- {application: CG, host_type: T1, runtime: 3, co_runners: X}\n")
        data = fitting.Measurements(path, "profiles.yaml", profiles)
        error = self.assertRaises(
            fitting.FitError, TreesFitting().fit, trees.RuntimeTrees(), data, 5, 0
        )
        self.assertEqual(f"{path}:2: no profile named 'X' in profiles.yaml", str(error))
