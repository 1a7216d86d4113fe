#!/usr/bin/env python3
"""Speed of the learned interference models.

Seed 001's reduced forest (6 trees) predicts the degradation of every pair
of a 50-application queue: 1,225 pairs, both directions of each, 2,450
predictions. Target: under 50 ms (seed 001 took about 2 s). The forest is
fitted on synthetic profiles with the seed's ten generic counters (the
timing does not depend on what the counters mean). The baseline, measured
in the same run, is one ``predict`` call per pair, the way a scheduler
asking pair by pair would: the ratio says what batching the pairs gains.
Each figure is the best of ``--repeat`` runs, because this machine is
shared and noisy.

    python benchmarks/interference_models.py [--apps 50] [--repeat 7] [--trees 6]
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import timeit

from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.pairwise import forest

COUNTERS = forest.GENERIC_COUNTERS
TARGET_MS = 50.0


def profiles(count: int, seed: int) -> list[ProfileRecord]:
    rng = random.Random(seed)
    return [
        ProfileRecord(f"app{i}", counters={c: rng.random() for c in COUNTERS}) for i in range(count)
    ]


def best(repeat: int, work) -> float:
    """The fastest of ``repeat`` runs of ``work``, in seconds."""
    return min(timeit.repeat(work, number=1, repeat=repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--trees", type=int, default=forest.REDUCED_TREES)
    args = parser.parse_args()

    training = profiles(40, seed=1)
    rng = random.Random(2)
    samples = [
        forest.Sample(a, b, 50 * a.counters["cache_misses"] * b.counters["cache_references"])
        for a, b in itertools.permutations(training, 2)
        if rng.random() < 0.5
    ]
    model = forest.PairForest(trees=args.trees).fit(samples)
    queue = profiles(args.apps, seed=3)
    pairs = list(itertools.combinations(queue, 2))
    directed = [(a, b) for a, b in pairs] + [(b, a) for a, b in pairs]
    batched = best(args.repeat, lambda: model.degradations(directed))
    one_by_one = best(
        max(1, args.repeat // 3), lambda: [model.degradations([pair]) for pair in directed]
    )
    print(
        f"{args.apps} applications, {len(pairs)} pairs, {len(directed)} predictions, "
        f"{args.trees}-tree forest fitted on {len(samples)} pairs; best of {args.repeat}"
    )
    print(f"{'way':>12} {'ms':>9} {'ratio':>7}")
    print(f"{'pair by pair':>12} {one_by_one * 1000:9.1f} {1.0:7.2f}")
    print(f"{'all at once':>12} {batched * 1000:9.1f} {batched / one_by_one:7.3f}")
    met = batched * 1000 < TARGET_MS
    print(
        f"target: all pairs under {TARGET_MS:g} ms -> {batched * 1000:.1f} ms, "
        f"{'met' if met else 'MISSED'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
