"""Operators told why: each host a plan leaves out, with its rule and value, in the log."""

from __future__ import annotations

import logging

import fixtures

from tests.functional import base


class TestRefusalLog(base.HpcTestCase):
    """Four hosts: one ExtremeHPC, one near beta, two empty."""

    def setUp(self) -> None:
        super().setUp()
        extreme = self.hpc_flavor(app_class="ExtremeHPC", cache_score=47, app_name="IS.B.4")
        (self.dedicated,) = self.hosts_of(self.launch(extreme))
        busy = self.hpc_flavor(app_class="AsyncHPC", cache_score=50, app_name="MG")
        (self.busy,) = self.hosts_of(self.launch(busy))
        self.empty = sorted(set(self.HOSTS) - {self.dedicated, self.busy})
        self.lu = self.hpc_flavor(app_class="SyncHPC", cache_score=20, app_name="LU")
        self.logs = self.useFixture(
            fixtures.FakeLogger(
                name="hpc_nova_scheduler", level=logging.DEBUG, format="%(levelname)s %(message)s"
            )
        )

    def lines(self, level: str) -> list[str]:
        prefix = f"{level} hpc-nova-scheduler: "
        return [
            line[len(prefix) :] for line in self.logs.output.splitlines() if line.startswith(prefix)
        ]

    def left_out(self) -> dict[str, str]:
        """Debug lines of the form "host: why", by host."""
        found = {}
        for line in self.lines("DEBUG"):
            host, sep, why = line.partition(": ")
            if sep and host in self.HOSTS:
                found[host] = why
        return found

    def test_a_refused_request_names_every_host_then_counts_them_by_rule(self) -> None:
        # The empty hosts hold 3 VMs each within beta (3 x 20 = 60): 6 of 7.
        self.assert_refused(self.launch(self.lu, 7))
        found = self.left_out()
        self.assertEqual(set(self.HOSTS), set(found), self.logs.output)
        self.assertEqual("ExtremeHPC host of IS.B.4", found[self.dedicated])
        self.assertEqual("cache 70 > beta 60 (SyncHPC)", found[self.busy])
        for host in self.empty:
            self.assertRegex(found[host], r"^processor group \S+ hold\(s\) 6 of 7 VMs$")
        summary = self.lines("INFO")[-1]
        self.assertTrue(summary.startswith("no placement for 7 x SyncHPC VM(s) of LU: "), summary)
        self.assertTrue(
            summary.endswith("; 4 host(s) refused: capacity 2, ExtremeHPC 1, beta 1"), summary
        )

    def test_a_placed_request_names_the_hosts_its_plan_leaves_out(self) -> None:
        hosts = self.hosts_of(self.launch(self.lu, 2))
        (planned,) = hosts
        (unused,) = set(self.empty) - {planned}
        found = self.left_out()
        # The other empty host is offered as an alternate when the plan
        # weigher is on: offered, not left out.
        (placed,) = [line for line in self.lines("INFO") if line.startswith("SyncHPC LU: ")]
        alternates = {unused} if f"alternates ['{unused}']" in placed else set()
        self.assertEqual(
            {self.dedicated, self.busy, unused} - alternates, set(found), self.logs.output
        )
        self.assertEqual("ExtremeHPC host of IS.B.4", found[self.dedicated])
        self.assertEqual("cache 70 > beta 60 (SyncHPC)", found[self.busy])
        if not alternates:
            self.assertTrue(found[unused].startswith("not needed: the plan is complete"), found)
        self.assertFalse(any("refused" in line for line in self.lines("INFO")))

    def test_a_request_left_to_nova_names_the_hosts_it_must_avoid(self) -> None:
        self.hosts_of(self.launch(self.hpc_flavor()))
        self.assertEqual({self.dedicated: "ExtremeHPC host of IS.B.4"}, self.left_out())


class TestRefusalLogOnStockDriver(TestRefusalLog):
    """The same on Nova's own fake.MediumFakeDriver (10 vCPUs, 8 GB a host)."""

    STOCK_DRIVER = "fake.MediumFakeDriver"
