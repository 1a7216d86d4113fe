"""What ``stress`` reads back: its servers' names and the plugin's refusals,
and how its clients ride out an API that drops a connection."""

from __future__ import annotations

import contextlib
import io
import os
import socketserver
import threading
from pathlib import Path

import fixtures
import testtools
from keystoneauth1 import exceptions as keystoneauth_exceptions
from keystoneauth1 import session as ks_session

from devcloud import cli, stress

# Lines as nova-scheduler logs them (shortened), and some it logs otherwise.
LOG = """\
2026-11-22 09:59:01.1 10798 INFO nova.scheduler.manager [req-1] Starting to schedule
2026-11-22 09:59:02.1 10798 INFO hpc_nova_scheduler.scheduler.placement_filter [req-2] \
hpc-nova-scheduler: no placement for 1 x ExtremeHPC VM(s) of CG: no single processor group \
can hold all 1 VMs; processor group epyc: dedicated hosts hold only 0 of 1 VMs
2026-11-22 09:59:03.1 10798 INFO hpc_nova_scheduler.scheduler.placement_filter [req-3] \
hpc-nova-scheduler: no placement for 4 x SyncHPC VM(s) of EP: no single processor group can \
hold all 4 VMs; processor group epyc: only 0 of 4 VMs fit within capacity, dedicated hosts, \
cache thresholds and the interference table
2026-11-22 09:59:04.1 10798 ERROR hpc_nova_scheduler.scheduler.placement_filter [req-4] \
hpc-nova-scheduler: plugin database unavailable (locked); refusing this SyncHPC request \
(database_failure_policy = reject)
2026-11-22 09:59:05.1 10798 WARNING hpc_nova_scheduler.scheduler.placement_filter [req-5] \
hpc-nova-scheduler: refusing app-1: no plan survived 5 concurrent placements
2026-11-22 09:59:06.1 10798 INFO hpc_nova_scheduler.scheduler.placement_filter [req-6] \
hpc-nova-scheduler: no placement for 1 x ExtremeHPC VM(s) of FT: no single processor group \
can hold all 1 VMs; processor group xeon: dedicated hosts hold only 0 of 1 VMs
2026-11-26 16:06:12.155 20014 INFO hpc_nova_scheduler.scheduler.refusals [req-7] \
hpc-nova-scheduler: no placement for 2 x SyncHPC VM(s) of LU: no single processor group can \
hold all 2 VMs; processor group epyc: no rack can hold all 2 VMs \
(hpc:topology_required=rack): one rack has room for 0 at most; processor group xeon: no rack \
can hold all 2 VMs (hpc:topology_required=rack): one rack has room for 1 at most; 8 host(s) \
refused: beta 7, capacity 1
"""


class TestRefusalReasons(testtools.TestCase):
    def test_each_refusal_is_counted_by_reason_from_the_offset_on(self) -> None:
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, "nova-scheduler.log")
        earlier = "x hpc-nova-scheduler: no placement for 1 x SyncHPC: lost\n"
        with open(path, "w") as stream:
            stream.write(earlier + LOG)
        reasons = stress.refusal_reasons(Path(path), len(earlier))
        self.assertEqual(
            {
                "ExtremeHPC: no host free to dedicate": 2,
                "room, cache thresholds or interference table": 1,
                "plugin database down (reject)": 1,
                "lost every race for its hosts": 1,
                "no domain of the required level holds it": 1,
            },
            dict(reasons),
        )

    def test_a_missing_log_counts_nothing(self) -> None:
        self.assertEqual({}, dict(stress.refusal_reasons(Path("/nonexistent/log"), 0)))


class TestServerNames(testtools.TestCase):
    def test_only_stress_servers_match(self) -> None:
        for name in ("s0a1fc0r1", "s0a1fc12r345-2"):
            self.assertTrue(stress.SERVER_NAME.match(name), name)
        for name in ("c0r1", "web-1", "s0a1fc0r1-x", "S0A1Fc0r1"):
            self.assertFalse(stress.SERVER_NAME.match(name), name)


class TestOptions(testtools.TestCase):
    """An empty load or cloud is refused before anything starts."""

    def test_sizes_and_durations_must_be_positive(self) -> None:
        parser = cli.build_parser()
        for argv in (
            ["stress", "--seconds", "0"],
            ["stress", "--seconds", "nan"],
            ["stress", "--clients", "0"],
            ["up", "--computes", "0"],
            ["up", "--scheduler-workers", "-1"],
        ):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertRaises(SystemExit, parser.parse_args, argv)
            self.assertIn(f"argument {argv[1]}", err.getvalue())
        args = parser.parse_args(["stress", "--seconds", "1.5", "--clients", "2"])
        self.assertEqual((1.5, 2), (args.seconds, args.clients))


class _DroppingAPI(socketserver.ThreadingTCPServer):
    """An HTTP server that reads the first ``drops`` requests and closes their
    connections without answering (as gunicorn does to a keep-alive
    connection it finds idle as the request arrives), then answers."""

    daemon_threads = True

    def __init__(self, drops: int) -> None:
        self.drops = drops
        self.requests = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _DroppingHandler)


class _DroppingHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            continue
        with self.server.lock:
            self.server.requests += 1
            drop = self.server.requests <= self.server.drops
        if not drop:
            body = b'{"servers": []}'
            self.wfile.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )


class TestReadsRideOutDroppedConnections(testtools.TestCase):
    def _serve(self, drops: int) -> tuple[_DroppingAPI, str]:
        server = _DroppingAPI(drops)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.useFixture(fixtures.MonkeyPatch("devcloud.stress.POLL", 0.01))
        return server, f"http://127.0.0.1:{server.server_address[1]}/servers"

    def test_a_read_is_sent_again_when_the_connection_drops(self) -> None:
        server, url = self._serve(drops=stress.READ_TRIES - 1)
        session = ks_session.Session()
        answer = stress.read(lambda: session.get(url, authenticated=False).json())
        self.assertEqual({"servers": []}, answer)
        self.assertEqual(stress.READ_TRIES, server.requests)

    def test_a_dropped_version_discovery_is_sent_again(self) -> None:
        self.useFixture(fixtures.MonkeyPatch("devcloud.stress.POLL", 0.01))
        calls = []

        def discover() -> str:
            calls.append(1)
            if len(calls) < stress.READ_TRIES:
                raise keystoneauth_exceptions.DiscoveryFailure("no version document")
            return "found"

        self.assertEqual("found", stress.read(discover))
        self.assertEqual(stress.READ_TRIES, len(calls))
        self.assertIsInstance(keystoneauth_exceptions.DiscoveryFailure("x"), stress.API_FAULTS)

    def test_an_api_that_keeps_dropping_is_an_api_fault(self) -> None:
        server, url = self._serve(drops=stress.READ_TRIES)
        session = ks_session.Session()
        # The call form: 2025.1's testtools (2.7) has no context manager.
        raised = self.assertRaises(
            keystoneauth_exceptions.ConnectFailure,
            stress.read,
            lambda: session.get(url, authenticated=False),
        )
        self.assertIsInstance(raised, stress.API_FAULTS)
        self.assertEqual(stress.READ_TRIES, server.requests)
