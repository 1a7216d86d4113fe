"""Reading job logs in the Standard Workload Format (SWF), streaming.

An SWF file has one job per line, 18 whitespace-separated fields, and ``;``
comment lines (the header). Files may be gzipped. The memory fields differ
between logs: the standard says field 7 (used memory) and field 10
(requested memory) are KB per processor, but METACENTRUM-2009-2 and
LPC-EGEE record field 7 per job; :class:`MemorySemantics` says which applies,
and ``auto`` chooses from the file name for the logs known to deviate.

Malformed lines are never ignored silently: each is counted and reported
with its line number, and the reader either skips it or stops
(:class:`OnError`).
"""

from __future__ import annotations

import dataclasses
import enum
import gzip
import hashlib
import io
import math
import zlib
from collections.abc import Iterator
from typing import TextIO

FIELDS = 18
#: Beyond these a value is a corrupt line, not a job: a century in seconds
#: and a hundred million processors.
MAX_SECONDS = 100 * 365 * 86400.0
MAX_PROCESSORS = 100_000_000


class MemorySemantics(enum.Enum):
    """Where a log keeps a job's memory, and per what."""

    AUTO = "auto"
    USED_PER_PROCESSOR = "used-per-processor"
    USED_PER_JOB = "used-per-job"
    REQUESTED_PER_PROCESSOR = "requested-per-processor"
    REQUESTED_PER_JOB = "requested-per-job"
    #: The Alea simulator's extended SWF: field 10 in bytes per job.
    REQUESTED_BYTES_PER_JOB = "requested-bytes-per-job"
    NONE = "none"


@dataclasses.dataclass(frozen=True)
class KnownLog:
    """A log whose memory fields deviate from the standard (see traces/README.md)."""

    name: str
    memory: MemorySemantics
    why: str
    #: The system's processors, for a copy whose MaxProcs header was stripped.
    processors: int | None = None


#: Known logs by their content, not their file name: the SHA-256 of their
#: first FINGERPRINT_LINES job lines with whitespace normalised. Copies
#: under any name, and logs whose header was stripped, are recognised alike.
FINGERPRINT_LINES = 20
KNOWN_LOGS = {
    "a6129f2e656f7acfc64f7c9ae402a04b90609172474d1a8034ef1c22202f6d78": KnownLog(
        "METACENTRUM-2009-2",
        MemorySemantics.USED_PER_JOB,
        "field 7 is KB per job (it reproduces seed 003's Table II)",
    ),
    "ea462d1b6430ce3196042a69129c5e6c5be68c720b9e64eaf13f73c418da1ffd": KnownLog(
        "LPC-EGEE-2004-1.2",
        MemorySemantics.USED_PER_JOB,
        "field 7 is KB per job (serial grid jobs)",
    ),
    "83aa400b53e1c75e6dd437699567651202b0af93fd008b3258bb58965f21aa16": KnownLog(
        "RICC-2010-2",
        MemorySemantics.REQUESTED_PER_PROCESSOR,
        "only field 10 is logged, KB per processor",
        processors=8192,
    ),
}


class TraceFormat(enum.Enum):
    """The dialect of a log: the standard, or an extension said explicitly."""

    #: The Standard Workload Format: exactly 18 fields.
    SWF = "swf"
    #: The Alea simulator's extended SWF: 18 fields and more after them;
    #: field 7 is a placeholder and field 10 is requested RAM in bytes per job.
    ALEA = "alea"


class OnError(enum.Enum):
    SKIP = "skip"
    STOP = "stop"


class TraceError(Exception):
    """A malformed line under ``OnError.STOP``, or an unreadable file."""


@dataclasses.dataclass(frozen=True, slots=True)
class Job:
    """One job of a log. Times in seconds, memory in MB for the whole job.

    ``memory_mb`` is ``None`` when the log has no value for the job.
    """

    job_id: int
    submit: float
    wait: float
    run_time: float
    processors: int
    memory_mb: float | None
    requested_time: float
    user: int
    queue: int
    line: int

    @property
    def memory_per_processor_mb(self) -> float | None:
        return None if self.memory_mb is None else self.memory_mb / self.processors


@dataclasses.dataclass
class Malformed:
    line: int
    reason: str
    text: str


@dataclasses.dataclass
class ReadReport:
    """What the reader saw besides the jobs."""

    path: str
    memory: MemorySemantics
    #: Why the memory fields are read as ``memory``.
    memory_reason: str = ""
    #: Jobs without field 7 whose memory came from field 10, as the
    #: standard allows.
    memory_fallbacks: int = 0
    jobs: int = 0
    comments: int = 0
    malformed: int = 0
    #: The first malformed lines, for the user to look at.
    examples: list[Malformed] = dataclasses.field(default_factory=list)
    header: dict[str, str] = dataclasses.field(default_factory=dict)

    MAX_EXAMPLES = 20


def read_header(path: str) -> dict[str, str]:
    """The ``; key: value`` lines before the first job line (first value of each key)."""
    header: dict[str, str] = {}
    for stripped in _leading_lines(path):
        if not stripped.startswith(";"):
            break
        key, sep, value = stripped.lstrip("; ").partition(":")
        if sep and key and " " not in key.strip():
            header.setdefault(key.strip(), value.strip())
    return header


def max_procs(header: dict[str, str]) -> int | None:
    """The log's ``MaxProcs`` header as a number, if it has a usable one."""
    words = header.get("MaxProcs", "").split()
    try:
        value = int(words[0]) if words else 0
    except ValueError:
        return None
    return value if 0 < value <= MAX_PROCESSORS else None


def system_processors(path: str) -> tuple[int | None, str]:
    """The logged system's processors, and where that came from: the
    MaxProcs header, else a known log recognised by its content."""
    found = max_procs(read_header(path))
    if found is not None:
        return found, "the log's MaxProcs header"
    known = KNOWN_LOGS.get(fingerprint(path)[0])
    if known is not None and known.processors:
        return known.processors, f"the size of {known.name}, recognised by its content"
    return None, "no MaxProcs header"


def fingerprint(path: str) -> tuple[str, bool]:
    """The content fingerprint of a log (see KNOWN_LOGS), and whether it has a header."""
    lines: list[str] = []
    header = False
    for stripped in _leading_lines(path):
        if stripped.startswith(";"):
            header = header or ":" in stripped
            continue
        lines.append(" ".join(stripped.split()))
        if len(lines) == FINGERPRINT_LINES:
            break
    return hashlib.sha256("\n".join(lines).encode()).hexdigest(), header


def detect_memory(path: str, memory: MemorySemantics) -> tuple[MemorySemantics, str]:
    """How to read the memory fields of ``path``, and why.

    ``--memory`` first; then a known log, recognised by its content; then
    the standard's reading, with or without a header.
    """
    if memory is not MemorySemantics.AUTO:
        return memory, "as --memory says"
    found, header = fingerprint(path)
    known = KNOWN_LOGS.get(found)
    if known is not None:
        return known.memory, f"recognised by its content as {known.name}: {known.why}"
    standard = "the standard's reading: field 7, KB per processor (field 10 where 7 is missing)"
    if header:
        return MemorySemantics.USED_PER_PROCESSOR, f"an SWF header and no known content; {standard}"
    return MemorySemantics.USED_PER_PROCESSOR, f"no header and no known content; {standard}"


def _leading_lines(path: str) -> Iterator[str]:
    """The log's non-blank lines, stripped, for a look at its start.

    A damaged or truncated file simply ends here: :func:`read_jobs`
    reports it with its line.
    """
    with _open(path) as stream:
        try:
            for text in stream:
                stripped = text.strip()
                if stripped:
                    yield stripped
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError):
            return


def _open(path: str) -> TextIO:
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by the wrapper below
    except OSError as error:
        raise TraceError(f"{path}: cannot read: {error}") from None
    if raw.read(2) == b"\x1f\x8b":
        raw.seek(0)
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8", errors="replace")
    raw.seek(0)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


def _memory_mb(
    fields: list[float], processors: int, memory: MemorySemantics
) -> tuple[float | None, bool]:
    """Memory of the job in MB, and whether field 10 stood in for field 7."""
    if memory is MemorySemantics.NONE:
        return None, False
    used, requested = fields[6], fields[9]
    value, per_processor = {
        MemorySemantics.USED_PER_PROCESSOR: (used, True),
        MemorySemantics.USED_PER_JOB: (used, False),
        MemorySemantics.REQUESTED_PER_PROCESSOR: (requested, True),
        MemorySemantics.REQUESTED_PER_JOB: (requested, False),
        MemorySemantics.REQUESTED_BYTES_PER_JOB: (requested / 1024.0, False),
    }[memory]
    fell_back = False
    if memory is MemorySemantics.USED_PER_PROCESSOR and value <= 0 and requested > 0:
        # The standard's fallback: what the job asked for when use was not logged.
        value, fell_back = requested, True
    if value <= 0:
        return None, False
    kb = value * processors if per_processor else value
    return kb / 1024.0, fell_back


def _parse(
    text: str, number: int, memory: MemorySemantics, extended: bool = False
) -> tuple[Job, bool]:
    parts = text.split()
    if extended and len(parts) >= FIELDS:
        parts = parts[:FIELDS]
    elif len(parts) != FIELDS:
        if len(parts) > FIELDS:
            raise ValueError(
                f"expected {FIELDS} fields, found {len(parts)} (an extended SWF such as "
                "Alea's? say --format alea)"
            )
        raise ValueError(f"expected {FIELDS} fields, found {len(parts)}")
    try:
        fields = [float(p) for p in parts]
    except ValueError:
        raise ValueError("a field is not a number") from None
    for index, value in enumerate(fields, start=1):
        if not math.isfinite(value):
            raise ValueError(f"field {index} is not a finite number ({parts[index - 1]})")
    for index in (2, 3, 4, 9):
        if fields[index - 1] > MAX_SECONDS:
            raise ValueError(f"field {index} is {parts[index - 1]} s, more than a century")
    for index in (5, 8):
        if fields[index - 1] > MAX_PROCESSORS:
            raise ValueError(f"field {index} is {parts[index - 1]} processors, beyond any machine")
    processors = int(fields[4]) if fields[4] > 0 else int(fields[7])
    if processors <= 0:
        raise ValueError("no processor count (fields 5 and 8 are both missing)")
    if fields[1] < 0:
        raise ValueError("no submit time (field 2)")
    if fields[3] < 0:
        raise ValueError("no run time (field 4)")
    memory_mb, fell_back = _memory_mb(fields, processors, memory)
    job = Job(
        job_id=int(fields[0]),
        submit=fields[1],
        wait=max(fields[2], 0.0),
        run_time=fields[3],
        processors=processors,
        memory_mb=memory_mb,
        requested_time=fields[8],
        user=int(fields[11]),
        queue=int(fields[14]),
        line=number,
    )
    return job, fell_back


def read_jobs(
    path: str,
    report: ReadReport | None = None,
    memory: MemorySemantics = MemorySemantics.AUTO,
    on_error: OnError = OnError.SKIP,
    limit: int | None = None,
    trace_format: TraceFormat = TraceFormat.SWF,
) -> Iterator[Job]:
    """Yield the jobs of ``path`` in file order, one line at a time.

    ``report``, when given, is filled as the file is read: counts, the
    header's ``key: value`` lines and the malformed lines.
    """
    extended = trace_format is TraceFormat.ALEA
    if extended and memory is MemorySemantics.AUTO:
        memory, reason = (
            MemorySemantics.REQUESTED_BYTES_PER_JOB,
            "--format alea: field 10 is requested RAM in bytes per job",
        )
    else:
        memory, reason = detect_memory(path, memory)
    if report is not None:
        report.memory = memory
        report.memory_reason = reason
    produced = 0
    number = 0
    with _open(path) as stream:
        lines = enumerate(stream, start=1)
        while True:
            try:
                number, text = next(lines)
            except StopIteration:
                return
            except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as error:
                raise TraceError(
                    f"{path}: the compressed file ends or breaks after line {number} "
                    f"({error}); is it truncated?"
                ) from None
            stripped = text.strip()
            if not stripped:
                continue
            if stripped.startswith(";"):
                if report is not None:
                    report.comments += 1
                    key, sep, value = stripped.lstrip("; ").partition(":")
                    if sep and key and " " not in key.strip():
                        report.header.setdefault(key.strip(), value.strip())
                continue
            try:
                job, fell_back = _parse(stripped, number, memory, extended)
            except ValueError as error:
                if on_error is OnError.STOP:
                    raise TraceError(f"{path}:{number}: {error}: {stripped[:80]!r}") from None
                if report is not None:
                    report.malformed += 1
                    if len(report.examples) < ReadReport.MAX_EXAMPLES:
                        report.examples.append(Malformed(number, str(error), stripped[:120]))
                continue
            if report is not None:
                report.jobs += 1
                report.memory_fallbacks += fell_back
            yield job
            produced += 1
            if limit is not None and produced >= limit:
                return
