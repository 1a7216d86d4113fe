"""Measured task runs of many-task applications, one row a run.

A runs file is CSV with the header ``application,platform,runtime_s`` and
an optional fourth column ``corunners``: the applications that shared the
node, joined by ``+``, empty for a solo ("OneCore") run. It is the input of
``hpc-nova-scheduler fairshare affinity`` and a contract that other tools
write to, so it is read strictly: an unknown or missing column, a run time
that is not a positive finite number of seconds, or an empty name is an
error naming the file and line, and nothing is read.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math

from hpc_nova_scheduler.datafiles import DataFileError, RowError, read_text

REQUIRED = ("application", "platform", "runtime_s")
OPTIONAL = ("corunners",)


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
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    try:
        header = [cell.strip() for cell in next(reader, [])]
    except csv.Error as error:
        raise DataFileError([RowError(path, 1, f"not valid CSV: {error}")]) from None
    _check_header(path, header)
    runs: list[TaskRun] = []
    errors: list[RowError] = []
    try:
        for cells in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            try:
                runs.append(_run(header, cells, line))
            except ValueError as error:
                errors.append(RowError(path, line, str(error)))
    except csv.Error as error:
        errors.append(RowError(path, reader.line_num, f"not valid CSV: {error}"))
    if errors:
        raise DataFileError(errors)
    if not runs:
        raise DataFileError([RowError(path, None, "no runs: the file has a header and no rows")])
    return runs


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
        unknown = [name for name in extra if name not in OPTIONAL] or extra[len(OPTIONAL) :]
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


def _run(header: list[str], cells: list[str], line: int) -> TaskRun:
    if len(cells) != len(header):
        raise ValueError(f"expected {len(header)} cells, found {len(cells)}")
    row = {name: cell.strip() for name, cell in zip(header, cells, strict=True)}
    for name in ("application", "platform"):
        if not row[name]:
            raise ValueError(f"{name}: empty")
    try:
        runtime = float(row["runtime_s"])
    except ValueError:
        raise ValueError(f"runtime_s: {row['runtime_s']!r} is not a number") from None
    if not math.isfinite(runtime) or runtime <= 0:
        raise ValueError(f"runtime_s: {row['runtime_s']!r} is not a positive finite number")
    corunners: tuple[str, ...] = ()
    if row.get("corunners"):
        corunners = tuple(name.strip() for name in row["corunners"].split("+"))
        if not all(corunners):
            raise ValueError(f"corunners: {row['corunners']!r} has an empty name")
    return TaskRun(row["application"], row["platform"], runtime, corunners, line)
