"""A monitoring group per running instance, on a resctrl tree laid out as the kernel's."""

from __future__ import annotations

import os
from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler.characterise.counters import ResctrlMount
from hpc_nova_scheduler.collector import groups
from hpc_nova_scheduler.collector.domains import Domain
from hpc_nova_scheduler.demo.resctrl_tree import ResctrlTree

A = Domain("instance-0000000a", "11111111-0000-0000-0000-00000000000a", 101)
B = Domain("instance-0000000b", "11111111-0000-0000-0000-00000000000b", 102)


class TestMonitoringGroups(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        root = Path(self.useFixture(fixtures.TempDir()).path) / "resctrl"
        self.tree = ResctrlTree(root).lay_out()
        self.threads = {101: {101, 103, 104}, 102: {102}}
        self.said: list[str] = []
        self.groups = groups.MonitoringGroups(
            ResctrlMount(root), self.said.append, lambda pid: set(self.threads.get(pid, ()))
        )

    def tasks(self, uuid: str) -> list[int]:
        path = self.tree.root / "mon_groups" / uuid / "tasks"
        return [int(line) for line in path.read_text().split()]

    def test_a_group_per_instance_with_every_thread_of_its_process(self) -> None:
        found = self.groups.sync([A, B])
        self.assertEqual(
            {
                A.uuid: [self.tree.root / "mon_groups" / A.uuid],
                B.uuid: [self.tree.root / "mon_groups" / B.uuid],
            },
            found,
        )
        self.assertEqual([101, 103, 104], self.tasks(A.uuid))
        # The same threads are not written again; a new one is.
        self.groups.sync([A, B])
        self.assertEqual([101, 103, 104], self.tasks(A.uuid))
        self.threads[101].add(105)
        self.groups.sync([A, B])
        self.assertEqual([101, 103, 104, 101, 103, 104, 105], self.tasks(A.uuid))

    def test_the_group_of_an_instance_gone_is_removed_and_others_are_left(self) -> None:
        self.groups.sync([A, B])
        someone_elses = self.tree.add_monitoring_group("benchmark")
        self.tree.populate(self.tree.root / "mon_groups" / B.uuid)
        found = self.groups.sync([A])
        self.assertEqual({A.uuid}, set(found))
        self.assertFalse((self.tree.root / "mon_groups" / B.uuid).exists())
        self.assertTrue(someone_elses.is_dir())

    def test_libvirts_own_monitors_are_read_not_replaced(self) -> None:
        control = self.tree.add_control_group(f"qemu-7-{A.name}-vcpus_0-3")
        first = self.tree.add_monitoring_group("vcpus_0-1", control=control.name)
        second = self.tree.add_monitoring_group("vcpus_2-3", control=control.name)
        found = self.groups.sync([A, B])
        self.assertEqual([first, second], found[A.uuid])
        self.assertFalse((self.tree.root / "mon_groups" / A.uuid).exists())

    def test_a_group_the_kernel_will_not_make_is_said_once(self) -> None:
        (self.tree.root / "mon_groups").chmod(0o500)
        self.addCleanup((self.tree.root / "mon_groups").chmod, 0o700)
        if os.geteuid() == 0:
            # root ignores the mode: stand a file where the folder goes.
            (self.tree.root / "mon_groups").chmod(0o700)
            (self.tree.root / "mon_groups" / A.uuid).write_text("")
        for _ in range(2):
            found = self.groups.sync([A])
        self.assertEqual({}, found)
        self.assertEqual(1, len(self.said), self.said)
        self.assertIn(
            f"cannot make monitoring group {self.tree.root / 'mon_groups' / A.uuid}", self.said[0]
        )

    def test_threads_of_a_real_process(self) -> None:
        self.assertIn(os.getpid(), groups.process_threads(os.getpid()))
        self.assertEqual(set(), groups.process_threads(2**22 + 1))
