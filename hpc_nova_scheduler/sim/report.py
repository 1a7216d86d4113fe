"""Writing simulation results: per-job CSV, JSON summary, PNG plot."""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence

from hpc_nova_scheduler import atomicfile, strictjson
from hpc_nova_scheduler.sim.simulator import Result


def summary(result: Result, times: Sequence[float]) -> dict:
    return {
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


def write(results: Sequence[Result], directory: str, times: Sequence[float]) -> list[str]:
    """Write ``jobs.csv``, ``summary.json`` and ``completed.png``; return their paths."""
    os.makedirs(directory, exist_ok=True)
    jobs_path = os.path.join(directory, "jobs.csv")
    with atomicfile.open_replacing(jobs_path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(
            ["scenario", "job_id", "submit_s", "start_s", "end_s", "processors", "alone_run_s"]
        )
        for result in results:
            for o in result.outcomes:
                writer.writerow(
                    [
                        result.scenario,
                        o.job_id,
                        o.submit,
                        o.start,
                        o.end,
                        o.processors,
                        o.nominal_run,
                    ]
                )
    summary_path = os.path.join(directory, "summary.json")
    with atomicfile.open_replacing(summary_path, "w", encoding="utf-8") as stream:
        strictjson.dump([summary(r, times) for r in results], stream, indent=2)
    plot_path = os.path.join(directory, "completed.png")
    plot(results, plot_path, times)
    return [jobs_path, summary_path, plot_path]


def plot(results: Sequence[Result], path: str, times: Sequence[float] = ()) -> None:
    """Completed jobs over time, one line per scenario (seed 003 Fig. 9).

    Dashed lines mark ``times`` (seconds), where the table counts; the time
    axis stops a little after the last of them, where the comparison is (a
    log's few longest jobs would otherwise squeeze it into a corner).
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 5))
    for result in results:
        ends = sorted(o.end / 3600.0 for o in result.outcomes)
        axes.step(ends, range(1, len(ends) + 1), where="post", label=result.scenario)
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
