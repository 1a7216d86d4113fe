"""``hpc-nova-scheduler simulate``: replay a job log through the placement engine."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TextIO

from hpc_nova_scheduler.cmd import common, options, simulate_phases, trace


def _interference_model(args: argparse.Namespace):
    """The ground truth: a shared interference model, or a simulator-only one."""
    from hpc_nova_scheduler.interference import model_registry
    from hpc_nova_scheduler.sim import interference

    options = {}
    for item in args.interference_param:
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            options[key.strip().replace("-", "_")] = float(value)
        except ValueError:
            raise common.CommandError(
                f"--interference-param {item!r}: expected KEY=NUMBER, e.g. knee=60"
            ) from None
    if args.interference != "none" and args.interference in model_registry.names():
        return _resolved(
            args.interference, "--interference", path=args.interference_file, params=options
        )
    try:
        return interference.load(args.interference, **options)
    except interference.UnknownSlowdown:
        # Either namespace may name the ground truth: list both, once.
        known = sorted({*interference.names(), *model_registry.names()})
        raise common.CommandError(
            f"unknown interference model {args.interference!r}; known: {', '.join(known)}"
        ) from None
    except ValueError as error:
        raise common.CommandError(str(error)) from None


def _admission_model(args: argparse.Namespace):
    """The interference model that admits hosts, or None for the cache thresholds."""
    return _resolved(
        args.admission_model, "--admission-model", path=args.admission_file, admission=True
    )


def _resolved(name: str, option: str, path: str | None, params=None, admission: bool = False):
    """The model ``option`` names, by the resolver's rule; a fitted one from ``path``.

    The simulator has no plugin database: a fitted kind needs its file.
    """
    from hpc_nova_scheduler.interference import model_registry, resolver
    from hpc_nova_scheduler.interference.stored import StoredModelError

    file_option = "--interference-file" if option == "--interference" else "--admission-file"
    resolve = resolver.admission_model if admission else resolver.model
    try:
        return resolve(name, params=params, path=path, fitted=True)
    except resolver.NoFittedModel:
        raise common.CommandError(
            f"{option} {name} is a fitted model: give {file_option} FILE "
            f"(written by 'model fit --model {name} ... --save FILE')"
        ) from None
    except model_registry.UnknownModel as error:
        raise common.CommandError(f"{option}: {error}") from None
    except OSError as error:
        raise common.CommandError(f"{file_option} {path}: {error.strerror}") from None
    except StoredModelError as error:
        raise common.CommandError(f"{file_option} {path}: {error}") from None
    except (TypeError, ValueError) as error:
        raise common.CommandError(f"{option} {name}: {error}") from None


def _has(profile, feature: str) -> bool:
    value = getattr(profile, feature)
    return value is not None and value != {}


def _judged_everywhere(profile, models, host_types) -> bool:
    """Whether every model can judge the profile (on every host type of the
    cloud, for models that tell them apart)."""
    from hpc_nova_scheduler.interference.base import (
        InterferenceModel,
        MissingFeatures,
        ModelNotReady,
        Tenant,
    )

    for _, model in models:
        if not isinstance(model, InterferenceModel):
            continue
        for host_type in host_types if model.host_typed else [None]:
            try:
                model.check([Tenant.of(profile, 1, host_type)])
            except (MissingFeatures, ModelNotReady):
                return False
    return True


def _job_profiles(args: argparse.Namespace, models, host_types=()) -> tuple[list, str]:
    """The profiles drawn for jobs: those in --profiles with every feature the
    models read (besides the cache score, which every job draws) and, for
    models that tell host types apart, what they need on every host type of
    the cloud; and a note that says how many that is."""
    from hpc_nova_scheduler import datafiles
    from hpc_nova_scheduler.interference.base import InterferenceModel

    needs: list[str] = []
    readers: list[str] = []
    for option, model in models:
        if isinstance(model, InterferenceModel):
            wanted = [f for f in model.features if f != "cache_score"]
            if wanted:
                readers.append(f"{option} {model.name}")
                needs += [f for f in wanted if f not in needs]
    profiles = datafiles.read_profiles(args.profiles) if args.profiles else []
    if needs and not profiles:
        raise common.CommandError(
            f"{' and '.join(readers)} read {', '.join(needs)}: give --profiles"
        )
    usable = [
        p
        for p in profiles
        if all(_has(p, f) for f in needs) and _judged_everywhere(p, models, host_types)
    ]
    if profiles and not usable:
        where = f" on host types {', '.join(sorted(set(host_types)))}" if host_types else ""
        raise common.CommandError(
            f"--profiles {args.profiles}: no profile has {', '.join(needs)}{where}, "
            f"which {' and '.join(readers)} read"
        )
    note = ""
    if usable:
        note = f"; job profiles drawn from {len(usable)} of {len(profiles)} in {args.profiles}"
        if needs:
            note += f" (those with {', '.join(needs)})"
    return usable, note


def check(args: argparse.Namespace) -> None:
    """What no single option's type can see: how options fit together."""
    if args.batch_planner and args.batch_window is None:
        raise common.CommandError(
            "--batch-planner plans batch windows: give --batch-window SECONDS too"
        )
    if not args.host_kinds and args.cores is not None and args.cores % args.cores_per_host:
        raise common.CommandError(
            f"--cores {args.cores} is not a multiple of --cores-per-host {args.cores_per_host}"
        )
    if args.out:
        common.check_output_path("--out", args.out, folder=True)
    # A log's rows and files are told apart by its path: twice would be one log.
    twice = [path for index, path in enumerate(args.traces) if path in args.traces[:index]]
    if twice:
        raise common.CommandError(f"TRACE {twice[0]} is given twice")


#: Cores of the cloud when neither --cores nor a MaxProcs header says.
DEFAULT_CORES = 1024
#: What --batch-window plans with when --batch-planner does not say.
DEFAULT_BATCH_PLANNER = "ffd"


def _cores(args: argparse.Namespace, path: str) -> tuple[int, str]:
    """The cloud's cores: --cores, else the logged system's at ``path`` in whole hosts."""
    if args.host_kinds or args.cores is not None:
        return args.cores or DEFAULT_CORES, ""
    from hpc_nova_scheduler.sim import swf

    try:
        found, source = swf.system_processors(path)
    except swf.TraceError as error:
        raise common.CommandError(str(error)) from None
    if found is None:
        return DEFAULT_CORES, f" ({source}: {DEFAULT_CORES} cores)"
    hosts = -(-found // args.cores_per_host)
    cores = hosts * args.cores_per_host
    rounded = ", rounded up to whole hosts" if cores != found else ""
    return cores, f" (cores from {source}, {found}{rounded})"


def _shape(args: argparse.Namespace, path: str):
    """The cloud that replays the log at ``path``, and a note on where its cores came from."""
    from hpc_nova_scheduler.sim import settings

    cores, cores_note = _cores(args, path)
    try:
        if args.host_kinds:
            shape = settings.ClusterShape.of_kinds(
                [settings.HostKind.parse(k) for k in args.host_kinds.split(",") if k.strip()],
                hosts_per_rack=args.hosts_per_rack,
            )
        else:
            shape = settings.ClusterShape.from_total_cores(
                cores,
                args.cores_per_host,
                args.ram_per_host_mb,
                hosts_per_rack=args.hosts_per_rack,
                cpu_groups=args.cpu_groups,
            )
    except ValueError as error:
        raise common.CommandError(str(error)) from None
    if args.topology:
        shape = dataclasses.replace(shape, topology=args.topology)
    return shape, cores_note


def _seeds(args: argparse.Namespace) -> list[int]:
    """--seeds, else the one --seed."""
    return args.seeds or [args.seed]


def cmd_simulate(args: argparse.Namespace, out: TextIO) -> int:
    check(args)

    from hpc_nova_scheduler.sim import replays, report, scenarios

    cache_range = args.cache_scores
    times = args.times
    seeds = _seeds(args)
    admission = _admission_model(args)
    # Under a model the thresholds play no part: one scenario, not one per beta.
    betas = [args.betas[0]] if admission is not None else args.betas
    try:
        built = [
            scenarios.build(
                name,
                alpha=args.alpha,
                beta=beta,
                runtime_factor=1 + args.runtime_adjust / 100.0,
                admission=admission,
                tolerance=args.tolerance,
            )
            for name in args.policies
            for beta in (betas if name in ("mdobp-cache", "hpc-aware") else [0.0])
        ]
    except ValueError as error:
        raise common.CommandError(f"--policies: {error}") from None
    levels = _levels(args)
    if args.topology_spec:
        built = _configured(args, built, levels)
    simulate_phases.check(args, built)
    built = simulate_phases.expand(built, args.cache_source)
    # The searching planners draw from the replay's seed: one set a seed.
    batch_runs = {seed: _batch_arrivals(args, seed) for seed in seeds}
    model = _interference_model(args)
    judged = ""
    if admission is not None:
        judged = f"; admission by {args.admission_model} within {args.tolerance:g}%"
    shapes = {path: _shape(args, path) for path in args.traces}
    planner_models = [
        (
            f"--batch-planner {arrivals.planner.name}, model",
            getattr(arrivals.planner, "model", None),
        )
        for arrivals in batch_runs[seeds[0]]
    ]
    profiles, profiles_note = _job_profiles(
        args,
        [("--admission-model", admission), ("--interference", model), *planner_models],
        sorted({t for shape, _ in shapes.values() for t in shape.host_types()}),
    )
    # Every log is read before a line is written: a bad one writes nothing.
    logs = {
        path: trace.with_trace(argparse.Namespace(**{**vars(args), "trace": path}), tuple)
        for path in args.traces
    }
    for path, (report_in, jobs) in logs.items():
        shape, cores_note = shapes[path]
        without_memory = sum(1 for job in jobs if job.memory_mb is None)
        out.write(
            f"{len(jobs)} jobs from {path} ({report_in.malformed} malformed lines "
            f"skipped; {without_memory} jobs without a memory value, placed by cores alone); "
            f"memory read as {report_in.memory.value} ({report_in.memory_reason}); "
            f"{shape.describe()}{cores_note}; interference: {args.interference}"
            f"{judged}{profiles_note}{_batches_note(args)}{_topology_note(args)}"
            f"{simulate_phases.note(args)}\n"
        )
    several_logs, several_seeds = len(logs) > 1, len(seeds) > 1
    # The objects every setting holds alike (jobs, scenarios, models) are
    # the same objects: a pickle of all the settings carries each once.
    scenarios_built, profiles = tuple(built), tuple(profiles)
    batches = {seed: tuple(runs) for seed, runs in batch_runs.items()}
    settings = {
        (path if several_logs else None, seed if several_seeds else None): replays.Setting(
            shapes[path][0],
            jobs,
            scenarios_built,
            batches[seed],
            seed=seed,
            all_at_once=args.arrival == "zero",
            backfill=args.backfill,
            backfill_depth=args.backfill_depth,
            cache_scores=cache_range,
            interference=model,
            memory_scale=args.memory_scale,
            profiles=profiles,
            spans=bool(levels),
            span_cost=args.span_cost,
            **simulate_phases.setting_options(args),
        )
        for path, (_, jobs) in logs.items()
        for seed in seeds
    }
    if len(settings) == 1:
        (shared,) = settings.values()
        cells = replays.grid(shared)
    else:
        shared, cells = settings, replays.grid_of(settings)
    swept = _sweep(args, shared, cells)
    hours = [f"by {options.describe_duration(t)}" for t in times]
    figures = [
        "completed",
        "never fit",
        *hours,
        "makespan h",
        "mean wait h",
        "bounded slowdown",
        "utilisation",
        "interference",
        *_topology_headings(levels),
    ]
    common.table(
        [
            *(["log"] if several_logs else []),
            "scenario",
            *(["seed"] if several_seeds else []),
            *figures,
        ],
        [_tagged(_row(cell, times, levels), cell.cell) for cell in swept],
        out,
    )
    if several_seeds:
        out.write(f"Mean over seeds {', '.join(str(seed) for seed in seeds)}:\n")
        common.table(
            [*(["log"] if several_logs else []), "scenario", "seeds", *figures],
            _means(swept, times, levels),
            out,
        )
    if simulate_phases.active(args):
        simulate_phases.print_comparison(swept, out, several_logs, several_seeds)
    done = [cell for cell in swept if cell.ok]
    _early_horizons(done, times, args.err)
    if args.out and done:
        tags = [_tags(cell.cell) for cell in done]
        for path in report.write([cell.value for cell in done], args.out, times, tags):
            out.write(f"wrote {path}\n")
    return _failures(swept, args.err)


def _levels(args: argparse.Namespace) -> tuple[str, ...]:
    """The levels whose shares the run reports, outermost first; none (the
    table and files as they always were) without a topology option."""
    if not (args.topology or args.topology_spec or args.span_cost):
        return ()
    from hpc_nova_scheduler.topology import levels as topo

    return tuple(name for name, _ in args.topology) or topo.DEFAULT_LEVELS


def _configured(args: argparse.Namespace, built: list, levels: tuple[str, ...]) -> list:
    """The scenarios, the topology-aware ones once per --topology-spec configuration."""
    from hpc_nova_scheduler.sim import topology

    if not any(scenario.policy.topology for scenario in built):
        raise common.CommandError(
            "--topology-spec constrains the jobs of topology-aware policies: "
            "add hpc-aware to --policies"
        )
    try:
        return topology.variants(built, args.topology_spec, levels)
    except ValueError as error:
        raise common.CommandError(f"--topology-spec {error}") from None


def _topology_note(args: argparse.Namespace) -> str:
    notes = ""
    if args.topology_spec:
        labels = ", ".join(config.label for config in args.topology_spec)
        notes += f"; hpc-aware's jobs of several VMs under topology configurations {labels}"
    if args.span_cost:
        notes += (
            f"; run time +{args.span_cost:g}% per extra {_levels(args)[0]} a job spans "
            "(--span-cost)"
        )
    return notes


def _topology_headings(levels: tuple[str, ...]) -> list[str]:
    """The topology columns: jobs refused for their topology, then the share
    of completed jobs of several VMs in one domain, innermost level first."""
    if not levels:
        return []
    return ["topology refused", *(f"in one {level}" for level in reversed(levels))]


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _tags(replay) -> dict:
    """The log and seed that tell apart replays of one scenario, where the grid has several."""
    return {
        **({} if replay.log is None else {"log": replay.log}),
        **({} if replay.seed is None else {"seed": replay.seed}),
    }


def _tagged(row: list, replay) -> list:
    """The row with its log first and its seed after the scenario, where the grid has several."""
    tags = _tags(replay)
    head = [tags["log"]] if "log" in tags else []
    seed = [tags["seed"]] if "seed" in tags else []
    return [*head, row[0], *seed, *row[1:]]


#: How the table prints the figures after the counts (makespan, wait,
#: bounded slowdown, utilisation, interference).
_FORMATS = ("{:.1f}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.3f}")


def _row(cell, times, levels: tuple[str, ...] = ()) -> list:
    """A replay's row of the table; a failed replay's says so."""
    if not cell.ok:
        # A replay's name without its log and seed: those have columns.
        name = getattr(cell.cell, "name", cell.key)
        blank = ["" for _ in _topology_headings(levels)]
        return [name, "failed", "", *("" for _ in times), "", "", "", "", "", *blank]
    from hpc_nova_scheduler.sim import summary

    figures = summary.figures(cell.value, times)
    counts = len(figures) - len(_FORMATS)
    topology = summary.topology_figures(cell.value, levels)
    return [
        cell.value.scenario,
        *figures[:counts],
        *(fmt.format(value) for fmt, value in zip(_FORMATS, figures[counts:], strict=True)),
        *topology[:1],
        *(_share(value) for value in topology[1:]),
    ]


def _means(swept: list, times, levels: tuple[str, ...] = ()) -> list[list]:
    """Per log and scenario, the mean of its seeds' figures; a scenario with a
    failed seed says so rather than average fewer seeds."""
    from hpc_nova_scheduler.sim import summary

    rows = []
    for found in summary.seed_means(swept, times, levels):
        head = [*([] if found.log is None else [found.log]), found.name, found.seeds]
        if found.figures is None or found.topology is None:
            blank = ["" for _ in _topology_headings(levels)]
            rows.append([*head, "failed", "", *("" for _ in times), "", "", "", "", "", *blank])
            continue
        means, topology_means = found.figures, found.topology
        counts = len(means) - len(_FORMATS)
        rows.append(
            [
                *head,
                *(f"{value:.1f}" for value in means[:counts]),
                *(fmt.format(value) for fmt, value in zip(_FORMATS, means[counts:], strict=True)),
                *(f"{value:.1f}" for value in topology_means[:1]),
                *(_share(value) for value in topology_means[1:]),
            ]
        )
    return rows


def _sweep(args: argparse.Namespace, shared, cells: list) -> list:
    """The replays of ``cells``, each a :class:`sweep.CellResult`, in order.

    ``shared`` is the one setting, or the settings the cells pick from. In
    this process (one worker, or one replay) each shows a bar of its jobs,
    as before there were sweeps; on a pool or a cluster one bar counts the
    replays done.
    """
    import tqdm

    from hpc_nova_scheduler import sweep
    from hpc_nova_scheduler.sim import replays

    disable = {"auto": None, "on": False, "off": True}[args.progress]
    if sweep.in_process(cells, args.workers, args.dask):

        def run(cell, shared):
            setting = replays.setting_of(cell, shared)
            with tqdm.tqdm(
                total=len(setting.jobs), desc=str(cell), unit="job", file=args.err, disable=disable
            ) as bar:
                return replays.replay(cell, setting, lambda settled: bar.update(settled - bar.n))

        return _grid(args, run, cells, shared)
    with tqdm.tqdm(
        total=len(cells), desc="replays", unit="replay", file=args.err, disable=disable
    ) as bar:
        return _grid(args, replays.replay, cells, shared, lambda _: bar.update(1))


def _grid(args: argparse.Namespace, fn, cells: list, shared, on_result=None) -> list:
    return common.run_grid(args, fn, cells, shared=shared, on_result=on_result)


def _early_horizons(done: list, times, err: TextIO) -> None:
    """Say why ``by T`` columns are all zero, when they are.

    A log's jobs can run for days (METACENTRUM's first twenty run 1 to 30
    days), so a short replay may end no job by 24 h: the zeros are true,
    but read like a fault. The note gives the first end and the remedy.
    """
    ends = [end for end in (cell.value.first_end() for cell in done) if end is not None]
    if not ends:
        return
    first = min(ends)
    early = [f"by {options.describe_duration(t)}" for t in times if t < first]
    if early:
        err.write(
            f"{common.PROG}: note: {', '.join(early)}: no job had ended yet in any replay; "
            f"the first ended {options.describe_duration(first)} after the first arrival "
            "(--times sets the horizons, in hours or with a unit: 90m, 7d)\n"
        )


def _failures(swept: list, err: TextIO) -> int:
    """Report each replay that failed every try on ``err``; the exit status."""
    failed = [cell for cell in swept if not cell.ok]
    for cell in failed:
        err.write(
            f"{common.PROG}: replay {cell.key} failed {cell.attempts} times, last: {cell.error}\n"
        )
    if failed:
        raise common.CommandError(
            f"{len(failed)} of {len(swept)} replays failed; their rows say 'failed'"
        )
    return 0


def _batch_arrivals(args: argparse.Namespace, seed: int) -> list:
    """One batch setting per --batch-planner, none without --batch-window."""
    if args.batch_window is None:
        return []
    from hpc_nova_scheduler.planners import planner_registry
    from hpc_nova_scheduler.sim.batches import BatchArrivals

    found = []
    for name in args.batch_planner or [DEFAULT_BATCH_PLANNER]:
        # The searching planners draw from the replay's seed, so a run repeats.
        try:
            planner = planner_registry.load(name, seed=seed)
        except planner_registry.UnknownPlanner as error:
            raise common.CommandError(f"--batch-planner: {error}") from None
        found.append(BatchArrivals(args.batch_window, planner, args.batch_size))
    return found


def _batches_note(args: argparse.Namespace) -> str:
    if args.batch_window is None:
        return ""
    planners = ", ".join(args.batch_planner or [DEFAULT_BATCH_PLANNER])
    return (
        f"; batch windows of {args.batch_window:g} s planned by {planners} "
        f"(up to {args.batch_size} jobs a plan), the rest online"
    )


def _seed_list(text: str) -> list[int]:
    """--seeds: distinct whole numbers, 0 or more."""
    seeds = options.comma_list(options.non_negative_int)(text)
    twice = [seed for index, seed in enumerate(seeds) if seed in seeds[:index]]
    if twice:
        raise argparse.ArgumentTypeError(f"seed {twice[0]} is given twice")
    return seeds


def _planner_name(name: str) -> str:
    from hpc_nova_scheduler.planners import planner_registry

    known = planner_registry.names()
    if name not in known:
        raise argparse.ArgumentTypeError(
            f"unknown planner {name!r}; choose from {', '.join(known)}"
        )
    return name


def _topology(text: str) -> tuple[tuple[str, int], ...]:
    from hpc_nova_scheduler.sim import topology

    try:
        return topology.parse_topology(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _topology_configurations(text: str) -> tuple:
    from hpc_nova_scheduler.sim import topology

    try:
        return topology.parse_configurations(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _policy(name: str) -> str:
    if name not in _scenario_names():
        raise argparse.ArgumentTypeError(
            f"unknown policy {name!r}; choose from {', '.join(_scenario_names())}"
        )
    return name


def _scenario_names() -> list[str]:
    from hpc_nova_scheduler.sim.scenarios import DESCRIPTIONS

    return list(DESCRIPTIONS)


def add_parser(sub) -> None:
    simulate = sub.add_parser(
        "simulate",
        help="replay a job log through the placement engine",
        description="Replay a job log (SWF) on a simulated cloud under one or more scheduler "
        "configurations, with the same placement code nova-scheduler runs, and "
        "compare completed jobs over time, wait, utilisation and makespan.",
    )
    simulate.add_argument(
        "traces",
        metavar="TRACE",
        nargs="+",
        help="SWF file, plain or gzipped; several are each replayed under every policy, "
        "each read with the same options (--jobs, --memory, ...)",
    )
    trace.add_trace_options(simulate, jobs=1500)
    simulate.add_argument(
        "--cores",
        type=options.positive_int,
        default=None,
        help="cores in the cloud, a multiple of --cores-per-host (default: the log's "
        "MaxProcs header, or a known log's size, in whole hosts, "
        f"else {DEFAULT_CORES})",
    )
    simulate.add_argument("--cores-per-host", type=options.positive_int, default=4)
    simulate.add_argument("--ram-per-host-mb", type=options.positive_float, default=2048)
    simulate.add_argument("--hosts-per-rack", type=options.positive_int, default=32)
    simulate.add_argument(
        "--topology",
        type=_topology,
        default=(),
        metavar="LEVEL=N,...",
        help="nest the racks in more levels, outermost first: each level's N is how many "
        "domains of the next level one of its domains holds, the last level's how many hosts "
        "(replaces --hosts-per-rack); e.g. block=4,rack=16: racks of 16 hosts, 4 racks a "
        "block. Adds the topology columns to the table and files",
    )
    simulate.add_argument(
        "--topology-spec",
        type=_topology_configurations,
        default=None,
        metavar="CONFIGS",
        help="replay hpc-aware once per comma-separated configuration of its jobs of several "
        "VMs: none, required=LEVEL, preferred=LEVEL (join two with +, e.g. "
        "required=block+preferred=rack) or seed003 (placement on the racks alone, seed 003's "
        "ordering); a job too big for any domain of its required level is refused and counted",
    )
    simulate.add_argument(
        "--span-cost",
        type=options.non_negative_float,
        default=0.0,
        metavar="PERCENT",
        help="an assumed network cost: stretch a job's run time by PERCENT for each domain "
        "beyond the first it spans at the outermost level (default 0: none)",
    )
    simulate.add_argument(
        "--host-kinds",
        metavar="KINDS",
        help="a heterogeneous cloud instead of --cores/--cores-per-host/--ram-per-host-mb: "
        "comma-separated [NAME=]COUNT:CORES:RAM_MB[:SPEED], e.g. 128:4:2048,32:8:16384:0.7; "
        "each kind is a processor group (named NAME, the host type runtime-trees reads; "
        "else kind-N), SPEED scales run times (1: as logged)",
    )
    simulate.add_argument(
        "--memory-scale",
        type=options.positive_float,
        default=1.0,
        metavar="FACTOR",
        help="multiply every job's memory (default 1)",
    )
    simulate.add_argument(
        "--cpu-groups",
        type=options.positive_int,
        default=1,
        help="split the racks into this many processor groups",
    )
    simulate.add_argument(
        "--policies",
        type=options.comma_list(_policy),
        default=["least-free-pes", "mdobp"],
        help="comma-separated: " + ", ".join(_scenario_names()),
    )
    simulate.add_argument("--alpha", type=options.non_negative_float, default=200.0)
    simulate.add_argument(
        "--betas",
        type=options.comma_list(options.non_negative_float),
        default=[60.0],
        help="comma-separated beta values for cache-aware policies (default 60)",
    )
    simulate.add_argument(
        "--cache-scores",
        type=options.cache_range,
        default=(0.0, 30.0),
        help="uniform range of each job's cache score, drawn once per job for every "
        "policy (default 0:30)",
    )
    simulate.add_argument(
        "--runtime-adjust",
        type=options.percent_change,
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
    simulate.add_argument(
        "--backfill",
        nargs="?",
        const="greedy",
        choices=["greedy", "easy"],
        default=None,
        help="backfill the FCFS queue: greedy (the default of a bare --backfill) starts any "
        "later job that fits; easy reserves the head's start from requested run times and "
        "starts a later job only if it does not delay that",
    )
    simulate.add_argument(
        "--backfill-depth",
        type=options.positive_int,
        default=64,
        metavar="N",
        help="with --backfill, how many queued jobs behind the head may start (default 64)",
    )
    simulate.add_argument(
        "--batch-window",
        type=options.positive_float,
        default=None,
        metavar="SECONDS",
        help="also replay each policy with batch arrivals: jobs are held for windows of "
        "SECONDS, then those that fit one host are placed together on the empty hosts by "
        "--batch-planner (seed 004's setting); what it cannot place, and bigger jobs, go to "
        "the policy online",
    )
    simulate.add_argument(
        "--batch-planner",
        type=options.comma_list(_planner_name),
        default=None,
        metavar="NAMES",
        help=f"comma-separated batch planners for --batch-window (default "
        f"{DEFAULT_BATCH_PLANNER}): ffd, bfd, wfd, ff, bf, wf, ils (needs --profiles with "
        "sllc_score, dram_score, net_score), milp",
    )
    simulate.add_argument(
        "--batch-size",
        type=options.positive_int,
        default=50,
        metavar="N",
        help="with --batch-window, at most N jobs a plan; a bigger window is planned in "
        "chunks of N in arrival order (default 50, seed 004's largest batch)",
    )
    simulate.add_argument(
        "--interference",
        default="none",
        metavar="MODEL",
        help="the ground truth of how co-runners slow jobs down: none (seed 003), "
        "cache-pressure, or any interference model (ivmp, ivmp-base, ...; see model list)",
    )
    simulate.add_argument(
        "--admission-model",
        default="cache-score",
        metavar="MODEL",
        help="how mdobp-cache and hpc-aware admit a host: cache-score (alpha and beta, the "
        "default) or an interference model within --tolerance",
    )
    simulate.add_argument(
        "--interference-file",
        metavar="FILE",
        help="the fitted model (pair-forest, runtime-trees) that --interference names, "
        "as 'model fit --save' wrote it",
    )
    simulate.add_argument(
        "--admission-file",
        metavar="FILE",
        help="the fitted model that --admission-model names, as 'model fit --save' wrote it",
    )
    simulate.add_argument(
        "--tolerance",
        type=options.non_negative_float,
        default=10.0,
        metavar="PERCENT",
        help="slowdown an --admission-model may predict for any job (default 10)",
    )
    simulate.add_argument(
        "--profiles",
        metavar="FILE",
        help="profiles (YAML or CSV) drawn at random for the jobs, for models that read "
        "more than cache scores, e.g. etc/profiles/seed-applications.yaml",
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
    seeded = simulate.add_mutually_exclusive_group()
    seeded.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the cache-score, profile and phase-drift draws and of the searching "
        "batch planners (default 0)",
    )
    seeded.add_argument(
        "--seeds",
        type=_seed_list,
        default=None,
        metavar="LIST",
        help="comma-separated seeds, e.g. 0,1,2, instead of --seed: every replay is "
        "repeated with each, and a second table gives the mean over them",
    )
    where = simulate.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=options.positive_int,
        default=None,
        metavar="N",
        help="replay the scenarios on a pool of N local processes (default: one per CPU); "
        "1 replays them one after the other in this process",
    )
    where.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="replay the scenarios on the existing Dask cluster whose scheduler is at "
        "ADDRESS, e.g. tcp://10.0.0.5:8786 (its workers need hpc-nova-scheduler installed)",
    )
    simulate.add_argument(
        "--times",
        type=options.comma_list(options.duration),
        default=[3600.0, 6 * 3600.0, 24 * 3600.0],
        help="when to count completed jobs: hours, or with a unit s, m, h or d, "
        "e.g. 100000s (default 1,6,24)",
    )
    simulate.add_argument(
        "--out", metavar="DIR", help="write jobs.csv, summary.json and completed.png here"
    )
    simulate_phases.add_options(simulate)
    simulate.set_defaults(func=cmd_simulate)
