"""One request's greedy over the classes of :mod:`.state_classes`.

The planner's MDOBP and Nova weighing, as
:func:`~hpc_nova_scheduler.core.algorithm.plan` runs them host by host, run
here over classes of hosts in the same state: the untouched hosts come out
of their classes in (key, row) order (:class:`UntouchedHosts`), hosts that
took VMs are rescored one by one with the planner's own one-host
functions, and hosts of a class that the packing takes one after another
are taken as one block. Kept apart from the classes' bookkeeping, which
only :mod:`.state_classes` changes.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np

from hpc_nova_scheduler.core.algorithm import (
    NO_TOPOLOGY,
    PACKING_COSINE,
    PACKING_NOVA_WEIGHERS,
    CacheRule,
    CosineKeys,
    NoPlacement,
    PlacementRequest,
    Policy,
    _cosine_key_one,
    _normalised,
    blind_key_one,
    blind_keys,
    fits_many,
    fits_one,
    vm_copies,
)
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.judge import HostJudge
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.sim import class_weighing
from hpc_nova_scheduler.topology import arrangement


class StateClasses(Protocol):
    """What the greedy reads of :class:`.state_classes.StateClasses`: the
    policy, per class (slot) its state and its hosts, per host its own."""

    policy: Policy
    thresholds: Thresholds
    levels: tuple[str, ...]
    few_slots: int
    filling_from: int
    merging_from: int
    one_by_one: int
    #: Per slot: free, total, cache total, SyncHPC, rack, hosts, first host.
    _s_free: np.ndarray
    _s_capacity: np.ndarray
    _s_cache: np.ndarray
    _s_sync: np.ndarray
    _s_rack: np.ndarray
    _s_hosts: np.ndarray
    _s_first: np.ndarray
    #: Per slot: its name (its state: free at 3, cache total at 4, SyncHPC
    #: at 5) and its hosts, ascending.
    _name_of: list
    _members: list[list[int]]
    #: Per host: its slot, total resources and rack.
    _row_slot: list[int]
    _capacity: list[tuple[float, float, float]]
    _rack: list[int]
    #: How many racks, and each rack's domain at every level.
    _racks: int
    _rack_domains: np.ndarray

    def packing_keys(self, slots: np.ndarray, demand: tuple[float, ...]) -> tuple: ...

    def listed_packing_keys(self, slots: list[int], demand: tuple[float, ...]) -> list[tuple]: ...

    def kept_copies(self, demand: tuple[float, ...]) -> np.ndarray | None: ...


class ClassGreedy:
    """One request's MDOBP (or Nova weighing) over the classes of one processor group."""

    def __init__(
        self,
        classes: StateClasses,
        request: PlacementRequest,
        slots: np.ndarray,
        rule: HostJudge | None = None,
        admitted: np.ndarray | None = None,
        top: int = 0,
    ) -> None:
        """``slots``: classes whose hosts each hold a VM of the request
        (room aside, the greedy does not check it again), sharing one domain
        of every level above ``top``."""
        self.classes = classes
        self.request = request
        policy = classes.policy
        self.policy = policy
        app_class = request.app_class if policy.classes else AppClass.NON_HPC
        self.topology_aware = policy.topology and app_class.topology_aware
        spec = request.topology if policy.topology else NO_TOPOLOGY
        #: Whether the plan follows the topology: the class asks for it, or the tenant.
        self.ranked = self.topology_aware or not spec.empty
        #: BestFit with more than one level or any constraint (as plan()).
        self.best_fit = len(classes.levels) > 1 or not spec.empty
        self.sync_request = request.app_class is AppClass.SYNC_HPC
        self.score = request.profile.cache_score
        #: The cache thresholds, unless a judge of co-runners replaces them.
        self.cache_rule = None
        if policy.cache_criteria and rule is None:
            self.cache_rule = CacheRule(classes.thresholds, self.score, self.sync_request)
        #: Per class, what placing VMs never changes: the judge's admission
        #: (None: no judge, every class).
        self.fixed_ok = None if admitted is None else admitted[slots]
        #: The judge's admission per class (None: no judge).
        self.admitted = admitted
        self.demand_tuple = request.demand.as_tuple()
        self.demand = np.array(self.demand_tuple, dtype=float)
        self.slots = slots
        self.cache = classes._s_cache[slots]
        self.sync = classes._s_sync[slots]
        self.hosts = classes._s_hosts[slots]
        self._free: np.ndarray | None = None
        self._copies: np.ndarray | None = None
        self._rooms: np.ndarray | None = None
        self.top = top
        #: Each rack's rank in the order to fill them (ranked requests only),
        #: and per class the tie-break inside a rack: more room first. Set
        #: by :meth:`run` (a caller may want only :attr:`room`).
        self.rack_rank: np.ndarray | None = None
        self._within_rack: np.ndarray | None = None

    @property
    def free(self) -> np.ndarray:
        """Each class's free resources (read only where the kept copies do
        not do: a plan that fits in a few chains never reads them)."""
        if self._free is None:
            self._free = self.classes._s_free[self.slots]
        return self._free

    @property
    def copies(self) -> np.ndarray:
        """How many VMs of the request fit in a host of each class."""
        if self._copies is None:
            kept = self.classes.kept_copies(self.demand_tuple)
            self._copies = vm_copies(self.free, self.demand) if kept is None else kept[self.slots]
        return self._copies

    @property
    def within_rack(self) -> np.ndarray:
        """Per class, the tie-break of its hosts inside a rack: more VMs
        of the request first (BestFit: more room first)."""
        if self._within_rack is None:
            self._within_rack = -self.copies
        return self._within_rack

    def _rank_racks(self) -> None:
        if self.ranked and self.best_fit:
            self.rack_rank = self._best_fit_ranks(self.top)
            self._within_rack = -self.room
        elif self.ranked:
            # Seed 003: racks by how many VMs they take, largest first.
            racks = self.classes._racks
            rack = self.classes._s_rack[self.slots]
            room = np.bincount(rack, weights=self.copies * self.hosts, minlength=racks)
            order = np.lexsort((np.arange(racks), -room))
            rank = np.empty(racks)
            rank[order] = np.arange(racks, dtype=float)
            self.rack_rank = rank

    @property
    def room(self) -> np.ndarray:
        """How many VMs of the request a host of each class can take: the
        planner's room(), capacity where admitted less what the cache
        thresholds leave."""
        if self._rooms is None:
            self._rooms = self._room()
        return self._rooms

    def _room(self) -> np.ndarray:
        # (Without a judge every class is admitted: the copies themselves.)
        room = self.copies if self.admitted is None else np.where(self.fixed_ok, self.copies, 0.0)
        if self.cache_rule is None:
            return room
        return self.cache_rule.room(room, self.cache, self.sync)

    def _best_fit_ranks(self, top: int) -> np.ndarray:
        """Each rack's rank in BestFit's order of the classes (each weighing
        its room times its hosts) over the levels from ``top``."""
        classes = self.classes
        rack = classes._s_rack[self.slots]
        codes = classes._rack_domains[top:, rack]
        order = arrangement.arrange(
            codes,
            self.room * self.hosts,
            np.zeros(len(self.slots), dtype=bool),
            np.arange(len(self.slots)),
            self.request.count,
        )
        racks, first = np.unique(rack[order], return_index=True)
        rank = np.full(classes._racks, np.inf)
        rank[racks] = np.argsort(np.argsort(first)).astype(float)
        return rank

    def admissible(self, free: np.ndarray, cache: np.ndarray, sync: np.ndarray) -> np.ndarray:
        """The planner's admissible(), per class or per host."""
        ok = fits_many(free, self.demand)
        if self.cache_rule is not None:
            ok &= self.cache_rule.admits_many(cache, sync)
        return ok

    def admits_one(self, free: Sequence[float], cache: float, sync: bool) -> bool:
        """The planner's admits_one(), to the bit."""
        if not fits_one(free, self.demand_tuple):
            return False
        return self.cache_rule is None or self.cache_rule.admits_one(cache, sync)

    def keys(self, at: np.ndarray) -> tuple[np.ndarray, ...]:
        """The sort key but the row of the classes at positions ``at``, most
        significant first.

        Ranked, the planner's position tie-break is the order of hosts
        within a rack: more VMs of the request first, then the row.
        """
        # A class's packing keys never change (its state is its name): the
        # classes keep them per demand.
        return self._ranked(at, self.classes.packing_keys(self.slots[at], self.demand_tuple))

    def listed_keys(self, at: np.ndarray) -> list[tuple]:
        """:meth:`keys` as one tuple of Python floats per class, for
        sorting a few classes in Python."""
        classes = self.classes
        slots = self.slots[at].tolist()
        packing = classes.listed_packing_keys(slots, self.demand_tuple)
        if not self.ranked:
            return packing
        # Ranked, the classes are split by rack: their name holds it.
        name_of, rank = classes._name_of, self.rack_rank
        only_residual = self.policy.packing == PACKING_COSINE and self.topology_aware
        positions = self.within_rack[at].tolist()
        return [
            (rank.item(name_of[slot][1]), *(key[1:] if only_residual else key), position)
            for slot, key, position in zip(slots, packing, positions, strict=True)
        ]

    def _ranked(self, at: np.ndarray, packing_keys: tuple) -> tuple[np.ndarray, ...]:
        """The classes' packing keys (``blind_keys``) with the rack's rank
        before and the position inside the rack after, where ranked."""
        if not self.ranked:
            return packing_keys
        rank = self.rack_rank[self.classes._s_rack[self.slots[at]]]
        return (rank, *self._packing_part(packing_keys), self.within_rack[at])

    def _packing_part(self, packing_keys: tuple) -> tuple:
        """What of the packing keys a host's sort key holds, between the
        rack's rank and the position where ranked: all that changes as the
        host takes VMs."""
        if self.ranked and self.policy.packing == PACKING_COSINE and self.topology_aware:
            return (packing_keys[1],)
        return packing_keys

    def key_one(self, row: int, free: Sequence[float], position: float) -> tuple:
        """:meth:`keys` for one host, to the bit; ``position``: its class's
        tie-break inside the rack when the request began."""
        packing = self.policy.packing
        capacity = self.classes._capacity[row]
        if not self.ranked:
            return blind_key_one(packing, free, capacity, self.demand_tuple)
        rank = float(self.rack_rank[self.classes._rack[row]])
        if packing == PACKING_COSINE and self.topology_aware:
            return (rank, _cosine_key_one(free, capacity, self.demand_tuple)[1], position)
        return (rank, *blind_key_one(packing, free, capacity, self.demand_tuple), position)

    def run(self) -> list[tuple[list[int], int]]:
        """The plan as segments: (hosts, VMs on each) in placement order."""
        # Every class given holds a VM (StateClasses passes those only):
        # what is left of admissible() is the cache thresholds.
        ok = self.fixed_ok
        if self.cache_rule is not None:
            admits = self.cache_rule.admits_many(self.cache, self.sync)
            ok = admits if ok is None else ok & admits
        elif ok is None:
            ok = np.ones(len(self.slots), dtype=bool)
        if self.policy.packing == PACKING_NOVA_WEIGHERS:
            self._rank_racks()
            return self.weighed(ok)
        count = self.request.count
        # A request the admissible classes cannot hold is refused before
        # any ranking: most failed attempts on a busy cloud end here.
        # (A dot product of whole numbers: exact, and two numpy calls, not four.)
        room = float(self.room @ (self.hosts * ok)) if count > 1 else float(ok.any())
        if room < count:
            # Every host takes VMs until it admits no more: so many, then none.
            raise self.short_of(int(room))
        self._rank_racks()
        # (Few classes cost less to rank whole than to sift by rack.)
        if self.ranked and not self.best_fit and len(self.slots) > self.classes.few_slots:
            ok = self._first_racks(ok)
        return self.one(ok) if count == 1 else self.mdobp(ok)

    def _first_racks(self, ok: np.ndarray) -> np.ndarray:
        """``ok`` less the classes in racks the plan never reaches: the rack
        rank comes first in every host's key, so the greedy fills the racks
        in rank order, each until no host of it admits more (its room), and
        stops in the first rack where the rooms so far hold the request."""
        rank = self.rack_rank[self.classes._s_rack[self.slots]]
        if self.request.count == 1:
            return ok & (rank == rank[ok].min())
        rooms = np.bincount(
            rank[ok].astype(np.int64),
            weights=(self.room * self.hosts)[ok],
            minlength=self.classes._racks,
        )
        reached = int(rooms.cumsum().searchsorted(self.request.count))
        return ok & (rank <= reached)

    def one(self, ok: np.ndarray) -> list[tuple[list[int], int]]:
        """:meth:`mdobp` for a request of one VM: the first host of the
        admissible class (``ok``) with the smallest (key, first row); no
        chain, no merge, no heap."""
        at = ok.nonzero()[0]
        classes = self.classes
        firsts = classes._s_first[self.slots[at]].tolist()
        if len(at) <= classes.few_slots:
            _, row = min(zip(self.listed_keys(at), firsts, strict=True))
            return [([row], 1)]
        keys = self.keys(at)
        best = int(np.lexsort((np.asarray(firsts), *reversed(keys)))[0])
        return [([firsts[best]], 1)]

    def ranked_classes(self, candidates: np.ndarray) -> tuple[list[int], list[int], list[tuple]]:
        """The admissible classes sorted by (key, first row), where each run
        of equal keys starts, and each run's key.

        Few classes are sorted in Python (numpy's cost per call would
        outweigh arrays this short); both ways agree to the bit.
        """
        classes = self.classes
        slots = self.slots[candidates].tolist()
        if len(slots) <= classes.few_slots:
            firsts = [classes._members[slot][0] for slot in slots]
            entries = sorted(zip(self.listed_keys(candidates), firsts, slots, strict=True))
            starts = [
                i for i in range(len(entries)) if i == 0 or entries[i][0] != entries[i - 1][0]
            ]
            return [e[2] for e in entries], starts, [entries[i][0] for i in starts]
        keys = self.keys(candidates)
        first = classes._s_first[self.slots[candidates]]
        order = np.lexsort((first, *reversed(keys)))
        ranked = self.slots[candidates[order]].tolist()
        if not ranked:
            return ranked, [], []
        sorted_keys = [k[order] for k in keys]
        change = np.zeros(len(ranked), dtype=bool)
        change[0] = True
        for k in sorted_keys:
            change[1:] |= k[1:] != k[:-1]
        starts = change.nonzero()[0]
        if not keys:
            return ranked, starts.tolist(), [()] * len(starts)
        run_keys = list(zip(*(k[starts].tolist() for k in sorted_keys), strict=True))
        return ranked, starts.tolist(), run_keys

    def mdobp(self, ok: np.ndarray) -> list[tuple[list[int], int]]:
        """The planner's MDOBP: each VM to the admissible host with the
        smallest (key, row); ``ok``: the admissible classes, whose room
        holds the request.

        Untouched hosts come out of their classes in that order. A host
        that stays the best after a VM takes the next one too (a chain);
        when it falls behind, the hosts after it that fall behind alike
        take as many VMs each, until a rival comes first, and stay together
        as one block until one of them is chosen again. Hosts that took
        VMs are rescored with the planner's one-host functions.
        """
        count = self.request.count
        ranked = self.ranked_classes(ok.nonzero()[0])
        if count >= self.classes.filling_from:
            filled = self.filled(*ranked)
            if filled is not None:
                return filled
        untouched = UntouchedHosts(self.classes._members, *ranked)
        classes = self.classes
        position_of = np.zeros(len(classes._name_of))
        position_of[self.slots] = self.within_rack
        fixed_of = None
        if self.fixed_ok is not None:
            fixed_of = np.zeros(len(classes._name_of), dtype=bool)
            fixed_of[self.slots] = self.fixed_ok
        demand, score, sync_request = self.demand_tuple, self.score, self.sync_request
        d0, d1, d2 = demand
        # Hosts that took VMs: one by one (tag -1, state in ``touched``) or
        # in blocks of hosts alike (tag: the block's number in ``blocks``).
        touched: dict[int, list] = {}
        blocks: list[list] = []
        changed: list[tuple[tuple, int, int]] = []
        #: The plan so far as (hosts, VMs on each), and how many VMs it has.
        chosen: list[tuple[list[int], int]] = []
        placed = 0

        def one_more(load: list) -> bool:
            """Place a VM on a host's load; whether it admits another."""
            a, b, c = load[0]
            load[0] = [a - d0, b - d1, c - d2]
            load[1] += score
            load[2] = load[2] or sync_request
            return load[4] and self.admits_one(load[0], load[1], load[2])

        def fresh(row: int) -> list:
            """An untouched host's load: its class's state (the cache total
            and SyncHPC only where the thresholds read them, and then they
            are part of the class)."""
            slot = classes._row_slot[row]
            name = classes._name_of[slot]
            fixed = fixed_of is None or bool(fixed_of[slot])
            return [list(name[3]), name[4], name[5], float(position_of[slot]), fixed]

        def settle(rows: list[int], load: list, after: tuple | None) -> None:
            """Hosts that took VMs alike and now stand at ``after`` (None:
            they admit no more): one touched host, or a block of them."""
            if after is None or not rows:
                return
            if len(rows) == 1:
                touched[rows[0]] = load
                heapq.heappush(changed, (after, rows[0], -1))
            else:
                load.append(after)
                blocks.append([rows, 0, load])
                heapq.heappush(changed, (after, rows[0], len(blocks) - 1))

        def chain(
            row: int, load: list, key: tuple, vms: int, room: int | None = None
        ) -> tuple[tuple | None, int]:
            """After ``vms`` VMs on the best host (chosen at ``key``), more
            while its key does not rise: it stays the best, as every other
            host comes after it; ``room``: at most this many VMs in all (by
            default what the request has left). Its key then (None: it
            admits no more), and how many VMs it took."""
            limit = count - placed if room is None else room
            after = self.key_one(row, load[0], load[3]) if one_more(load) else None
            last = key
            while after is not None and after <= last and vms < limit:
                last = after
                vms += 1
                after = self.key_one(row, load[0], load[3]) if one_more(load) else None
            return after, vms

        while placed < count:
            head = untouched.head
            if changed and (head is None or changed[0][:2] < head):
                key, row, tag = heapq.heappop(changed)
                if tag < 0:
                    load = touched[row]
                    after, vms = chain(row, load, key, 1)
                    settle([row], load, after)
                    chosen.append(([row], vms))
                    placed += vms
                    continue
                # A block's next host: if it falls behind the block, the
                # block's next hosts follow it as a class's would.
                rows, at, state = blocks[tag]
                load = [list(state[0]), *state[1:5]]
                after, vms = chain(row, load, key, 1)
                end = at + 1
                if after is None or after > key:
                    rival = changed[0][:2] if changed else None
                    if head is not None and (rival is None or head < rival):
                        rival = head
                    end = len(rows)
                    if rival is not None and rival[0] == key:
                        end = bisect.bisect_left(rows, rival[1], at + 1)
                    end = min(end, at + max(1, (count - placed) // vms))
                if end < len(rows):
                    blocks[tag][1] = end
                    heapq.heappush(changed, (key, rows[end], tag))
                taken = rows[at:end]
                chosen.append((taken, vms))
                placed += vms * len(taken)
                settle(taken, load, after)
                continue
            if head is None:
                raise self.short_of(placed)
            key, row = head
            rival = changed[0][:2] if changed else None
            load = fresh(row)
            after, vms = chain(row, load, key, 1)
            untouched.advance()
            chosen.append(([row], vms))
            placed += vms
            if after is not None and after <= key:
                # Still ahead of its class: its next VM may come before theirs.
                settle([row], load, after)
                continue
            # It falls behind: so do the hosts after it in (key, row) order,
            # each taking as many VMs as its class's first, until a rival
            # comes first. A class's chain is worked out once; hosts of other
            # classes of equal key (another cache total) have their own.
            taken: dict[int, list] = {classes._row_slot[row]: [[row], load, after, vms]}

            def entry_of(row: int, taken: dict = taken, key: tuple = key) -> list:
                """The chain of the host's class: [its hosts taken, load, key after, VMs]."""
                entry = taken.get(classes._row_slot[row])
                if entry is None:
                    load = fresh(row)
                    after, vms = chain(row, load, key, 1, count)
                    entry = taken[classes._row_slot[row]] = [[], load, after, vms]
                return entry

            while (head := untouched.head) is not None and head[0] == key and placed < count:
                if rival is not None and rival < head:
                    break
                if untouched.merging is not None and count - placed >= classes.merging_from:
                    # Classes of equal keys merged by row: their hosts taken
                    # at once up to the first that would not fall behind.
                    bound = rival[1] if rival is not None and rival[0] == key else None
                    more = self._take_merged(
                        untouched, bound, count - placed, entry_of, key, classes.one_by_one
                    )
                    if not more:
                        break
                    chosen.extend(more)
                    placed += sum(vms * len(rows) for rows, vms in more)
                    continue
                row = head[1]
                entry = entry_of(row)
                vms = entry[3]
                if not (entry[2] is None or entry[2] > key) or placed + vms > count:
                    break
                if untouched.single is not None:
                    rows = untouched.take_single(rival, (count - placed) // vms)
                else:
                    untouched.advance()
                    rows = [row]
                chosen.append((rows, vms))
                placed += vms * len(rows)
                entry[0].extend(rows)
            for rows, load, after, _ in taken.values():
                settle(rows, load, after)
        return chosen

    @staticmethod
    def _take_merged(
        untouched: UntouchedHosts,
        bound: int | None,
        left: int,
        entry_of,
        key: tuple,
        one_by_one: int,
    ) -> list[tuple[list[int], int]]:
        """The hosts of the merged run at the head that :meth:`mdobp` takes
        one by one, taken at once: by row, below ``bound``, each with its
        class's chain while that chain falls behind ``key`` and the request
        has VMs ``left`` for it. As segments; each class's entry records
        its hosts."""
        rows, of = untouched.merged(bound, left)
        # Per class met (in the order of their first hosts, as the greedy
        # meets them): its chain, and where each host's class is in it.
        slots, first, where = np.unique(of, return_index=True, return_inverse=True)
        met = first.argsort(kind="stable")
        entries = {
            slot: entry_of(row)
            for slot, row in zip(slots[met].tolist(), rows[first[met]].tolist(), strict=True)
        }
        chains = [entries[slot] for slot in slots.tolist()]
        vms = np.array([e[3] for e in chains], dtype=np.int64)[where]
        ahead = np.array([not (e[2] is None or e[2] > key) for e in chains])[where]
        end = int(vms.cumsum().searchsorted(left, side="right"))
        stops = ahead[:end].nonzero()[0]
        if stops.size:
            end = int(stops[0])
        if not end:
            return []
        taken_rows, taken_vms = rows[:end], vms[:end]
        # Each class's hosts, by row, onto its chain's list.
        by_class = where[:end].argsort(kind="stable")
        classes_taken = where[:end][by_class]
        rows_by_class = taken_rows[by_class].tolist()
        bounds = _run_bounds(classes_taken)
        for i, at in enumerate(classes_taken[bounds[:-1]].tolist()):
            chains[at][0].extend(rows_by_class[bounds[i] : bounds[i + 1]])
        segments: list[tuple[list[int], int]] = []
        _add_segments(segments, taken_rows.tolist(), taken_vms, one_by_one)
        untouched.skip_to(int(taken_rows[-1]) + 1)
        return segments

    def trajectories(self, at: np.ndarray) -> tuple[np.ndarray, tuple, np.ndarray]:
        """The chains an untouched host of each class at ``at`` runs, one
        after another, until it admits no more: (the class's index in
        ``at``, the chain's key, its VMs) per chain.

        A host's chain ends where its key rises; the next one starts at the
        risen key. Steps use the one-host chain's float operations, so keys
        agree with :meth:`key_one` to the bit.
        """
        count = self.request.count
        size = len(at)
        free = self.free[at].copy()
        cache = self.cache[at].copy()
        sync = self.sync[at] | self.sync_request
        whole = self.keys(at)
        # A host's rack rank and position never change as it takes VMs:
        # only its packing keys are worked out again and compared.
        ranked = self.ranked
        key = whole[1:-1] if ranked else whole
        packing = self.policy.packing
        capacity = self.classes._s_capacity[self.slots[at]]
        cosine_keys = CosineKeys(capacity, self.demand) if packing == PACKING_COSINE else None
        length = np.zeros(size, dtype=np.int64)
        active = np.ones(size, dtype=bool)
        found: list[tuple[np.ndarray, tuple, np.ndarray]] = []

        def end(where: np.ndarray) -> None:
            parts = (whole[0], *key, whole[-1]) if ranked else key
            found.append((where.nonzero()[0], tuple(k[where] for k in parts), length[where]))

        for vms in range(1, count + 1):
            free -= self.demand
            cache += self.score
            length += active
            more = self.admissible(free, cache, sync)
            if vms == count:
                more[:] = False  # no host takes more than the whole request
            end(active & ~more)
            active &= more
            if not active.any():
                break
            if cosine_keys is not None:
                after = self._packing_part(cosine_keys(free))
            else:
                after = self._packing_part(blind_keys(packing, free, capacity, self.demand))
            rose = np.zeros(size, dtype=bool)
            same = np.ones(size, dtype=bool)
            for new, old in zip(after, key, strict=True):
                rose |= same & (new > old)
                same &= new == old
            rose &= active
            end(rose)
            length[rose] = 0
            # The key a chain runs at: the highest its host has reached.
            key = tuple(np.where(rose, new, old) for new, old in zip(after, key, strict=True))
        index = np.concatenate([f[0] for f in found])
        keys = tuple(np.concatenate([f[1][i] for f in found]) for i in range(len(whole)))
        return index, keys, np.concatenate([f[2] for f in found])

    def filled(
        self, slots: list[int], starts: list[int], keys: list[tuple]
    ) -> list[tuple[list[int], int]] | None:
        """:meth:`mdobp`'s plan, from each class's chains: the greedy takes
        a host's chains one after another, each at the highest key its host
        has reached, so the VMs go by (that key, row): for each key in
        order, the hosts of the classes with a chain at it, merged by row,
        each taking the chain's VMs. None where the classes planned in
        numpy might not hold the request (then :meth:`mdobp` plans VM by VM).
        """
        if not slots:
            return None
        count = self.request.count
        position = np.zeros(len(self.classes._name_of), dtype=np.int64)
        position[self.slots] = np.arange(len(self.slots))
        at = position[np.asarray(slots, dtype=np.int64)]
        # The classes whose room covers the request, to the end of a run of
        # equal keys; then, if their chains run past the next class's key,
        # every class.
        reach = (self.room[at] * self.hosts[at]).cumsum()
        needed = min(len(at), int(reach.searchsorted(count)) + 1)
        run = bisect.bisect_right(starts, needed - 1)
        # Fewer runs than classes: classes of equal keys, which the greedy
        # merges host by host.
        if needed < self.classes.filling_from and run == needed:
            return None
        if run < len(starts):
            end = starts[run]
            plan = self._walk(at[:end], slots[:end], keys[run])
            if plan is not None:
                return plan
        return self._walk(at, slots, None)

    def _walk(
        self, at: np.ndarray, slots: list[int], limit: tuple | None
    ) -> list[tuple[list[int], int]] | None:
        """The plan over the classes at ``at`` (``slots``) from their
        chains; None if it needs a chain at ``limit`` or after."""
        members = self.classes._members
        index, keys, length = self.trajectories(at)
        order = np.lexsort((index, *reversed(keys)))
        index, length = index[order].tolist(), length[order].tolist()
        if keys:
            keys = list(zip(*(k[order].tolist() for k in keys), strict=True))
        else:
            keys = [()] * len(index)  # a packing that orders by row alone
        plan: list[tuple[list[int], int]] = []
        left = self.request.count
        first = 0
        while first < len(index):
            key = keys[first]
            last = first + 1
            while last < len(index) and keys[last] == key:
                last += 1
            if limit is not None and not key < limit:
                return None
            if last == first + 1:
                hosts, each = members[slots[index[first]]], length[first]
                full = min(len(hosts), left // each)
                if full:
                    plan.append((hosts[:full], each))
                    left -= full * each
                if left and full < len(hosts):
                    plan.append(([hosts[full]], left))
                    left = 0
            else:
                # Chains at one key: their classes' hosts merged by row (no
                # more than ``left`` of each: each host takes a VM at least).
                group = [members[slots[i]][:left] for i in index[first:last]]
                sizes = [len(m) for m in group]
                # (One pass over the lists, not an array per class: chains
                # at one key are often many short ones.)
                rows = np.fromiter(
                    itertools.chain.from_iterable(group), dtype=np.int64, count=sum(sizes)
                )
                each = np.array(length[first:last]).repeat(sizes)
                by_row = rows.argsort(kind="stable")
                rows, each = rows[by_row], each[by_row]
                total = each.cumsum()
                stop = min(len(rows), int(total.searchsorted(left)) + 1)
                each = each[:stop].copy()
                placed = int(total[stop - 1])
                if placed > left:
                    each[-1] -= placed - left
                _add_segments(plan, rows[:stop].tolist(), each, self.classes.one_by_one)
                left -= min(placed, left)
            if not left:
                return plan
            first = last
        return None

    def weighed(self, ok: np.ndarray) -> list[tuple[list[int], int]]:
        """Nova's weighers over the admissible classes ``ok``: every VM
        normalises over all candidates again, weighed per point of free RAM
        and cores (:mod:`.class_weighing`)."""
        if self.request.count == 1:
            return self.weighed_one(ok)
        classes = self.classes
        candidates = []
        for i in ok.nonzero()[0].tolist():
            slot = int(self.slots[i])
            name = classes._name_of[slot]
            candidates.append((name[3], name[4], name[5], True, classes._members[slot]))
        demand, score, sync_request = self.demand_tuple, self.score, self.sync_request

        def place(load: list) -> bool:
            """One VM on a host's load; whether the host is still a candidate."""
            load[0] = [f - d for f, d in zip(load[0], demand, strict=True)]
            load[1] += score
            load[2] = load[2] or sync_request
            return load[3] and self.admits_one(load[0], load[1], load[2])

        hosts = class_weighing.WeighedHosts(candidates)
        return class_weighing.weigh_and_take(hosts, self.request.count, place, self.short_of)

    def weighed_one(self, ok: np.ndarray) -> list[tuple[list[int], int]]:
        """:meth:`weighed` for a request of one VM (most jobs of many logs):
        the classes' weights at once, as plan() weighs its hosts, and the
        first host of those weighing most. A round over the candidates'
        points in Python costs a step per class, which a large cloud has
        many of."""
        at = ok.nonzero()[0]
        if not at.size:
            raise self.short_of(0)
        free = self.free[at]
        weight = _normalised(free[:, 1]) + _normalised(free[:, 0])
        firsts = self.classes._s_first[self.slots[at]]
        return [([int(firsts[weight == weight.max()].min())], 1)]

    def short_of(self, placed: int) -> NoPlacement:
        """The refusal when ``placed`` VMs fit: every host takes VMs until it
        admits no more, so ``placed`` is these classes' whole room."""
        return NoPlacement(
            f"only {placed} of {self.request.count} VMs fit within capacity, "
            "dedicated hosts, cache thresholds and the interference table",
            placed,
            room=placed,
        )


def _add_segments(
    plan: list[tuple[list[int], int]],
    rows: list[int],
    vms: Sequence[int] | np.ndarray,
    one_by_one: int,
) -> None:
    """Hosts ``rows`` taking ``vms`` VMs each, in order, onto ``plan``:
    hosts in a row that take as many VMs share one segment. Every list in
    the plan must be its own (slices, new lists): the last one may grow.
    Up to ``one_by_one`` hosts go one by one (numpy's cost per call
    outweighs so few)."""
    if len(rows) <= one_by_one:
        if isinstance(vms, np.ndarray):
            vms = vms.tolist()
        for row, each in zip(rows, vms, strict=True):
            if plan and plan[-1][1] == each:
                plan[-1][0].append(row)
            else:
                plan.append(([row], each))
        return
    # A wide job's hosts: cut where the VMs per host change, not host by host.
    vms = np.asarray(vms)
    bounds = _run_bounds(vms)
    for i, each in enumerate(vms[bounds[:-1]].tolist()):
        stretch = rows[bounds[i] : bounds[i + 1]]
        if plan and plan[-1][1] == each:
            plan[-1][0].extend(stretch)
        else:
            plan.append((stretch, each))


def _run_bounds(values: np.ndarray) -> list[int]:
    """Where each run of equal ``values`` starts, and their length at the
    end: run ``i`` is ``values[bounds[i]:bounds[i + 1]]``."""
    cuts = (values[1:] != values[:-1]).nonzero()[0] + 1
    return [0, *cuts.tolist(), len(values)]


class UntouchedHosts:
    """The hosts a request has not touched, in (key, row) order.

    Classes come sorted by (key, first row); a run of classes with equal
    keys is merged by row, each class joining the merge only when its first
    row comes up. ``head`` is the next host as (key, row), None at the end.
    """

    def __init__(
        self, members: list[list[int]], slots: list[int], starts: list[int], keys: list[tuple]
    ) -> None:
        """``slots`` sorted by (key, first row); each run of equal keys
        starts at ``starts[i]`` and has the key ``keys[i]``."""
        self.members = members
        self.slots = slots
        self.starts = [*starts, len(slots)]
        self.keys = keys
        self.run = -1
        self.head: tuple[tuple, int] | None = None
        self._next_run()

    def _next_run(self) -> None:
        self.run += 1
        if self.run >= len(self.keys):
            self.head, self.single, self.merging = None, None, None
            return
        i, j = self.starts[self.run], self.starts[self.run + 1]
        key = self.key = self.keys[self.run]
        if j == i + 1:
            self.single, self.at, self.merging = self.members[self.slots[i]], 0, None
            self.head = (key, self.single[0])
            return
        self.single = None
        self.merging = self._merge(self.slots[i:j])
        self.head = (key, next(self.merging))

    def _merge(self, run: list[int], start: int | None = None) -> Iterator[int]:
        """The hosts of the classes ``run`` by row (from row ``start`` on)."""
        members = self.members
        merging: list[tuple[int, int, int]] = []
        joined = 0
        if start is not None:
            # Every class with hosts from ``start`` on joins at once: their
            # first such hosts are in no particular order.
            for slot in run:
                at = bisect.bisect_left(members[slot], start)
                if at < len(members[slot]):
                    merging.append((members[slot][at], at, slot))
            heapq.heapify(merging)
            joined = len(run)
        while merging or joined < len(run):
            while joined < len(run) and (not merging or members[run[joined]][0] < merging[0][0]):
                slot = run[joined]
                heapq.heappush(merging, (members[slot][0], 0, slot))
                joined += 1
            row, at, slot = merging[0]
            yield row
            rows = members[slot]
            if at + 1 < len(rows):
                heapq.heapreplace(merging, (rows[at + 1], at + 1, slot))
            else:
                heapq.heappop(merging)

    def advance(self) -> None:
        """Past the head."""
        if self.single is not None:
            self.at += 1
            if self.at < len(self.single):
                self.head = (self.key, self.single[self.at])
                return
            self._next_run()
            return
        row = next(self.merging, None)
        if row is None:
            self._next_run()
        else:
            self.head = (self.key, row)

    def merged(self, bound: int | None, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """In a run of several classes: its hosts from the head on, below
        row ``bound`` (None: any), by row, at most ``limit`` of them; and
        each one's class. Nothing is taken (:meth:`skip_to` does)."""
        run = self.slots[self.starts[self.run] : self.starts[self.run + 1]]
        start = self.head[1]
        rows, slots = [], []
        for slot in run:
            members = self.members[slot]
            at = bisect.bisect_left(members, start)
            end = len(members) if bound is None else bisect.bisect_left(members, bound, at)
            end = min(end, at + limit)
            if at < end:
                rows.append(members[at:end])
                slots.append((slot, end - at))
        every = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64)
        of = np.repeat([slot for slot, _ in slots], [n for _, n in slots]).astype(np.int64)
        order = every.argsort(kind="stable")[:limit]
        return every[order], of[order]

    def skip_to(self, row: int) -> None:
        """In a run of several classes: past every host before ``row``."""
        run = self.slots[self.starts[self.run] : self.starts[self.run + 1]]
        self.merging = self._merge(run, row)
        self.advance()

    def take_single(self, rival: tuple | None, limit: int) -> list[int]:
        """The head and the hosts after it in its class (a run of one class)
        that come before ``rival``, at most ``limit``, all taken."""
        members, start = self.single, self.at
        end = len(members)
        if rival is not None and rival[0] == self.key:
            end = bisect.bisect_left(members, rival[1], start + 1)
        end = min(end, start + limit)
        taken = members[start:end]
        self.at = end - 1
        self.advance()
        return taken
