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


class TestCpuSeconds(testtools.TestCase):
    def test_a_busy_process_uses_more_than_a_sleeping_one(self) -> None:
        busy = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
        spinner = subprocess.Popen([sys.executable, "-c", busy + "\ntime.sleep(30)"])
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        for child in (spinner, sleeper):
            self.addCleanup(child.wait)
            self.addCleanup(child.kill)
        deadline = time.monotonic() + 60
        while services.cpu_seconds(spinner.pid) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertGreaterEqual(services.cpu_seconds(spinner.pid), 0.5)
        self.assertLess(services.cpu_seconds(sleeper.pid), 0.5)

    def test_a_process_that_is_gone_raises(self) -> None:
        child = subprocess.Popen([sys.executable, "-c", "pass"])
        child.wait()
        self.assertRaises(OSError, services.cpu_seconds, child.pid)
