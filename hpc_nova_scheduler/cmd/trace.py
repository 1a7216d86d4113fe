"""``hpc-nova-scheduler trace stats``, and the options of every command that reads a job log."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TextIO

from hpc_nova_scheduler import strictjson
from hpc_nova_scheduler.cmd import common, options


def with_trace(args: argparse.Namespace, consume):
    """Read ``args.trace`` as the trace options say; ``consume`` the jobs.

    A log that yields no job at all is an error, not a table of zeros; the
    lines skipped as malformed are reported on standard error.
    """
    from hpc_nova_scheduler.sim import swf

    memory = swf.MemorySemantics(args.memory)
    report = swf.ReadReport(args.trace, memory)
    windowed = bool(args.skip_jobs or args.skip_days)
    jobs = swf.read_jobs(
        args.trace,
        report,
        memory,
        swf.OnError(args.on_error),
        limit=None if windowed else args.jobs,
        trace_format=swf.TraceFormat(args.format),
    )

    def at_least_one():
        count = 0
        for job in window(jobs, args) if windowed else jobs:
            count += 1
            yield job
        if count == 0:
            if windowed and report.jobs:
                raise swf.TraceError(
                    f"{report.path}: no job left after --skip-jobs {args.skip_jobs} "
                    f"--skip-days {args.skip_days:g} ({report.jobs} jobs read)"
                )
            raise swf.TraceError(_no_jobs(report))

    try:
        result = consume(at_least_one())
    except swf.TraceError as error:
        raise common.CommandError(str(error)) from None
    finally:
        report_skipped(report, getattr(args, "err", None))
    return report, result


def window(jobs, args: argparse.Namespace):
    """The jobs after the first ``--skip-jobs`` and the first ``--skip-days``
    of submissions, at most ``--jobs`` of them; arrivals count from the
    window's first job."""
    first = None
    skipped = taken = 0
    for job in jobs:
        if first is None:
            first = job.submit
        if skipped < args.skip_jobs or job.submit < first + args.skip_days * 86400.0:
            skipped += 1
            continue
        yield job
        taken += 1
        if args.jobs is not None and taken >= args.jobs:
            return


def _no_jobs(report) -> str:
    if report.malformed and report.examples:
        first = report.examples[0]
        return (
            f"{report.path}: no job could be read: every job line is malformed "
            f"({report.malformed} lines; line {first.line}: {first.reason})"
        )
    return f"{report.path}: the file holds no job lines"


def report_skipped(report, err: TextIO | None) -> None:
    """The malformed lines skipped, on standard error: the first few, then a count."""
    if err is None or not report.malformed:
        return
    for example in report.examples:
        err.write(f"{report.path}:{example.line}: skipped: {example.reason}\n")
    more = report.malformed - len(report.examples)
    if more > 0:
        err.write(f"{report.path}: ... and {more} more malformed lines skipped\n")


def cmd_trace_stats(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.sim import stats as trace_stats

    report, summary = with_trace(args, trace_stats.summarize)
    if args.json:
        payload = dataclasses.asdict(summary)
        payload.update(
            trace=args.trace,
            memory=report.memory.value,
            memory_reason=report.memory_reason,
            memory_from_field_10=report.memory_fallbacks,
            malformed=report.malformed,
            table_ii=[
                dict(
                    zip(
                        ("bucket", "jobs", "percent", "jobs_with_memory", "percent_with_memory"),
                        row,
                        strict=True,
                    )
                )
                for row in summary.table_ii()
            ],
        )
        out.write(strictjson.dumps(payload, indent=2) + "\n")
        return 0
    days = summary.span_seconds / 86400
    common.table(
        ("", "value"),
        [
            ("trace", args.trace),
            ("memory fields read as", f"{report.memory.value} ({report.memory_reason})"),
            ("jobs whose memory came from field 10", report.memory_fallbacks),
            ("jobs", summary.jobs),
            ("malformed lines skipped", report.malformed),
            ("jobs with a memory value", summary.with_memory),
            ("submit span (days)", f"{days:.1f}"),
            (
                "processors per job (min / median / mean / max)",
                _four(summary.processors, "{:.0f}", "{:.2f}"),
            ),
            ("run time s (min / median / mean / max)", _four(summary.run_time, "{:.0f}", "{:.0f}")),
            ("processor-hours", f"{summary.processor_seconds / 3600:.0f}"),
        ],
        out,
    )
    out.write("Memory per core (seed 003 Table II):\n")
    common.table(
        ("memory per core", "jobs", "% of all jobs", "jobs with memory", "% of those"),
        [
            (label, count, f"{share:.2f}", known, f"{share_known:.2f}")
            for label, count, share, known, share_known in summary.table_ii()
        ],
        out,
    )
    return 0


def _four(dist, fmt_int: str, fmt_mean: str) -> str:
    return " / ".join(
        (
            fmt_int.format(dist.minimum),
            fmt_int.format(dist.median),
            fmt_mean.format(dist.mean),
            fmt_int.format(dist.maximum),
        )
    )


def _memory_choices():
    from hpc_nova_scheduler.sim.swf import MemorySemantics

    return list(MemorySemantics)


def add_trace_options(parser: argparse.ArgumentParser, jobs: int | None = None) -> None:
    """The options of every command that reads a job log (see with_trace)."""
    parser.add_argument(
        "--memory",
        default="auto",
        choices=[m.value for m in _memory_choices()],
        help="which field holds memory and per what (default: auto, from the file name for "
        "logs known to deviate from the standard)",
    )
    parser.add_argument(
        "--skip-jobs",
        type=options.non_negative_int,
        default=0,
        metavar="N",
        help="start after the first N jobs of the log (default 0)",
    )
    parser.add_argument(
        "--skip-days",
        type=options.non_negative_float,
        default=0.0,
        metavar="D",
        help="start with the first job submitted D days after the log's first (default 0)",
    )
    parser.add_argument(
        "--format",
        default="swf",
        choices=["swf", "alea"],
        help="swf: the standard, 18 fields; alea: the Alea simulator's extended SWF "
        "(fields after the 18th ignored, field 10 requested RAM in bytes per job)",
    )
    parser.add_argument(
        "--on-error",
        default="skip",
        choices=["skip", "stop"],
        help="what to do at a malformed line (default: skip, and report it)",
    )
    parser.add_argument(
        "--jobs",
        type=options.count_or_all,
        default=jobs,
        metavar="N|all",
        help="only the first N jobs, or all of them"
        + (f" (default {jobs})" if jobs else " (default all)"),
    )


def add_parser(sub) -> None:
    trace = sub.add_parser(
        "trace",
        help="inspect job logs in the Standard Workload Format",
        description="Inspect job logs (SWF, plain or gzipped).",
    )
    trace_actions = trace.add_subparsers(dest="action", required=True, metavar="ACTION")
    stats = trace_actions.add_parser(
        "stats",
        help="job count, processors, run times and memory per core",
        description="Summarise a job log: jobs, processors, run times, and the distribution "
        "of memory per core in seed 003 Table II's buckets.",
    )
    stats.add_argument("trace", metavar="TRACE", help="SWF file, plain or gzipped")
    add_trace_options(stats)
    stats.add_argument("--json", action="store_true", help="print JSON instead of tables")
    stats.set_defaults(func=cmd_trace_stats)
