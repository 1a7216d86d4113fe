"""What ``pip install`` puts on a nova-scheduler host: the package alone.

The packages are found the way pbr finds them when it builds the wheel
(``[files] packages`` of ``setup.cfg``, expanded by pbr's own finder), so
that developer tooling such as ``devcloud/`` is seen to stay out of it.
"""

from __future__ import annotations

import ast
import configparser
import contextlib
from pathlib import Path

import testtools
from pbr import find_package

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "hpc_nova_scheduler"
#: Folders of the source tree that only developers run: never installed.
DEVELOPER_ONLY = frozenset({"devcloud", "tests", "benchmarks", "tools"})


def shipped_packages() -> list[str]:
    """Every package the wheel holds, as pbr expands ``setup.cfg``."""
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    roots = setup["files"]["packages"]
    # pbr resolves the package names against the working directory, which
    # is the source tree when it builds.
    with contextlib.chdir(ROOT):
        return sorted(find_package.smart_find_packages(roots).split("\n"))


def imported_top_names(source: Path) -> set[str]:
    """First names of the absolute imports of one module, wherever they are."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


class DistributionTest(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.packages = shipped_packages()

    def test_ships_the_package_and_its_subpackages(self) -> None:
        self.assertEqual({PACKAGE}, {name.split(".")[0] for name in self.packages})
        self.assertIn(f"{PACKAGE}.scheduler", self.packages)
        self.assertIn(f"{PACKAGE}.cmd", self.packages)

    def test_devcloud_is_in_the_source_tree_but_not_shipped(self) -> None:
        self.assertTrue((ROOT / "devcloud" / "__init__.py").is_file())
        self.assertEqual([], [name for name in self.packages if "devcloud" in name.split(".")])

    def test_no_shipped_module_imports_developer_tooling(self) -> None:
        # An installed copy has none of these, so an import of one would fail
        # on an operator's host.
        found = {}
        for package in self.packages:
            folder = ROOT.joinpath(*package.split("."))
            for module in sorted(folder.glob("*.py")):
                wrong = imported_top_names(module) & DEVELOPER_ONLY
                if wrong:
                    found[str(module.relative_to(ROOT))] = sorted(wrong)
        self.assertEqual({}, found)
