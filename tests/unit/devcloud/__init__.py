"""Tests of tools/cloud.py's ``devcloud`` package."""

from __future__ import annotations

from typing import Any

from devcloud.layout import Run


def a_run(**overrides: Any) -> Run:
    """A one-cell run with the plugin on, local servers, nothing started."""
    settings: dict[str, Any] = {
        "folder": "x",
        "run_id": "abc",
        "mysql": "mysql+pymysql://root@127.0.0.1",
        "rabbit": "rabbit://guest:guest@127.0.0.1:5672",
        "computes": 1,
        "scheduler_workers": 1,
        "plugin": True,
    }
    settings.update(overrides)
    return Run(**settings)
