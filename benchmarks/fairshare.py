#!/usr/bin/env python3
"""Seed 002 (Hwang et al.) reproduced with this project's code, beside the paper's numbers.

1. Tables 3 and 4 through the real command ``hpc-nova-scheduler fairshare
   affinity etc/profiles/seed-002-runs.csv --format json`` (the package's
   cli main, in this process): the largest difference from the paper's
   printed values (``tests/unit/fairshare/test_affinity.py`` holds them),
   unrounded and as printed, against the tolerances 0.001 (Table 3) and
   0.01 (Table 4); and the worked example of section 4 (AutoDock's EPA on
   cheetah 1.532, RPA 1.169) through the same command on its measured
   run times.
2. Table 6's rule (``workload.equal_share_makespans``): 120 cores of each
   platform per application, solo run times: every application 6.43 h.
3. Speed. Each figure is the best of ``--repeat`` runs (the machine is
   shared and noisy), the measured code and its baseline taking turns, each
   after a full garbage collection; the ratio is measured / baseline:

   * PA-based RR for 1,000 claimants x 16 platforms x 10,000 cores,
     target 100 ms; baseline the equal-cores anchor on the same request
     (the same round robin, one core a turn, platforms in offer order);
   * MAF for 100 users on 1,000 2-core nodes (every AllCore and TwoApp set
     of 100 applications, generated run times), target 1 s; baseline
     AllCore on the same shares (the second level that chooses nothing);
   * one discrete run of the default scenario (500,000 tasks) with
     TwoLevel("pa-rr", "maf"), target 5 s; baseline a bare heapq replay of
     500,000 tasks on the same 2,400 cores, the floor of any engine that
     simulates every task;
   * the rate-based evaluation of the same, target 10 ms; baseline one
     allocator call (TwoLevel.plan) on the scenario's first invocation.
     The simulator does not time its allocator: a wrapper around the
     policy does, so the figure is given with and without it.
4. The figures (Figs. 3-7, sections 6.3 and 6.5) and the production
   anchors, from the grid of every Table 8 scenario x every Table 7
   combination, ours and the anchors x ``--runs`` seeds, rate engine, run
   through ``sweep.run_grid``, judged by ``experiments.judge`` and compared
   by :mod:`hpc_nova_scheduler.fairshare.comparisons`. Section 6.5's
   D_unit = 200 and P_unit = 20 runs are an extra grid, judged apart.
5. The anchors (equal-cores, billing-weights, decayed-usage, each with
   Random) against both ours, equivalent-rr/rpa/maf (this project's
   extension), and the paper's best, pa-rr/rpa/maf
   (``comparisons.against_anchors`` once for each): every scenario all at
   once, and the default and w/o-app scenarios under Poisson arrivals at
   every rate of ``workload.ARRIVAL_RATES``; then all of it again with a
   usage history (a 6 h half-life, re-planned every 1,800 s, in every cell:
   the policies, the anchors and their baseline). Without a history
   decayed-usage is equal-cores: there is no usage to decay.
6. The discrete engine against the rate engine: ours, the paper's best,
   the baseline and the anchors on every scenario, seed 0; the largest
   makespan and fairness differences per policy and overall, and whether
   the anchors verdicts are the same on both engines, scenario by scenario.

The per-combination and per-task run times are generated (the paper
publishes averages only, see the fairshare README), so figures can match
the paper's trends, not its digits.

    python benchmarks/fairshare.py [--runs 3] [--workers N] [--dask ADDRESS]
        [--repeat 5] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import gc
import heapq
import io
import json
import math
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # the paper's tables live beside the tests that check them

from hpc_nova_scheduler import sweep  # noqa: E402
from hpc_nova_scheduler.cmd import cli  # noqa: E402
from hpc_nova_scheduler.core.sharing import Claimant, Platform, ShareRequest  # noqa: E402
from hpc_nova_scheduler.fairshare import (  # noqa: E402
    allocator,
    anchors,
    comparisons,
    experiments,
    simulation,
    workload,
)
from hpc_nova_scheduler.fairshare.affinity import solo_runtimes  # noqa: E402
from hpc_nova_scheduler.fairshare.combinations import CombinationTable  # noqa: E402
from hpc_nova_scheduler.fairshare.experiments import Cell, Judged  # noqa: E402
from hpc_nova_scheduler.fairshare.first_level import AffinityRoundRobin  # noqa: E402
from hpc_nova_scheduler.fairshare.second_level import MAF, AllCore  # noqa: E402
from hpc_nova_scheduler.fairshare.simulator import simulate  # noqa: E402
from tests.unit.fairshare.test_affinity import PLATFORMS, TABLE_3, TABLE_4  # noqa: E402

RUNS_FILE = os.path.join("etc", "profiles", "seed-002-runs.csv")
#: Section 4's worked example: AutoDock's measured solo run times.
AUTODOCK_MEASURED = {"gene": 480.42, "cheetah": 244.05, "darth": 347.11, "lcloud": 294.16}
TOLERANCE_TABLE_3 = 0.001
TOLERANCE_TABLE_4 = 0.01
TARGET_PA_RR_S = 0.100
TARGET_MAF_S = 1.0
TARGET_DISCRETE_S = 5.0
TARGET_RATE_S = 0.010
HOUR = 3600.0
#: The anchors' second variant: decayed usage needs a history to forget and
#: re-planning to act on it (without them it is equal-cores).
HALF_LIFE_S = 6 * HOUR
INTERVAL_S = 1800.0
QUICK_SCENARIOS = ("default",)


# -- 1. Tables 3 and 4 ------------------------------------------------------


def affinity_command(runs_file: str) -> dict:
    """The JSON that ``hpc-nova-scheduler fairshare affinity RUNS_FILE`` prints."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["fairshare", "affinity", runs_file, "--format", "json"], out, err)
    if code != 0:
        raise SystemExit(f"fairshare affinity {runs_file} failed ({code}): {err.getvalue()}")
    return json.loads(out.getvalue())


def worst_cell(
    ours: dict[str, dict[str, float]], paper: dict[str, Sequence[float]], places: int
) -> tuple[float, float, str]:
    """(max |ours - paper| unrounded, the same with ours rounded as printed, where)."""
    cells = [
        (
            abs(ours[app][platform] - value),
            abs(round(ours[app][platform], places) - value),
            f"{app} on {platform}: {ours[app][platform]:.{places + 2}f} vs {value}",
        )
        for app, values in paper.items()
        for platform, value in zip(PLATFORMS, values, strict=True)
    ]
    worst = max(cells)
    return worst[0], max(c[1] for c in cells), worst[2]


def tables(report: dict) -> bool:
    found = affinity_command(os.path.join(ROOT, RUNS_FILE))
    rows = [
        ("Table 3", "throughput", "throughput", 0, 2, TOLERANCE_TABLE_3),
        ("Table 3", "EPA", "epa", 1, 3, TOLERANCE_TABLE_3),
        ("Table 3", "RPA", "rpa", 2, 3, TOLERANCE_TABLE_3),
        ("Table 4", "raw (s)", "corunner_raw", 0, 2, TOLERANCE_TABLE_4),
        ("Table 4", "normalised (%)", "corunner_normalised", 1, 2, TOLERANCE_TABLE_4),
    ]
    print(
        "\n1) Tables 3 and 4 through `hpc-nova-scheduler fairshare affinity "
        f"{RUNS_FILE} --format json`"
    )
    print(
        f"{'table':<8} {'column':<15} {'cells':>5} {'max |ours-paper|':>17} "
        f"{'as printed':>11} {'tolerance':>10} {'':>4}  worst cell"
    )
    met = True
    for table, column, key, index, places, tolerance in rows:
        source = TABLE_3 if table == "Table 3" else TABLE_4
        paper = {app: values[index] for app, values in source.items()}
        difference, printed, where = worst_cell(found[key], paper, places)
        # Judged as the paper prints (and as test_affinity checks): ours rounded to
        # the table's places. Unrounded, a value may differ by up to half a unit more.
        ok = printed <= tolerance + 1e-9
        met &= ok
        report.setdefault("tables", {})[f"{table} {column}"] = {
            "max_abs_difference": difference,
            "max_abs_difference_as_printed": printed,
            "tolerance": tolerance,
            "worst": where,
        }
        print(
            f"{table:<8} {column:<15} {5 * len(PLATFORMS):>5} {difference:>17.6f} "
            f"{printed:>11.3f} {tolerance:>10} {'ok' if ok else 'NO':>4}  {where}"
        )
    met &= worked_example(report)
    return met


def worked_example(report: dict) -> bool:
    """Section 4's example through the command: AutoDock measured, the others from Table 3."""
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "worked-example.csv")
        with open(path, "w", newline="") as stream:
            writer = csv.writer(stream)
            writer.writerow(("application", "platform", "runtime_s", "corunners"))
            for platform, seconds in AUTODOCK_MEASURED.items():
                writer.writerow(("AutoDock", platform, seconds, ""))
            for app, (throughput, _, _) in TABLE_3.items():
                if app != "AutoDock":
                    for platform, rate in zip(PLATFORMS, throughput, strict=True):
                        writer.writerow((app, platform, f"{HOUR / rate:.6f}", ""))
        found = affinity_command(path)
    epa = found["epa"]["AutoDock"]["cheetah"]
    rpa = found["rpa"]["AutoDock"]["cheetah"]
    ok = round(epa, 3) == 1.532 and round(rpa, 3) == 1.169
    report["worked_example"] = {"epa_cheetah": epa, "rpa_cheetah": rpa}
    print(
        f"worked example (AutoDock 480.42 / 244.05 / 347.11 / 294.16 s): EPA on cheetah "
        f"{epa:.4f} (paper 1.532), RPA {rpa:.4f} (paper 1.169) -> {'ok' if ok else 'NO'}"
    )
    return ok


# -- 2. Table 6 -------------------------------------------------------------


def table_6(report: dict) -> bool:
    solo = solo_runtimes(workload.shipped_runs())
    found = workload.equal_share_makespans(solo, workload.scenario("default"))
    print("\n2) Table 6's rule: 120 cores of each platform per application, solo run times")
    for app, seconds in found.items():
        print(f"   {app:<15} {seconds / HOUR:6.3f} h  (paper 6.43 h)")
    worst = max(abs(s / workload.DEFAULT_MAKESPAN_S - 1.0) for s in found.values())
    ok = all(round(s / HOUR, 2) == 6.43 for s in found.values())
    print(f"   largest deviation from 6.43 h: {100 * worst:.3f}% -> {'ok' if ok else 'NO'}")
    report["table_6"] = {"makespans_h": {a: s / HOUR for a, s in found.items()}}
    return ok


# -- 3. Speed ---------------------------------------------------------------


def best(repeat: int, work: Callable[[], object]) -> float:
    """Best seconds of ``repeat`` runs of ``work``, each after a full garbage collection."""
    found = math.inf
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        work()
        found = min(found, time.perf_counter() - started)
    return found


def paired(repeat: int, measured: Callable[[], object], baseline: Callable[[], object]):
    """Best seconds of ``measured`` and of ``baseline``, taking turns."""
    best = [math.inf, math.inf]
    for _ in range(repeat):
        for i, work in enumerate((measured, baseline)):
            gc.collect()
            started = time.perf_counter()
            work()
            best[i] = min(best[i], time.perf_counter() - started)
    return best[0], best[1]


def first_level_problem(seed: int = 0) -> ShareRequest:
    """1,000 claimants (one application each) with RPA over 16 platforms of 625 cores."""
    rng = np.random.default_rng(seed)
    platforms = tuple(Platform(f"p{i:02d}", 625, 1) for i in range(16))
    apps = [f"app{i:04d}" for i in range(1000)]
    # Demand from 1 to 40 cores: the fair share is 10, so some users are
    # water-filled and every platform runs out.
    claimants = tuple(
        Claimant(f"user{i:04d}", app, int(d))
        for i, (app, d) in enumerate(zip(apps, rng.integers(1, 41, len(apps)), strict=True))
    )
    base = rng.uniform(60, 600, len(apps))
    speed = rng.uniform(0.5, 2.0, len(platforms))
    noise = rng.lognormal(0.0, 0.3, (len(apps), len(platforms)))
    solo = {
        (app, p.name): float(base[a] / speed[j] * noise[a, j])
        for a, app in enumerate(apps)
        for j, p in enumerate(platforms)
    }
    times = CombinationTable(solo)
    return ShareRequest(
        claimants=claimants,
        platforms=platforms,
        affinity=allocator.platform_affinity("rpa", claimants, platforms, times),
        solo={
            c.name: {p.name: solo[(c.application, p.name)] for p in platforms} for c in claimants
        },
    )


def second_level_problem(seed: int = 0):
    """100 users of 100 applications on 1,000 2-core nodes: AllCore and every TwoApp pair."""
    rng = np.random.default_rng(seed)
    platform = Platform("pairs", 1000, 2)
    apps = [f"app{i:03d}" for i in range(100)]
    solo = {
        (app, platform.name): float(s)
        for app, s in zip(apps, rng.uniform(60, 600, 100), strict=True)
    }
    sets: dict[tuple[str, str, frozenset[str]], float] = {}
    for app in apps:
        s = solo[(app, platform.name)]
        sets[(app, platform.name, frozenset({app}))] = s * (1.0 + rng.uniform(0.0, 0.3))
        for other in apps:
            if other != app:
                # Slowdowns of ~20 %, log-normal as the workload's generated ones.
                slowdown = 0.2 * math.exp(0.5 * rng.standard_normal())
                sets[(app, platform.name, frozenset({app, other}))] = s * (1.0 + slowdown)
    times = CombinationTable(solo, sets)
    # Uneven shares summing to the 2,000 cores: pairs of users 20 +- d.
    shares = {}
    for i in range(50):
        d = int(rng.integers(0, 15))
        shares[f"user{2 * i:03d}"] = 20 + d
        shares[f"user{2 * i + 1:03d}"] = 20 - d
    applications = {name: f"app{name[4:]}" for name in shares}
    return platform, shares, applications, times


class TimedPolicy:
    """A planner that times the policy it wraps: the simulator does not time its allocator."""

    def __init__(self, policy: allocator.TwoLevel) -> None:
        self.policy = policy
        self.usage_charge = policy.usage_charge
        self.seconds = 0.0
        self.calls = 0

    def plan(self, claimants, platforms, times, previous=None):
        started = time.perf_counter()
        try:
            return self.policy.plan(claimants, platforms, times, previous=previous)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1


def heap_floor(cores: int, lengths: Sequence[float]) -> float:
    """Every task through a heap of core completions, nothing else: the discrete floor."""
    heap = [(lengths[i], i) for i in range(min(cores, len(lengths)))]
    heapq.heapify(heap)
    following = len(heap)
    count = len(lengths)
    end = 0.0
    replace, pop = heapq.heapreplace, heapq.heappop
    while heap:
        end, core = heap[0]
        if following < count:
            replace(heap, (end + lengths[following], core))
            following += 1
        else:
            pop(heap)
    return end


def speed_row(
    report: dict, name: str, seconds: float, target: float, base: float, baseline: str
) -> bool:
    """Print and record one speed figure; whether it met its target."""
    met = seconds <= target
    report.setdefault("speed", {})[name] = {
        "seconds": seconds,
        "target_s": target,
        "baseline_s": base,
        "baseline": baseline,
        "ratio": seconds / base,
    }
    print(
        f"{name:<38} {_ms(seconds):>10} {_ms(target):>9} {'met' if met else 'MISSED':>6} "
        f"{_ms(base):>10} {seconds / base:>7.1f}  {baseline}"
    )
    return met


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def speed(report: dict, repeat: int) -> bool:
    print(f"\n3) speed: best of {repeat}, measured and baseline taking turns")
    print(
        f"{'what':<38} {'measured':>10} {'target':>9} {'':>6} {'baseline':>10} "
        f"{'ratio':>7}  baseline is"
    )
    met = True

    request = first_level_problem()
    pa_rr, equal = AffinityRoundRobin(), anchors.EqualCores()
    ours, base = paired(repeat, lambda: pa_rr.allocate(request), lambda: equal.allocate(request))
    met &= speed_row(
        report,
        "PA-based RR, 1,000 x 16 x 10,000",
        ours,
        TARGET_PA_RR_S,
        base,
        "equal-cores anchor, same request",
    )
    claimants, platforms = request.claimants, request.platforms
    times = CombinationTable(
        {(c.application, p): s for c in claimants for p, s in request.solo[c.name].items()}
    )
    rpa = best(repeat, lambda: allocator.platform_affinity("rpa", claimants, platforms, times))
    print(f"{'  (its RPA, once per allocator call)':<38} {_ms(rpa):>10}   no target")

    platform, shares, applications, pair_times = second_level_problem()
    maf, allcore = MAF(), AllCore()
    ours, base = paired(
        repeat,
        lambda: maf.map(platform, shares, applications, pair_times, random.Random(0)),
        lambda: allcore.map(platform, shares, applications, pair_times, random.Random(0)),
    )
    met &= speed_row(
        report,
        "MAF, 100 users on 1,000 2-core nodes",
        ours,
        TARGET_MAF_S,
        base,
        "AllCore, same shares",
    )

    default = workload.scenario("default")
    generated = workload.generate_times(0)
    #: (seconds of a run, seconds of its allocator calls, calls), one per run
    timed: list[tuple[float, float, int]] = []

    def run(method: str) -> None:
        policy = TimedPolicy(allocator.TwoLevel("pa-rr", "maf"))
        started = time.perf_counter()
        simulate(default.platforms, default.tasks, None, policy, generated, seed=0, method=method)
        timed.append((time.perf_counter() - started, policy.seconds, policy.calls))

    lengths = np.random.default_rng(0).uniform(100.0, 400.0, sum(default.tasks.values())).tolist()
    ours, base = paired(repeat, lambda: run("discrete"), lambda: heap_floor(default.cores, lengths))
    allocator_s = min(t[1] for t in timed)
    met &= speed_row(
        report,
        "discrete run, default, 500,000 tasks",
        ours,
        TARGET_DISCRETE_S,
        base,
        f"heapq replay of 500,000 tasks on {default.cores} cores",
    )
    print(f"{'  of which the allocator':<38} {_ms(allocator_s):>10}   {timed[-1][2]} calls")

    first = [Claimant(app, app, n) for app, n in default.tasks.items()]
    plan_policy = allocator.TwoLevel("pa-rr", "maf")
    timed.clear()
    ours, base = paired(
        repeat,
        lambda: run("rate"),
        lambda: plan_policy.plan(first, default.platforms, generated),
    )
    met &= speed_row(
        report,
        "rate-based evaluation, default",
        ours,
        TARGET_RATE_S,
        base,
        "one allocator call (TwoLevel.plan, first invocation)",
    )
    without = min(total - planning for total, planning, _ in timed)
    rate_allocator_s = min(t[1] for t in timed)
    print(
        f"{'  without the allocator':<38} {_ms(without):>10}   "
        f"allocator {_ms(rate_allocator_s)} in {timed[-1][2]} calls"
    )
    report["speed"]["rate-based evaluation, default"]["allocator_s"] = rate_allocator_s
    report["speed"]["rate-based evaluation, default"]["without_allocator_s"] = without
    report["speed"]["discrete run, default, 500,000 tasks"]["allocator_s"] = allocator_s
    return met


# -- 4. Figures and anchors -------------------------------------------------


def run_cells(cells: list[Cell], args, what: str) -> list[experiments.Outcome]:
    started = time.perf_counter()
    results = sweep.run_grid(
        simulation.run,
        cells,
        workers=args.workers,
        dask_address=args.dask,
        key=lambda c: (
            f"{c.scenario} {c.combination.label} seed {c.seed} {c.arrivals} {c.engine}"
            f" half-life {c.half_life_s:g} s interval {c.interval_s:g} s"
        ),
    )
    broken = sweep.failed(results)
    for result in broken:
        print(f"   FAILED {result.key}: {result.error}", file=sys.stderr)
    if broken:
        raise SystemExit(f"{len(broken)} cells of {what} failed")
    print(f"   {what}: {len(cells)} cells in {time.perf_counter() - started:.1f} s")
    return [r.value for r in results]


def percent_better(a: float, b: float, higher: bool) -> float:
    """How much better ``a`` is than ``b``, percent of ``b``."""
    return (a - b) / abs(b) * 100.0 if higher else (b - a) / abs(b) * 100.0


def kinds_table(title: str, grouped: dict, order: Sequence[str]) -> None:
    """Mean fairness, then mean efficiency, of each policy per scenario kind."""
    kinds = ("all", *workload.KINDS)
    print(title)
    for metric in ("fairness", "efficiency"):
        print(f"   {metric:<12}" + "".join(f"{k:>10}" for k in kinds))
        for name in order:
            if name in grouped:
                row = grouped[name]
                print(
                    f"   {'  ' + name:<12}"
                    + "".join(
                        f"{row[k][metric]:>10.4f}" if k in row else f"{'':>10}" for k in kinds
                    )
                )


def fig_3(judged: list[Judged], report: dict) -> None:
    grouped = comparisons.by_platform_metric(judged)
    kinds_table(
        "\nFig. 3: platform affinity metrics (first levels but Fairness, every second level)",
        grouped,
        experiments.METRICS,
    )
    rpa, epa, tp = (grouped[m]["all"] for m in ("rpa", "epa", "throughput"))
    found = {
        "fairness_over_throughput": percent_better(rpa["fairness"], tp["fairness"], True),
        "fairness_over_epa": percent_better(rpa["fairness"], epa["fairness"], True),
        "efficiency_over_throughput": percent_better(rpa["efficiency"], tp["efficiency"], False),
        "efficiency_over_epa": percent_better(rpa["efficiency"], epa["efficiency"], False),
    }
    report["fig_3"] = {"by_metric": grouped, "rpa_better": found}
    print(
        f"   RPA fairness {found['fairness_over_throughput']:+.1f}% over throughput "
        f"(paper +10%), {found['fairness_over_epa']:+.1f}% over EPA (paper +3%)"
    )
    print(
        f"   RPA efficiency {found['efficiency_over_throughput']:+.1f}% over throughput "
        f"(paper +8%), {found['efficiency_over_epa']:+.1f}% over EPA (paper +2%)"
    )


def fig_4(judged: list[Judged], report: dict) -> None:
    found = comparisons.rpa_over_epa(judged)
    runs = len(found["fairness"])
    same = sum(1 for v in found["fairness"] if abs(v) <= 1e-9)
    report["fig_4"] = {k: v for k, v in found.items() if k not in ("fairness", "efficiency")}
    report["fig_4"]["runs"] = runs
    print("\nFig. 4: RPA against EPA, run by run (first levels but Fairness)")
    print(
        f"   fairness better in {found['fairness_better_share']:.1f}% of {runs} runs, up to "
        f"{found['fairness_max']:.1f}% (paper 59.7%, up to 24.3%); worst "
        f"{min(found['fairness'], default=math.nan):+.1f}%; identical in {same} runs"
    )
    print(
        f"   efficiency better in {found['efficiency_better_share']:.1f}%, up to "
        f"{found['efficiency_max']:.1f}% (paper 64.3%, up to 10.2%); worst "
        f"{min(found['efficiency'], default=math.nan):+.1f}%"
    )


def fig_5_6(judged: list[Judged], report: dict) -> None:
    first = comparisons.by_first_level(judged)
    kinds_table(
        "\nFig. 5: first levels (RPA, normalised difference, every second level)",
        first,
        experiments.FIRST_LEVELS,
    )
    fair = {name: first[name]["all"]["fairness"] for name in first}
    eff = {name: first[name]["all"]["efficiency"] for name in first}
    best, worst = max(fair, key=fair.get), min(fair, key=fair.get)
    slowest = max(eff, key=eff.get)
    print(
        f"   best fairness {best} (paper pa-rr: {'same' if best == 'pa-rr' else 'DIFFERS'}), "
        f"worst {worst} (paper paf: {'same' if worst == 'paf' else 'DIFFERS'}); "
        f"lowest efficiency {slowest} (paper fairness: "
        f"{'same' if slowest == 'fairness' else 'DIFFERS'})"
    )
    second = comparisons.by_second_level(judged)
    kinds_table(
        "\nFig. 6: second levels (RPA, normalised difference, every first level)",
        second,
        experiments.SECOND_LEVELS,
    )
    fair2 = {name: second[name]["all"]["fairness"] for name in second}
    eff2 = {name: second[name]["all"]["efficiency"] for name in second}
    best_f, best_e = max(fair2, key=fair2.get), min(eff2, key=eff2.get)
    ca_f = percent_better(fair2["ca-rr"], fair2["random"], True)
    ca_e = percent_better(eff2["ca-rr"], eff2["random"], False)
    print(
        f"   best fairness {best_f}, best efficiency {best_e} (paper maf for both: "
        f"{'same' if best_f == best_e == 'maf' else 'DIFFERS'}); "
        f"worst {min(fair2, key=fair2.get)} / {max(eff2, key=eff2.get)} (paper allcore)"
    )
    print(
        f"   CA-RR against Random: fairness {ca_f:+.2f}%, efficiency {ca_e:+.2f}% "
        f"(paper: about the same)"
    )
    report["fig_5"] = first
    report["fig_6"] = second


def section_6_3(judged: list[Judged], report: dict) -> None:
    found = comparisons.maf_over_random(judged, "pa-rr")
    report["section_6_3"] = found
    print("\n6.3: MAF over Random under PA-based RR with RPA")
    print(
        f"   fairness {found['fairness_mean']:+.2f}% on average, {found['fairness_max']:+.2f}% "
        f"at most (paper +2.0%, 5%); efficiency {found['efficiency_mean']:+.2f}%, "
        f"{found['efficiency_max']:+.2f}% at most (paper +3.7%, 9%); {found['runs']:.0f} runs"
    )


def fig_7(judged: list[Judged], report: dict) -> None:
    found = comparisons.level_effects(judged)
    report["fig_7"] = found
    first, second = found["first"], found["second"]
    print("\nFig. 7: best against worst policy per scenario and seed, percent")
    print(
        f"   first level (RPA, MAF):   fairness mean {first['fairness_mean']:.1f}, max "
        f"{first['fairness_max']:.1f} (paper up to 38); efficiency mean "
        f"{first['efficiency_mean']:.1f}, max {first['efficiency_max']:.1f}"
    )
    print(
        f"   second level (PA-RR/RPA): fairness mean {second['fairness_mean']:.1f}, max "
        f"{second['fairness_max']:.1f} (paper up to 8); efficiency mean "
        f"{second['efficiency_mean']:.1f}, max {second['efficiency_max']:.1f}"
    )
    print(
        "   paper: efficiency effect of the first level larger on average, similar at worst: "
        f"mean {first['efficiency_mean']:.1f} vs {second['efficiency_mean']:.1f}, "
        f"max {first['efficiency_max']:.1f} vs {second['efficiency_max']:.1f}"
    )


def sensitivity_cells(seeds: Sequence[int]) -> list[Cell]:
    """Section 6.5: D_unit 200 (PA-based RR) and P_unit 20 (CA-based RR), default scenario."""
    every = experiments.seed002_combinations()
    core = [c for c in every if c.first == "pa-rr" and c.metric == "rpa"]
    node = [c for c in every if c.first == "pa-rr" and c.second == "ca-rr"]
    return experiments.grid(["default"], core, seeds, core_unit=200) + experiments.grid(
        ["default"], node, seeds, node_unit=20
    )


def section_6_5(main: list[Judged], extra: list[Judged], report: dict) -> None:
    runs = [j for j in main if j.cell.scenario == "default"] + extra
    # Each unit against 1 with the other unit at 1: sensitivity() keeps
    # runs of other settings apart, so each question gets its own runs.
    found = {
        **comparisons.sensitivity([j for j in runs if j.cell.node_unit == 1]),
        **{
            k: v
            for k, v in comparisons.sensitivity([j for j in runs if j.cell.core_unit == 1]).items()
            if k.startswith("node_unit")
        },
    }
    report["section_6_5"] = found
    print("\n6.5: units on the default scenario (all seeds)")
    for label, unit, paper in (
        ("core_unit", 200, "fairness -3%, efficiency the same"),
        ("node_unit", 20, "no difference"),
    ):
        one, big = found[f"{label}=1"], found[f"{label}={unit}"]
        f = (big["fairness"] - one["fairness"]) / one["fairness"] * 100
        e = (big["efficiency"] - one["efficiency"]) / one["efficiency"] * 100
        print(
            f"   {label}={unit} against 1: fairness {one['fairness']:.4f} -> "
            f"{big['fairness']:.4f} ({f:+.2f}%), efficiency {one['efficiency']:.4f} -> "
            f"{big['efficiency']:.4f} ({e:+.2f}%, + is slower) ({big['runs']:.0f} runs; "
            f"paper: {paper})"
        )


#: Ours: PA-based RR whose shares count best-platform-equivalent cores (this
#: project's extension), with RPA and MAF.
OURS = experiments.Combination("equivalent-rr", "rpa", "maf")
#: The two policies held against the anchors: ours, and the paper's best.
AGAINST_ANCHORS = (("ours", OURS), ("paper_best", experiments.PAPER_BEST))
#: Scenario kinds run under Poisson arrivals (section 6.5's dynamic submission).
POISSON_KINDS = ("default", "w/o-app")


def anchor_rows(scenarios: Sequence[str]) -> list[tuple[str, str]]:
    """(scenario, arrivals) of the anchors table: every scenario all at once, then
    the default and w/o-app scenarios under Poisson arrivals at every named rate."""
    rows = [(s, simulation.ALL_AT_ONCE) for s in scenarios]
    rows += [
        (s, rate)
        for rate in workload.ARRIVAL_RATES
        for s in scenarios
        if workload.scenario(s).kind in POISSON_KINDS
    ]
    return rows


def anchor_cells(rows: Iterable[tuple[str, str]], seeds: Sequence[int], **options) -> list[Cell]:
    """Ours, the paper's best, the anchors and (by grid) their baseline, on ``rows``."""
    wanted = [c for _, c in AGAINST_ANCHORS] + experiments.anchor_combinations()
    cells = []
    for scenario, arrivals in rows:
        cells += experiments.grid([scenario], wanted, seeds, arrivals=arrivals, **options)
    return cells


def _row_key(row: dict) -> tuple:
    return (row["scenario"], row["arrivals"], row["half_life_s"], row["interval_s"])


def against_anchors(judged: list[Judged]) -> list[dict]:
    """One row per scenario and arrivals: ours and the paper's best, each against the
    anchors (:func:`comparisons.against_anchors` once for each), side by side."""
    merged: dict[tuple, dict] = {}
    for prefix, combination in AGAINST_ANCHORS:
        for found in comparisons.against_anchors(judged, ours=combination):
            key = _row_key(found)
            row = merged.setdefault(
                key, {k: found[k] for k in ("scenario", "arrivals", "half_life_s", "interval_s")}
            )
            row[f"{prefix}_policy"] = combination.label
            row[f"{prefix}_fairness"] = found["ours_fairness"]
            row[f"{prefix}_efficiency"] = found["ours_efficiency"]
            row[f"{prefix}_fairer_than_all"] = found["fairer_than_all"]
            row[f"{prefix}_efficiency_within_2pct"] = found["efficiency_within_2pct"]
            for anchor in experiments.ANCHORS:
                for metric in ("fairness", "efficiency"):
                    name = f"{anchor}_{metric}"
                    if name in found:
                        row[name] = found[name]
    return list(merged.values())


def _verdict(value: object) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def _tied(row: dict, prefix: str) -> bool:
    """Not fairer only because an anchor is exactly as fair: every policy gives the
    same cores when the users hardly overlap (slow Poisson arrivals)."""
    anchors_fairness = [row[f"{a}_fairness"] for a in experiments.ANCHORS if f"{a}_fairness" in row]
    return (
        not row.get(f"{prefix}_fairer_than_all")
        and bool(anchors_fairness)
        and abs(row[f"{prefix}_fairness"] - max(anchors_fairness)) <= 1e-12
    )


def _fairer(row: dict, prefix: str) -> str:
    return "tie" if _tied(row, prefix) else _verdict(row.get(f"{prefix}_fairer_than_all"))


def anchors_table(judged: list[Judged], title: str, order: Sequence[tuple[str, str]]) -> list[dict]:
    """Print ours and the paper's best against each anchor, row by row, and the counts."""
    position = {row: i for i, row in enumerate(order)}
    table = sorted(
        against_anchors(judged), key=lambda r: position.get((r["scenario"], r["arrivals"]), 1e9)
    )
    print(title)
    print(
        f"   ours = {OURS.label} (our extension), best = {experiments.PAPER_BEST.label} "
        "(the paper's best); anchors with Random; cells fairness/efficiency, means over seeds"
    )
    names = [("ours", "ours"), ("paper_best", "best"), *((a, a) for a in experiments.ANCHORS)]
    print(
        f"   {'scenario':<24} {'arrivals':<11}"
        + "".join(f"{shown:>17}" for _, shown in names)
        + "   ours: fairer eff<=2%   best: fairer eff<=2%"
    )
    for row in table:
        cells = "".join(
            f"{row[f'{n}_fairness']:>9.4f}/{row[f'{n}_efficiency']:<7.4f}"
            if f"{n}_fairness" in row
            else f"{'-':>17}"
            for n, _ in names
        )
        print(
            f"   {row['scenario']:<24} {row['arrivals']:<11}{cells}   "
            f"{_fairer(row, 'ours'):>12} "
            f"{_verdict(row.get('ours_efficiency_within_2pct')):>7}   "
            f"{_fairer(row, 'paper_best'):>12} "
            f"{_verdict(row.get('paper_best_efficiency_within_2pct')):>7}"
        )
    groups = list(dict.fromkeys(r["arrivals"] for r in table))
    for group in [*groups, "all rows"] if len(groups) > 1 else groups:
        rows = [r for r in table if group in ("all rows", r["arrivals"])]
        counts = []
        for prefix, shown in (("ours", "ours"), ("paper_best", "best")):
            fairer = sum(bool(r.get(f"{prefix}_fairer_than_all")) for r in rows)
            tied = sum(_tied(r, prefix) for r in rows)
            within = sum(bool(r.get(f"{prefix}_efficiency_within_2pct")) for r in rows)
            counts.append(
                f"{shown} fairer than every anchor in {fairer:>2} of {len(rows)}"
                + (f" (tied in {tied})" if tied else "")
                + f", efficiency within 2% of the best anchor in {within:>2} of {len(rows)}"
            )
        print(f"   {group + ':':<13} " + "; ".join(counts))
    same = sum(
        1
        for r in table
        if r.get("decayed-usage_fairness") == r.get("equal-cores_fairness")
        and r.get("decayed-usage_efficiency") == r.get("equal-cores_efficiency")
    )
    print(
        f"   decayed-usage identical to equal-cores in {same} of {len(table)} rows "
        "(it differs only when there is a usage history to decay: a half-life and "
        "re-planning while users run)"
    )
    return table


#: The policies run on both engines: the two held against the anchors, the
#: baseline of efficiency, and the anchors.
DISCRETE_CHECKED = (
    experiments.PAPER_BEST,
    OURS,
    experiments.BASELINE,
    *experiments.anchor_combinations(),
)
DISCRETE_SEED = 0


def discrete_cells(scenarios: Sequence[str]) -> list[Cell]:
    """Every scenario with the discrete engine, seed 0 (the baseline is among them)."""
    return experiments.grid(scenarios, DISCRETE_CHECKED, [DISCRETE_SEED], engine="discrete")


def _where(row: dict) -> str:
    return f"{row['scenario']} ({row['policy']})"


def discrete_check(discrete: list[Judged], main: list[Judged], report: dict) -> None:
    """Largest difference between the engines per policy and overall, and whether the
    anchors verdicts agree scenario by scenario."""
    rate = {
        (j.cell.scenario, j.cell.combination): j
        for j in main
        if j.cell.seed == DISCRETE_SEED and j.cell.combination in DISCRETE_CHECKED
    }
    rows = []
    for item in discrete:
        other = rate[(item.cell.scenario, item.cell.combination)]
        rows.append(
            {
                "policy": item.cell.combination.label,
                "scenario": item.cell.scenario,
                "makespan_discrete_s": item.outcome.makespan_s,
                "makespan_rate_s": other.outcome.makespan_s,
                "makespan_diff_pct": (other.outcome.makespan_s / item.outcome.makespan_s - 1) * 100,
                "fairness_discrete": item.fairness,
                "fairness_rate": other.fairness,
                "fairness_diff": other.fairness - item.fairness,
                "efficiency_discrete": item.efficiency,
                "efficiency_rate": other.efficiency,
                "efficiency_diff": other.efficiency - item.efficiency,
            }
        )
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    print(
        f"\ndiscrete against rate engine: {len(scenarios)} scenarios, seed {DISCRETE_SEED}, "
        "all at once: rate - discrete, the largest in size (signed); makespan relative, "
        "fairness and efficiency absolute"
    )
    print(
        f"   {'policy':<26} {'makespan':>9} {'where':<34} {'>1%':>4} {'fairness':>9} "
        f"{'where':<34} {'efficiency':>10} {'where':<34} {'default scenario':>17}"
    )
    summary = {}
    labels = [c.label for c in DISCRETE_CHECKED]
    for label in [*labels, "overall"]:
        mine = [r for r in rows if label in ("overall", r["policy"])]
        m = max(mine, key=lambda r: abs(r["makespan_diff_pct"]))
        f = max(mine, key=lambda r: abs(r["fairness_diff"]))
        e = max(mine, key=lambda r: abs(r["efficiency_diff"]))
        over = sum(1 for r in mine if abs(r["makespan_diff_pct"]) > 1.0)
        home = [r for r in mine if r["scenario"] == "default"]
        at_default = (
            f"{max(abs(r['makespan_diff_pct']) for r in home):.2f}% / "
            f"{max(abs(r['fairness_diff']) for r in home):.4f}"
            if home
            else "-"
        )

        where = _where if label == "overall" else (lambda row: row["scenario"])
        summary[label] = {
            "makespan_max_abs_diff_pct": abs(m["makespan_diff_pct"]),
            "makespan_diff_pct": m["makespan_diff_pct"],
            "makespan_where": m["scenario"],
            "makespan_policy": m["policy"],
            "makespan_over_1pct": over,
            "fairness_max_abs_diff": abs(f["fairness_diff"]),
            "fairness_diff": f["fairness_diff"],
            "fairness_where": f["scenario"],
            "fairness_policy": f["policy"],
            "efficiency_max_abs_diff": abs(e["efficiency_diff"]),
            "efficiency_diff": e["efficiency_diff"],
            "efficiency_where": e["scenario"],
            "efficiency_policy": e["policy"],
            "runs": len(mine),
        }
        shown = label if label != "overall" else "overall (every policy)"
        print(
            f"   {shown:<26} {m['makespan_diff_pct']:>+8.2f}% {where(m):<34} {over:>4} "
            f"{f['fairness_diff']:>+9.4f} {where(f):<34} {e['efficiency_diff']:>+10.4f} "
            f"{where(e):<34} {at_default:>17}"
        )
    print(
        "   (>1%: scenarios whose makespans differ by more than 1%; default scenario: "
        "|makespan diff| / |fairness diff| there)"
    )
    best = summary[experiments.PAPER_BEST.label]
    home = [
        r
        for r in rows
        if r["policy"] == experiments.PAPER_BEST.label and r["scenario"] == "default"
    ]
    if home:
        worst = max(
            max(abs(r["makespan_diff_pct"]), abs(r["fairness_diff"] / r["fairness_discrete"]) * 100)
            for r in home
        )
        print(
            f"   target (default scenario, {experiments.PAPER_BEST.label}, within 1%): "
            f"{worst:.2f}% -> {'met' if worst <= 1.0 else 'MISSED'}; on every scenario its "
            f"makespan differs by up to {best['makespan_max_abs_diff_pct']:.2f}% "
            f"({best['makespan_where']})"
        )
    verdicts = verdict_agreement(discrete, [rate[k] for k in sorted(rate)])
    report["discrete_check"] = {"runs": rows, "largest": summary, "anchors_verdicts": verdicts}


def verdict_agreement(discrete: list[Judged], rate: list[Judged]) -> dict:
    """Per scenario, whether each policy's anchors verdict (fairer than every anchor;
    efficiency within 2% of the best) is the same on both engines; prints the ones
    that are not."""
    tables = {
        "discrete": {r["scenario"]: r for r in against_anchors(discrete)},
        "rate": {r["scenario"]: r for r in against_anchors(rate)},
    }
    verdicts = ("fairer_than_all", "efficiency_within_2pct")
    disagree = []
    scenarios = [s for s in tables["discrete"] if s in tables["rate"]]
    for scenario in scenarios:
        d, r = tables["discrete"][scenario], tables["rate"][scenario]
        for prefix, _ in AGAINST_ANCHORS:
            for verdict in verdicts:
                name = f"{prefix}_{verdict}"
                if d.get(name) != r.get(name):
                    disagree.append(
                        {
                            "scenario": scenario,
                            "policy": d[f"{prefix}_policy"],
                            "verdict": verdict,
                            "discrete": d.get(name),
                            "rate": r.get(name),
                            "discrete_row": d,
                            "rate_row": r,
                        }
                    )
    print(
        f"   anchors verdicts (fairer than every anchor; efficiency within 2%) for "
        f"{OURS.label} and {experiments.PAPER_BEST.label}: the same on both engines in "
        f"{len(scenarios) - len({x['scenario'] for x in disagree})} of {len(scenarios)} scenarios"
    )
    for engine, table in tables.items():
        print(
            f"   {engine + ':':<9} "
            + "; ".join(
                f"{shown} fairer than every anchor in "
                f"{sum(bool(table[s][f'{prefix}_fairer_than_all']) for s in scenarios)}, "
                f"efficiency within 2% in "
                f"{sum(bool(table[s][f'{prefix}_efficiency_within_2pct']) for s in scenarios)}"
                for prefix, shown in (("ours", "ours"), ("paper_best", "best"))
            )
        )
    for x in disagree:
        prefix = "ours" if x["policy"] == OURS.label else "paper_best"
        detail = "; ".join(
            f"{engine} {row[f'{prefix}_fairness']:.4f}/{row[f'{prefix}_efficiency']:.4f} vs "
            + ", ".join(
                f"{a} {row[f'{a}_fairness']:.4f}/{row[f'{a}_efficiency']:.4f}"
                for a in experiments.ANCHORS
                if f"{a}_fairness" in row
            )
            for engine, row in (("discrete", x["discrete_row"]), ("rate", x["rate_row"]))
        )
        print(
            f"   DIFFERS {x['scenario']} {x['policy']} {x['verdict']}: discrete "
            f"{_verdict(x['discrete'])}, rate {_verdict(x['rate'])} ({detail})"
        )
    return {
        "scenarios": len(scenarios),
        "disagreements": [
            {k: v for k, v in x.items() if k not in ("discrete_row", "rate_row")} for x in disagree
        ],
    }


def figures(args, report: dict) -> None:
    scenarios = list(QUICK_SCENARIOS) if args.quick else [s.name for s in workload.scenarios()]
    seeds = list(range(args.runs))
    print(
        f"\n4) figures: {len(scenarios)} scenarios x {args.runs} seeds, rate engine, "
        f"workers {args.workers or os.cpu_count()}{f', dask {args.dask}' if args.dask else ''}"
    )
    main_cells = experiments.grid(
        scenarios,
        [*experiments.seed002_combinations(), OURS, *experiments.anchor_combinations()],
        seeds,
    )
    main = experiments.judge(
        run_cells(main_cells, args, f"Table 7 combinations, {OURS.label} and anchors")
    )
    extra = experiments.judge(run_cells(sensitivity_cells(seeds), args, "6.5 units"))
    rows = anchor_rows(scenarios)
    poisson = [(s, a) for s, a in rows if a != simulation.ALL_AT_ONCE]
    arrived = experiments.judge(
        run_cells(
            anchor_cells(poisson, seeds),
            args,
            f"Poisson arrivals ({', '.join(workload.ARRIVAL_RATES)})",
        )
    )
    decayed = experiments.judge(
        run_cells(
            anchor_cells(rows, seeds, half_life_s=HALF_LIFE_S, interval_s=INTERVAL_S),
            args,
            f"half-life {HALF_LIFE_S / HOUR:.0f} h, re-planned every {INTERVAL_S:,.0f} s",
        )
    )
    discrete = experiments.judge(
        run_cells(
            discrete_cells(scenarios),
            args,
            f"discrete engine, seed {DISCRETE_SEED}, every scenario",
        )
    )
    fig_3(main, report)
    fig_4(main, report)
    fig_5_6(main, report)
    section_6_3(main, report)
    fig_7(main, report)
    section_6_5(main, extra, report)
    report["anchors"] = anchors_table(
        main + arrived,
        "\nanchors, no usage history, re-planned at submissions and queue ends: "
        "all at once, and Poisson arrivals at every rate on the default and w/o-app scenarios",
        rows,
    )
    report["anchors_half_life"] = anchors_table(
        decayed,
        f"\nanchors with a usage history: half-life {HALF_LIFE_S / HOUR:.0f} h "
        f"(half_life_s={HALF_LIFE_S:.0f}), re-planned every {INTERVAL_S:.0f} s, for every "
        "cell (ours, best, anchors, baseline)",
        rows,
    )
    discrete_check(discrete, main, report)


def _plain(value):
    """JSON-ready: dataclasses and tuples to plain containers."""
    if dataclasses.is_dataclass(value):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="seeds per cell (default 3)")
    parser.add_argument("--workers", type=int, default=None, help="local processes")
    parser.add_argument("--dask", metavar="ADDRESS", help="an existing Dask scheduler")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs, the best kept")
    parser.add_argument("--quick", action="store_true", help="the default scenario only")
    parser.add_argument("--json", metavar="FILE", help="write every number here")
    args = parser.parse_args()
    if args.runs < 1 or args.repeat < 1:
        parser.error("--runs and --repeat must be at least 1")
    sys.stdout.reconfigure(line_buffering=True)  # progress shows when piped to a file
    report: dict = {"runs": args.runs, "quick": args.quick}
    exact = tables(report)
    exact &= table_6(report)
    fast = speed(report, args.repeat)
    figures(args, report)
    print(
        f"\nexact reproductions (Tables 3, 4, 6, worked example): {'met' if exact else 'NOT met'}; "
        f"speed targets: {'met' if fast else 'NOT met'}"
    )
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(_plain(report), stream, indent=2)
            stream.write("\n")
        print(f"wrote {args.json}")
    return 0 if exact and fast else 1


if __name__ == "__main__":
    sys.exit(main())
