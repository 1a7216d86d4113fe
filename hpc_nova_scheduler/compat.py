"""What differs between the supported Nova releases, absorbed in one place.

The plugin supports Nova 31 (2025.1), 33 (2026.1) and 34 (2026.2); see
doc/source/install/support-matrix.rst. Where their interfaces differ, the
adapters and the tests call this module rather than Nova. Nova is imported
inside the functions, so that importing this module patches nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Literal

Backend = Literal["eventlet", "threading"]


def monkey_patch(backend: Backend = "eventlet") -> None:
    """Apply Nova's choice of concurrency backend, as Nova's own binaries do.

    Nova 33 and 34 choose in ``nova.monkey_patch.patch()``: ``backend`` is
    the binary's default, which ``OS_NOVA_DISABLE_EVENTLET_PATCHING`` (and,
    in Nova 34, ``[DEFAULT] concurrency_backend``) overrides. Nova 31 has no
    ``patch()``: importing ``nova.monkey_patch`` applies eventlet's patching
    (unless that variable is set), as every one of its services ran on
    eventlet; so ``backend`` has no effect there.
    """
    from nova import monkey_patch as nova_monkey_patch

    patch = getattr(nova_monkey_patch, "patch", None)
    if patch is not None:
        patch(backend=backend)


def parse_nova_args(argv: Sequence[str], *, prog: str, init_rpc: bool = False) -> None:
    """``nova.config.parse_args`` for the command ``prog``.

    Nova 33 and 34 take the program's name, which oslo.config uses to find
    its default configuration files and in its messages; Nova 31 takes no
    ``prog`` and names the program after ``sys.argv[0]`` (the console
    script's name, as installed).
    """
    from nova import config

    if "prog" in inspect.signature(config.parse_args).parameters:
        config.parse_args(list(argv), init_rpc=init_rpc, prog=prog)
    else:
        config.parse_args(list(argv), init_rpc=init_rpc)
