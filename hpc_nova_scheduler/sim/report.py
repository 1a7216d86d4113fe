"""Writing simulation results: per-job CSV, JSON summary, PNG plot."""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence

from hpc_nova_scheduler import atomicfile, strictjson
from hpc_nova_scheduler.sim.simulator import Result


def summary(result: Result, times: Sequence[float]) -> dict:
    found = {
        "scenario": result.scenario,
        "completed": len(result.outcomes),
        "never_fit": len(result.never_fit),
        "unfinished": result.unfinished,
        "makespan_s": result.makespan,
        "mean_wait_s": result.mean_wait(),
        "mean_bounded_slowdown": result.mean_bounded_slowdown(),
        "utilisation": result.utilisation(),
        "mean_interference_slowdown": result.mean_interference(),
        "completed_by_seconds": {f"{t:g}": result.completed_by(t) for t in times},
    }
    if result.levels:
        found.update(topology_summary(result))
    return found


def topology_summary(result: Result) -> dict:
    """Where the jobs of several VMs ended up: for each level (innermost
    first), the share of them in one domain (null without such jobs)."""
    return {
        "topology_levels": list(result.levels),
        "topology_refused": len(result.topology_refused),
        "multi_vm_completed": result.multi_vm_jobs(),
        **{
            f"one_{level}_share": result.one_domain_share(level)
            for level in reversed(result.levels)
        },
    }


#: What tells apart results of one scenario: e.g. ``{"log": "a.swf", "seed": 1}``.
Tags = Mapping[str, object]


def write(
    results: Sequence[Result],
    directory: str,
    times: Sequence[float],
    tags: Sequence[Tags] | None = None,
) -> list[str]:
    """Write ``jobs.csv``, ``summary.json`` and ``completed.png``; return their paths.

    ``tags``, one mapping a result (each with the same keys), become the
    first columns of ``jobs.csv`` and the first fields of each summary,
    and label the plot's lines beside the scenario.
    """
    tags = list(tags) if tags is not None else [{} for _ in results]
    if len(tags) != len(results):
        raise ValueError(f"{len(tags)} tags for {len(results)} results")
    names = list(tags[0]) if tags else []
    # Every result of a run counts the same levels, or none.
    levels = next((r.levels for r in results if r.levels), ())
    # The folder itself, not its parents: a mistyped path is an error.
    if not os.path.isdir(directory):
        os.mkdir(directory)
    jobs_path = os.path.join(directory, "jobs.csv")
    with atomicfile.open_replacing(jobs_path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(
            [
                *names,
                "scenario",
                "job_id",
                "submit_s",
                "start_s",
                "end_s",
                "processors",
                "alone_run_s",
                *(f"{level}_domains" for level in levels),
            ]
        )
        for result, tag in zip(results, tags, strict=True):
            for o in result.outcomes:
                writer.writerow(
                    [
                        *(tag[name] for name in names),
                        result.scenario,
                        o.job_id,
                        o.submit,
                        o.start,
                        o.end,
                        o.processors,
                        o.nominal_run,
                        *(o.spans or ("",) * len(levels)),
                    ]
                )
    summary_path = os.path.join(directory, "summary.json")
    with atomicfile.open_replacing(summary_path, "w", encoding="utf-8") as stream:
        strictjson.dump(
            [{**tag, **summary(r, times)} for r, tag in zip(results, tags, strict=True)],
            stream,
            indent=2,
        )
    plot_path = os.path.join(directory, "completed.png")
    labels = [_label(r.scenario, tag) for r, tag in zip(results, tags, strict=True)]
    plot(results, plot_path, times, labels)
    return [jobs_path, summary_path, plot_path]


def _label(scenario: str, tag: Tags) -> str:
    if not tag:
        return scenario
    return f"{scenario} ({', '.join(f'{name} {value}' for name, value in tag.items())})"


def plot(
    results: Sequence[Result],
    path: str,
    times: Sequence[float] = (),
    labels: Sequence[str] | None = None,
) -> None:
    """Completed jobs over time, one line per result (seed 003 Fig. 9),
    labelled by ``labels`` or else by scenario.

    Dashed lines mark ``times`` (seconds), where the table counts; the time
    axis stops a little after the last of them, where the comparison is (a
    log's few longest jobs would otherwise squeeze it into a corner).
    """
    labels = list(labels) if labels is not None else [r.scenario for r in results]
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 5))
    for result, label in zip(results, labels, strict=True):
        ends = sorted(o.end / 3600.0 for o in result.outcomes)
        axes.step(ends, range(1, len(ends) + 1), where="post", label=label)
    for time in times:
        axes.axvline(time / 3600.0, color="grey", linestyle="--", linewidth=0.8)
    if times:
        makespan = max((r.makespan for r in results), default=0.0)
        axes.set_xlim(0, min(max(times) * 1.5, max(makespan, max(times))) / 3600.0)
    axes.set_xlabel("simulated time (hours)")
    axes.set_ylabel("completed jobs")
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    with atomicfile.replacing(path) as scratch:
        figure.savefig(scratch, dpi=100, format=os.path.splitext(path)[1].lstrip(".") or "png")
    pyplot.close(figure)
