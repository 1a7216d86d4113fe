"""Fitted models as bytes: skops, never pickle, and only trusted types back.

scikit-learn's documentation warns that unpickling runs whatever code the
bytes name. A stored model is therefore written with skops and read back
trusting scikit-learn's and numpy's own types and nothing else; any other
type is named and refused. Each payload records the library versions that
made it, so an operator can tell why a model written elsewhere misbehaves.
"""

from __future__ import annotations

import platform
import zipfile
from typing import Any

import numpy as np

#: Types a stored model may contain beyond skops's defaults.
TRUSTED_PREFIXES = ("sklearn.", "numpy.")


class StoredModelError(Exception):
    """Bytes that are not a stored model, or hold types we do not trust."""


def library_versions() -> dict[str, str]:
    """The versions that matter to reading a fitted model back."""
    import sklearn
    import skops

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scikit-learn": sklearn.__version__,
        "skops": skops.__version__,
    }


def dumps(kind: str, payload: dict[str, Any]) -> bytes:
    """``payload`` (plain values and fitted estimators) as skops bytes of ``kind``."""
    import skops.io

    # Deflated: a bagged ensemble of 500 trees is ten times smaller, well
    # under MariaDB's default 16 MB packet.
    return skops.io.dumps(
        {"kind": kind, **payload}, compression=zipfile.ZIP_DEFLATED, compresslevel=6
    )


def loads(kind: str, data: bytes) -> dict[str, Any]:
    """The payload :func:`dumps` wrote for ``kind``; refuses anything else."""
    import skops.io

    try:
        untrusted = skops.io.get_untrusted_types(data=data)
    except (zipfile.BadZipFile, ValueError, KeyError, OSError) as error:
        raise StoredModelError(f"not a stored model: {error}") from None
    refused = [t for t in untrusted if not t.startswith(TRUSTED_PREFIXES)]
    if refused:
        raise StoredModelError(f"the stored model holds types we do not trust: {refused}")
    try:
        stored = skops.io.loads(data, trusted=untrusted)
    except Exception as error:  # skops raises many kinds on a damaged file
        raise StoredModelError(f"cannot read the stored model: {error}") from None
    if not isinstance(stored, dict) or stored.get("kind") != kind:
        raise StoredModelError(f"not a stored {kind} model")
    return stored
