"""``tools/cloud.py up --cells``: databases, queues and configuration per cell."""

from __future__ import annotations

import configparser
import pathlib

import fixtures
import testtools

from devcloud import config
from devcloud.layout import Run
from tests.unit.devcloud import a_run


class TestCells(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.run = Run.new(
            pathlib.Path(root),
            mysql="mysql+pymysql://root@127.0.0.1",
            rabbit="rabbit://guest:guest@127.0.0.1:5672",
            computes=8,
            scheduler_workers=2,
            plugin=True,
            cells=2,
        )
        self.run.vhost = "hpc-abc"

    def test_each_further_cell_has_its_database_and_queue(self) -> None:
        self.assertEqual("nova_cell2", self.run.database_roles()[-1])
        self.assertEqual(self.run.transport_url, self.run.cell_transport_url(1))
        self.assertTrue(self.run.cell_transport_url(2).endswith("/hpc-abc-cell2"))
        written = configparser.ConfigParser()
        written.read(config.cell_conf(self.run, 2))
        self.assertEqual(self.run.cell_transport_url(2), written["DEFAULT"]["transport_url"])
        self.assertIn("_nova_cell2?", written["database"]["connection"])

    def test_computes_fill_the_cells_in_blocks(self) -> None:
        self.assertEqual([1, 1, 1, 1, 2, 2, 2, 2], [self.run.cell_of(i) for i in range(8)])
        self.assertEqual([], config.cell_files(self.run, 1))
        self.assertEqual("cell2.conf", config.cell_files(self.run, 2)[-1].rsplit("/", 1)[-1])

    def test_one_cell_is_the_cloud_as_before(self) -> None:
        self.run.cells = 1
        self.assertNotIn("nova_cell2", self.run.database_roles())
        self.assertEqual([1] * 8, [self.run.cell_of(i) for i in range(8)])


class TestPluginAccount(testtools.TestCase):
    def test_an_operator_check_reads_the_plugin_database_as_the_server_admin(self) -> None:
        run = a_run(hpc_account=("hpcabc", "secret"))
        self.assertIn("hpcabc:secret@", run.database_url("hpc"))
        self.assertTrue(
            run.database_url("hpc", as_plugin=False).startswith("mysql+pymysql://root@")
        )
