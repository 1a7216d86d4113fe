#!/usr/bin/env python3
"""Seed 000's runtime-trees on a dataset shaped like its profiling campaign.

Fits one bagged ensemble per application family on the training runs
(each application alone and next to synthetic network and storage
workloads), then, as seed 000 validates, predicts the run times next to
the *other real applications*, which the model never saw as co-runners.
Prints each family's mean error |estimated - actual| / actual beside seed
000's Table 5 (21.84 % for MPI applications, 23.39 % for big-data ones),
the cross-validated error on the training runs, and what one prediction
for a 1,000-host admission check costs, against scikit-learn's own
``BaggingRegressor.predict`` in the same run.

The data are synthetic (``hpc_nova_scheduler.runtime.shaped``): the figures
measure the learner, not any real cluster. ``--write DIR`` leaves the
profiles and runs as files for ``hpc-nova-scheduler model fit``.

    python benchmarks/runtime_trees.py [--seed 0] [--trees 100] [--write DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import timeit

import numpy as np

from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.interference.base import Tenant
from hpc_nova_scheduler.interference.ensembles import mean_of_trees
from hpc_nova_scheduler.runtime import shaped, trees

PAPER = {"MPI": 21.84, "big data": 23.39}


def best(repeat: int, work) -> float:
    """The fastest of ``repeat`` runs of ``work``, in seconds."""
    return min(timeit.repeat(work, number=1, repeat=repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trees", type=int, default=trees.TREES)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", metavar="DIR", help="write profiles.yaml, training.yaml, ...")
    args = parser.parse_args()

    data = shaped.dataset(args.seed)
    profiles = {p.name: p for p in data.profiles}
    if args.write:
        os.makedirs(args.write, exist_ok=True)
        for name, write, items in (
            ("profiles.yaml", datafiles.write_profiles, data.profiles),
            ("training.yaml", datafiles.write_runs, data.training),
            ("validation.yaml", datafiles.write_runs, data.validation),
        ):
            with open(os.path.join(args.write, name), "w") as stream:
                write(stream, items, "yaml")
        print(f"wrote profiles.yaml, training.yaml and validation.yaml in {args.write}")
    training = trees.samples_from_runs(data.training, profiles)
    held = trees.samples_from_runs(data.validation, profiles)
    model = trees.RuntimeTrees(trees=args.trees, seed=args.seed)
    started = time.perf_counter()
    fitted = model.fit(training)
    fit_seconds = time.perf_counter() - started
    estimates = fitted.runtimes([s.tenants() for s in held], first_only=True)
    errors: dict[str, list[float]] = {}
    for sample, (estimate,) in zip(held, estimates, strict=True):
        errors.setdefault(sample.profile.runtime_family, []).append(
            abs(estimate - sample.runtime) / sample.runtime * 100.0
        )
    checked = trees.cross_validate(model, training, 5, args.seed)
    print(
        f"{len(training)} training runs, {len(held)} validation runs; "
        f"{args.trees} trees per family, fitted in {fit_seconds:.1f} s"
    )
    print(f"{'family':<10} {'runs':>5} {'validation %':>13} {'5-fold CV %':>12}")
    for family, found in sorted(errors.items()):
        print(
            f"{family:<10} {len(found):>5} {statistics.fmean(found):>13.2f} "
            f"{checked.errors[family]:>12.2f}"
        )
    mpi = [statistics.fmean(e) for f, e in errors.items() if f != "bigdata"]
    print(
        f"average: MPI {statistics.fmean(mpi):.2f}% (seed 000: {PAPER['MPI']}%), "
        f"big data {statistics.fmean(errors['bigdata']):.2f}% (seed 000: {PAPER['big data']}%)"
    )

    # One admission check: every host of a 1,000-host cloud holding two applications.
    hosts = [
        [
            Tenant.of(profiles["CG"], 2, shaped.HOST_TYPES[i % 2]),
            Tenant.of(profiles["GrepSpark"], 2, shaped.HOST_TYPES[i % 2]),
        ]
        for i in range(1000)
    ]
    ours = best(args.repeat, lambda: fitted.predict_many(hosts))
    rows = np.asarray([fitted.row(h, 0) for h in hosts], dtype=float)
    ensemble = fitted.families["CG"]
    library = best(args.repeat, lambda: ensemble.predict(rows))
    direct = best(args.repeat, lambda: mean_of_trees(ensemble, rows))
    print(
        f"1,000 hosts in one check: {ours * 1000:.1f} ms "
        f"(4,000 rows over two families); per family call: mean_of_trees {direct * 1000:.2f} ms "
        f"vs BaggingRegressor.predict {library * 1000:.2f} ms, ratio {library / direct:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
