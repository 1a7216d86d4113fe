"""``hpc-nova-scheduler characterise``: measure applications alone and in pairs."""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
from typing import TextIO

from hpc_nova_scheduler.cmd import common, options


def _application(text: str):
    from hpc_nova_scheduler.characterise.runner import Program
    from hpc_nova_scheduler.core.profile import ProfileError, parse_app_name

    name, sep, command = text.partition("=")
    try:
        if not sep:
            raise ValueError
        argv = tuple(shlex.split(command))
        if not argv:
            raise ValueError
        return Program(parse_app_name(name.strip(), key="--app"), argv)
    except ProfileError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected NAME=COMMAND, e.g. 'stream=./stream -n 4'"
        ) from None


def _host_type(text: str) -> str:
    from hpc_nova_scheduler.core.profile import ProfileError
    from hpc_nova_scheduler.core.records import parse_host_type

    try:
        return parse_host_type(text, key="--host-type")
    except ProfileError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _cores(text: str) -> tuple[int, int]:
    try:
        cores = tuple(int(c) for c in text.split(","))
    except ValueError:
        cores = ()
    allowed = os.sched_getaffinity(0)
    if len(cores) != 2 or cores[0] == cores[1] or not set(cores) <= allowed:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected two different cores this process may use "
            f"({','.join(map(str, sorted(allowed)))}), e.g. 0,1"
        )
    return cores


def cmd_characterise(args: argparse.Namespace, out: TextIO) -> int:
    from hpc_nova_scheduler import atomicfile, datafiles
    from hpc_nova_scheduler.characterise import counters as kernel
    from hpc_nova_scheduler.characterise import runner
    from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord, SoloRun

    names = [app.name for app in args.app]
    if len(set(names)) != len(names):
        raise common.CommandError("--app: each application needs a name of its own")
    if args.out and not os.path.isdir(args.out):
        raise common.CommandError(f"--out {args.out}: no such folder")
    work = runner.Characteriser(
        args.cores or default_cores(),
        args.repetitions,
        args.warmup,
        use_perf=False if args.no_perf else None,
        say=lambda line: out.write(f"{line}\n"),
    )
    try:
        alone, pairs = work.characterise(args.app, pairs=not args.no_pairs)
    except runner.CharacteriseError as error:
        raise common.CommandError(str(error)) from None
    common.table(
        ("application", "run time (s)", "spread (s)", "counters"),
        [
            (
                a.application.name,
                f"{a.runtime:.3f}",
                f"{a.spread:.3f}",
                len(a.counters),
            )
            for a in alone
        ],
        out,
    )
    by_name = {a.application.name: a for a in alone}
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0, tzinfo=None)
    records = [
        InterferenceRecord(
            p.a.name,
            p.b.name,
            round(runner.slowdown(p.runtimes_a, by_name[p.a.name]), 3),
            round(runner.slowdown(p.runtimes_b, by_name[p.b.name]), 3),
            "measured",
            now,
        )
        for p in pairs
    ]
    if records:
        common.table(
            ("app a", "app b", "slowdown a (%)", "slowdown b (%)"),
            [(r.app_a, r.app_b, r.slowdown_a, r.slowdown_b) for r in records],
            out,
        )
    if not args.out:
        return 0
    profiles = [
        ProfileRecord(
            a.application.name,
            solo_runtime=a.runtime,
            counters={k: round(v, 6) for k, v in a.counters.items()},
            description=f"characterised: {shlex.join(a.application.command)}",
            solo_runs=(
                {args.host_type: SoloRun(a.runtime, kernel.solo_metrics(a.counters, a.runtime))}
                if args.host_type
                else {}
            ),
        )
        for a in alone
    ]
    written = [os.path.join(args.out, "profiles.yaml")]
    with atomicfile.open_replacing(written[0]) as stream:
        datafiles.write_profiles(stream, profiles, "yaml")
    if records:
        written.append(os.path.join(args.out, "interferences.yaml"))
        with atomicfile.open_replacing(written[-1]) as stream:
            datafiles.write_interferences(stream, records, "yaml")
    if args.host_type:
        written.append(os.path.join(args.out, "runs.yaml"))
        with atomicfile.open_replacing(written[-1]) as stream:
            datafiles.write_runs(stream, _runs(args.host_type, alone, pairs), "yaml")
    out.write(f"wrote {', '.join(written)}\n")
    if records:
        out.write(
            "load them with 'profile import' and 'interference import'; fit seed 001's forest "
            f"with 'model fit --model pair-forest --profiles {written[0]} {written[1]}'\n"
        )
    if args.host_type:
        out.write(
            f"fit seed 000's runtime trees with 'model fit --model runtime-trees --profiles "
            f"{written[0]} {written[-1]}' (network traffic has no per-process count here: "
            "its metrics are CPU and disk)\n"
        )
    return 0


def _runs(host_type: str, alone, pairs):
    """Every measured run as seed 000's model is fitted on: alone, and next to its partner."""
    from hpc_nova_scheduler.datafiles import RunRecord

    found = [
        RunRecord(a.application.name, host_type, round(runtime, 6))
        for a in alone
        for runtime in a.runtimes
    ]
    for pair in pairs:
        found += [
            RunRecord(pair.a.name, host_type, round(runtime, 6), 1, ((pair.b.name, 1),))
            for runtime in pair.runtimes_a
        ]
        found += [
            RunRecord(pair.b.name, host_type, round(runtime, 6), 1, ((pair.a.name, 1),))
            for runtime in pair.runtimes_b
        ]
    return found


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "characterise",
        help="measure applications alone and in pairs, pinned to cores",
        description="Run each application alone, then every pair at once, pinned to two "
        "cores, and measure run time and the counters the kernel allows (perf, resctrl, "
        "resource usage). Writes profiles and pairwise slowdowns for 'profile import', "
        "'interference import' and 'model fit'.",
    )
    parser.add_argument(
        "--app",
        type=_application,
        action="append",
        required=True,
        metavar="NAME=COMMAND",
        help="an application and the command that runs it once (repeatable)",
    )
    parser.add_argument(
        "--cores",
        type=_cores,
        default=None,
        metavar="A,B",
        help="the two cores to pin to (default: the first two this process may use)",
    )
    parser.add_argument("--repetitions", type=options.positive_int, default=3)
    parser.add_argument("--warmup", type=options.non_negative_int, default=1)
    parser.add_argument("--no-pairs", action="store_true", help="measure alone only")
    parser.add_argument("--no-perf", action="store_true", help="do not use perf even if present")
    parser.add_argument(
        "--host-type",
        type=_host_type,
        metavar="TYPE",
        help="this machine's processor group (as hpc:cpu_group names it): profiles get "
        "solo runs on it and --out gets runs.yaml, for 'model fit --model runtime-trees'",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="write profiles.yaml, interferences.yaml and, with --host-type, runs.yaml",
    )
    parser.set_defaults(func=cmd_characterise)


def default_cores() -> tuple[int, int]:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise common.CommandError("characterise needs two cores; this process may use one")
    return allowed[0], allowed[1]
