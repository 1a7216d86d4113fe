"""Finding the files shipped beside the package (migrations, examples).

In a source checkout or an editable install they sit in the tree next to
the package; a regular install puts them under the environment's data
directory, where pbr's ``data_files`` in setup.cfg sends them.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[1]


class ResourceNotFound(RuntimeError):
    pass


def shipped_path(source: str, installed: str, marker: str | None = None) -> Path:
    """Return ``source`` in the checkout, else ``installed`` under the prefix.

    ``marker`` names a file that must exist inside a directory candidate.
    """
    bases = dict.fromkeys((sysconfig.get_path("data"), sys.prefix, sys.base_prefix))
    candidates = [SOURCE_ROOT / source] + [Path(base) / installed for base in bases]
    for candidate in candidates:
        if (candidate / marker).is_file() if marker else candidate.exists():
            return candidate
    raise ResourceNotFound(f"{source} not found; looked in " + ", ".join(map(str, candidates)))


def migrations_dir() -> Path:
    return shipped_path("migrations", "share/hpc-nova-scheduler/migrations", marker="env.py")


def example_profiles_dir() -> Path:
    return shipped_path("etc/profiles", "etc/hpc-nova-scheduler/profiles")
