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
def fits(f0: float, f1: float, f2: float, d0: float, d1: float, d2: float) -> bool:
    """``fits_one``: one more VM fits in these free resources."""
    if d0 > 0 and not d0 <= f0 + SLACK:
        return False
    if d1 > 0 and not d1 <= f1 + SLACK:
        return False
    return not (d2 > 0 and not d2 <= f2 + SLACK)


@njit(cache=True)
def copies_of(f0: float, f1: float, f2: float, d0: float, d1: float, d2: float) -> float:
    """``vm_copies`` of one host: how many VMs of (d0, d1, d2) fit."""
    if not fits(f0, f1, f2, d0, d1, d2):
        # Comparisons alone tell (a busy cloud's full hosts cost no
        # division): where one more VM does not fit, no quotient reaches 1.
        return 0.0
    copies = 0.0
    asked = False
    for free, need in ((f0, d0), (f1, d1), (f2, d2)):
        if need > 0:
            each = np.floor((free + SLACK) / need)
            copies = each if not asked else min(copies, each)
            asked = True
    return max(copies, 0.0) if asked else 0.0


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
def _sift_down(heap: np.ndarray, size: int, at: int, keys: np.ndarray, largest: bool) -> None:
    """Restore the heap below ``at``: smallest key first (``largest``: largest)."""
    while True:
        child = 2 * at + 1
        if child >= size:
            return
        if child + 1 < size and _before(keys, heap[child + 1], heap[child]) != largest:
            child += 1
        if _before(keys, heap[child], heap[at]) == largest:
            return
        heap[at], heap[child] = heap[child], heap[at]
        at = child


@njit(cache=True)
def _keys_of(keys, i, row, rank, cosine, residual, ranked, copies):
    """Candidate ``i``'s sort key: ranked (seed 003's rack order), (rack
    rank, residual, more VMs first, row); else (-cosine, residual, row)."""
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
    sync_vms: np.ndarray,
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
    nothing but ``chosen`` and ``scratch`` (:func:`scratch_for`: working
    arrays, and what is kept between plans: each host's cosine key and
    copies of the last demand, each rack's room for it).
    """
    keys, candidates, rack_room, rack_held = scratch[0], scratch[1], scratch[3], scratch[5]
    host_copies, rack_copies, copies_for = scratch[12], scratch[13], scratch[14]
    d0, d1, d2 = demand[0], demand[1], demand[2]
    hosts = free.shape[0]
    racks = rack_room.shape[0]
    kept_copies = copies_for[0] == d0 and copies_for[1] == d1 and copies_for[2] == d2
    # The hosts' state and the request, as the helpers below read them.
    cloud = (free, capacity, cache, sync_vms, rack)
    asked = (demand, count, score, sync_request, cache_rule, alpha, beta)
    if count == 1 and not ranked:
        return _plan_one(cloud, group, in_group, asked, chosen)
    if ranked and in_group < 0:
        if not kept_copies:
            keep_copies(free, rack, demand, scratch)
        return _plan_ranked(cloud, asked, chosen, scratch)
    rack_room[:] = 0.0
    rack_held[:] = 0.0
    room = 0.0
    admissible = 0
    # Every host's copies are kept for this demand where the pass sees
    # every host (place and release keep them).
    keep = in_group < 0
    if keep:
        copies_for[0], copies_for[1], copies_for[2] = d0, d1, d2
    # Copies of at least 1 are exactly where one more VM fits (a quotient
    # reaches 1 where its dividend reaches the divisor), if the demand
    # asks for anything.
    asks = d0 > 0 or d1 > 0 or d2 > 0
    last0 = last1 = last2 = copies = np.nan
    for row in range(hosts):
        if in_group >= 0 and group[row] != in_group:
            continue
        f0, f1, f2 = free[row, 0], free[row, 1], free[row, 2]
        if not (f0 == last0 and f1 == last1 and f2 == last2):
            # (Hosts alike lie together: the last host's copies are often these.)
            copies = copies_of(f0, f1, f2, d0, d1, d2)
            last0, last1, last2 = f0, f1, f2
        if keep:
            host_copies[row] = copies
        # A host that fits no VM adds nothing to its rack's room (a demand
        # of nothing fits every host, as fits_one says, with no copies).
        if copies < 1 and asks:
            continue
        # Seed 003 orders racks by what they could take, thresholds aside.
        rack_room[rack[row]] += copies
        held = _held(
            copies, cache[row], sync_vms[row] > 0, score, sync_request, cache_rule, alpha, beta
        )
        if held < 0:
            continue
        room += held
        # (A request of one VM reaches the first rack with an admissible host.)
        rack_held[rack[row]] += 1.0 if count == 1 else held
        candidates[admissible] = row
        keys[admissible, 2] = copies
        admissible += 1
    if keep:
        rack_copies[:] = rack_room
    if count > 1 and room < count:
        return 0, int(room)
    last_rank = racks
    rack_rank = scratch[4]
    if ranked:
        # Most room first, then the rack's number (a stable sort). The rack
        # rank leads every host's key, so the greedy fills racks in rank
        # order, each until its hosts admit no more: the racks after the
        # first whose rooms so far hold the request are never reached.
        order = np.argsort(-rack_room, kind="mergesort")
        held_so_far = 0.0
        for position in range(racks):
            rack_rank[order[position]] = position
            held_so_far += rack_held[order[position]]
            if last_rank == racks and held_so_far >= count:
                last_rank = position
    return _greedy(cloud, asked, ranked, chosen, scratch, admissible, last_rank, room)


@njit(cache=True)
def keep_copies(free, rack, demand, scratch) -> None:
    """Keep every host's copies of ``demand``, and each rack's sum of them
    (what :func:`_plan_ranked` orders the racks by): one pass that reads
    nothing else of a host, and reuses the last host's copies for hosts
    alike (they lie together)."""
    host_copies, rack_copies, copies_for = scratch[12], scratch[13], scratch[14]
    d0, d1, d2 = demand[0], demand[1], demand[2]
    rack_copies[:] = 0.0
    last0 = last1 = last2 = copies = np.nan
    for row in range(free.shape[0]):
        f0, f1, f2 = free[row, 0], free[row, 1], free[row, 2]
        if not (f0 == last0 and f1 == last1 and f2 == last2):
            copies = copies_of(f0, f1, f2, d0, d1, d2)
            last0, last1, last2 = f0, f1, f2
        host_copies[row] = copies
        rack_copies[rack[row]] += copies
    copies_for[0], copies_for[1], copies_for[2] = d0, d1, d2


@njit(cache=True)
def _plan_one(cloud, group, in_group, asked, chosen):
    """:func:`plan` of one VM, unranked: the admissible host with the
    smallest (-cosine, residual, row). A host in the same state as the
    last one read (hosts alike lie together) is passed over: it is
    admitted as that one was, with the same key and a later row."""
    free, capacity, cache, sync_vms, _ = cloud
    demand, _, score, sync_request, cache_rule, alpha, beta = asked
    d0, d1, d2 = demand[0], demand[1], demand[2]
    best_row = -1
    best_cosine = best_residual = np.inf
    last0 = last1 = last2 = last_c0 = last_c1 = last_total = np.nan
    last_sync = False
    for row in range(free.shape[0]):
        if in_group >= 0 and group[row] != in_group:
            continue
        f0, f1, f2 = free[row, 0], free[row, 1], free[row, 2]
        c0, c1, total, sync = capacity[row, 0], capacity[row, 1], cache[row], sync_vms[row] > 0
        if (
            f0 == last0
            and f1 == last1
            and f2 == last2
            and c0 == last_c0
            and c1 == last_c1
            and total == last_total
            and sync == last_sync
        ):
            continue
        last0, last1, last2, last_c0, last_c1 = f0, f1, f2, c0, c1
        last_total, last_sync = total, sync
        if not fits(f0, f1, f2, d0, d1, d2):
            continue
        if cache_rule and not admits(total, sync, score, sync_request, alpha, beta):
            continue
        cosine, residual = cosine_key(f0, f1, c0, c1, d0, d1)
        if cosine < best_cosine or (cosine == best_cosine and residual < best_residual):
            best_row, best_cosine, best_residual = row, cosine, residual
    if best_row < 0:
        return 0, 0
    chosen[0] = best_row
    return 1, 1


@njit(cache=True)
def _held(copies, cache, sync, score, sync_request, cache_rule, alpha, beta) -> float:
    """How many VMs of the request a host that fits ``copies`` takes within
    the thresholds (CacheRule.room); -1 where they admit none."""
    if cache_rule and not admits(cache, sync, score, sync_request, alpha, beta):
        return -1.0
    held = copies
    if cache_rule and score > 0:
        if sync_request and beta <= alpha:
            held = min(held, max(np.floor((beta + EPSILON - cache) / score), 0.0))
        else:
            held = min(held, max(np.floor((alpha + EPSILON - cache) / score), 0.0))
            if sync or sync_request:
                held = min(held, max(np.floor((beta + EPSILON - cache) / score), 0.0))
    return held


@njit(cache=True)
def _plan_ranked(cloud, asked, chosen, scratch):
    """:func:`plan` of a ranked request over every host, with each rack's
    room kept for its demand: the racks in rank order, each host of a rack
    read only until the racks so far hold the request (on a cloud of
    hundreds of racks, a few of them)."""
    _, _, cache, sync_vms, _ = cloud
    demand, count, score, sync_request, cache_rule, alpha, beta = asked
    asks = demand[0] > 0 or demand[1] > 0 or demand[2] > 0
    keys, candidates = scratch[0], scratch[1]
    rack_rank = scratch[4]
    host_copies, rack_copies = scratch[12], scratch[13]
    rack_first, rack_hosts = scratch[15], scratch[16]
    racks = rack_copies.shape[0]
    order = np.argsort(-rack_copies, kind="mergesort")
    room = 0.0
    reached = 0.0
    admissible = 0
    last_rank = racks
    for position in range(racks):
        at = order[position]
        rack_rank[at] = position
        for slot in range(rack_first[at], rack_first[at + 1]):
            row = rack_hosts[slot]
            # The kept copies of this demand tell where one more VM fits
            # (as in plan()'s own pass).
            copies = host_copies[row]
            if copies < 1 and asks:
                continue
            held = _held(
                copies, cache[row], sync_vms[row] > 0, score, sync_request, cache_rule, alpha, beta
            )
            if held < 0:
                continue
            room += held
            reached += 1.0 if count == 1 else held
            candidates[admissible] = row
            keys[admissible, 2] = copies
            admissible += 1
        if reached >= count:
            last_rank = position
            break
    if count > 1 and room < count:
        return 0, int(room)
    return _greedy(cloud, asked, True, chosen, scratch, admissible, last_rank, room)


@njit(cache=True)
def _greedy(cloud, asked, ranked, chosen, scratch, admissible, last_rank, room):
    """The greedy over the ``admissible`` candidates (racks up to rank
    ``last_rank`` where ranked); ``room``: theirs, told on a refusal."""
    free, capacity, cache, sync_vms, rack = cloud
    demand, count, score, sync_request, cache_rule, alpha, beta = asked
    keys, candidates, heap, rack_rank = scratch[0], scratch[1], scratch[2], scratch[4]
    load, load_cache, load_sync, host_keys, keyed, keyed_for = scratch[6:12]
    d0, d1, d2 = demand[0], demand[1], demand[2]
    if keyed_for[0] != d0 or keyed_for[1] != d1 or keyed_for[2] != d2:
        # Each host's cosine key is kept until the host changes (the
        # caller clears ``keyed``) or a plan asks for another demand.
        keyed[:] = False
        keyed_for[0], keyed_for[1], keyed_for[2] = d0, d1, d2
    kept = 0
    last0 = last1 = last_c0 = last_c1 = last_cosine = last_residual = np.nan
    for i in range(admissible):
        row = candidates[i]
        if ranked and rack_rank[rack[row]] > last_rank:
            continue
        candidates[kept] = row
        if not keyed[row]:
            f0, f1, c0, c1 = free[row, 0], free[row, 1], capacity[row, 0], capacity[row, 1]
            if not (f0 == last0 and f1 == last1 and c0 == last_c0 and c1 == last_c1):
                # (Equal floats give equal keys, 0.0 and -0.0 alike; hosts
                # alike lie together, so the last key is often this one.)
                last_cosine, last_residual = cosine_key(f0, f1, c0, c1, d0, d1)
                last0, last1, last_c0, last_c1 = f0, f1, c0, c1
            host_keys[row, 0] = last_cosine
            host_keys[row, 1] = last_residual
            keyed[row] = True
        _keys_of(
            keys,
            kept,
            row,
            rack_rank[rack[row]],
            host_keys[row, 0],
            host_keys[row, 1],
            ranked,
            keys[i, 2],
        )
        kept += 1
    # The greedy takes the untouched hosts in key order, at most one per
    # VM: only the ``count`` smallest keys can be reached. Kept in a
    # bounded heap of the largest first, then made the greedy's heap.
    size = min(kept, count)
    for i in range(size):
        heap[i] = i
    for at in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, at, keys, True)
    for i in range(size, kept):
        if _before(keys, i, heap[0]):
            heap[0] = i
            _sift_down(heap, size, 0, keys, True)
    for at in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, at, keys, False)
    for at in range(size):
        i = heap[at]
        row = candidates[i]
        load[i, 0] = free[row, 0]
        load[i, 1] = free[row, 1]
        load[i, 2] = free[row, 2]
        load_cache[i] = cache[row]
        load_sync[i] = sync_vms[row] > 0
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
        _sift_down(heap, size, 0, keys, False)
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
def _changed(scratch, rack, free, row) -> None:
    """Host ``row``'s free resources changed: its kept cosine key is stale,
    and its copies (and its rack's room) for the kept demand move."""
    scratch[10][row] = False
    host_copies, rack_copies, copies_for = scratch[12], scratch[13], scratch[14]
    if copies_for[0] == copies_for[0]:  # (NaN: none kept yet)
        f0, f1, f2 = free[row, 0], free[row, 1], free[row, 2]
        copies = copies_of(f0, f1, f2, copies_for[0], copies_for[1], copies_for[2])
        rack_copies[rack[row]] += copies - host_copies[row]
        host_copies[row] = copies


@njit(cache=True)
def place(state, tally, scratch, rack, chosen, placed, app, demand, score, sync_request):
    """Place the VMs of application ``app`` on ``chosen[:placed]`` (a host
    per VM, in placement order): free resources less and cache totals more
    one VM at a time (ClusterState's floats), and on each host one run of
    the application's VMs after the runs already there. Returns its hosts,
    ascending; empty, changing nothing, where a host has no run left
    (``run_app``'s columns): the caller widens the arrays and asks again.

    ``state``: per host, free resources, cache total, SyncHPC VMs, and its
    runs (applications, VMs, how many runs)."""
    free, cache, sync_vms, run_app, run_vms, run_count = state
    hosts = np.empty(placed, dtype=np.int64)
    count = 0
    for i in range(placed):
        row = chosen[i]
        if tally[row] == 0:
            hosts[count] = row
            count += 1
        tally[row] += 1
    full = False
    for i in range(count):
        if run_count[hosts[i]] >= run_app.shape[1]:
            full = True
    if full:
        for i in range(count):
            tally[hosts[i]] = 0
        return hosts[:0]
    for i in range(placed):
        row = chosen[i]
        free[row, 0] -= demand[0]
        free[row, 1] -= demand[1]
        free[row, 2] -= demand[2]
        cache[row] += score
    for i in range(count):
        row = hosts[i]
        at = run_count[row]
        run_app[row, at] = app
        run_vms[row, at] = tally[row]
        run_count[row] = at + 1
        _changed(scratch, rack, free, row)
        if sync_request:
            sync_vms[row] += tally[row]
        tally[row] = 0
    return np.sort(hosts[:count])


@njit(cache=True)
def release(state, scratch, rack, app_score, hosts, app, demand, sync_request) -> None:
    """Take application ``app``'s VMs off ``hosts``: free resources more one
    VM at a time, its run gone, and each host's cache total summed afresh
    over the runs that stay, in placement order (as ClusterState does).
    ``state``: as :func:`place`'s."""
    free, cache, sync_vms, run_app, run_vms, run_count = state
    for i in range(hosts.shape[0]):
        row = hosts[i]
        runs_here = run_count[row]
        at = 0
        while run_app[row, at] != app:
            at += 1
        vms = run_vms[row, at]
        for _ in range(vms):
            free[row, 0] += demand[0]
            free[row, 1] += demand[1]
            free[row, 2] += demand[2]
        if sync_request:
            sync_vms[row] -= vms
        for later in range(at + 1, runs_here):
            run_app[row, later - 1] = run_app[row, later]
            run_vms[row, later - 1] = run_vms[row, later]
        run_count[row] = runs_here - 1
        _changed(scratch, rack, free, row)
        total = 0.0
        for kept in range(runs_here - 1):
            score = app_score[run_app[row, kept]]
            for _ in range(run_vms[row, kept]):
                total += score
        cache[row] = total


#: Where the scratch arrays keep each rack's copies of the kept demand, and
#: that demand (NaN: none yet).
RACK_COPIES = 13
COPIES_FOR = 14


def scratch_for(rack: np.ndarray, racks: int) -> tuple:
    """The working arrays :func:`plan` needs for hosts in racks ``rack``
    (each host's rack number, of ``racks``), with each rack's hosts."""
    hosts = len(rack)
    rack_hosts = np.argsort(rack, kind="stable").astype(np.int64)
    rack_first = np.zeros(racks + 1, dtype=np.int64)
    rack_first[1:] = np.cumsum(np.bincount(rack, minlength=racks))
    return (
        np.zeros((hosts, KEY_COLUMNS)),  # 0: per candidate, its sort key
        np.zeros(hosts, dtype=np.int64),  # 1: the candidates' rows
        np.zeros(hosts, dtype=np.int64),  # 2: the greedy's heap
        np.zeros(racks),  # 3: per rack, its room (copies)
        np.zeros(racks),  # 4: per rack, its rank
        np.zeros(racks),  # 5: per rack, what the thresholds let it hold
        np.zeros((hosts, 3)),  # 6: per candidate, its free resources
        np.zeros(hosts),  # 7: ... its cache total
        np.zeros(hosts, dtype=np.bool_),  # 8: ... whether it runs SyncHPC
        np.zeros((hosts, 2)),  # 9: kept: per host, its cosine key
        np.zeros(hosts, dtype=np.bool_),  # 10: kept: whether it is current
        np.full(3, np.nan),  # 11: kept: the demand of those keys
        np.zeros(hosts),  # 12: kept: per host, its copies
        np.zeros(racks),  # 13 (RACK_COPIES): kept: per rack, their sum
        np.full(3, np.nan),  # 14 (COPIES_FOR): kept: the demand of those
        rack_first,  # 15: where each rack's hosts start in 16
        rack_hosts,  # 16: the hosts by rack, ascending within each
    )
