"""The README stays a front page: short, the two quick-start commands, links that lead somewhere.

Everything else lives in the Sphinx guide under ``doc/source``, which the
test command builds with warnings as errors.
"""

from __future__ import annotations

import re
from pathlib import Path

import testtools

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.rst"
#: The quick-start lines exactly as a new user copies them.
QUICK_START = (
    "python3.11 tools/quickstart.py demo    # set up, then run the all-in-one demo",
    "python3.11 tools/quickstart.py test    # set up, then run the whole test suite",
)
MAX_LINES = 150
#: A link to a file of the source tree: `text <path>`_
_LINK = re.compile(r"<([^<>\s]+)>`_")


class TestReadme(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.text = README.read_text()

    def test_short(self) -> None:
        lines = len(self.text.splitlines())
        self.assertLessEqual(lines, MAX_LINES, f"README.rst has {lines} lines")

    def test_quick_start_commands(self) -> None:
        lines = [line.strip() for line in self.text.splitlines()]
        for command in QUICK_START:
            self.assertIn(command, lines)

    def test_says_how_long_each_command_takes(self) -> None:
        self.assertIn("two to three minutes on 2 cores", self.text)
        self.assertIn("15 to 25 minutes on 2 cores", self.text)

    def test_links_lead_to_pages(self) -> None:
        targets = [t for t in _LINK.findall(self.text) if "://" not in t]
        self.assertNotEqual([], targets)
        missing = [t for t in targets if not (ROOT / t).is_file()]
        self.assertEqual([], missing)
