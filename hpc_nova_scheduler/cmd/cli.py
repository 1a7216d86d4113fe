"""The ``hpc-nova-scheduler`` command.

Options are read from the files given with ``--config-file`` (by default
nova.conf where oslo.config finds it), so the command sees the same
``[hpc_scheduler] connection`` as nova-scheduler; ``--connection`` overrides
it for one call.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

import prettytable
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.cmd import reconcile as reconcile_cmd
from hpc_nova_scheduler.core.profile import AppClass, ProfileError
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration

LOG = logging.getLogger(__name__)
PROG = "hpc-nova-scheduler"


class CommandError(Exception):
    """A failure to report in one line, without a traceback."""


def _load_conf(args: argparse.Namespace) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    hpc_conf.register_opts(conf)
    logging.register_options(conf)
    # alembic narrates every migration step at INFO; the command says
    # what matters itself.
    logging.set_defaults(
        default_log_levels=[
            *logging.get_default_log_levels(),
            "alembic=WARN",
            "stevedore=WARN",
        ]
    )
    files = args.config_file or cfg.find_config_files(project="nova", prog=PROG)
    try:
        conf(
            args=[],
            project=PROG,
            default_config_files=files,
            default_config_dirs=[args.config_dir] if args.config_dir else [],
        )
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigFileParseError) as error:
        raise CommandError(str(error)) from None
    if args.connection:
        conf.set_override("connection", args.connection, group=hpc_conf.GROUP_NAME)
    if args.debug:
        conf.set_override("debug", True)
    logging.setup(conf, PROG)
    return conf


def _database(args: argparse.Namespace, *, require_schema: bool = True) -> db_api.Database:
    try:
        database = db_api.Database.from_conf(args.conf)
    except db_api.DatabaseUnavailable as error:
        raise CommandError(str(error)) from None
    if require_schema:
        current = database.revision()
        head = migration.head_revision()
        if current is None:
            raise CommandError(f"the plugin database has no schema yet; run '{PROG} db sync'")
        if current != head:
            raise CommandError(
                f"the plugin database is at revision {current}, the code needs "
                f"{head}; run '{PROG} db sync'"
            )
    return database


def _table(columns: Sequence[str], rows: Sequence[Sequence[object]], out: TextIO) -> None:
    table = prettytable.PrettyTable(list(columns))
    table.align = "l"
    for row in rows:
        table.add_row(["" if v is None else v for v in row])
    out.write(table.get_string() + "\n")


# -- db ------------------------------------------------------------------


def cmd_db_sync(args: argparse.Namespace, out: TextIO) -> int:
    database = _database(args, require_schema=False)
    out.write(f"database at revision {database.sync(args.revision)}\n")
    return 0


def cmd_db_version(args: argparse.Namespace, out: TextIO) -> int:
    current = _database(args, require_schema=False).revision()
    out.write(f"{current or 'none (run db sync)'}\n")
    return 0


# -- profiles and interference -------------------------------------------


def cmd_profile_import(args: argparse.Namespace, out: TextIO) -> int:
    records = datafiles.read_profiles(args.file, args.format)
    if args.dry_run:
        out.write(f"{args.file}: {len(records)} valid profiles; nothing written (--dry-run)\n")
        return 0
    result = _database(args).import_profiles(records)
    out.write(f"{args.file}: {len(records)} profiles: {result}\n")
    return 0


def cmd_profile_list(args: argparse.Namespace, out: TextIO) -> int:
    records = _database(args).list_profiles()
    if args.app_class:
        wanted = AppClass.parse(args.app_class, key="--app-class")
        records = [r for r in records if r.app_class is wanted]
    _table(
        (
            "name",
            "class",
            "cache score",
            "SLLC",
            "DRAM",
            "NET",
            "solo runtime (s)",
            "counters",
        ),
        [
            (
                r.name,
                r.app_class.value,
                r.cache_score,
                r.sllc_score,
                r.dram_score,
                r.net_score,
                r.solo_runtime,
                len(r.counters) or None,
            )
            for r in records
        ],
        out,
    )
    return 0


def cmd_profile_show(args: argparse.Namespace, out: TextIO) -> int:
    record = _database(args).get_profile(args.name)
    if record is None:
        raise CommandError(f"no profile named {args.name!r}")
    rows = [(k, v) for k, v in record.to_mapping().items() if k != "counters"]
    rows += [(f"counter {k}", v) for k, v in record.counters.items()]
    _table(("field", "value"), rows, out)
    return 0


def _export(args: argparse.Namespace, out: TextIO, write: Callable[[TextIO, str], None]) -> int:
    fmt = (
        datafiles.detect_format(args.file, args.format)
        if args.file != "-"
        else (args.format or "yaml")
    )
    if args.file == "-":
        write(out, fmt)
        return 0
    with open(args.file, "w", encoding="utf-8", newline="") as stream:
        write(stream, fmt)
    return 0


def cmd_profile_export(args: argparse.Namespace, out: TextIO) -> int:
    records = _database(args).list_profiles()
    return _export(args, out, lambda stream, fmt: datafiles.write_profiles(stream, records, fmt))


def cmd_interference_import(args: argparse.Namespace, out: TextIO) -> int:
    records = datafiles.read_interferences(args.file, args.format)
    if args.dry_run:
        out.write(
            f"{args.file}: {len(records)} valid interference records; nothing written (--dry-run)\n"
        )
        return 0
    result = _database(args).import_interferences(records)
    out.write(f"{args.file}: {len(records)} interference records: {result}\n")
    return 0


def cmd_interference_list(args: argparse.Namespace, out: TextIO) -> int:
    records = _database(args).list_interferences([args.app] if args.app else None)
    tolerance = args.conf[hpc_conf.GROUP_NAME].interference_tolerance
    _table(
        (
            "app a",
            "app b",
            "slowdown a (%)",
            "slowdown b (%)",
            "source",
            "measured at",
            f"harmful (> {tolerance:g}%)",
        ),
        [
            (
                r.app_a,
                r.app_b,
                r.slowdown_a,
                r.slowdown_b,
                r.source,
                r.measured_at,
                "yes" if r.is_harmful(tolerance) else "no",
            )
            for r in records
        ],
        out,
    )
    return 0


def cmd_interference_export(args: argparse.Namespace, out: TextIO) -> int:
    records = _database(args).list_interferences()
    return _export(
        args,
        out,
        lambda stream, fmt: datafiles.write_interferences(stream, records, fmt),
    )


def _with_trace(args: argparse.Namespace, consume):
    """Read ``args.trace`` as the trace options say; ``consume`` the jobs."""
    from hpc_nova_scheduler.sim import swf

    memory = swf.MemorySemantics(args.memory)
    report = swf.ReadReport(args.trace, memory)
    try:
        return report, consume(
            swf.read_jobs(args.trace, report, memory, swf.OnError(args.on_error), limit=args.jobs)
        )
    except swf.TraceError as error:
        raise CommandError(str(error)) from None


def cmd_trace_stats(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.sim import stats as trace_stats

    report, summary = _with_trace(args, trace_stats.summarize)
    if args.json:
        payload = dataclasses.asdict(summary)
        payload.update(
            trace=args.trace,
            memory=report.memory.value,
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
        out.write(json.dumps(payload, indent=2) + "\n")
        return 0
    days = summary.span_seconds / 86400
    _table(
        ("", "value"),
        [
            ("trace", args.trace),
            ("memory fields read as", report.memory.value),
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
    _table(
        ("memory per core", "jobs", "% of all jobs", "jobs with memory", "% of those"),
        [
            (label, count, f"{share:.2f}", known, f"{share_known:.2f}")
            for label, count, share, known, share_known in summary.table_ii()
        ],
        out,
    )
    for example in report.examples:
        out.write(f"{args.trace}:{example.line}: skipped: {example.reason}\n")
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


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _duration(text: str) -> float:
    """'24', '24h', '100000s', '90m' or '2d' in seconds; hours without a unit."""
    text = text.strip()
    unit = text[-1:].lower()
    number = text[:-1] if unit in _UNITS else text
    try:
        return float(number) * _UNITS.get(unit, 3600.0)
    except ValueError:
        raise ValueError(
            f"--times: {text!r} is not a duration such as 24, 24h or 100000s"
        ) from None


def _interference_model(args: argparse.Namespace):
    from hpc_nova_scheduler.sim import interference

    options = {}
    for item in args.interference_param:
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            options[key.strip().replace("-", "_")] = float(value)
        except ValueError:
            raise CommandError(
                f"--interference-param {item!r}: expected KEY=NUMBER, e.g. knee=60"
            ) from None
    try:
        return interference.load(args.interference, **options)
    except ValueError as error:
        raise CommandError(str(error)) from None


def cmd_simulate(args: argparse.Namespace, out: TextIO) -> int:
    import tqdm

    from hpc_nova_scheduler.sim import report, scenarios, simulator

    try:
        low, _, high = args.cache_scores.partition(":")
        cache_range = (float(low), float(high))
        times = [_duration(t) for t in args.times.split(",") if t.strip()]
        built = [
            scenarios.build(
                name.strip(),
                alpha=args.alpha,
                beta=beta,
                runtime_factor=1 + args.runtime_adjust / 100.0,
            )
            for name in args.policies.split(",")
            if name.strip()
            for beta in (
                [float(b) for b in args.betas.split(",")]
                if name.strip() in ("mdobp-cache", "hpc-aware")
                else [0.0]
            )
        ]
    except ValueError as error:
        raise CommandError(str(error)) from None
    model = _interference_model(args)
    try:
        if args.host_kinds:
            shape = simulator.ClusterShape.of_kinds(
                [simulator.HostKind.parse(k) for k in args.host_kinds.split(",") if k.strip()],
                hosts_per_rack=args.hosts_per_rack,
            )
        else:
            shape = simulator.ClusterShape.from_total_cores(
                args.cores,
                args.cores_per_host,
                args.ram_per_host_mb,
                hosts_per_rack=args.hosts_per_rack,
                cpu_groups=args.cpu_groups,
            )
    except ValueError as error:
        raise CommandError(str(error)) from None
    report_in, jobs = _with_trace(args, list)
    out.write(
        f"{len(jobs)} jobs from {args.trace} ({report_in.malformed} malformed lines "
        f"skipped); {shape.describe()}; "
        f"interference: {args.interference}\n"
    )
    results = []
    disable_bar = {"auto": None, "on": False, "off": True}[args.progress]
    for scenario in built:
        with tqdm.tqdm(
            total=len(jobs), desc=scenario.name, unit="job", file=args.err, disable=disable_bar
        ) as bar:
            sim = simulator.Simulator(
                shape,
                scenario,
                seed=args.seed,
                all_at_once=args.arrival == "zero",
                backfill=args.backfill,
                backfill_depth=args.backfill_depth,
                cache_scores=cache_range,
                interference=model,
                memory_scale=args.memory_scale,
                progress=lambda settled, bar=bar: bar.update(settled - bar.n),
            )
            results.append(sim.run(jobs))
    hours = [f"by {t / 3600:.4g} h" for t in times]
    _table(
        [
            "scenario",
            "completed",
            "never fit",
            *hours,
            "makespan h",
            "mean wait h",
            "utilisation",
            "interference",
        ],
        [
            [
                r.scenario,
                len(r.outcomes),
                len(r.never_fit),
                *(r.completed_by(t) for t in times),
                f"{r.makespan / 3600:.1f}",
                f"{r.mean_wait() / 3600:.2f}",
                f"{r.utilisation():.2f}",
                f"{r.mean_interference():.3f}",
            ]
            for r in results
        ],
        out,
    )
    if args.out:
        for path in report.write(results, args.out, times):
            out.write(f"wrote {path}\n")
    return 0


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler.cmd import demo

    return demo.run(args, out)


# -- parser --------------------------------------------------------------


def _add_file_commands(
    sub: argparse._SubParsersAction,
    noun: str,
    plural: str,
    handlers: dict[str, Callable[[argparse.Namespace, TextIO], int]],
) -> None:
    parser = sub.add_parser(
        noun,
        help=f"import, list and export {plural}",
        description=f"Manage {plural} in the plugin database.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    imp = actions.add_parser(
        "import",
        help=f"import {plural} from a CSV or YAML file",
        description=(
            f"Validate every {noun} record of FILE, then create or "
            "update them in one transaction. A file with any bad "
            "row is rejected whole; importing the same file again "
            "changes nothing."
        ),
    )
    imp.add_argument("file", metavar="FILE", help="CSV or YAML file, or - for standard input")
    imp.add_argument(
        "--format",
        choices=datafiles.FORMATS,
        help="file format (default: from the name)",
    )
    imp.add_argument("--dry-run", action="store_true", help="validate only; write nothing")
    imp.set_defaults(func=handlers["import"])

    lst = actions.add_parser(
        "list",
        help=f"list the {plural} in the database",
        description=f"List the {plural} in the database as a table.",
    )
    lst.set_defaults(func=handlers["list"])
    if noun == "profile":
        lst.add_argument("--app-class", help="only profiles of this application class")
        show = actions.add_parser("show", help="show one profile", description="Show one profile.")
        show.add_argument("name", metavar="NAME")
        show.set_defaults(func=handlers["show"])
    else:
        lst.add_argument("--app", help="only records involving this application")

    exp = actions.add_parser(
        "export",
        help=f"export the {plural} to a CSV or YAML file",
        description=(
            f"Write every {noun} record to FILE in a form that 'import' reads back unchanged."
        ),
    )
    exp.add_argument("file", metavar="FILE", help="output file, or - for standard output")
    exp.add_argument(
        "--format",
        choices=datafiles.FORMATS,
        help="file format (default: from the name; yaml for standard output)",
    )
    exp.set_defaults(func=handlers["export"])


def _memory_choices():
    from hpc_nova_scheduler.sim.swf import MemorySemantics

    return list(MemorySemantics)


def _add_trace_options(parser: argparse.ArgumentParser, jobs: int | None = None) -> None:
    """The options of every command that reads a job log (see _with_trace)."""
    parser.add_argument(
        "--memory",
        default="auto",
        choices=[m.value for m in _memory_choices()],
        help="which field holds memory and per what (default: auto, from the file name for "
        "logs known to deviate from the standard)",
    )
    parser.add_argument(
        "--on-error",
        default="skip",
        choices=["skip", "stop"],
        help="what to do at a malformed line (default: skip, and report it)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=jobs,
        metavar="N",
        help="only the first N jobs" + (f" (default {jobs})" if jobs else ""),
    )


def _scenario_names() -> list[str]:
    from hpc_nova_scheduler.sim.scenarios import DESCRIPTIONS

    return list(DESCRIPTIONS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Manage the HPC-aware Nova scheduler plugin: its database, application "
        "profiles and interference records, and its demo.",
    )
    parser.add_argument(
        "--config-file",
        action="append",
        metavar="PATH",
        help="configuration file with an [hpc_scheduler] section, such as "
        "nova.conf; repeatable (default: nova.conf where oslo.config finds it)",
    )
    parser.add_argument("--config-dir", metavar="DIR", help="directory of *.conf files to read too")
    parser.add_argument(
        "--connection",
        metavar="URL",
        help="plugin database URL, overriding [hpc_scheduler] connection",
    )
    parser.add_argument("--debug", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    reconcile_cmd.add_parser(sub)

    db = sub.add_parser(
        "db",
        help="create or upgrade the plugin database schema",
        description="Manage the plugin database schema (alembic migrations).",
    )
    db_actions = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    sync = db_actions.add_parser(
        "sync",
        help="upgrade the schema to the newest revision",
        description="Create the plugin's tables, or upgrade them.",
    )
    sync.add_argument("--revision", default="head", help="target revision (default: head)")
    sync.set_defaults(func=cmd_db_sync)
    version = db_actions.add_parser(
        "version",
        help="print the schema revision",
        description="Print the schema's current revision.",
    )
    version.set_defaults(func=cmd_db_version)

    _add_file_commands(
        sub,
        "profile",
        "application profiles",
        {
            "import": cmd_profile_import,
            "list": cmd_profile_list,
            "show": cmd_profile_show,
            "export": cmd_profile_export,
        },
    )
    _add_file_commands(
        sub,
        "interference",
        "pairwise interference records",
        {
            "import": cmd_interference_import,
            "list": cmd_interference_list,
            "export": cmd_interference_export,
        },
    )

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
    _add_trace_options(stats)
    stats.add_argument("--json", action="store_true", help="print JSON instead of tables")
    stats.set_defaults(func=cmd_trace_stats)

    simulate = sub.add_parser(
        "simulate",
        help="replay a job log through the placement engine",
        description="Replay a job log (SWF) on a simulated cloud under one or more scheduler "
        "configurations, with the same placement code nova-scheduler runs, and "
        "compare completed jobs over time, wait, utilisation and makespan.",
    )
    simulate.add_argument("trace", metavar="TRACE", help="SWF file, plain or gzipped")
    _add_trace_options(simulate, jobs=1500)
    simulate.add_argument("--cores", type=int, default=1024, help="cores in the cloud")
    simulate.add_argument("--cores-per-host", type=int, default=4)
    simulate.add_argument("--ram-per-host-mb", type=float, default=2048)
    simulate.add_argument("--hosts-per-rack", type=int, default=32)
    simulate.add_argument(
        "--host-kinds",
        metavar="KINDS",
        help="a heterogeneous cloud instead of --cores/--cores-per-host/--ram-per-host-mb: "
        "comma-separated COUNT:CORES:RAM_MB[:SPEED], e.g. 128:4:2048,32:8:16384:0.7; "
        "each kind is a processor group, SPEED scales run times (1: as logged)",
    )
    simulate.add_argument(
        "--memory-scale",
        type=float,
        default=1.0,
        metavar="FACTOR",
        help="multiply every job's memory (default 1)",
    )
    simulate.add_argument(
        "--cpu-groups", type=int, default=1, help="split the racks into this many processor groups"
    )
    simulate.add_argument(
        "--policies",
        default="least-free-pes,mdobp",
        help="comma-separated: " + ", ".join(_scenario_names()),
    )
    simulate.add_argument("--alpha", type=float, default=200.0)
    simulate.add_argument("--betas", default="60", help="beta values for cache-aware policies")
    simulate.add_argument(
        "--cache-scores",
        default="0:30",
        help="uniform range of each job's cache score, drawn once per job for every "
        "policy (default 0:30)",
    )
    simulate.add_argument(
        "--runtime-adjust",
        type=float,
        default=0.0,
        metavar="PERCENT",
        help="run-time change for cache-aware policies, e.g. -10",
    )
    simulate.add_argument(
        "--arrival",
        choices=["submit", "zero"],
        default="submit",
        help="jobs arrive at their submit times, or all at time zero",
    )
    simulate.add_argument("--backfill", action="store_true", help="backfill the FCFS queue")
    simulate.add_argument(
        "--backfill-depth",
        type=int,
        default=64,
        metavar="N",
        help="with --backfill, how many queued jobs behind the head may start (default 64)",
    )
    simulate.add_argument(
        "--interference",
        default="none",
        metavar="MODEL",
        help="how co-runners slow jobs down: none (seed 003) or cache-pressure "
        "(see README); models are plugins in hpc_nova_scheduler.sim.interference",
    )
    simulate.add_argument(
        "--interference-param",
        action="append",
        default=[],
        metavar="KEY=NUMBER",
        help="a parameter of the model, e.g. knee=60 or gain=1 (repeatable)",
    )
    simulate.add_argument(
        "--progress",
        choices=["auto", "on", "off"],
        default="auto",
        help="progress bar on standard error (auto: when it is a terminal)",
    )
    simulate.add_argument("--seed", type=int, default=0)
    simulate.add_argument(
        "--times",
        default="1,6,24",
        help="when to count completed jobs: hours, or with a unit s, m, h or d, "
        "e.g. 100000s (default 1,6,24)",
    )
    simulate.add_argument(
        "--out", metavar="DIR", help="write jobs.csv, summary.json and completed.png here"
    )
    simulate.set_defaults(func=cmd_simulate)

    demo = sub.add_parser(
        "demo",
        help="run the all-in-one demo (seed 003 Figure 8 in an in-process Nova)",
        description="Boot seed 003's Figure 8 application stream through an in-process Nova "
        "(API, conductor, scheduler, Placement, fake computes, SQLite) with the "
        "plugin at each beta, then under Nova's default scheduler, and print "
        "the placements side by side with the paper's.",
    )
    demo.add_argument("--keep", metavar="DIR", help="keep the demo's files in DIR")
    demo.add_argument(
        "--betas",
        default="100,40,60",
        help="comma-separated sync_cache_threshold values (default: 100,40,60)",
    )
    demo.add_argument(
        "--alpha", type=float, default=200.0, help="cache_threshold for every run (default: 200)"
    )
    demo.set_defaults(func=cmd_demo)
    return parser


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    args.err = err
    try:
        args.conf = _load_conf(args)
        return args.func(args, out)
    except datafiles.DataFileError as error:
        err.write(f"{PROG}: {len(error.errors)} problem(s), nothing written:\n{error}\n")
    except (CommandError, ProfileError, db_api.DatabaseUnavailable, OSError) as error:
        err.write(f"{PROG}: {error}\n")
    except (db_exc.DBConnectionError, sa_exc.OperationalError) as error:
        err.write(
            f"{PROG}: cannot connect to the plugin database: {error.inner_exception or error}\n"
        )
    except db_exc.DBError as error:
        err.write(f"{PROG}: database error: {error.inner_exception or error}\n")
    except sa_exc.SQLAlchemyError as error:
        err.write(f"{PROG}: database error: {error}\n")
    return 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
