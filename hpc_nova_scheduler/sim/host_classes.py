"""Blind packings planned per class of identical hosts.

Under a blind policy (:attr:`~hpc_nova_scheduler.core.algorithm.Policy.blind`:
no application classes, racks, processor groups, thresholds or harmful
pairs) a host's rank depends on nothing but its own free and total
resources, with its position as the last tie-break. Hosts whose free and
total vectors are equal therefore rank together, in position order. A cloud
of thousands of hosts holds few such classes (idle hosts are one), so
:class:`HostClasses` scores the classes instead of the hosts and moves whole
runs of hosts from class to class, where
:func:`~hpc_nova_scheduler.core.algorithm.plan` scores every host and places
one VM at a time. The cost of a request then grows with the hosts it
touches, not with the size of the cloud: this is what lets the simulator
replay archive logs of 100,000-core systems in seconds.

Hosts are rows of numpy arrays and move between classes in blocks (numpy
index arrays), so that a job of thousands of VMs spread one per host costs
a few vector operations, not a Python step per host.

It is the same greedy, not an approximation: each VM goes to the host with
the smallest (key, position) and free vectors change by the same float
operations in the same order, so the plans and the free vectors are
bit-for-bit those of :func:`~hpc_nova_scheduler.core.algorithm.plan` over a
:class:`~hpc_nova_scheduler.core.state.ClusterState` (a test holds the two
together).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence

import numpy as np

from hpc_nova_scheduler.core.algorithm import (
    BLIND_PACKINGS,
    NoPlacement,
    blind_key_one,
    blind_keys,
)
from hpc_nova_scheduler.core.columns import counted_rows

Vector = tuple[float, float, float]
#: Floating-point slack when checking that a demand fits (as the planner does).
_SLACK = 1e-9


def _minus(free: Vector, demand: Vector, times: int = 1) -> Vector:
    # One VM at a time, as ClusterState does: the float results must agree.
    a, b, c = free
    for _ in range(times):
        a, b, c = a - demand[0], b - demand[1], c - demand[2]
    return (a, b, c)


def _plus(free: Vector, demand: Vector, times: int) -> Vector:
    a, b, c = free
    for _ in range(times):
        a, b, c = a + demand[0], b + demand[1], c + demand[2]
    return (a, b, c)


Name = tuple[Vector, Vector]
#: A block of a placement: hosts (ascending rows) that each took ``vms`` VMs.
Block = tuple[np.ndarray, int]


class HostClasses:
    """The hosts of a cloud grouped by (total, free) vector, for one blind packing.

    Rows are host positions, the order of the capacities given. VMs are
    placed and released through :meth:`place` and :meth:`release`; nothing
    else changes the hosts. A class is named by its two vectors and lives in
    a slot of the scoring arrays while it has hosts.
    """

    #: Up to this many slots, classes are scored in Python: numpy's cost per
    #: call would outweigh a vector this short. Both ways agree to the bit.
    few_slots = 48
    #: From a released job's hosts (once per block) this many times fewer
    #: than the cloud's, they are counted over every host (one bincount)
    #: rather than sorted. Both ways agree (the tests run both).
    counting_share = 8

    def __init__(self, capacities: Sequence[Vector], packing: str) -> None:
        if packing not in BLIND_PACKINGS:
            raise ValueError(f"packing {packing!r} does not judge hosts on their own")
        self.packing = packing
        self._slot_of: dict[Name, int] = {}
        self._name_of: list[Name | None] = []
        self._spare: list[int] = []
        #: Slots whose stored first row may have left them.
        self._dirty: set[int] = set()
        size = 8
        self._slot_free = np.zeros((size, 3))
        self._slot_capacity = np.zeros((size, 3))
        self._slot_hosts = np.zeros(size, dtype=np.int64)
        self._slot_first = np.zeros(size, dtype=np.int64)
        self._row_slot = np.zeros(len(capacities), dtype=np.int32)
        for row, capacity in enumerate(capacities):
            capacity = tuple(map(float, capacity))
            slot = self._slot((capacity, capacity))
            if not self._slot_hosts[slot]:
                self._slot_first[slot] = row
            self._slot_hosts[slot] += 1
            self._row_slot[row] = slot

    def __len__(self) -> int:
        return len(self._row_slot)

    def free_of(self, row: int) -> Vector:
        return self._name_of[self._row_slot[row]][1]

    def class_count(self) -> int:
        return len(self._slot_of)

    def total_free(self) -> np.ndarray:
        """Free resources summed over every host."""
        used = len(self._name_of)
        return (self._slot_free[:used] * self._slot_hosts[:used, None]).sum(axis=0)

    # -- classes and their slots ------------------------------------------------

    def _slot(self, name: Name) -> int:
        slot = self._slot_of.get(name)
        if slot is None:
            if self._spare:
                slot = self._spare.pop()
                self._name_of[slot] = name
            else:
                slot = len(self._name_of)
                self._name_of.append(name)
                if slot == len(self._slot_hosts):
                    self._grow()
            self._slot_of[name] = slot
            self._slot_capacity[slot], self._slot_free[slot] = name
            self._slot_hosts[slot] = 0
        return slot

    def _grow(self) -> None:
        size = 2 * len(self._slot_hosts)
        for attribute in ("_slot_free", "_slot_capacity", "_slot_hosts", "_slot_first"):
            old = getattr(self, attribute)
            new = np.zeros((size, *old.shape[1:]), dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, attribute, new)

    def _members(self, slot: int) -> np.ndarray:
        """The rows of a class, ascending (a pass over every host)."""
        return np.flatnonzero(self._row_slot == slot)

    def _refresh(self, slot: int) -> None:
        self._slot_first[slot] = int(np.argmax(self._row_slot == slot))
        self._dirty.discard(slot)

    def _assign(self, rows: np.ndarray, source: int, target: Name) -> int:
        """Move ``rows`` (ascending, all in slot ``source``) to the class ``target``."""
        slot = self._slot(target)
        count = len(rows)
        first = int(rows[0])
        self._row_slot[rows] = slot
        hosts = self._slot_hosts
        if not hosts[slot] or (slot not in self._dirty and first < self._slot_first[slot]):
            self._slot_first[slot] = first
        hosts[slot] += count
        hosts[source] -= count
        if not hosts[source]:
            del self._slot_of[self._name_of[source]]
            self._name_of[source] = None
            self._dirty.discard(source)
            self._spare.append(source)
        elif first == self._slot_first[source]:
            self._dirty.add(source)
        return slot

    # -- placing and releasing ------------------------------------------------

    def fits(self, free: Vector, demand: Vector) -> bool:
        return all(d <= f + _SLACK for d, f in zip(demand, free, strict=True) if d > 0)

    def room(self, demand: Vector) -> float:
        """How many VMs of ``demand`` the hosts take in all (inf for a zero demand)."""
        dims = [i for i in range(3) if demand[i] > 0]
        if not dims:
            return float("inf") if self._slot_of else 0.0
        used = len(self._name_of)
        if used <= self.few_slots:
            total = 0
            for slot, name in enumerate(self._name_of):
                if name is not None:
                    copies = min(math.floor((name[1][i] + _SLACK) / demand[i]) for i in dims)
                    total += max(copies, 0) * int(self._slot_hosts[slot])
            return float(total)
        need = np.asarray(demand, dtype=float)[dims]
        copies = np.floor((self._slot_free[:used][:, dims] + _SLACK) / need).min(axis=1)
        return float((np.maximum(copies, 0) * self._slot_hosts[:used]).sum())

    def place(self, demand: Vector, count: int) -> list[Block]:
        """Place ``count`` VMs of ``demand`` as the packing would, one at a time.

        Returns the blocks of the placement in placement order (see
        :func:`runs` for one (row, VMs) pair per host). Raises
        :class:`~hpc_nova_scheduler.core.algorithm.NoPlacement`, leaving
        every host as it was, when they do not all fit.
        """
        if count < 1:
            raise NoPlacement("a request needs at least one VM")
        demand = tuple(map(float, demand))
        if self.room(demand) < count:
            raise NoPlacement(f"fewer than {count} VMs fit on the hosts")
        journal: list[tuple[np.ndarray, Name, Name]] = []
        try:
            return self._greedy(demand, count, journal)
        except NoPlacement:
            for rows, source, target in reversed(journal):
                self._assign(rows, self._slot_of[target], source)
            raise

    def _ranked(self, demand: Vector) -> tuple[list[Name], list[tuple]]:
        """The classes that can take a VM, best first, and their keys."""
        packing = self.packing
        used = len(self._name_of)
        if used <= self.few_slots:
            entries = sorted(
                (blind_key_one(packing, name[1], name[0], demand), int(first), name)
                for name, first in zip(self._name_of, self._slot_first.tolist(), strict=False)
                if name is not None and self.fits(name[1], demand)
            )  # first rows differ between classes: names are never compared
            return [e[2] for e in entries], [e[0] for e in entries]
        slot_free = self._slot_free[:used]
        live = self._slot_hosts[:used] > 0
        dims = [i for i in range(3) if demand[i] > 0]
        if dims:
            need = np.asarray(demand)[dims]
            live &= (need <= slot_free[:, dims] + _SLACK).all(axis=1)
        slots = np.flatnonzero(live)
        keys = blind_keys(packing, slot_free[slots], self._slot_capacity[slots], np.asarray(demand))
        order = np.lexsort((self._slot_first[slots], *reversed(keys)))
        ranked = [self._name_of[s] for s in slots[order].tolist()]
        ranked_keys = list(zip(*(k[order].tolist() for k in keys), strict=True))
        if not keys:
            ranked_keys = [()] * len(ranked)
        return ranked, ranked_keys

    def _greedy(self, demand: Vector, count: int, journal: list) -> list[Block]:
        packing = self.packing
        for slot in list(self._dirty):
            self._refresh(slot)
        ranked, ranked_keys = self._ranked(demand)
        key_of = dict(zip(ranked, ranked_keys, strict=True))
        # Rows of the classes this request has looked into, ascending; a
        # class that receives hosts is looked into again.
        rows_of: dict[Name, np.ndarray] = {}

        def members(name: Name) -> np.ndarray:
            found = rows_of.get(name)
            if found is None:
                found = rows_of[name] = self._members(self._slot_of[name])
            return found

        def first_row(name: Name) -> int | None:
            slot = self._slot_of.get(name)
            if slot is None:
                return None
            if name in rows_of or slot in self._dirty:
                return int(members(name)[0])
            return int(self._slot_first[slot])

        # Classes this request changes leave the ranked list for a heap of
        # (key, first row, tie, name); an entry is live while ``queued``
        # still holds its first row.
        changed: list = []
        queued: dict[Name, int | None] = {}
        tie = itertools.count()
        cursor = 0

        def best(pop: bool):
            """The best class as (key, first row, name); ``pop`` takes it."""
            nonlocal cursor
            while cursor < len(ranked):
                name = ranked[cursor]
                if name in self._slot_of and name not in queued:
                    break
                cursor += 1
            found = None
            if cursor < len(ranked):
                name = ranked[cursor]
                found = (ranked_keys[cursor], first_row(name), name)
            while changed:
                key, row, _, name = changed[0]
                if queued.get(name) == row and first_row(name) == row:
                    if found is None or (key, row) < found[:2]:
                        found = (key, row, name)
                        if pop:
                            heapq.heappop(changed)
                            queued[name] = None
                            return found
                    break
                heapq.heappop(changed)
            if found is not None and pop:
                cursor += 1
                queued[found[2]] = None
            return found

        def requeue(name: Name) -> None:
            row = first_row(name)
            if row is None or queued.get(name) == row:
                return
            key = key_of.get(name)
            if key is None:
                if not self.fits(name[1], demand):
                    return
                key = key_of[name] = blind_key_one(packing, name[1], name[0], demand)
            queued[name] = row
            heapq.heappush(changed, (key, row, next(tie), name))

        blocks: list[Block] = []
        placed = 0
        while placed < count:
            chosen = best(pop=True)
            if chosen is None:
                raise NoPlacement(f"only {placed} of {count} VMs fit on the hosts")
            key, row, name = chosen
            capacity, free = name
            after = _minus(free, demand)
            if after == free:  # a demand of nothing: every VM stays on this host
                blocks.append((np.array([row]), count - placed))
                break
            vms = 1
            if self.fits(after, demand) and blind_key_one(packing, after, capacity, demand) <= key:
                # The host stays ahead of every other: the next VM goes there
                # too, and the next, while it fits and its key does not rise.
                take, last_key = 1, blind_key_one(packing, after, capacity, demand)
                while placed + vms < count:
                    further = _minus(after, demand)
                    if not self.fits(further, demand):
                        after, vms = further, vms + 1
                        break
                    further_key = blind_key_one(packing, further, capacity, demand)
                    after, vms = further, vms + 1
                    if further_key > last_key:
                        break
                    last_key = further_key
                done = not self.fits(after, demand) or (
                    blind_key_one(packing, after, capacity, demand) > key
                )
                if done and placed + vms < count:
                    # The host is behind its class now: the class's next hosts,
                    # alike, fill the same way one after another until a
                    # rival of equal key comes first.
                    rival = best(pop=False)
                    take = len(members(name))
                    if rival is not None and rival[0] == key:
                        take = int(np.searchsorted(members(name), rival[1]))
                    take = max(1, min(take, (count - placed) // vms))
            else:
                # The hosts of the class come first, in position order, up to
                # the next class's first host; each gets one VM and falls behind.
                rival = best(pop=False)
                if rival is None or rival[0] != key:
                    take = count - placed
                else:
                    take = min(int(np.searchsorted(members(name), rival[1])), count - placed)
            rows_here = members(name)
            rows = rows_here[:take]
            rows_of[name] = rows_here[len(rows) :]
            source = self._slot_of[name]
            target = (capacity, after)
            self._assign(rows, source, target)
            if len(rows_of[name]):
                self._slot_first[source] = rows_of[name][0]
                self._dirty.discard(source)
            rows_of.pop(target, None)
            journal.append((rows, name, target))
            last = blocks[-1][0] if blocks else None
            if len(rows) == 1 and last is not None and len(last) == 1 and last[0] == rows[0]:
                blocks[-1] = (rows, blocks[-1][1] + vms)  # more VMs on the same host
            else:
                blocks.append((rows, vms))
            placed += len(rows) * vms
            requeue(name)
            requeue(target)
        return blocks

    def release(self, blocks: Sequence[Block], demand: Vector) -> None:
        """Give back VMs of ``demand`` placed as ``blocks``."""
        demand = tuple(map(float, demand))
        if len(blocks) == 1:
            rows, vms = blocks[0]
            counts = None
        else:
            every = np.concatenate([b for b, _ in blocks])
            weights = np.concatenate([np.full(len(b), v) for b, v in blocks])
            # (On CEA-Curie, sorting a wide job's hosts was a quarter of
            # MDOBP's replay: from a share of the cloud's, they are counted.)
            counted = len(every) * self.counting_share >= len(self._row_slot)
            rows, counts = counted_rows(every, weights, counted)
        slots = self._row_slot[rows].astype(np.int64)
        if counts is None and slots.min() == slots.max():
            slot = int(slots[0])
            capacity, free = self._name_of[slot]
            target = (capacity, _plus(free, demand, vms))
            if target != (capacity, free):
                self._assign(rows, slot, target)
            return
        # Hosts of one class that give back as many VMs land in one class: move them together.
        group = slots if counts is None else slots * (int(counts.max()) + 1) + counts
        order = np.argsort(group, kind="stable")
        starts = np.flatnonzero(np.diff(group[order])) + 1
        for part in np.split(order, starts):
            slot = int(slots[part[0]])
            times = vms if counts is None else int(counts[part[0]])
            capacity, free = self._name_of[slot]
            target = (capacity, _plus(free, demand, times))
            if target != (capacity, free):
                self._assign(rows[part], slot, target)


def runs(blocks: Sequence[Block]) -> list[tuple[int, int]]:
    """(row, VMs) per host in placement order, consecutive VMs on one host together."""
    found: list[tuple[int, int]] = []
    for rows, vms in blocks:
        for row in rows.tolist():
            if found and found[-1][0] == row:
                found[-1] = (row, found[-1][1] + vms)
            else:
                found.append((row, vms))
    return found
