"""devcloud.services: what the kernel says of a run's processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import testtools

from devcloud import services


class TestAge(testtools.TestCase):
    def test_a_process_started_later_is_younger(self) -> None:
        time.sleep(0.2)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        mine, its = services.age(os.getpid()), services.age(child.pid)
        self.assertGreaterEqual(its, 0.0)
        self.assertLess(its, mine)

    def test_a_process_that_is_gone_raises(self) -> None:
        child = subprocess.Popen([sys.executable, "-c", "pass"])
        child.wait()
        self.assertRaises(OSError, services.age, child.pid)
