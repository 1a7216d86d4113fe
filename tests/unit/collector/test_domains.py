"""Running instances from libvirt's status files."""

from __future__ import annotations

from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler.collector import domains
from hpc_nova_scheduler.demo.measured_host import status_xml as status

UUID = "3f6b2a57-8a3e-4c1d-9b0e-5d7a2c1e4f60"


class TestRunning(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.folder = Path(self.useFixture(fixtures.TempDir()).path)

    def test_every_domain_with_its_instance_uuid_and_process(self) -> None:
        (self.folder / "instance-00000007.xml").write_text(
            status("instance-00000007", UUID.upper(), 4242)
        )
        (self.folder / "instance-00000007.pid").write_text("4242")
        found = domains.running(self.folder)
        self.assertEqual([domains.Domain("instance-00000007", UUID, 4242)], found.domains)
        self.assertEqual([], found.skipped)

    def test_a_file_that_cannot_be_used_is_skipped_with_one_line(self) -> None:
        (self.folder / "a.xml").write_text(status("instance-1", UUID, 11))
        (self.folder / "b.xml").write_text("<domstatus pid='12'><domain><name>x")
        (self.folder / "c.xml").write_text(status("instance-3", "not-a-uuid", 13))
        (self.folder / "d.xml").write_text(status("instance-4", UUID, "x"))
        (self.folder / "e.xml").write_text("<domain><name>n</name></domain>")
        found = domains.running(self.folder)
        self.assertEqual(["instance-1"], [d.name for d in found.domains])
        self.assertEqual(4, len(found.skipped))
        for line, reason in zip(
            found.skipped,
            ["b.xml", "'not-a-uuid' is not a UUID", "pid 'x'", "root <domain>"],
            strict=True,
        ):
            self.assertIn(reason, line)
            self.assertNotIn("\n", line)

    def test_no_libvirt_here_is_no_domain(self) -> None:
        self.assertEqual(domains.Found(), domains.running(self.folder / "absent"))
