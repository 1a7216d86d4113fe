"""Output files appear whole or not at all."""

from __future__ import annotations

import os
import stat

import fixtures
import testtools

from hpc_nova_scheduler import atomicfile


class TestAtomicFile(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, "out.csv")

    def test_a_complete_write_replaces_the_file(self) -> None:
        with open(self.path, "w") as stream:
            stream.write("old\n")
        with atomicfile.open_replacing(self.path) as stream:
            stream.write("new\n")
        with open(self.path) as stream:
            self.assertEqual("new\n", stream.read())
        self.assertEqual(["out.csv"], os.listdir(self.dir))

    def test_a_failed_write_leaves_the_old_file_and_no_scratch(self) -> None:
        with open(self.path, "w") as stream:
            stream.write("old\n")

        def half_then_fail() -> None:
            with atomicfile.open_replacing(self.path) as stream:
                stream.write("ne")
                raise KeyboardInterrupt

        self.assertRaises(KeyboardInterrupt, half_then_fail)
        with open(self.path) as stream:
            self.assertEqual("old\n", stream.read())
        self.assertEqual(["out.csv"], os.listdir(self.dir))

    def test_a_failed_first_write_leaves_nothing(self) -> None:
        def fail() -> None:
            with atomicfile.replacing(self.path):
                raise OSError("disk full")

        self.assertRaises(OSError, fail)
        self.assertEqual([], os.listdir(self.dir))

    def test_permissions_follow_the_umask_not_mkstemp(self) -> None:
        umask = os.umask(0o022)
        self.addCleanup(os.umask, umask)
        with atomicfile.open_replacing(self.path) as stream:
            stream.write("x")
        self.assertEqual(0o644, stat.S_IMODE(os.stat(self.path).st_mode))
