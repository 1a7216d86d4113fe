"""Measured task runs of many-task applications, one row a run.

A runs file is CSV with the header ``application,platform,runtime_s`` and
an optional fourth column ``corunners``: the applications that shared the
node, joined by ``+``, empty for a solo ("OneCore") run. It is the input of
``hpc-nova-scheduler fairshare affinity`` and a contract that other tools
write to, so it is read strictly: an unknown or missing column, a run time
that is not a number of seconds from :data:`MIN_RUNTIME_S` to
:data:`MAX_RUNTIME_S`, or an empty name is an error naming the file and
line, and nothing is read.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from hpc_nova_scheduler.core.profile import ProfileError
from hpc_nova_scheduler.datafiles import DataFileError, RowError, build_rows, csv_table, read_text

REQUIRED = ("application", "platform", "runtime_s")
OPTIONAL = ("corunners",)
#: The run times a task may have: a microsecond to about 31 years. Outside
#: them a run is a typo or a unit slip, and the affinities overflow (a
#: mean of 1e308 s) or divide to infinity (3600 / 1e-320 tasks an hour).
MIN_RUNTIME_S = 1e-6
MAX_RUNTIME_S = 1e9


@dataclasses.dataclass(frozen=True)
class TaskRun:
    """One task of ``application`` that ran ``runtime_s`` seconds on ``platform``."""

    application: str
    platform: str
    runtime_s: float
    #: The applications on the node beside it; empty for a solo run.
    corunners: tuple[str, ...] = ()
    #: Where the run was read, for messages.
    line: int | None = None

    @property
    def solo(self) -> bool:
        return not self.corunners


def read_runs(path: str) -> list[TaskRun]:
    """Every run of the file at ``path`` (``-``: standard input); DataFileError if any is bad."""
    header, rows = csv_table(path, read_text(path))
    _check_header(path, header)
    return build_rows(path, rows, _run, "no runs: the file has a header and no rows")


def _check_header(path: str, header: list[str]) -> None:
    if not header or header[: len(REQUIRED)] != list(REQUIRED):
        raise DataFileError(
            [
                RowError(
                    path,
                    1,
                    f"the header must start with {','.join(REQUIRED)}, found "
                    f"{','.join(header) or 'nothing'}",
                )
            ]
        )
    extra = header[len(REQUIRED) :]
    if extra and extra != list(OPTIONAL):
        # Duplicate names were refused with the header already.
        unknown = [name for name in extra if name not in OPTIONAL]
        raise DataFileError(
            [
                RowError(
                    path,
                    1,
                    f"unknown column {unknown[0]!r}; the columns after "
                    f"{','.join(REQUIRED)} may only be {','.join(OPTIONAL)}",
                )
            ]
        )


def _run(cells: Mapping[str, str], line: int | None) -> TaskRun:
    row = {name: cell.strip() for name, cell in cells.items()}
    for name in ("application", "platform"):
        if not row[name]:
            raise ProfileError(name, "empty")
    try:
        runtime = float(row["runtime_s"])
    except ValueError:
        raise ProfileError("runtime_s", f"{row['runtime_s']!r} is not a number") from None
    if not math.isfinite(runtime) or runtime <= 0:
        raise ProfileError("runtime_s", f"{row['runtime_s']!r} is not a positive finite number")
    if not MIN_RUNTIME_S <= runtime <= MAX_RUNTIME_S:
        raise ProfileError(
            "runtime_s",
            f"{row['runtime_s']!r} is not from {MIN_RUNTIME_S:g} to {MAX_RUNTIME_S:g} seconds",
        )
    corunners: tuple[str, ...] = ()
    if row.get("corunners"):
        corunners = tuple(name.strip() for name in row["corunners"].split("+"))
        if not all(corunners):
            raise ProfileError("corunners", f"{row['corunners']!r} has an empty name")
    return TaskRun(row["application"], row["platform"], runtime, corunners, line)
