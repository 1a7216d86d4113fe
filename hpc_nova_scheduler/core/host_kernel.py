"""Seed 003's MDOBP over every host, compiled (numba).

The same greedy as :func:`~hpc_nova_scheduler.core.algorithm.plan` for a
request that is not ExtremeHPC, under cosine packing, on a cloud whose only
topology level is the rack, without a tenant's topology constraints or a
judge of co-runners: the hosts' free resources, cache totals and SyncHPC
flags are arrays, and one call scores every host of a processor group,
orders the racks (seed 003: most room first) and runs the greedy with a heap.

Every float is the planner's own: the same operations in the same order as
its one-host functions (``vm_copies``, ``fits_one``, ``CacheRule``,
``_cosine_key_one``), which numba compiles without fast-math, so IEEE
arithmetic is kept to the bit; the tests replay both and require the same
hosts VM by VM. Compiled code is cached beside this module (numba's
``cache=True``): a process pays the compilation once per machine, then a
load of a fraction of a second.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: The planner's slack on resources (algorithm._SLACK) and on thresholds
#: (criteria.EPSILON), and its grid for cosine keys (algorithm._GRID).
SLACK = 1e-9
EPSILON = 1e-9
GRID = 2.0**30

#: Columns of the per-candidate key: most significant first; the host's row
#: is always the last column that is read, so keys never tie.
KEY_COLUMNS = 4


@njit(cache=True)
def copies_of(f0: float, f1: float, f2: float, d0: float, d1: float, d2: float) -> float:
    """``vm_copies`` of one host: how many VMs of (d0, d1, d2) fit."""
    copies = 0.0
    asked = False
    for free, need in ((f0, d0), (f1, d1), (f2, d2)):
        if need > 0:
            each = np.floor((free + SLACK) / need)
            copies = each if not asked else min(copies, each)
            asked = True
    return max(copies, 0.0) if asked else 0.0


@njit(cache=True)
def fits(f0: float, f1: float, f2: float, d0: float, d1: float, d2: float) -> bool:
    """``fits_one``: one more VM fits in these free resources."""
    if d0 > 0 and not d0 <= f0 + SLACK:
        return False
    if d1 > 0 and not d1 <= f1 + SLACK:
        return False
    return not (d2 > 0 and not d2 <= f2 + SLACK)


@njit(cache=True)
def admits(cache: float, sync: bool, score: float, sync_request: bool, alpha: float, beta: float):
    """``CacheRule.admits_one``: one more VM stays within alpha and beta."""
    total = cache + score
    if total > alpha + EPSILON:
        return False
    return not ((sync or sync_request) and total > beta + EPSILON)


@njit(cache=True)
def cosine_key(f0: float, f1: float, c0: float, c1: float, d0: float, d1: float):
    """``_cosine_key_one``: (-cosine, residual after placement), quantised."""
    dot = norm_r = norm_q = after = 0.0
    for free, total, need in ((f0, c0, d0), (f1, c1, d1)):
        r = free / total if total > 0 else 0.0
        q = need / total if total > 0 else 0.0
        dot = dot + r * q
        norm_r = norm_r + r * r
        norm_q = norm_q + q * q
        gap = r - q
        after = after + gap * gap
    cosine = 1.0 if norm_q == 0 or norm_r == 0 else dot / math.sqrt(norm_r * norm_q)
    return -np.rint(cosine * GRID), np.rint(math.sqrt(after) * GRID)


@njit(cache=True)
def _before(keys: np.ndarray, a: int, b: int) -> bool:
    for column in range(keys.shape[1]):
        if keys[a, column] != keys[b, column]:
            return keys[a, column] < keys[b, column]
    return False


@njit(cache=True)
def _sift_down(heap: np.ndarray, size: int, at: int, keys: np.ndarray) -> None:
    while True:
        child = 2 * at + 1
        if child >= size:
            return
        if child + 1 < size and _before(keys, heap[child + 1], heap[child]):
            child += 1
        if not _before(keys, heap[child], heap[at]):
            return
        heap[at], heap[child] = heap[child], heap[at]
        at = child


@njit(cache=True)
def _keys_of(keys, i, row, rank, f0, f1, c0, c1, d0, d1, ranked, copies):
    """Candidate ``i``'s sort key: ranked (seed 003's rack order), (rack
    rank, residual, more VMs first, row); else (-cosine, residual, row)."""
    cosine, residual = cosine_key(f0, f1, c0, c1, d0, d1)
    if ranked:
        keys[i, 0] = rank
        keys[i, 1] = residual
        keys[i, 2] = -copies
        keys[i, 3] = row
    else:
        keys[i, 0] = cosine
        keys[i, 1] = residual
        keys[i, 2] = row
        keys[i, 3] = 0.0


@njit(cache=True)
def plan(
    free: np.ndarray,
    capacity: np.ndarray,
    cache: np.ndarray,
    sync: np.ndarray,
    rack: np.ndarray,
    group: np.ndarray,
    in_group: int,
    demand: np.ndarray,
    count: int,
    score: float,
    sync_request: bool,
    cache_rule: bool,
    alpha: float,
    beta: float,
    ranked: bool,
    chosen: np.ndarray,
    scratch: tuple,
) -> tuple[int, int]:
    """Place ``count`` VMs on the hosts of processor group ``in_group`` (-1:
    every host); write each VM's host to ``chosen`` in placement order.

    Returns (VMs placed, room): all ``count`` placed; or fewer with room the
    most VMs those hosts hold (the request is refused: its room fell short
    before any packing, or the greedy ran out of admissible hosts). Changes
    nothing but ``chosen`` and ``scratch`` (per host: keys, candidates,
    heap, per rack: room and rank, per candidate: its load).
    """
    keys, candidates, heap, rack_room, rack_rank, load, load_cache, load_sync = scratch
    d0, d1, d2 = demand[0], demand[1], demand[2]
    hosts = free.shape[0]
    racks = rack_room.shape[0]
    rack_room[:] = 0.0
    room = 0.0
    admissible = 0
    for row in range(hosts):
        if in_group >= 0 and group[row] != in_group:
            continue
        copies = copies_of(free[row, 0], free[row, 1], free[row, 2], d0, d1, d2)
        # Seed 003 orders racks by what they could take, thresholds aside.
        rack_room[rack[row]] += copies
        if copies < 1:
            continue
        if cache_rule and not admits(cache[row], sync[row], score, sync_request, alpha, beta):
            continue
        held = copies
        if cache_rule and score > 0:
            # CacheRule.room: what the thresholds leave.
            if sync_request and beta <= alpha:
                held = min(held, max(np.floor((beta + EPSILON - cache[row]) / score), 0.0))
            else:
                held = min(held, max(np.floor((alpha + EPSILON - cache[row]) / score), 0.0))
                if sync[row] or sync_request:
                    held = min(held, max(np.floor((beta + EPSILON - cache[row]) / score), 0.0))
        room += held
        candidates[admissible] = row
        keys[admissible, 2] = copies
        admissible += 1
    if count > 1 and room < count:
        return 0, int(room)
    if ranked:
        # Most room first, then the rack's number (a stable sort).
        order = np.argsort(-rack_room, kind="mergesort")
        for position in range(racks):
            rack_rank[order[position]] = position
    for i in range(admissible):
        row = candidates[i]
        _keys_of(
            keys,
            i,
            row,
            rack_rank[rack[row]],
            free[row, 0],
            free[row, 1],
            capacity[row, 0],
            capacity[row, 1],
            d0,
            d1,
            ranked,
            keys[i, 2],
        )
        heap[i] = i
        load[i, 0] = free[row, 0]
        load[i, 1] = free[row, 1]
        load[i, 2] = free[row, 2]
        load_cache[i] = cache[row]
        load_sync[i] = sync[row]
    size = admissible
    for at in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, at, keys)
    placed = 0
    while placed < count:
        if size == 0:
            return placed, placed
        i = heap[0]
        row = candidates[i]
        load[i, 0] -= d0
        load[i, 1] -= d1
        load[i, 2] -= d2
        load_cache[i] += score
        load_sync[i] = load_sync[i] or sync_request
        chosen[placed] = row
        placed += 1
        if fits(load[i, 0], load[i, 1], load[i, 2], d0, d1, d2) and (
            not cache_rule or admits(load_cache[i], load_sync[i], score, sync_request, alpha, beta)
        ):
            # Its key changes; the rest keep theirs (the host's tie-break
            # inside its rack is its room when the request began).
            cosine, residual = cosine_key(
                load[i, 0], load[i, 1], capacity[row, 0], capacity[row, 1], d0, d1
            )
            if ranked:
                keys[i, 1] = residual
            else:
                keys[i, 0] = cosine
                keys[i, 1] = residual
        else:
            size -= 1
            heap[0] = heap[size]
        _sift_down(heap, size, 0, keys)
    return placed, int(room)


@njit(cache=True)
def runs(chosen: np.ndarray, placed: int, rows: np.ndarray, vms: np.ndarray) -> int:
    """The first ``placed`` VMs of a plan as runs of one host: each run's
    host to ``rows``, its VMs to ``vms``, in placement order; how many runs."""
    count = 0
    for i in range(placed):
        if count and rows[count - 1] == chosen[i]:
            vms[count - 1] += 1
        else:
            rows[count] = chosen[i]
            vms[count] = 1
            count += 1
    return count


@njit(cache=True)
def place(free, cache, rows, vms, demand, score) -> None:
    """``vms[i]`` VMs of ``demand`` on host ``rows[i]``, one at a time (the
    floats of ClusterState's apply): free resources less, cache totals more."""
    for i in range(rows.shape[0]):
        row = rows[i]
        for _ in range(vms[i]):
            free[row, 0] -= demand[0]
            free[row, 1] -= demand[1]
            free[row, 2] -= demand[2]
            cache[row] += score


@njit(cache=True)
def give_back(free, rows, vms, demand) -> None:
    """``vms[i]`` VMs of ``demand`` leave host ``rows[i]``, one at a time."""
    for i in range(rows.shape[0]):
        row = rows[i]
        for _ in range(vms[i]):
            free[row, 0] += demand[0]
            free[row, 1] += demand[1]
            free[row, 2] += demand[2]


def scratch_for(hosts: int, racks: int) -> tuple:
    """The working arrays :func:`plan` needs for a cloud of this size."""
    return (
        np.zeros((hosts, KEY_COLUMNS)),
        np.zeros(hosts, dtype=np.int64),
        np.zeros(hosts, dtype=np.int64),
        np.zeros(racks),
        np.zeros(racks),
        np.zeros((hosts, 3)),
        np.zeros(hosts),
        np.zeros(hosts, dtype=np.bool_),
    )
