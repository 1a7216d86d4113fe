"""What differs between the supported Nova releases, absorbed in one place.

The plugin supports Nova 31 (2025.1), 33 (2026.1) and 34 (2026.2); see
doc/source/install/support-matrix.rst. Where their interfaces differ, the
adapters and the tests call this module rather than Nova. Nova is imported
inside the functions, so that importing this module patches nothing.
"""

from __future__ import annotations

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
