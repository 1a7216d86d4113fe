"""Seed 003's MDOBP, and Nova's weighers, over every host, compiled (numba).

The same greedy as :func:`~hpc_nova_scheduler.core.algorithm.plan` for a
request that is not ExtremeHPC, under cosine packing or Nova's RAM and CPU
weighers, on a cloud whose only topology level is the rack, without a
tenant's topology constraints or a judge of co-runners. The hosts' free
resources, cache totals and SyncHPC flags are arrays, and hosts in the
same state are kept together (a state table, settled by every placement
and release), so a plan scores states, not hosts:

* unranked cosine plans and Nova's weighers score each state once and pick
  the reachable hosts in one pass over the hosts' state numbers;
* ranked plans (seed 003: racks, most room first) read racks in rank order
  only until they hold the request, from each rack's kept room;
* the greedy runs over groups of hosts alike (a state's untouched hosts,
  and hosts touched as often from one group), which share a key: a wide
  job costs a few heap steps per group, not per VM.

Every float is the planner's own: the same operations in the same order as
its one-host functions (``vm_copies``, ``fits_one``, ``CacheRule``,
``_cosine_key_one``, ``nova.weights.normalize``), which numba compiles
without fast-math, so IEEE arithmetic is kept to the bit; the tests replay
both and require the same hosts VM by VM. Compiled code is cached beside
this module (numba's ``cache=True``): a process pays the compilation once
per machine, then a load of a fraction of a second.
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

#: Where the scratch arrays keep each rack's copies of the kept demand, and
#: that demand (NaN: none yet).
RACK_COPIES = 13
COPIES_FOR = 14
#: The racks in the order of the last ranked plan (most room first, then
#: the rack's number), which the next one sorts again from.
RACK_ORDER = 17
#: Per rack, what the thresholds let its hosts hold of the kept ranked
#: request (the sum of each host's held VMs), whether that is stale (a host
#: of the rack changed since, or it was never read), and the request it is
#: kept for: demand, cache score, SyncHPC, cache rule, alpha, beta (NaN:
#: none yet). A ranked request refused for want of room is asked again, as
#: it is, once hosts are freed: its room is then the kept racks' sums and
#: the stale racks' hosts, not every host of every rack with room.
RACK_HELD = 18
RACK_STALE = 19
HELD_FOR = 20

#: A state's key: free cores, RAM, disk; capacity in cores and RAM; cache
#: total; 1.0 where it runs SyncHPC VMs; processor group.
KEY_SIZE = 8

#: Where the states tuple keeps what the kernel reads: per host its state;
#: per state its key and hosts; the states that have hosts.
HOST_STATE = 0
STATE_KEY = 1
STATE_HOSTS = 2
LIVE = 3
#: How many states have hosts (LIVE's first entries), and spare numbers.
COUNTERS = 5
#: Per state, working arrays of a plan: its rank, the admitted states, and
#: each one's cosine key.
RANK = 9
ADMITTED = 10
STATE_COSINE = 11
#: Per state, its group in a plan, and the rank of the rack of that group
#: (ranked plans; -1 between plans); per candidate, the next host of its
#: group, and the rank of its rack.
GROUP_OF = 15
SEEN_IN = 16
FOLLOWER = 17
IN_RACK = 18
#: States at one point (free resources, capacity and processor group: all
#: that a VM's fit and cosine key read of a host) differ only in their
#: cache total and SyncHPC: per state its point and the next and previous
#: state of that point (``LINK_*`` columns); per point its key
#: (``POINT_KEY_SIZE`` columns), and its states, place in POINT_LIVE,
#: first state and hash (``POINT_*`` columns); the points with states
#: (COUNTERS[2] of them; COUNTERS[3] spare numbers in POINT_SPARE), and a
#: hash table of the points' keys. A one-VM plan scores points, not
#: states (:func:`_plan_one`).
STATE_LINKS = 19
POINT_KEY = 20
POINT_INTS = 21
POINT_LIVE = 22
POINT_SPARE = 23
POINT_TABLE = 24
#: Working arrays of a one-VM plan: per point its copies and cosine key,
#: and the points that fit.
POINT_SCORE = 25
POINT_ORDER = 26
#: Per state, at most the row of its first host: set as the state's first
#: host joins, lowered as a host joins below it, raised by a one-VM plan
#: past the rows it read that are not the state's. A one-VM plan reads the
#: rows of its admitted states from there, not every row from the first.
FIRST_ROW = 27
#: Per point, at most the least cache total of its states that run no
#: SyncHPC VM (column 0) and of those that do (column 1): lowered as a
#: state joins, made exact again when a plan reads the point's states.
#: The thresholds admit a state only if they admit one of these (they
#: admit less as the cache total grows), so a point whose bounds are not
#: admitted is not read.
POINT_LOW = 28
LINK_POINT, LINK_NEXT, LINK_PREVIOUS = 0, 1, 2
POINT_STATES, POINT_WHERE, POINT_FIRST, POINT_HASH = 0, 1, 2, 3
#: The state key's columns a point keeps: free cores, RAM, disk; capacity
#: in cores and RAM; processor group.
POINT_COLUMNS = (0, 1, 2, 3, 4, 7)
POINT_KEY_SIZE = 6


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


@njit(cache=True, inline="always")
def _before(keys: np.ndarray, a: int, b: int) -> bool:
    for column in range(keys.shape[1]):
        if keys[a, column] != keys[b, column]:
            return keys[a, column] < keys[b, column]
    return False


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def _sift_up(heap: np.ndarray, at: int, keys: np.ndarray) -> None:
    """Restore the heap (smallest key first) above ``at``."""
    while at > 0:
        parent = (at - 1) // 2
        if not _before(keys, heap[at], heap[parent]):
            return
        heap[at], heap[parent] = heap[parent], heap[at]
        at = parent


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
    weighed: bool,
    chosen: np.ndarray,
    scratch: tuple,
    states: tuple,
) -> tuple[int, int]:
    """Place ``count`` VMs on the hosts of processor group ``in_group`` (-1:
    every host); write each VM's host to ``chosen`` in placement order.
    ``ranked``: seed 003's rack order; ``weighed``: Nova's RAM and CPU
    weighers instead of cosine packing.

    Returns (VMs placed, room): all ``count`` placed; or fewer with room the
    most VMs those hosts hold (the request is refused: its room fell short
    before any packing, or the greedy ran out of admissible hosts). Changes
    nothing but ``chosen``, ``scratch`` (:func:`scratch_for`: working
    arrays, and what is kept between plans: each host's cosine key and
    copies of the last demand, each rack's room for it) and the working
    arrays of ``states`` (:func:`states_for`: the hosts in
    the same state, kept together).
    """
    keys, candidates, rack_room, rack_held = scratch[0], scratch[1], scratch[3], scratch[5]
    d0, d1, d2 = demand[0], demand[1], demand[2]
    hosts = free.shape[0]
    racks = rack_room.shape[0]
    # The hosts' state and the request, as the helpers below read them.
    cloud = (free, capacity, cache, sync_vms, rack)
    asked = (demand, count, score, sync_request, cache_rule, alpha, beta)
    if weighed:
        return _plan_weighed(cloud, in_group, asked, chosen, scratch, states)
    if not ranked:
        return _plan_states(cloud, in_group, asked, chosen, scratch, states)
    if in_group < 0:
        copies_for = scratch[COPIES_FOR]
        if not (copies_for[0] == d0 and copies_for[1] == d1 and copies_for[2] == d2):
            keep_copies(free, rack, demand, scratch)
        return _plan_ranked(cloud, asked, chosen, scratch, states)
    # A ranked request within a processor group: every host of the group.
    rack_room[:] = 0.0
    rack_held[:] = 0.0
    room = 0.0
    admissible = 0
    # Copies of at least 1 are exactly where one more VM fits (a quotient
    # reaches 1 where its dividend reaches the divisor), if the demand
    # asks for anything.
    asks = d0 > 0 or d1 > 0 or d2 > 0
    last0 = last1 = last2 = copies = np.nan
    for row in range(hosts):
        if group[row] != in_group:
            continue
        f0, f1, f2 = free[row, 0], free[row, 1], free[row, 2]
        if not (f0 == last0 and f1 == last1 and f2 == last2):
            # (Hosts alike lie together: the last host's copies are often these.)
            copies = copies_of(f0, f1, f2, d0, d1, d2)
            last0, last1, last2 = f0, f1, f2
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
    if count > 1 and room < count:
        return 0, int(room)
    last_rank = racks
    rack_rank = scratch[4]
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
    return _greedy(cloud, asked, True, chosen, scratch, admissible, last_rank, room)


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


@njit(cache=True, inline="always")
def _host_held(row, cloud, asked, host_copies, asks) -> float:
    """:func:`_held` of one host for the request; -1 where it holds none.
    The kept copies of the demand tell where one more VM fits (as in
    plan()'s own pass)."""
    _, _, cache, sync_vms, _ = cloud
    _, _, score, sync_request, cache_rule, alpha, beta = asked
    copies = host_copies[row]
    if copies < 1 and asks:
        return -1.0
    return _held(
        copies, cache[row], sync_vms[row] > 0, score, sync_request, cache_rule, alpha, beta
    )


@njit(cache=True, inline="always")
def _table(states):
    """The state table's arrays: per host its state; per state its key and
    its hosts; the states with hosts, and how many (COUNTERS[0])."""
    return (
        states[HOST_STATE],
        states[STATE_KEY],
        states[STATE_HOSTS],
        states[LIVE],
        states[COUNTERS],
    )


@njit(cache=True, inline="always")
def _append(head, tail, follower, group, i) -> bool:
    """Candidate ``i`` joins the end of ``group``'s hosts (linked by
    ``follower``); True where it leads it (the group had none)."""
    follower[i] = -1
    if head[group] >= 0:
        follower[tail[group]] = i
        tail[group] = i
        return False
    head[group] = i
    tail[group] = i
    return True


@njit(cache=True)
def _plan_ranked(cloud, asked, chosen, scratch, states):
    """:func:`plan` of a ranked request over every host, with each rack's
    room kept for its demand: the racks in rank order, each host of a rack
    read only until the racks so far hold the request (on a cloud of
    hundreds of racks, a few of them). The hosts of a rack in the same
    state share a key, (rack rank, residual, -copies): they make a group
    (:func:`_take_groups`)."""
    free, capacity, _, _, _ = cloud
    demand, count = asked[0], asked[1]
    d0, d1 = demand[0], demand[1]
    asks = demand[0] > 0 or demand[1] > 0 or demand[2] > 0
    candidates = scratch[1]
    host_copies, rack_copies = scratch[12], scratch[13]
    rack_first, rack_hosts = scratch[15], scratch[16]
    host_state, group_of, seen_in = states[HOST_STATE], states[GROUP_OF], states[SEEN_IN]
    follower, in_rack = states[FOLLOWER], states[IN_RACK]
    racks = rack_copies.shape[0]
    rack_held, rack_stale = scratch[RACK_HELD], scratch[RACK_STALE]
    if not _held_kept_for(scratch[HELD_FOR], asked):
        rack_stale[:] = True
    elif count > 1:
        # Asked as it was: its room from the racks' kept sums first (the
        # stale racks read afresh); whole numbers, exact in any order, so
        # the same room as the pass below would sum.
        held_room = _kept_room(cloud, asked, scratch, asks)
        if held_room < count:
            return 0, int(held_room)
    order = scratch[RACK_ORDER]
    _rank_racks(order, rack_copies)
    room = 0.0
    reached = 0.0
    admissible = 0
    for position in range(racks):
        at = order[position]
        if asks and rack_copies[at] < 1:
            # No host of this rack fits a VM, nor of any rack after it (a
            # busy cloud's full racks are not read).
            break
        in_this_rack = 0.0
        for slot in range(rack_first[at], rack_first[at + 1]):
            row = rack_hosts[slot]
            held = _host_held(row, cloud, asked, host_copies, asks)
            if held < 0:
                continue
            room += held
            in_this_rack += held
            reached += 1.0 if count == 1 else held
            candidates[admissible] = row
            in_rack[admissible] = position
            admissible += 1
        # Every host of the rack was read: what it holds is kept.
        rack_held[at] = in_this_rack
        rack_stale[at] = False
        if reached >= count:
            break
    if count > 1 and room < count:
        return 0, int(room)
    groups = _groups(admissible + count)
    key, head, tail = groups[0], groups[1], groups[2]
    state_key = states[STATE_KEY]
    made = 0
    for i in range(admissible):
        row = candidates[i]
        state = host_state[row]
        if seen_in[state] == in_rack[i]:
            group = group_of[state]
        else:
            group = made
            made += 1
            seen_in[state] = in_rack[i]
            group_of[state] = group
            _start_group(groups, group, state_key, state)
            key[group, 0] = in_rack[i]
            key[group, 1] = cosine_key(
                free[row, 0], free[row, 1], capacity[row, 0], capacity[row, 1], d0, d1
            )[1]
            key[group, 2] = -host_copies[row]
            key[group, 3] = row
        _append(head, tail, follower, group, i)
    # (No rack has rank -1: the next plan starts unmarked.)
    for i in range(admissible):
        seen_in[host_state[candidates[i]]] = -1
    return _take_groups(cloud, asked, chosen, scratch, states, groups, made, True, room)


@njit(cache=True)
def _held_kept_for(held_for, asked) -> bool:
    """Whether the racks' held sums are kept for this request (whatever its
    count: a host's held VMs do not depend on it); if not, they are kept
    for it from now on (every rack stale)."""
    demand, _, score, sync_request, cache_rule, alpha, beta = asked
    request = (
        demand[0],
        demand[1],
        demand[2],
        score,
        1.0 if sync_request else 0.0,
        1.0 if cache_rule else 0.0,
        alpha,
        beta,
    )
    same = True
    for i in range(8):
        if held_for[i] != request[i]:
            same = False
            held_for[i] = request[i]
    return same


@njit(cache=True)
def _kept_room(cloud, asked, scratch, asks) -> float:
    """What every rack holds of the request its held sums are kept for:
    each stale rack's hosts read afresh (and kept), a rack in which no
    host fits a VM not read (it holds none)."""
    host_copies, rack_copies = scratch[12], scratch[13]
    rack_first, rack_hosts = scratch[15], scratch[16]
    rack_held, rack_stale = scratch[RACK_HELD], scratch[RACK_STALE]
    room = 0.0
    for at in range(rack_copies.shape[0]):
        if asks and rack_copies[at] < 1:
            continue
        if rack_stale[at]:
            in_this_rack = 0.0
            for slot in range(rack_first[at], rack_first[at + 1]):
                held = _host_held(rack_hosts[slot], cloud, asked, host_copies, asks)
                if held >= 0:
                    in_this_rack += held
            rack_held[at] = in_this_rack
            rack_stale[at] = False
        room += rack_held[at]
    return room


@njit(cache=True)
def _rank_racks(order, rack_copies) -> None:
    """Sort ``order`` by rack room, most first, then by rack number: the
    order a stable sort of -room gives. Between two ranked plans a few
    racks' rooms move, so the last order is nearly sorted, and an
    insertion sort costs about a pass over the racks (a sort from
    scratch, their number times its logarithm, on every plan)."""
    for i in range(1, order.shape[0]):
        rack = order[i]
        room = rack_copies[rack]
        j = i - 1
        while j >= 0 and (
            rack_copies[order[j]] < room or (rack_copies[order[j]] == room and order[j] > rack)
        ):
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = rack


@njit(cache=True)
def _plan_states(cloud, in_group, asked, chosen, scratch, states):
    """:func:`plan` of a request not ranked by rack, scored per state.

    Each state with hosts (of the group) is scored once: whether its hosts
    admit a VM, what each holds, its cosine key. Hosts of equal keys are
    ordered by row, and the greedy reaches at most one untouched host per
    VM, so only the ``count`` smallest (key, row) can be reached: the
    states in key order tell how many hosts of each key that is, and one
    pass over the hosts' state numbers, in row order, picks them.
    """
    demand, count, score, sync_request, cache_rule, alpha, beta = asked
    if count == 1:
        return _plan_one(cloud, in_group, asked, chosen, scratch, states)
    d0, d1, d2 = demand[0], demand[1], demand[2]
    candidates = scratch[1]
    host_state, state_key, hosts_in, live, counters = _table(states)
    rank, admitted, state_cosine = states[RANK], states[ADMITTED], states[STATE_COSINE]
    group_of, follower = states[GROUP_OF], states[FOLLOWER]
    asks = d0 > 0 or d1 > 0 or d2 > 0
    room = 0.0
    admissible = 0
    for i in range(counters[0]):
        state = live[i]
        rank[state] = -1
        if in_group >= 0 and state_key[state, 7] != in_group:
            continue
        f0, f1, f2 = state_key[state, 0], state_key[state, 1], state_key[state, 2]
        copies = copies_of(f0, f1, f2, d0, d1, d2)
        # As in plan()'s pass over hosts: where one more VM fits, and the
        # thresholds admit it (a demand of nothing fits every host).
        if copies < 1 and asks:
            continue
        held = _held(
            copies,
            state_key[state, 5],
            state_key[state, 6] > 0,
            score,
            sync_request,
            cache_rule,
            alpha,
            beta,
        )
        if held < 0:
            continue
        # Whole numbers: exact in any order.
        room += held * hosts_in[state]
        cosine, residual = cosine_key(f0, f1, state_key[state, 3], state_key[state, 4], d0, d1)
        state_cosine[state, 0] = cosine
        state_cosine[state, 1] = residual
        group_of[state] = -1
        admitted[admissible] = state
        admissible += 1
    if count > 1 and room < count:
        return 0, int(room)
    if admissible == 0:
        return 0, 0
    # The admitted states by key (a stable sort by residual, then by cosine).
    order = admitted[:admissible]
    order = order[np.argsort(state_cosine[order, 1], kind="mergesort")]
    order = order[np.argsort(state_cosine[order, 0], kind="mergesort")]
    # Equal keys make one rank; the ranks before ``last`` are reached
    # whole, ``last`` for its first ``wanted`` hosts by row.
    reached = 0
    last = -1
    wanted = 0
    at = 0
    while at < admissible and reached < count:
        last += 1
        first = order[at]
        hosts_here = 0
        while at < admissible and (
            state_cosine[order[at], 0] == state_cosine[first, 0]
            and state_cosine[order[at], 1] == state_cosine[first, 1]
        ):
            rank[order[at]] = last
            hosts_here += hosts_in[order[at]]
            at += 1
        wanted = min(hosts_here, count - reached)
        reached += wanted
    # The reached hosts of a state make a group, in row order.
    groups = _groups(at + count)
    key, head, tail = groups[0], groups[1], groups[2]
    made = 0
    kept = 0
    for row in range(host_state.shape[0]):
        state = host_state[row]
        position = rank[state]
        if position < 0:
            continue
        if position == last:
            if wanted == 0:
                continue
            wanted -= 1
        candidates[kept] = row
        group = group_of[state]
        if group < 0:
            group = made
            made += 1
            group_of[state] = group
            _start_group(groups, group, state_key, state)
            key[group, 0] = state_cosine[state, 0]
            key[group, 1] = state_cosine[state, 1]
            key[group, 2] = 0.0
            key[group, 3] = row
        _append(head, tail, follower, group, kept)
        kept += 1
        if kept == reached:
            break
    placed, room_told = _take_groups(
        cloud, asked, chosen, scratch, states, groups, made, False, room
    )
    return placed, room_told if count > 1 else placed


@njit(cache=True)
def _groups(size: int) -> tuple:
    """Working arrays for :func:`_take_groups`, for ``size`` groups: per
    group its key, first and last host, the group its hosts join once
    more touched, their load (free resources, cache total, SyncHPC), and
    whether one more VM fits and is admitted; and a heap of groups."""
    return (
        np.zeros((size, KEY_COLUMNS)),
        np.empty(size, dtype=np.int64),
        np.empty(size, dtype=np.int64),
        np.full(size, -1, dtype=np.int64),
        np.empty((size, 3)),
        np.empty(size),
        np.zeros(size, dtype=np.bool_),
        np.zeros(size, dtype=np.bool_),
        np.empty(size, dtype=np.int64),
    )


@njit(cache=True)
def _take_groups(cloud, asked, chosen, scratch, states, groups, made, ranked, room):
    """The greedy over the candidates in groups of equal keys.

    Groups ``0 .. made-1`` are the plan's untouched hosts, each group's in
    row order (linked by ``FOLLOWER``), each group's hosts in one state,
    whose load :func:`_start_group` gave it.
    A host touched ``k`` times from such a group has the load of every
    other such host (the same floats, from the same operations), so the
    same key: they make a group too, and they join it in row order (they
    leave the group before it in row order). A group's key ends with its
    first host's row, so the heap of groups gives the host the greedy over
    every candidate would give, at every step; and a group's key, fit and
    admission are computed once, not once per host. Ranked keys are (rack
    rank, residual, -copies when the request began, row), of which a VM
    changes only the residual; unranked ones (-cosine, residual, 0, row).
    """
    capacity = cloud[1]
    demand, count = asked[0], asked[1]
    candidates, follower = scratch[1], states[FOLLOWER]
    key, head, tail, successor, load, load_cache, load_sync, alive, heap = groups
    d0, d1 = demand[0], demand[1]
    size = made
    for group in range(made):
        heap[group] = group
    for at in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, at, key, False)
    placed = 0
    # A group of one host kept out of the heap while that host stays the
    # best (a host filled VM after VM costs no heap step); -1: none.
    leading = -1
    while placed < count:
        if leading >= 0:
            group = leading
            i = head[group]
            head[group] = -1
        else:
            if size == 0:
                return placed, placed
            group = heap[0]
            i = head[group]
            # The group's next host leads it; an emptied group leaves the
            # heap (until a host joins it again).
            head[group] = follower[i]
            if head[group] >= 0:
                key[group, 3] = candidates[head[group]]
            else:
                size -= 1
                heap[0] = heap[size]
            _sift_down(heap, size, 0, key, False)
        row = candidates[i]
        leading = -1
        joins = successor[group]
        if joins < 0:
            joins = made
            made += 1
            successor[group] = joins
            _one_more(load, load_cache, load_sync, alive, group, joins, asked)
            if alive[joins]:
                cosine, residual = cosine_key(
                    load[joins, 0], load[joins, 1], capacity[row, 0], capacity[row, 1], d0, d1
                )
                if ranked:
                    key[joins, 0] = key[group, 0]
                    key[joins, 2] = key[group, 2]
                else:
                    key[joins, 0] = cosine
                    key[joins, 2] = 0.0
                key[joins, 1] = residual
            head[joins] = -1
        chosen[placed] = row
        placed += 1
        if not alive[joins]:
            continue
        if _append(head, tail, follower, joins, i):
            key[joins, 3] = row
            if size == 0 or _before(key, joins, heap[0]):
                leading = joins
            else:
                heap[size] = joins
                size += 1
                _sift_up(heap, size - 1, key)
    return placed, int(room)


@njit(cache=True, inline="always")
def _start_group(groups, group, state_key, state) -> None:
    """Group ``group`` starts with no hosts, and the load of ``state``'s
    hosts (the state's key is their free resources, cache total and
    SyncHPC, to the float)."""
    _, head, _, _, load, load_cache, load_sync, alive, _ = groups
    head[group] = -1
    load[group, 0] = state_key[state, 0]
    load[group, 1] = state_key[state, 1]
    load[group, 2] = state_key[state, 2]
    load_cache[group] = state_key[state, 5]
    load_sync[group] = state_key[state, 6] > 0
    alive[group] = True


@njit(cache=True, inline="always")
def _one_more(load, load_cache, load_sync, alive, group, joins, asked) -> None:
    """Group ``joins``'s load: ``group``'s with one more VM of the request
    (ClusterState's floats); ``alive``: whether one more still fits and is
    admitted."""
    demand, _, score, sync_request, cache_rule, alpha, beta = asked
    d0, d1, d2 = demand[0], demand[1], demand[2]
    load[joins, 0] = load[group, 0] - d0
    load[joins, 1] = load[group, 1] - d1
    load[joins, 2] = load[group, 2] - d2
    load_cache[joins] = load_cache[group] + score
    load_sync[joins] = load_sync[group] or sync_request
    alive[joins] = fits(load[joins, 0], load[joins, 1], load[joins, 2], d0, d1, d2) and (
        not cache_rule
        or admits(load_cache[joins], load_sync[joins], score, sync_request, alpha, beta)
    )


@njit(cache=True)
def _plan_weighed(cloud, in_group, asked, chosen, scratch, states):
    """:func:`plan` under Nova's RAM and CPU weighers (min-max normalised
    over the candidates, summed; the most weight first, then the row), one
    VM at a time as Nova weighs, over groups of hosts alike.

    A host's weight depends on it only through its point (free RAM and
    cores), and on the candidates through their extremes. The hosts of a
    state, and the hosts touched ``k`` times from one group, share a point
    and are taken in row order (see :func:`_take_groups`). A round weighs
    the groups once; while no extreme moves and no best group empties,
    only the chosen host's weight changes, so the next VM goes to the
    smallest row among the best groups without weighing again. No group
    reaches more than ``count`` of its hosts: only those are read.
    """
    demand, count, score, sync_request, cache_rule, alpha, beta = asked
    d0, d1, d2 = demand[0], demand[1], demand[2]
    candidates = scratch[1]
    host_state, state_key, hosts_in, live, counters = _table(states)
    admitted, group_of, follower = states[ADMITTED], states[GROUP_OF], states[FOLLOWER]
    fitting = 0
    wanted = 0
    for i in range(counters[0]):
        state = live[i]
        group_of[state] = -1
        if in_group >= 0 and state_key[state, 7] != in_group:
            continue
        if not fits(state_key[state, 0], state_key[state, 1], state_key[state, 2], d0, d1, d2):
            continue
        if cache_rule and not admits(
            state_key[state, 5], state_key[state, 6] > 0, score, sync_request, alpha, beta
        ):
            continue
        admitted[fitting] = state
        fitting += 1
        wanted += min(count, hosts_in[state])
    if fitting == 0:
        return 0, 0
    groups = _groups(fitting + count)
    _, head, tail, successor, load, load_cache, load_sync, alive, best = groups
    left = np.empty(fitting, dtype=np.int64)
    for group in range(fitting):
        state = admitted[group]
        group_of[state] = group
        _start_group(groups, group, state_key, state)
        left[group] = min(count, hosts_in[state])
    kept = 0
    for row in range(host_state.shape[0]):
        group = group_of[host_state[row]]
        if group < 0 or left[group] == 0:
            continue
        left[group] -= 1
        candidates[kept] = row
        _append(head, tail, follower, group, kept)
        kept += 1
        if kept == wanted:
            break
    made = fitting
    placed = 0
    while placed < count:
        # A round: the candidates' extremes, and the groups of most weight.
        low_ram = high_ram = low_cores = high_cores = np.nan
        for group in range(made):
            if head[group] < 0:
                continue
            ram, cores = load[group, 1], load[group, 0]
            if low_ram != low_ram:  # (NaN: the first group with hosts)
                low_ram = high_ram = ram
                low_cores = high_cores = cores
            else:
                low_ram, high_ram = min(low_ram, ram), max(high_ram, ram)
                low_cores, high_cores = min(low_cores, cores), max(high_cores, cores)
        if low_ram != low_ram:
            return placed, placed
        most = -np.inf
        ties = 0
        for group in range(made):
            if head[group] < 0:
                continue
            ram, cores = load[group, 1], load[group, 0]
            weight = _weight(ram, cores, low_ram, high_ram, low_cores, high_cores)
            if weight > most:
                most = weight
                ties = 0
            if weight == most:
                best[ties] = group
                ties += 1
        # The best groups, a heap by their first host's row.
        for at in range(ties // 2 - 1, -1, -1):
            _sift_rows(best, ties, at, head, candidates)
        while placed < count and ties > 0:
            group = best[0]
            i = head[group]
            row = candidates[i]
            head[group] = follower[i]
            if head[group] < 0:
                ties -= 1
                best[0] = best[ties]
            _sift_rows(best, ties, 0, head, candidates)
            joins = successor[group]
            if joins < 0:
                joins = made
                made += 1
                successor[group] = joins
                head[joins] = -1
                _one_more(load, load_cache, load_sync, alive, group, joins, asked)
            chosen[placed] = row
            placed += 1
            if alive[joins]:
                _append(head, tail, follower, joins, i)
                ram, cores = load[joins, 1], load[joins, 0]
                # The host's new point moves a minimum, or may weigh as
                # much as the best: weigh again.
                if ram < low_ram or cores < low_cores:
                    break
                if not _weight(ram, cores, low_ram, high_ram, low_cores, high_cores) < most:
                    break
            if head[group] < 0 and not _point_held(load, group, best, ties):
                break  # an extreme may have gone with it
    return placed, placed


@njit(cache=True, inline="always")
def _sift_rows(heap, size, at, head, candidates) -> None:
    """Restore a heap of groups (the smallest first host's row first) below ``at``."""
    while True:
        child = 2 * at + 1
        if child >= size:
            return
        if child + 1 < size and candidates[head[heap[child + 1]]] < candidates[head[heap[child]]]:
            child += 1
        if candidates[head[heap[at]]] <= candidates[head[heap[child]]]:
            return
        heap[at], heap[child] = heap[child], heap[at]
        at = child


@njit(cache=True, inline="always")
def _point_held(load, group, best, ties) -> bool:
    """Another of the ``ties`` best groups stands at ``group``'s point (the
    extremes hold when ``group`` empties)."""
    for tie in range(ties):
        other = best[tie]
        if load[other, 0] == load[group, 0] and load[other, 1] == load[group, 1]:
            return True
    return False


@njit(cache=True, inline="always")
def _weight(ram, cores, low_ram, high_ram, low_cores, high_cores) -> float:
    """nova.weights.normalize of RAM, then of cores, summed (all equal: 0)."""
    by_ram = (ram - low_ram) / (high_ram - low_ram) if high_ram != low_ram else 0.0
    by_cores = (cores - low_cores) / (high_cores - low_cores) if high_cores != low_cores else 0.0
    return by_ram + by_cores


@njit(cache=True)
def _greedy(cloud, asked, ranked, chosen, scratch, admissible, last_rank, room):
    """The greedy over the ``admissible`` candidates (racks up to rank
    ``last_rank`` where ranked); ``room``: theirs, told on a refusal."""
    free, capacity, _, _, rack = cloud
    demand, count = asked[0], asked[1]
    keys, candidates, heap, rack_rank = scratch[0], scratch[1], scratch[2], scratch[4]
    host_keys, keyed, keyed_for = scratch[9], scratch[10], scratch[11]
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
    return _take(cloud, asked, ranked, chosen, scratch, size, room)


@njit(cache=True)
def _take(cloud, asked, ranked, chosen, scratch, size, room):
    """Place the request's VMs one by one on the candidate with the
    smallest key, the ``size`` candidates being a heap (smallest first);
    each candidate's load starts from its host's."""
    free, capacity, cache, sync_vms, _ = cloud
    demand, count, score, sync_request, cache_rule, alpha, beta = asked
    keys, candidates, heap = scratch[0], scratch[1], scratch[2]
    load, load_cache, load_sync = scratch[6], scratch[7], scratch[8]
    d0, d1, d2 = demand[0], demand[1], demand[2]
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
def _changed(scratch, rack, free, rows) -> None:
    """The hosts ``rows``' free resources (or cache totals) changed: their
    kept cosine keys and their racks' held sums are stale, and their
    copies (and their racks' rooms) for the kept demand move. (One call
    for every host: numba passes a tuple of arrays to a compiled call at a
    cost of tens of nanoseconds.)"""
    keyed, host_copies, rack_copies, copies_for = scratch[10], scratch[12], scratch[13], scratch[14]
    rack_stale = scratch[RACK_STALE]
    kept = copies_for[0] == copies_for[0]  # (NaN: none kept yet)
    for i in range(rows.shape[0]):
        row = rows[i]
        keyed[row] = False
        rack_stale[rack[row]] = True
        if kept:
            f0, f1, f2 = free[row, 0], free[row, 1], free[row, 2]
            copies = copies_of(f0, f1, f2, copies_for[0], copies_for[1], copies_for[2])
            rack_copies[rack[row]] += copies - host_copies[row]
            host_copies[row] = copies


@njit(cache=True)
def place(state, tally, scratch, states, rack, chosen, placed, app, demand, score, sync_request):
    """Place the VMs of application ``app`` on ``chosen[:placed]`` (a host
    per VM, in placement order): free resources less and cache totals more
    one VM at a time (ClusterState's floats), and on each host one run of
    the application's VMs after the runs already there. Returns its hosts
    in the order the plan first chose them; empty, changing nothing, where
    a host has no run left (``run_app``'s columns): the caller widens the
    arrays and asks again.

    ``state``: per host, free resources, cache total, SyncHPC VMs, and its
    runs (applications, VMs, how many runs); ``states``: the hosts in the
    same state (:func:`states_for`), each changed host settled anew."""
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
        if sync_request:
            sync_vms[row] += tally[row]
        tally[row] = 0
    _changed(scratch, rack, free, hosts[:count])
    settle(states, free, cache, sync_vms, hosts[:count])
    return hosts[:count]


@njit(cache=True)
def release(state, scratch, states, rack, app_score, hosts, app, demand, sync_request) -> None:
    """Take application ``app``'s VMs off ``hosts``: free resources more one
    VM at a time, its run gone, and each host's cache total summed afresh
    over the runs that stay, in placement order (as ClusterState does).
    ``state`` and ``states``: as :func:`place`'s."""
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
        total = 0.0
        for kept in range(runs_here - 1):
            score = app_score[run_app[row, kept]]
            for _ in range(run_vms[row, kept]):
                total += score
        cache[row] = total
    _changed(scratch, rack, free, hosts)
    settle(states, free, cache, sync_vms, hosts)


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
        np.arange(racks, dtype=np.int64),  # 17 (RACK_ORDER): kept: racks by room
        np.zeros(racks),  # 18 (RACK_HELD): kept: per rack, what it holds
        np.ones(racks, dtype=np.bool_),  # 19 (RACK_STALE): kept: per rack, stale
        np.full(8, np.nan),  # 20 (HELD_FOR): kept: the request of those
    )


# -- hosts in the same state --------------------------------------------------
#
# Two hosts in the same state (free resources, capacity, cache total,
# whether they run SyncHPC, processor group) are alike to every rule of
# seed 003's greedy but the host's row, the last tie-break: they fit the
# same VMs, the thresholds admit them alike, and their cosine keys are
# equal. A plan not ranked by rack therefore scores each state once, not
# each host (_plan_states). On CEA-Curie's 23,328 hosts a busy cloud is a
# few dozen states: jobs fill whole hosts, so their hosts share a cache
# total. place and release settle every host they change; a state no host
# is in any more is dropped and its number reused, so there are never
# more states than hosts. (These functions live in this module because
# numba's cache checks only the file that defines a compiled function:
# a kernel compiled against another module's would not see it change.)


def states_for(
    free: np.ndarray,
    capacity: np.ndarray,
    cache: np.ndarray,
    sync_vms: np.ndarray,
    group: np.ndarray,
) -> tuple:
    """The state table of these hosts (rows), each host settled in its state."""
    hosts = len(free)
    # One more number than hosts: a host enters its new state before it
    # leaves its old one.
    size = hosts + 1
    slots = 1 << int(2 * size).bit_length()
    states = (
        np.full(hosts, -1, dtype=np.int64),  # 0: per host, its state
        np.zeros((size, KEY_SIZE)),  # 1: per state, its key
        np.zeros(size, dtype=np.int64),  # 2: per state, its hosts
        np.zeros(size, dtype=np.int64),  # 3: the states with hosts, first
        np.zeros(size, dtype=np.int64),  # 4: per state, where it is in 3
        # 5: states in 3; spare numbers in 6; points in 22; spare numbers in
        # 23; spare
        np.array([0, size, 0, size, 0], dtype=np.int64),
        np.arange(size, dtype=np.int64)[::-1].copy(),  # 6: spare numbers (a stack)
        np.full(slots, -1, dtype=np.int64),  # 7: hash table of keys: states, -1 empty
        np.zeros(size, dtype=np.int64),  # 8: per state, its key's hash
        np.full(size, -1, dtype=np.int64),  # 9 (RANK)
        np.zeros(size, dtype=np.int64),  # 10 (ADMITTED)
        np.zeros((size, 2)),  # 11 (STATE_COSINE)
        np.asarray(capacity, dtype=float),  # 12: per host, its capacity
        np.asarray(group, dtype=np.int64),  # 13: per host, its processor group
        np.zeros(KEY_SIZE),  # 14: a host's key, as it is settled
        np.full(size, -1, dtype=np.int64),  # 15 (GROUP_OF)
        np.full(size, -1, dtype=np.int64),  # 16 (SEEN_IN)
        np.zeros(hosts, dtype=np.int64),  # 17 (FOLLOWER)
        np.zeros(hosts, dtype=np.int64),  # 18 (IN_RACK)
        np.full((size, 3), -1, dtype=np.int64),  # 19 (STATE_LINKS)
        np.zeros((size, POINT_KEY_SIZE)),  # 20 (POINT_KEY)
        np.zeros((size, 4), dtype=np.int64),  # 21 (POINT_INTS)
        np.zeros(size, dtype=np.int64),  # 22 (POINT_LIVE)
        np.arange(size, dtype=np.int64)[::-1].copy(),  # 23 (POINT_SPARE): a stack
        np.full(slots, -1, dtype=np.int64),  # 24 (POINT_TABLE): points, -1 empty
        np.zeros((size, 3)),  # 25 (POINT_SCORE)
        np.zeros(size, dtype=np.int64),  # 26 (POINT_ORDER)
        np.zeros(size, dtype=np.int64),  # 27 (FIRST_ROW)
        np.zeros((size, 2)),  # 28 (POINT_LOW)
    )
    settle_all(states, free, cache, sync_vms)
    return states


@njit(cache=True)
def settle_all(states, free, cache, sync_vms) -> None:
    """Settle every host (an idle cloud: one state per capacity and group)."""
    settle(states, free, cache, sync_vms, np.arange(free.shape[0]))


@njit(cache=True)
def settle(states, free, cache, sync_vms, rows) -> None:
    """Put each host of ``rows`` in the state its arrays now say.

    (The arrays are taken out of ``states`` once: numba passes a tuple of
    arrays to a compiled call at a cost of tens of nanoseconds.)
    """
    host_state, state_key, hosts_in = states[HOST_STATE], states[STATE_KEY], states[STATE_HOSTS]
    live, where, counters, spare = states[LIVE], states[4], states[COUNTERS], states[6]
    table, hashes, capacity, group, key = states[7], states[8], states[12], states[13], states[14]
    first_row = states[FIRST_ROW]
    # Hosts that change together often end alike: the last host's state
    # is tried first (and checked, not trusted).
    state = -1
    for i in range(rows.shape[0]):
        row = rows[i]
        key[0], key[1], key[2] = free[row, 0], free[row, 1], free[row, 2]
        key[3], key[4] = capacity[row, 0], capacity[row, 1]
        key[5] = cache[row]
        key[6] = 1.0 if sync_vms[row] > 0 else 0.0
        key[7] = float(group[row])
        if state < 0 or not _same(state_key, state, key):
            state = _number_of(
                state_key, hosts_in, table, hashes, live, where, counters, spare, key
            )
            if hosts_in[state] == 0:
                _link_point(states, state)  # (a new state: live states have hosts)
        old = host_state[row]
        if old == state:
            continue
        host_state[row] = state
        if hosts_in[state] == 0 or row < first_row[state]:
            first_row[state] = row
        hosts_in[state] += 1
        if old < 0:
            continue
        hosts_in[old] -= 1
        if hosts_in[old] == 0:
            _drop(table, hashes, live, where, counters, spare, old)
            _unlink_point(states, old)


@njit(cache=True)
def _hash(key) -> int:
    """A hash of a state key: equal keys (0.0 and -0.0 alike) hash alike,
    since each part is hashed through a whole number it rounds to; each
    part is mixed into every bit (the table reads the low ones, and most
    parts are whole multiples of the scale)."""
    h = 0
    for column in range(KEY_SIZE):
        part = key[column] * 1048576.0
        whole = np.int64(part) if abs(part) < 9.0e18 else np.int64(0)
        h = (h ^ whole) * 0x2545F4914F6CDD1D
        h = h ^ (h >> 31)
    return h


@njit(cache=True)
def _same(state_key, state, key) -> bool:
    """State ``state`` has ``key``."""
    for column in range(KEY_SIZE):  # noqa: SIM110 (all() of a generator: not in numba)
        if state_key[state, column] != key[column]:
            return False
    return True


@njit(cache=True)
def _number_of(state_key, hosts_in, table, hashes, live, where, counters, spare, key) -> int:
    """The state of ``key``; a new one (with no hosts yet) if none has it.
    (Open addressing: the slots after the key's home, up to an empty one.)"""
    mask = table.shape[0] - 1
    h = _hash(key)
    slot = h & mask
    while table[slot] >= 0:
        if hashes[table[slot]] == h and _same(state_key, table[slot], key):
            return table[slot]
        slot = (slot + 1) & mask
    counters[1] -= 1
    state = spare[counters[1]]
    table[slot] = state
    hashes[state] = h
    state_key[state, :] = key
    hosts_in[state] = 0
    live[counters[0]] = state
    where[state] = counters[0]
    counters[0] += 1
    return state


@njit(cache=True)
def _drop(table, hashes, live, where, counters, spare, state) -> None:
    """Drop ``state``, which no host is in: out of the hash table (the keys
    after it that would no longer be found past the emptied slot shift
    back), out of the live states, its number spare."""
    mask = table.shape[0] - 1
    slot = hashes[state] & mask
    while table[slot] != state:
        slot = (slot + 1) & mask
    after = slot
    while True:
        after = (after + 1) & mask
        there = table[after]
        if there < 0:
            break
        home = hashes[there] & mask
        # ``there`` stays where it is if its home lies cyclically in
        # (slot, after]; else it moves back into the emptied slot.
        if (slot < after and slot < home <= after) or (
            slot > after and (home > slot or home <= after)
        ):
            continue
        table[slot] = there
        slot = after
    table[slot] = -1
    # The last live state takes the dropped one's place.
    counters[0] -= 1
    last = live[counters[0]]
    live[where[state]] = last
    where[last] = where[state]
    spare[counters[1]] = state
    counters[1] += 1


# -- states at one point ------------------------------------------------------
#
# A busy cloud has nearly as many states as busy hosts (cache totals are
# sums of drawn scores, rarely equal), but few points: a host's free
# resources take few values. What a VM's fit and cosine key read of a host
# is its point; the thresholds read its cache total and SyncHPC. A one-VM
# plan therefore scores each point once, in key order, and reads the states
# of the best points only until one admits the VM: its cost grows with the
# points and the states at the best key, not with the hosts.


@njit(cache=True)
def _point_hash(state_key, state) -> int:
    """A hash of the point of ``state`` (as :func:`_hash`, over POINT_COLUMNS)."""
    h = 0
    for column in POINT_COLUMNS:
        part = state_key[state, column] * 1048576.0
        whole = np.int64(part) if abs(part) < 9.0e18 else np.int64(0)
        h = (h ^ whole) * 0x2545F4914F6CDD1D
        h = h ^ (h >> 31)
    return h


@njit(cache=True)
def _at_point(point_key, point, state_key, state) -> bool:
    """State ``state`` lies at point ``point``."""
    for i in range(POINT_KEY_SIZE):
        if point_key[point, i] != state_key[state, POINT_COLUMNS[i]]:
            return False
    return True


@njit(cache=True)
def _link_point(states, state) -> None:
    """A new state joins its point (a new point, if none has its key): first
    of the point's states."""
    state_key, links, point_key, ints = (
        states[STATE_KEY],
        states[STATE_LINKS],
        states[POINT_KEY],
        states[POINT_INTS],
    )
    live, spare, table, counters = (
        states[POINT_LIVE],
        states[POINT_SPARE],
        states[POINT_TABLE],
        states[COUNTERS],
    )
    mask = table.shape[0] - 1
    h = _point_hash(state_key, state)
    slot = h & mask
    point = -1
    while table[slot] >= 0:
        found = table[slot]
        if ints[found, POINT_HASH] == h and _at_point(point_key, found, state_key, state):
            point = found
            break
        slot = (slot + 1) & mask
    if point < 0:
        counters[3] -= 1
        point = spare[counters[3]]
        table[slot] = point
        for i in range(POINT_KEY_SIZE):
            point_key[point, i] = state_key[state, POINT_COLUMNS[i]]
        ints[point, POINT_STATES] = 0
        ints[point, POINT_FIRST] = -1
        states[POINT_LOW][point, 0] = np.inf
        states[POINT_LOW][point, 1] = np.inf
        ints[point, POINT_HASH] = h
        live[counters[2]] = point
        ints[point, POINT_WHERE] = counters[2]
        counters[2] += 1
    first = ints[point, POINT_FIRST]
    links[state, LINK_POINT] = point
    links[state, LINK_NEXT] = first
    links[state, LINK_PREVIOUS] = -1
    if first >= 0:
        links[first, LINK_PREVIOUS] = state
    ints[point, POINT_FIRST] = state
    ints[point, POINT_STATES] += 1
    low = states[POINT_LOW]
    synced = 1 if state_key[state, 6] > 0 else 0
    low[point, synced] = min(low[point, synced], state_key[state, 5])


@njit(cache=True)
def _unlink_point(states, state) -> None:
    """A dropped state leaves its point; a point with no states is dropped
    (as :func:`_drop` drops a state)."""
    links, ints = states[STATE_LINKS], states[POINT_INTS]
    live, spare, table, counters = (
        states[POINT_LIVE],
        states[POINT_SPARE],
        states[POINT_TABLE],
        states[COUNTERS],
    )
    point = links[state, LINK_POINT]
    after, before = links[state, LINK_NEXT], links[state, LINK_PREVIOUS]
    if before >= 0:
        links[before, LINK_NEXT] = after
    else:
        ints[point, POINT_FIRST] = after
    if after >= 0:
        links[after, LINK_PREVIOUS] = before
    links[state, 0], links[state, 1], links[state, 2] = -1, -1, -1
    ints[point, POINT_STATES] -= 1
    if ints[point, POINT_STATES] > 0:
        return
    mask = table.shape[0] - 1
    slot = ints[point, POINT_HASH] & mask
    while table[slot] != point:
        slot = (slot + 1) & mask
    after = slot
    while True:
        after = (after + 1) & mask
        there = table[after]
        if there < 0:
            break
        home = ints[there, POINT_HASH] & mask
        if (slot < after and slot < home <= after) or (
            slot > after and (home > slot or home <= after)
        ):
            continue
        table[slot] = there
        slot = after
    table[slot] = -1
    counters[2] -= 1
    last = live[counters[2]]
    live[ints[point, POINT_WHERE]] = last
    ints[last, POINT_WHERE] = ints[point, POINT_WHERE]
    spare[counters[3]] = point
    counters[3] += 1


@njit(cache=True, inline="always")
def _sift_points(heap, size, at, point_score) -> None:
    """Restore a heap of points (the least cosine key, then residual,
    first) below ``at``."""
    while True:
        child = 2 * at + 1
        if child >= size:
            return
        if child + 1 < size and _point_before(point_score, heap[child + 1], heap[child]):
            child += 1
        if not _point_before(point_score, heap[child], heap[at]):
            return
        heap[at], heap[child] = heap[child], heap[at]
        at = child


@njit(cache=True, inline="always")
def _point_before(point_score, a, b) -> bool:
    """Point ``a``'s key (cosine, residual) is less than ``b``'s."""
    if point_score[a, 1] != point_score[b, 1]:
        return point_score[a, 1] < point_score[b, 1]
    return point_score[a, 2] < point_score[b, 2]


@njit(cache=True)
def _first_host(host_state, first_row, found_states, found) -> int:
    """The least row of a host in one of ``found_states[:found]``. Each
    state's rows are read from its FIRST_ROW bound up to the least row so
    far; the bound moves up to where the reading stopped (no row before
    it is the state's), so a state's rows before its first host are read
    once, not on every plan."""
    best = host_state.shape[0]
    for i in range(found):
        state = found_states[i]
        row = first_row[state]
        while row < best and host_state[row] != state:
            row += 1
        first_row[state] = row
        if row < best:
            best = row
    return best


@njit(cache=True)
def _plan_one(cloud, in_group, asked, chosen, scratch, states):
    """:func:`_plan_states` of one VM, scored per point.

    The VM goes to the smallest row among the admitted hosts of the
    smallest key. A state's key, and whether one more VM fits it, are its
    point's: the points that fit, in key order, are read until a key whose
    states admit the VM (the thresholds, read per state); the hosts of
    those states are the candidates, and the first in row order takes it:
    each state's rows are read from its FIRST_ROW bound, only up to the
    least row found so far (not every row of the cloud from the first).
    The same floats as _plan_states', from the same operations.
    """
    demand, count, score, sync_request, cache_rule, alpha, beta = asked
    d0, d1, d2 = demand[0], demand[1], demand[2]
    candidates = scratch[1]
    host_state, state_key, counters = states[HOST_STATE], states[STATE_KEY], states[COUNTERS]
    links, point_key, ints = states[STATE_LINKS], states[POINT_KEY], states[POINT_INTS]
    point_live, point_score, point_order = (
        states[POINT_LIVE],
        states[POINT_SCORE],
        states[POINT_ORDER],
    )
    first_row, found_states = states[FIRST_ROW], states[ADMITTED]
    follower, low = states[FOLLOWER], states[POINT_LOW]
    asks = d0 > 0 or d1 > 0 or d2 > 0
    fitting = 0
    for i in range(counters[2]):
        point = point_live[i]
        if in_group >= 0 and point_key[point, 5] != in_group:
            continue
        f0, f1, f2 = point_key[point, 0], point_key[point, 1], point_key[point, 2]
        copies = copies_of(f0, f1, f2, d0, d1, d2)
        if copies < 1 and asks:
            continue
        cosine, residual = cosine_key(f0, f1, point_key[point, 3], point_key[point, 4], d0, d1)
        point_score[point, 0] = copies
        point_score[point, 1] = cosine
        point_score[point, 2] = residual
        point_order[fitting] = point
        fitting += 1
    if fitting == 0:
        return 0, 0
    # The points in a heap by key: the plan reads the points of the least
    # key, then of the next, only until one admits the VM (mostly the
    # first few keys of hundreds of points: no sort of them all). Which
    # point of a key comes first does not matter: their states are all
    # read, and the least row of those admitted is taken.
    heap = point_order
    for at in range(fitting // 2 - 1, -1, -1):
        _sift_points(heap, fitting, at, point_score)
    size = fitting
    found = 0
    while size > 0 and found == 0:
        first = heap[0]
        cosine, residual = point_score[first, 1], point_score[first, 2]
        while size > 0 and (
            point_score[heap[0], 1] == cosine and point_score[heap[0], 2] == residual
        ):
            point = heap[0]
            size -= 1
            heap[0] = heap[size]
            _sift_points(heap, size, 0, point_score)
            copies = point_score[point, 0]
            if cache_rule and not (
                admits(low[point, 0], False, score, sync_request, alpha, beta)
                or admits(low[point, 1], True, score, sync_request, alpha, beta)
            ):
                continue  # (no state of the point is admitted)
            low[point, 0] = np.inf
            low[point, 1] = np.inf
            state = ints[point, POINT_FIRST]
            while state >= 0:
                cache, synced = state_key[state, 5], state_key[state, 6] > 0
                low[point, 1 if synced else 0] = min(low[point, 1 if synced else 0], cache)
                held = _held(copies, cache, synced, score, sync_request, cache_rule, alpha, beta)
                if held >= 0:
                    found_states[found] = state
                    found += 1
                state = links[state, LINK_NEXT]
    if found == 0:
        return 0, 0
    row = _first_host(host_state, first_row, found_states, found)
    state = host_state[row]
    point = links[state, LINK_POINT]
    candidates[0] = row
    groups = _groups(1 + count)
    key, head, tail = groups[0], groups[1], groups[2]
    _start_group(groups, 0, state_key, state)
    key[0, 0] = point_score[point, 1]
    key[0, 1] = point_score[point, 2]
    key[0, 2] = 0.0
    key[0, 3] = row
    _append(head, tail, follower, 0, 0)
    placed, _ = _take_groups(cloud, asked, chosen, scratch, states, groups, 1, False, 0.0)
    return placed, placed
