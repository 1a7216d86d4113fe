"""Seed 001's pairing: run a queue two jobs at a time, the pairs chosen by matching.

A queue runs on one server, one pair at a time (the next pair starts when
both jobs of the last one have finished). Jobs i and j together take

    w_ij = max(T_i (1 + d_ij / 100), T_j (1 + d_ji / 100))

with T the run times alone and d_ij how much j slows i (percent). A pair
whose w_ij exceeds T_i + T_j runs its two jobs one after the other
instead, so it costs min(w_ij, T_i + T_j); with an odd queue one job runs
alone. The makespan is the sum of the pairs' costs; FIFO, the baseline,
runs every job alone in turn (sum of T).

* ``blossom``: a minimum-weight perfect matching (networkx's blossom
  algorithm) over the pairs' costs, a job left alone pairing with a dummy
  at cost T_i. Seed 001 matches on w and serialises bad pairs afterwards;
  matching on the cost they are then charged is the same rule made
  optimal for it.
* ``greedy``: pairs taken in increasing w, each job once, as seed 001's
  greedy strategy does; the rest run alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

ALONE = -1


@dataclasses.dataclass(frozen=True)
class Pairing:
    """Pairs (i, j), i < j, and jobs run alone as (i, ALONE), in running order."""

    pairs: tuple[tuple[int, int], ...]
    #: Pairs whose jobs run one after the other, being too slow together.
    serial: frozenset[tuple[int, int]]
    makespan: float


def together(runtimes: np.ndarray, degradation: np.ndarray) -> np.ndarray:
    """w_ij for every pair: the longer of the two degraded run times."""
    slowed = runtimes[:, None] * (1.0 + np.maximum(degradation, 0.0) / 100.0)
    return np.maximum(slowed, slowed.T)


def _check(runtimes: Sequence[float], degradation) -> tuple[np.ndarray, np.ndarray]:
    times = np.asarray(runtimes, dtype=float)
    table = np.asarray(degradation, dtype=float)
    if times.ndim != 1 or table.shape != (len(times), len(times)):
        raise ValueError("degradation must be an n x n table for n run times")
    if not (np.isfinite(times).all() and np.isfinite(table).all()) or (times <= 0).any():
        raise ValueError("run times must be positive and degradations finite")
    return times, table


def _pairing(pairs: list[tuple[int, int]], times: np.ndarray, w: np.ndarray) -> Pairing:
    serial = set()
    makespan = 0.0
    for i, j in pairs:
        if j == ALONE:
            makespan += times[i]
        elif w[i, j] > times[i] + times[j]:
            serial.add((i, j))
            makespan += times[i] + times[j]
        else:
            makespan += w[i, j]
    return Pairing(tuple(pairs), frozenset(serial), float(makespan))


def cost_of(times: np.ndarray, w: np.ndarray) -> np.ndarray:
    """What each pair is charged: together, or one after the other if that is quicker."""
    return np.minimum(w, times[:, None] + times[None, :])


def blossom(runtimes: Sequence[float], degradation) -> Pairing:
    """The pairing of least makespan (minimum-weight perfect matching)."""
    import networkx as nx

    times, table = _check(runtimes, degradation)
    count = len(times)
    w = together(times, table)
    cost = cost_of(times, w)
    graph = nx.Graph()
    graph.add_nodes_from(range(count))
    for i in range(count):
        for j in range(i + 1, count):
            graph.add_edge(i, j, weight=float(cost[i, j]))
    if count % 2:
        for i in range(count):
            graph.add_edge(i, ALONE, weight=float(times[i]))
    matched = nx.min_weight_matching(graph)
    pairs = []
    for a, b in matched:
        if ALONE in (a, b):
            pairs.append((max(a, b), ALONE))
        else:
            pairs.append((min(a, b), max(a, b)))
    return _pairing(sorted(pairs), times, w)


def greedy(runtimes: Sequence[float], degradation) -> Pairing:
    """Pairs in increasing w, each job once; the jobs left run alone."""
    times, table = _check(runtimes, degradation)
    count = len(times)
    w = together(times, table)
    upper = np.triu_indices(count, k=1)
    order = np.argsort(w[upper], kind="stable")
    taken = np.zeros(count, dtype=bool)
    pairs = []
    for index in order.tolist():
        i, j = int(upper[0][index]), int(upper[1][index])
        if not taken[i] and not taken[j]:
            taken[i] = taken[j] = True
            pairs.append((i, j))
    pairs += [(i, ALONE) for i in range(count) if not taken[i]]
    return _pairing(pairs, times, w)


def fifo(runtimes: Sequence[float]) -> float:
    """The makespan of running every job alone, in turn."""
    return float(np.sum(np.asarray(runtimes, dtype=float)))


def realised(pairing: Pairing, runtimes: Sequence[float], degradation) -> float:
    """The makespan a pairing chosen on predictions takes under the true degradations.

    The choice to run a pair one after the other was made on the
    predictions and stands; a pair run together takes its true w, however
    much longer than serial that turns out to be.
    """
    times, table = _check(runtimes, degradation)
    w = together(times, table)
    total = 0.0
    for i, j in pairing.pairs:
        if j == ALONE:
            total += times[i]
        elif (i, j) in pairing.serial:
            total += times[i] + times[j]
        else:
            total += w[i, j]
    return float(total)
