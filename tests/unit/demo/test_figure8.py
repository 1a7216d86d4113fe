"""Classifying Nova's answer to a boot: placed, deferred, or a failed run.

The bodies are shaped like Nova's ``GET /servers/{id}`` answers.
"""

from __future__ import annotations

import testtools

from hpc_nova_scheduler.demo import figure8
from hpc_nova_scheduler.demo.figure8 import Verdict

NO_VALID_HOST = "No valid host was found. There are not enough hosts available."


def server(status: str, message: str | None = None, **extra: object) -> dict:
    body: dict = {"id": "c0ffee", "status": status, **extra}
    if message is not None:
        body["fault"] = {"code": 500, "created": "2025-01-01T00:00:00Z", "message": message}
    return body


class TestServerResult(testtools.TestCase):
    def test_active_is_placed(self) -> None:
        self.assertEqual(Verdict.PLACED, figure8.server_result(server("ACTIVE")).verdict)

    def test_no_valid_host_is_a_deferral(self) -> None:
        result = figure8.server_result(server("ERROR", NO_VALID_HOST))
        self.assertEqual(figure8.RequestResult(Verdict.DEFERRED, NO_VALID_HOST), result)

    def test_another_fault_is_a_failure_with_its_message(self) -> None:
        result = figure8.server_result(
            server("ERROR", "Build of instance c0ffee aborted: Failure prepping block device.")
        )
        self.assertEqual(Verdict.FAILED, result.verdict)
        self.assertEqual(
            "server c0ffee is ERROR: Build of instance c0ffee aborted: "
            "Failure prepping block device.",
            result.message,
        )

    def test_error_without_a_fault_is_a_failure(self) -> None:
        result = figure8.server_result(server("ERROR"))
        self.assertEqual(Verdict.FAILED, result.verdict)
        self.assertIn("no fault recorded", result.message)

    def test_still_building_is_a_failure(self) -> None:
        result = figure8.server_result(server("BUILD", **{"OS-EXT-STS:task_state": "spawning"}))
        self.assertEqual(Verdict.FAILED, result.verdict)
        self.assertEqual("server c0ffee is BUILD (task spawning) after the timeout", result.message)

    def test_any_other_status_is_a_failure(self) -> None:
        self.assertEqual(Verdict.FAILED, figure8.server_result(server("SHUTOFF")).verdict)


class TestRequestResult(testtools.TestCase):
    def test_all_active(self) -> None:
        result = figure8.request_result([server("ACTIVE")] * 4, 4)
        self.assertEqual(Verdict.PLACED, result.verdict)

    def test_all_refused_is_a_deferral(self) -> None:
        result = figure8.request_result([server("ERROR", NO_VALID_HOST)] * 4, 4)
        self.assertEqual(figure8.RequestResult(Verdict.DEFERRED, NO_VALID_HOST), result)

    def test_one_other_error_makes_the_request_a_failure(self) -> None:
        servers = [server("ERROR", NO_VALID_HOST)] * 3 + [server("ERROR", "Exceeded retries")]
        result = figure8.request_result(servers, 4)
        self.assertEqual(Verdict.FAILED, result.verdict)
        self.assertIn("Exceeded retries", result.message)

    def test_partly_placed_is_a_failure(self) -> None:
        servers = [server("ACTIVE")] * 3 + [server("ERROR", NO_VALID_HOST)]
        result = figure8.request_result(servers, 4)
        self.assertEqual(Verdict.FAILED, result.verdict)
        self.assertIn("some servers of the request are ACTIVE", result.message)

    def test_missing_servers_are_a_failure(self) -> None:
        result = figure8.request_result([server("ACTIVE")] * 3, 4)
        self.assertEqual(figure8.RequestResult(Verdict.FAILED, "3 of 4 servers exist"), result)


class TestNotation(testtools.TestCase):
    def test_after_round_trips(self) -> None:
        for labels in (["App1"], ["App1", "App3", "App4", "App5"], ["App2", "App4"]):
            compressed = ", ".join(figure8.compress_after(labels))
            self.assertEqual(labels, figure8.expand_after(compressed))
        self.assertEqual(
            ["App1", "App3-App5"], figure8.compress_after(["App1", "App3", "App4", "App5"])
        )
        self.assertEqual([], figure8.expand_after(""))

    def test_placement(self) -> None:
        self.assertEqual("3x(N2-N3) + 1xN7", figure8.notation({"N2": 3, "N3": 3, "N7": 1}))

    def test_finishing_batches_reproduce_both_deferral_rows(self) -> None:
        order = ["IS.B.4", "LU.C.16", "LU.B.4", "ChaNGa.4", "EP.B.4"]
        # beta = 40: LU.C.16 waits; App3-App5 started behind it, together.
        self.assertEqual(
            [["IS.B.4"], ["LU.B.4", "ChaNGa.4", "EP.B.4"]],
            figure8.finishing_batches(order, ["IS.B.4", "LU.B.4", "ChaNGa.4", "EP.B.4"], "LU.C.16"),
        )
        # beta = 60: LU.B.4 waits; App1 and App2 started before it, one by one.
        self.assertEqual(
            [["IS.B.4"], ["LU.C.16"], ["ChaNGa.4", "EP.B.4"]],
            figure8.finishing_batches(order, ["IS.B.4", "LU.C.16", "ChaNGa.4", "EP.B.4"], "LU.B.4"),
        )
        # Applications already finished are not finished again.
        self.assertEqual([["EP.B.4"]], figure8.finishing_batches(order, ["EP.B.4"], "LU.C.16"))
