"""A closed output pipe (``hpc-nova-scheduler plan ... | head``) ends quietly.

The real command runs in a process of its own, its standard output a pipe
whose reader goes away, as ``head`` does once it has its lines.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler.cmd import cli
from tests.unit.cmd.test_cli import EXAMPLE

COMMAND = Path(sys.executable).parent / "hpc-nova-scheduler"
#: The smallest pipe Linux makes (one page): output larger than this cannot
#: all be written before the reader goes away, however fast the command is.
PIPE_SIZE = 4096


def batch(count: int) -> str:
    """A batch of ``count`` applications on as many hosts: about 95 bytes each in JSON."""
    return (
        f"cloud: {{hosts: {count}, vcpus: 12, ram_mb: 49152}}\n"
        "batch:\n"
        f"  - {{application: PTRANS.I1.P6, count: {count // 2}, vcpus: 6, ram_mb: 24576}}\n"
        f"  - {{application: DGEMM.I1.P4, count: {count - count // 2}, vcpus: 4, ram_mb: 16384}}\n"
    )


class TestClosedPipe(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def plan(self, count: int) -> list[str]:
        path = os.path.join(self.dir, "batch.yaml")
        with open(path, "w") as stream:
            stream.write(batch(count))
        return [
            "--config-file", os.devnull, "plan", "--profiles", EXAMPLE,
            "--planner", "ffd", "--format", "json", path,
        ]  # fmt: skip

    def run_into_pipe(self, argv: list[str], read: int) -> tuple[int, bytes, str]:
        """Run the command; read ``read`` bytes of its output, then close the pipe.

        With ``read`` 0 the reader is gone before the command starts.
        """
        # Standard output block-buffered, as from an operator's shell (not
        # as under PYTHONUNBUFFERED): small output then meets the closed pipe
        # only when it is flushed at the end.
        env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
        reader, writer = os.pipe()
        fcntl.fcntl(writer, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        if not read:
            os.close(reader)
        try:
            process = subprocess.Popen(
                [str(COMMAND), *argv],
                stdout=writer,
                stderr=subprocess.PIPE,
                cwd=self.dir,
                env=env,
                text=True,
            )
        finally:
            os.close(writer)
        head = b""
        if read:
            with os.fdopen(reader, "rb") as stream:
                head = stream.read(read)
        _, err = process.communicate(timeout=120)
        return process.returncode, head, err

    def assert_quiet(self, code: int, err: str) -> None:
        self.assertEqual("", err)
        self.assertEqual(cli.PIPE_CLOSED, code)

    def test_a_reader_that_leaves_after_the_first_bytes(self) -> None:
        # About 19 kB of JSON through a 4 kB pipe: the command is still
        # writing when the reader goes.
        code, head, err = self.run_into_pipe(self.plan(200), read=16)
        self.assertTrue(head.startswith(b'{\n  "batch": '), head)
        self.assert_quiet(code, err)

    def test_a_reader_gone_before_the_output_is_flushed(self) -> None:
        # Output smaller than stdout's buffer is written at the very end.
        code, _, err = self.run_into_pipe(self.plan(4), read=0)
        self.assert_quiet(code, err)

    def test_help_into_a_closed_pipe(self) -> None:
        # argparse prints the help and exits; the flush comes after.
        code, _, err = self.run_into_pipe(["plan", "--help"], read=0)
        self.assert_quiet(code, err)
