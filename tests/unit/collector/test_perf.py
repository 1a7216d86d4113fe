"""perf counters through the real system call: the plumbing, a host without a PMU, the CPI."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler.collector import perf
from hpc_nova_scheduler.collector.domains import Domain

TASK_CLOCK = 1
#: Two software events this process always has: a CPI of them is about 1.
CLOCKS = ((perf.PERF_TYPE_SOFTWARE, TASK_CLOCK), (perf.PERF_TYPE_SOFTWARE, TASK_CLOCK))
A = "11111111-0000-0000-0000-00000000000a"


def this_process(kind: int, config: int, pid: int, cpu: int, flags: int) -> int:
    """A counter of this process instead of a cgroup (no perf_event cgroup here)."""
    if flags & perf.PERF_FLAG_PID_CGROUP:
        return perf.open_counter(kind, config, 0, -1, 0)
    return perf.open_counter(kind, config, pid, cpu, flags)


def busy() -> None:
    sum(range(200_000))


def closed(fd: int) -> bool:
    """Whether ``fd`` no longer names a perf event (closed, or since reused)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:[perf_event]"
    except OSError:
        return True


class TestPerf(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.folder = Path(self.useFixture(fixtures.TempDir()).path)
        self.said: list[str] = []

    def counting(self, cgroup, *, cpus=(0,), opener=this_process) -> perf.CgroupCPI:
        """Two clocks of this process in place of a cgroup's cycles and instructions."""
        cpi = perf.CgroupCPI(
            self.folder,
            self.said.append,
            events=CLOCKS,
            cpus=list(cpus),
            opener=opener,
            cgroup=cgroup,
        )
        self.addCleanup(cpi.close)
        return cpi

    def test_a_software_counter_counts(self) -> None:
        fd = perf.open_counter(perf.PERF_TYPE_SOFTWARE, TASK_CLOCK, 0, -1, 0)
        self.addCleanup(os.close, fd)
        first = perf.read_counter(fd)
        busy()
        self.assertGreater(perf.read_counter(fd), first)

    def test_cycles_and_instructions_as_the_host_allows(self) -> None:
        cpi = perf.CgroupCPI(self.folder, self.said.append)
        self.addCleanup(cpi.close)
        try:
            os.close(perf.open_counter(perf.PERF_TYPE_HARDWARE, 0, -1, 0, 0))
        except OSError as error:
            # No PMU (a virtual machine), or not allowed: said once, and no CPI.
            self.assertIsNotNone(cpi.problem, error)
            self.assertEqual([f"{cpi.problem}: no CPI measured"], self.said)
            self.assertEqual({}, cpi.sample([Domain("instance-1", A, os.getpid())]))
        else:
            self.assertIsNone(cpi.problem)
            self.assertEqual([], self.said)

    def test_the_cpi_of_an_interval_and_counters_closed_when_a_domain_goes(self) -> None:
        cpi = self.counting(lambda domain, root: root)
        domain = Domain("instance-1", A, os.getpid())
        self.assertEqual({}, cpi.sample([domain]))  # the first read only starts the count
        busy()
        found = cpi.sample([domain])
        self.assertEqual([A], list(found))
        self.assertAlmostEqual(1.0, found[A], delta=0.2)
        fds = [fd for row in cpi._counters[A][1] for fd in row]
        self.assertEqual({}, cpi.sample([]))
        self.assertTrue(all(closed(fd) for fd in fds))
        self.assertEqual([], self.said)

    def test_a_domain_without_a_cgroup_folder_is_left_out_and_said_once(self) -> None:
        cpi = self.counting(lambda domain, root: None)
        domains = [Domain("instance-1", A, os.getpid())]
        for _ in range(3):
            self.assertEqual({}, cpi.sample(domains))
        (line,) = self.said
        self.assertIn(f"no cgroup folder of instance {A}", line)

    def test_the_cgroup_of_a_process(self) -> None:
        # This process's own: a v2 folder, or v1's perf_event, when mounted.
        found = perf.cgroup_of(os.getpid(), Path("/sys/fs/cgroup"))
        if found is not None:
            self.assertTrue(found.is_dir())
        self.assertIsNone(perf.cgroup_of(2**22 + 7, Path("/sys/fs/cgroup")))


class TestCgroupPaths(testtools.TestCase):
    def test_libvirts_emulator_and_vcpu_groups_count_as_their_scope(self) -> None:
        scope = "machine.slice/machine-qemu\\x2d1\\x2dinstance\\x2d00000001.scope"
        self.assertEqual(scope, perf._scope(f"/{scope}/libvirt/emulator"))
        self.assertEqual(scope, perf._scope(f"/{scope}/libvirt/vcpu3"))
        self.assertEqual(scope, perf._scope(f"/{scope}"))
        self.assertEqual("", perf._scope("/"))

    def test_online_cpus(self) -> None:
        folder = Path(self.useFixture(fixtures.TempDir()).path)
        (folder / "online").write_text("0-3,8,10-11\n")
        self.assertEqual([0, 1, 2, 3, 8, 10, 11], perf.online_cpus(folder / "online"))
        self.assertEqual(sorted(os.sched_getaffinity(0)), perf.online_cpus(folder / "missing"))

    def test_a_failure_on_a_later_cpu_closes_the_counters_before_it(self) -> None:
        opened: list[int] = []

        def fails_on_cpu_1(kind: int, config: int, pid: int, cpu: int, flags: int) -> int:
            if cpu == 1:
                raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
            fd = this_process(kind, config, pid, cpu, flags)
            opened.append(fd)
            return fd

        said: list[str] = []
        folder = Path(self.useFixture(fixtures.TempDir()).path)
        cpi = perf.CgroupCPI(
            folder,
            said.append,
            events=CLOCKS,
            cpus=[0, 1],
            opener=fails_on_cpu_1,
            cgroup=lambda domain, root: root,
        )
        self.assertIsNone(cpi.problem)
        opened.clear()  # the check's own counters, closed at once
        self.assertEqual({}, cpi.sample([Domain("instance-1", A, os.getpid())]))
        self.assertTrue(opened)
        self.assertTrue(all(closed(fd) for fd in opened))
        (line,) = said
        self.assertIn("cannot count the cgroup of instance", line)
