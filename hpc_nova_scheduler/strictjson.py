"""JSON that every parser reads: no NaN, no Infinity.

Python's ``json`` writes ``NaN`` and ``Infinity`` by default, which JSON
does not have; a value that is not finite is written as ``null``.
"""

from __future__ import annotations

import json
import math
from typing import Any, TextIO


def finite(value: Any) -> Any:
    """``value`` with every non-finite float, at any depth, as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    return json.dumps(finite(value), allow_nan=False, **kwargs)


def dump(value: Any, stream: TextIO, **kwargs: Any) -> None:
    json.dump(finite(value), stream, allow_nan=False, **kwargs)
