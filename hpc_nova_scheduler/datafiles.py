"""Reading and writing profile and interference files (CSV and YAML).

A file is read whole and checked whole: every bad row is reported with file,
line and reason, and a file with any bad row yields no records at all, so an
import either takes the entire file or nothing.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO, TypeVar

import yaml

from hpc_nova_scheduler.core.profile import ProfileError, parse_app_name
from hpc_nova_scheduler.core.records import (
    InterferenceRecord,
    ProfileRecord,
    parse_float,
    parse_host_type,
)

FORMATS = ("csv", "yaml")
PROFILES = "profiles"
INTERFERENCES = "interferences"
#: Measured hosts: the applications sharing one and the interference there.
HOSTS = "hosts"
#: Measured runs: an application's run time on a host type next to co-runners.
RUNS = "runs"
SECTIONS = (PROFILES, INTERFERENCES, HOSTS, RUNS)
COUNTER_PREFIX = "counter:"
#: CSV columns of seed 000's solo runs: ``solo_runtime@TYPE`` and
#: ``solo_metric:NAME@TYPE`` (a metric name holds no ``@``; a type may).
SOLO_RUNTIME_PREFIX = "solo_runtime@"
SOLO_METRIC_PREFIX = "solo_metric:"
_LINE_KEY = "__line__"

Record = TypeVar("Record", ProfileRecord, InterferenceRecord)


@dataclasses.dataclass(frozen=True)
class RowError:
    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.reason}"


class DataFileError(Exception):
    """A data file could not be used; ``errors`` lists every problem."""

    def __init__(self, errors: Sequence[RowError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


def detect_format(path: str, fmt: str | None = None) -> str:
    if fmt:
        if fmt not in FORMATS:
            raise DataFileError(
                [
                    RowError(
                        path,
                        None,
                        f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}",
                    )
                ]
            )
        return fmt
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise DataFileError(
        [
            RowError(
                path,
                None,
                "cannot tell the format from the file name; pass --format csv or yaml",
            )
        ]
    )


class LineLoader(yaml.SafeLoader):
    """Safe loader that remembers the line of every mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep=deep)
        mapping[_LINE_KEY] = node.start_mark.line + 1
        return mapping


def _drop_lines(value: Any) -> None:
    """Forget the line marks of nested mappings (solo runs nest two deep)."""
    if isinstance(value, dict):
        value.pop(_LINE_KEY, None)
        for nested in value.values():
            _drop_lines(nested)
    elif isinstance(value, list):
        for nested in value:
            _drop_lines(nested)


def read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8-sig") as stream:
            return stream.read()
    except (OSError, UnicodeDecodeError) as error:
        raise DataFileError([RowError(path, None, f"cannot read: {error}")]) from None


def _yaml_rows(path: str, text: str, section: str) -> list[tuple[int | None, Mapping[str, Any]]]:
    try:
        document = yaml.load(text, Loader=LineLoader)  # a SafeLoader subclass: safe
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error)
        raise DataFileError([RowError(path, line, f"not valid YAML: {problem}")]) from None
    if document is None:
        return []
    if isinstance(document, dict):
        document.pop(_LINE_KEY, None)
        unknown = sorted(str(k) for k in document if k not in SECTIONS)
        if unknown:
            raise DataFileError(
                [
                    RowError(
                        path,
                        None,
                        f"unknown top-level key {unknown[0]!r}; expected {' or '.join(SECTIONS)}",
                    )
                ]
            )
        if section not in document:
            raise DataFileError([RowError(path, None, f"no {section!r} section")])
        items = document[section] or []
    else:
        items = document
    if not isinstance(items, list):
        raise DataFileError([RowError(path, None, f"{section!r} must be a list")])
    rows = []
    for item in items:
        if not isinstance(item, dict):
            raise DataFileError(
                [
                    RowError(
                        path,
                        None,
                        f"each entry of {section!r} must be a mapping, got {item!r}",
                    )
                ]
            )
        line = item.pop(_LINE_KEY, None)
        _drop_lines(item)
        rows.append((line, item))
    return rows


def _csv_rows(path: str, text: str) -> list[tuple[int | None, Mapping[str, Any]]]:
    return csv_table(path, text)[1]


def csv_table(path: str, text: str) -> tuple[list[str], list[tuple[int | None, Mapping[str, Any]]]]:
    """The header of CSV ``text`` and its rows, each with its line (blank rows skipped).

    A row with the wrong number of cells is a mapping with only the key
    ``__bad__``, saying so, for :func:`build_rows` to report.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            return [], []
        header = [h.strip() for h in header]
        if len(set(header)) != len(header):
            raise DataFileError([RowError(path, 1, "duplicate column names in the header")])
        rows = []
        for cells in reader:
            line = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                rows.append(
                    (
                        line,
                        {"__bad__": f"expected {len(header)} cells, found {len(cells)}"},
                    )
                )
                continue
            rows.append((line, _fold_counters(dict(zip(header, cells, strict=True)))))
        return header, rows
    except csv.Error as error:
        raise DataFileError([RowError(path, reader.line_num, f"not valid CSV: {error}")]) from None


def _fold_counters(row: dict[str, str]) -> dict[str, Any]:
    counters = {}
    solo_runs: dict[str, dict[str, Any]] = {}
    folded: dict[str, Any] = {}
    for column, value in row.items():
        if column.startswith(COUNTER_PREFIX):
            if value.strip():
                counters[column[len(COUNTER_PREFIX) :]] = value
        elif column.startswith(SOLO_RUNTIME_PREFIX):
            if value.strip():
                host_type = column[len(SOLO_RUNTIME_PREFIX) :]
                solo_runs.setdefault(host_type, {})["runtime"] = value
        elif column.startswith(SOLO_METRIC_PREFIX) and "@" in column:
            if value.strip():
                metric, _, host_type = column[len(SOLO_METRIC_PREFIX) :].partition("@")
                run = solo_runs.setdefault(host_type, {})
                run.setdefault("metrics", {})[metric] = value
        else:
            folded[column] = value
    if counters:
        folded["counters"] = counters
    if solo_runs:
        folded["solo_runs"] = solo_runs
    return folded


def _read(
    path: str,
    fmt: str | None,
    section: str,
    build: Callable[[Mapping[str, Any]], Record],
) -> list[Record]:
    fmt = detect_format(path, fmt)
    text = read_text(path)
    rows = _csv_rows(path, text) if fmt == "csv" else _yaml_rows(path, text, section)
    errors: list[RowError] = []
    records: list[Record] = []
    first_line: dict[Any, int | None] = {}
    for line, row in rows:
        if "__bad__" in row:
            errors.append(RowError(path, line, row["__bad__"]))
            continue
        try:
            record = build(row)
        except ProfileError as error:
            errors.append(RowError(path, line, str(error)))
            continue
        key = record.key if isinstance(record, InterferenceRecord) else record.name
        if key in first_line:
            errors.append(
                RowError(
                    path,
                    line,
                    f"duplicate of the entry on line {first_line[key]}: {key!r}",
                )
            )
            continue
        first_line[key] = line
        records.append(record)
    if errors:
        raise DataFileError(errors)
    return records


def read_profiles(path: str, fmt: str | None = None) -> list[ProfileRecord]:
    """Read and validate every profile in ``path`` (``-`` is stdin)."""
    return _read(path, fmt, PROFILES, ProfileRecord.from_mapping)


@dataclasses.dataclass(frozen=True)
class HostSample:
    """Applications measured sharing one host, and the interference level
    there (percent), as ``model fit`` and ``model evaluate`` read them."""

    applications: tuple[str, ...]
    interference: float
    line: int | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], line: int | None = None) -> HostSample:
        unknown = sorted(set(data) - {"applications", "interference"})
        if unknown:
            raise ProfileError(unknown[0], "unknown field; known: applications, interference")
        names = data.get("applications")
        if isinstance(names, str):
            names = names.replace("+", " ").split()
        if not isinstance(names, list) or len(names) < 2:
            raise ProfileError(
                "applications", "expected two or more application names (a list, or '+'-joined)"
            )
        level = parse_float(data.get("interference"), "interference", minimum=0, maximum=100_000)
        apps = tuple(parse_app_name(str(n), key="applications") for n in names)
        return cls(apps, level, line)


def read_host_samples(path: str, fmt: str | None = None) -> list[HostSample]:
    """Read and validate every measured host in ``path`` (``-`` is stdin)."""
    return _read_measured(path, fmt, HOSTS, HostSample.from_mapping, "no measured hosts")


Measured = TypeVar("Measured")


def _read_measured(
    path: str,
    fmt: str | None,
    section: str,
    build: Callable[[Mapping[str, Any], int | None], Measured],
    none_found: str,
) -> list[Measured]:
    """Every row of ``section`` built with its line; all bad rows reported, none kept."""
    fmt = detect_format(path, fmt)
    text = read_text(path)
    rows = _csv_rows(path, text) if fmt == "csv" else _yaml_rows(path, text, section)
    return build_rows(path, rows, build, none_found)


def build_rows(
    path: str,
    rows: Iterable[tuple[int | None, Mapping[str, Any]]],
    build: Callable[[Mapping[str, Any], int | None], Measured],
    none_found: str,
) -> list[Measured]:
    """Every row built with its line; a ProfileError of any row is reported
    with its line, all of them at once, and then nothing is kept."""
    errors: list[RowError] = []
    found: list[Measured] = []
    for line, row in rows:
        if "__bad__" in row:
            errors.append(RowError(path, line, row["__bad__"]))
            continue
        try:
            found.append(build(row, line))
        except ProfileError as error:
            errors.append(RowError(path, line, str(error)))
    if errors:
        raise DataFileError(errors)
    if not found:
        raise DataFileError([RowError(path, None, none_found)])
    return found


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One measured run, as seed 000's ``runtime-trees`` is fitted on:
    ``application`` took ``runtime`` seconds with ``vms`` of its VMs on a
    host of ``host_type``, next to ``co_runners`` (name, VMs on the host);
    no co-runners is a solo run."""

    application: str
    host_type: str
    runtime: float
    vms: int = 1
    co_runners: tuple[tuple[str, int], ...] = ()
    line: int | None = None

    FIELDS = ("application", "host_type", "vms", "co_runners", "runtime")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], line: int | None = None) -> RunRecord:
        unknown = sorted(set(data) - set(cls.FIELDS))
        if unknown:
            raise ProfileError(unknown[0], "unknown field; known: " + ", ".join(cls.FIELDS))
        return cls(
            application=parse_app_name(data.get("application"), key="application"),
            host_type=parse_host_type(data.get("host_type")),
            runtime=parse_float(data.get("runtime"), "runtime", minimum=0, exclusive_minimum=True),
            vms=_vm_count(data.get("vms", 1), "vms"),
            co_runners=_co_runners(data.get("co_runners")),
            line=line,
        )

    def to_mapping(self) -> dict[str, Any]:
        return {
            "application": self.application,
            "host_type": self.host_type,
            "vms": self.vms,
            "co_runners": "+".join(f"{name}:{vms}" for name, vms in self.co_runners),
            "runtime": self.runtime,
        }


def _vm_count(value: Any, key: str) -> int:
    if isinstance(value, str) and not value.strip():
        return 1
    number = parse_float(value, key, minimum=1)
    if number != int(number):
        raise ProfileError(key, f"{value!r} is not a whole number of VMs")
    return int(number)


def _co_runners(value: Any) -> tuple[tuple[str, int], ...]:
    """``{NAME: VMS}``, a list of names, or ``"A:2+B"`` (one VM where no count is given)."""
    key = "co_runners"
    if value is None or (isinstance(value, str) and not value.strip()):
        return ()
    if isinstance(value, str):
        items = []
        for part in value.split("+"):
            name, sep, vms = part.strip().rpartition(":")
            items.append((name, vms) if sep else (vms, 1))
    elif isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, list):
        items = [(name, 1) for name in value]
    else:
        raise ProfileError(key, "expected NAME: VMS pairs, a list of names, or 'A:2+B'")
    counts: dict[str, int] = {}
    for name, vms in items:
        app = parse_app_name(str(name), key=key)
        counts[app] = counts.get(app, 0) + _vm_count(vms, f"{key}.{app}")
    return tuple(sorted(counts.items()))


def read_runs(path: str, fmt: str | None = None) -> list[RunRecord]:
    """Read and validate every measured run in ``path`` (``-`` is stdin)."""
    return _read_measured(path, fmt, RUNS, RunRecord.from_mapping, "no measured runs")


def write_runs(stream: TextIO, runs: Iterable[RunRecord], fmt: str) -> None:
    mappings = [r.to_mapping() for r in runs]
    if fmt == "yaml":
        yaml.safe_dump({RUNS: [_plain(m) for m in mappings]}, stream, sort_keys=False)
        return
    _write_csv(stream, list(RunRecord.FIELDS), mappings)


def read_interferences(path: str, fmt: str | None = None) -> list[InterferenceRecord]:
    """Read and validate every interference record in ``path``."""
    return _read(path, fmt, INTERFERENCES, InterferenceRecord.from_mapping)


def _plain(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if v not in (None, {}, "")}


def _write_csv(stream: TextIO, columns: list[str], rows: Iterable[Mapping[str, Any]]) -> None:
    writer = csv.DictWriter(stream, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})


def write_profiles(stream: TextIO, records: Iterable[ProfileRecord], fmt: str) -> None:
    records = list(records)
    if fmt == "yaml":
        yaml.safe_dump(
            {PROFILES: [_plain(r.to_mapping()) for r in records]},
            stream,
            sort_keys=False,
        )
        return
    counters = sorted({c for r in records for c in r.counters})
    solo_columns: dict[str, None] = {}
    for record in sorted(records, key=lambda r: r.name):
        for host_type, run in record.solo_runs.items():
            solo_columns[SOLO_RUNTIME_PREFIX + host_type] = None
            for metric in run.metrics:
                if "@" in metric:
                    raise DataFileError(
                        [RowError("-", None, f"metric {metric!r} holds '@': write YAML instead")]
                    )
                solo_columns[f"{SOLO_METRIC_PREFIX}{metric}@{host_type}"] = None
    columns = (
        list(ProfileRecord.FIELDS) + [COUNTER_PREFIX + c for c in counters] + sorted(solo_columns)
    )
    rows = []
    for record in records:
        row = record.to_mapping()
        for counter, value in row.pop("counters").items():
            row[COUNTER_PREFIX + counter] = value
        for host_type, run in row.pop("solo_runs").items():
            row[SOLO_RUNTIME_PREFIX + host_type] = run["runtime"]
            for metric, value in run["metrics"].items():
                row[f"{SOLO_METRIC_PREFIX}{metric}@{host_type}"] = value
        rows.append(row)
    _write_csv(stream, columns, rows)


def write_interferences(stream: TextIO, records: Iterable[InterferenceRecord], fmt: str) -> None:
    mappings = [r.to_mapping() for r in records]
    if fmt == "yaml":
        yaml.safe_dump({INTERFERENCES: [_plain(m) for m in mappings]}, stream, sort_keys=False)
        return
    _write_csv(stream, list(InterferenceRecord.FIELDS), mappings)
