"""``simulate``'s drifting phases and cache sources: options, checks and the comparison table.

``--phase-drift`` lets jobs' true cache scores drift as they run and
``--cache-source`` replays the cache-aware scenarios once per source of
the running VMs' scores (``[hpc_scheduler] cache_pressure_source``), on the
same jobs, drifts and seed; a table then sets the sources side by side.
The model is :mod:`hpc_nova_scheduler.sim.phases`.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TextIO

from hpc_nova_scheduler.cmd import common, options
from hpc_nova_scheduler.measured.pressure import DECLARED, SOURCES


def _source(text: str) -> str:
    if text not in SOURCES:
        raise argparse.ArgumentTypeError(
            f"unknown cache source {text!r}; choose from {', '.join(SOURCES)}"
        )
    return text


def _sources(text: str) -> list[str]:
    """--cache-source: distinct sources, in the order given."""
    found = options.comma_list(_source)(text)
    twice = [source for index, source in enumerate(found) if source in found[:index]]
    if twice:
        raise argparse.ArgumentTypeError(f"cache source {twice[0]} is given twice")
    return found


def _share(text: str) -> float:
    value = options.non_negative_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be a share within 0 and 1, got {text!r}")
    return value


def _factors(text: str) -> tuple[float, float]:
    """LOW:HIGH, two factors with 0 < LOW <= HIGH."""
    low, sep, high = text.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected LOW:HIGH such as 0.5:3, got {text!r}")
    bounds = (options.positive_float(low), options.positive_float(high))
    if bounds[0] > bounds[1]:
        raise argparse.ArgumentTypeError(f"LOW must not exceed HIGH, got {text!r}")
    return bounds


def add_options(parser: argparse.ArgumentParser) -> None:
    from hpc_nova_scheduler.sim import phases

    low, high = phases.DEFAULT_FACTORS
    group = parser.add_argument_group(
        "drifting phases and measured cache scores",
        "Jobs whose true cache score drifts from the declared one as they run, and what "
        "the scheduler counts running VMs with (the plugin's [hpc_scheduler] "
        "cache_pressure_source). Either replays on plan() over every host.",
    )
    group.add_argument(
        "--cache-source",
        type=_sources,
        default=[DECLARED],
        metavar="SOURCES",
        help="comma-separated declared, measured, max: replay each cache-aware policy once "
        "per source, on the same jobs, drifts and seed, and compare them in a table "
        "(default declared: the replay as it always was)",
    )
    group.add_argument(
        "--phase-drift",
        type=_share,
        default=0.0,
        metavar="FRACTION",
        help="the share of jobs (seeded) whose true cache score changes once, at a seeded "
        "point of their work, to the declared score times a factor of --drift-factors, "
        f"capped at {phases.SCORE_CAP:g}; the ground truth (--interference) reads the true "
        "score (default 0: no drift)",
    )
    group.add_argument(
        "--drift-factors",
        type=_factors,
        default=None,
        metavar="LOW:HIGH",
        help=f"the range a drifting score is multiplied by, drawn log-uniformly (default "
        f"{low:g}:{high:g}: two drifts in five go down)",
    )
    group.add_argument(
        "--measure-lag",
        type=options.non_negative_float,
        default=None,
        metavar="SECONDS",
        help="how long a job, or a new phase, runs before its measured score shows it "
        f"(default {phases.product_lag():g}: [hpc_scheduler] measured_min_samples "
        "samples of one [hpc_collector] interval, by their defaults)",
    )


def check(args: argparse.Namespace, built: list) -> None:
    """What the options' types cannot see: options without effect, and sources
    no scenario reads."""
    if args.drift_factors is not None and not args.phase_drift:
        raise common.CommandError(
            "--drift-factors scales drifting scores: give --phase-drift FRACTION too"
        )
    measuring = [source for source in args.cache_source if source != DECLARED]
    if args.measure_lag is not None and not measuring:
        raise common.CommandError(
            "--measure-lag is how long measured scores take to count: "
            "add measured or max to --cache-source"
        )
    if measuring and not any(reads_scores(scenario) for scenario in built):
        raise common.CommandError(
            f"--cache-source {','.join(args.cache_source)}: none of --policies counts cache "
            "scores; add mdobp-cache or hpc-aware"
        )


def reads_scores(scenario) -> bool:
    """Whether the scenario's placement counts running VMs' cache scores."""
    return scenario.policy.cache_criteria or scenario.admission is not None


def expand(built: list, sources: list[str]) -> list:
    """Each cache-aware scenario once per source (labelled unless the source
    is declared alone); the others, which no score changes, once."""
    from hpc_nova_scheduler.sim import phases

    if sources == [DECLARED]:
        return built
    return [
        dataclasses.replace(
            scenario, name=phases.labelled(scenario.name, source), cache_source=source
        )
        if reads_scores(scenario)
        else scenario
        for scenario in built
        for source in (sources if reads_scores(scenario) else [None])
    ]


def setting_options(args: argparse.Namespace) -> dict:
    """The drift and measuring every replay of the run shares."""
    from hpc_nova_scheduler.sim import phases

    drift = None
    if args.phase_drift:
        drift = phases.PhaseDrift(args.phase_drift, args.drift_factors or phases.DEFAULT_FACTORS)
    return {"drift": drift, "measuring": phases.Measuring.of_product(args.measure_lag)}


def active(args: argparse.Namespace) -> bool:
    """Whether the run drifts or measures: the comparison table is printed then."""
    return bool(args.phase_drift) or args.cache_source != [DECLARED]


def note(args: argparse.Namespace) -> str:
    """What the header line says of drift and sources; nothing when neither is on."""
    if not active(args):
        return ""
    from hpc_nova_scheduler.sim import phases

    setting = setting_options(args)
    text = ""
    if setting["drift"] is not None:
        low, high = setting["drift"].factors
        text += (
            f"; {args.phase_drift:.0%} of jobs drift once to their score x {low:g}..{high:g} "
            f"(log-uniform, cap {phases.SCORE_CAP:g})"
        )
    measuring = setting["measuring"]
    text += (
        f"; cache sources {', '.join(args.cache_source)} (measured scores count after "
        f"{measuring.lag:g} s, at most {measuring.full_llc_score:g}); "
        "replayed on plan() over every host"
    )
    return text


def print_comparison(swept: list, out: TextIO, several_logs: bool, several_seeds: bool) -> None:
    """The sources side by side: throughput, wait, slowdowns, gain over declared."""
    from hpc_nova_scheduler.sim import sources

    rows = sources.compare(swept)
    out.write("Cache sources compared (same jobs, drifts and seed):\n")
    _table(rows, out, several_logs, several_seeds)
    if several_seeds:
        out.write("Mean over seeds:\n")
        _table(sources.seed_means(rows), out, several_logs, True)


def _table(rows: list, out: TextIO, several_logs: bool, with_seed: bool) -> None:
    from hpc_nova_scheduler.sim import sources

    common.table(
        [
            *(["log"] if several_logs else []),
            "scenario",
            "source",
            *(["seed"] if with_seed else []),
            *sources.HEADINGS,
            "jobs/h vs declared",
        ],
        [
            [
                *([row.log] if several_logs else []),
                row.scenario,
                row.source,
                *([row.seed] if with_seed else []),
                *(_formatted(row.figures)),
                "" if row.gain is None else f"{row.gain:+.1f}%",
            ]
            for row in rows
        ],
        out,
    )


def _formatted(figures: list[float] | None) -> list[str]:
    if figures is None:
        return ["failed", *("" for _ in range(6))]
    formats = ("{:.2f}", "{:.1f}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.3f}", "{:.3f}")
    return [fmt.format(value) for fmt, value in zip(formats, figures, strict=True)]
