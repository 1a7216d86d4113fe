"""Files that appear whole or not at all.

A command that fails or is interrupted while writing must not leave half a
file where a good one was, or where a reader would take it for one: the
content goes to a temporary file in the same folder, which replaces the
target only once it is complete.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO


@contextlib.contextmanager
def replacing(path: str) -> Iterator[str]:
    """A temporary path beside ``path``; it becomes ``path`` if the block ends well."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, scratch = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    os.close(handle)
    # mkstemp makes the file private; the result gets what open() would give it.
    umask = os.umask(0o022)
    os.umask(umask)
    os.chmod(scratch, 0o666 & ~umask)
    try:
        yield scratch
        os.replace(scratch, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise


@contextlib.contextmanager
def open_replacing(path: str, mode: str = "w", **kwargs) -> Iterator[IO]:
    """``open(path, mode)``, except that ``path`` changes only when the block ends well."""
    with replacing(path) as scratch, open(scratch, mode, **kwargs) as stream:
        yield stream
