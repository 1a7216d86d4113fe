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

It is the same greedy, not an approximation: each VM goes to the host with
the smallest (key, position) and free vectors change by the same float
operations in the same order, so the plans and the free vectors are
bit-for-bit those of :func:`~hpc_nova_scheduler.core.algorithm.plan` over a
:class:`~hpc_nova_scheduler.core.state.ClusterState` (a test holds the two
together).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Sequence

import numpy as np

from hpc_nova_scheduler.core.algorithm import (
    BLIND_PACKINGS,
    NoPlacement,
    blind_key_one,
    blind_keys,
)

Vector = tuple[float, float, float]
#: Floating-point slack when checking that a demand fits (as the planner does).
_SLACK = 1e-9


class _Class:
    """Hosts of one total and one free vector, by ascending position."""

    __slots__ = ("capacity", "free", "rows", "slot")

    def __init__(self, capacity: Vector, free: Vector, slot: int) -> None:
        self.capacity = capacity
        self.free = free
        self.slot = slot
        self.rows: list[int] = []


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


class HostClasses:
    """The hosts of a cloud grouped by (total, free) vector, for one blind packing.

    Rows are host positions, the order of the capacities given. VMs are
    placed and released through :meth:`place` and :meth:`release`; nothing
    else changes the hosts.
    """

    def __init__(self, capacities: Sequence[Vector], packing: str) -> None:
        if packing not in BLIND_PACKINGS:
            raise ValueError(f"packing {packing!r} does not judge hosts on their own")
        self.packing = packing
        self._capacity = [tuple(map(float, c)) for c in capacities]
        self._free = list(self._capacity)
        self._classes: dict[tuple[Vector, Vector], _Class] = {}
        self._by_slot: list[_Class | None] = []
        self._spare: list[int] = []
        size = 8
        self._slot_free = np.zeros((size, 3))
        self._slot_capacity = np.zeros((size, 3))
        self._slot_hosts = np.zeros(size, dtype=np.int64)
        self._slot_first = np.zeros(size, dtype=np.int64)
        for row, capacity in enumerate(self._capacity):
            self._class(capacity, capacity).rows.append(row)
        for cls in self._classes.values():
            self._sync(cls)

    def __len__(self) -> int:
        return len(self._capacity)

    def free_of(self, row: int) -> Vector:
        return self._free[row]

    def class_count(self) -> int:
        return len(self._classes)

    def total_free(self) -> np.ndarray:
        """Free resources summed over every host."""
        used = len(self._by_slot)
        return (self._slot_free[:used] * self._slot_hosts[:used, None]).sum(axis=0)

    # -- classes and their slots in the scoring arrays --------------------------

    def _class(self, capacity: Vector, free: Vector) -> _Class:
        key = (capacity, free)
        cls = self._classes.get(key)
        if cls is None:
            if self._spare:
                slot = self._spare.pop()
            else:
                slot = len(self._by_slot)
                self._by_slot.append(None)
                if slot == len(self._slot_hosts):
                    self._grow()
            cls = self._classes[key] = _Class(capacity, free, slot)
            self._by_slot[slot] = cls
            self._slot_free[slot] = free
            self._slot_capacity[slot] = capacity
        return cls

    def _grow(self) -> None:
        size = 2 * len(self._slot_hosts)
        for name in ("_slot_free", "_slot_capacity", "_slot_hosts", "_slot_first"):
            old = getattr(self, name)
            new = np.zeros((size, *old.shape[1:]), dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _sync(self, cls: _Class) -> None:
        """Mirror a class's membership into the scoring arrays; drop it when empty."""
        if cls.rows:
            self._slot_hosts[cls.slot] = len(cls.rows)
            self._slot_first[cls.slot] = cls.rows[0]
            return
        self._slot_hosts[cls.slot] = 0
        self._by_slot[cls.slot] = None
        self._spare.append(cls.slot)
        del self._classes[(cls.capacity, cls.free)]

    def _move(self, rows: list[int], capacity: Vector, free: Vector) -> _Class:
        """Put ``rows`` (ascending, all of ``capacity``) into the class of ``free``."""
        target = self._class(capacity, free)
        for row in rows:
            self._free[row] = free
        if not target.rows or target.rows[-1] < rows[0]:
            target.rows.extend(rows)
        elif len(rows) == 1:
            bisect.insort(target.rows, rows[0])
        else:
            target.rows = sorted(target.rows + rows)  # two sorted runs: a linear merge
        self._sync(target)
        return target

    # -- placing and releasing ------------------------------------------------

    def fits(self, free: Vector, demand: Vector) -> bool:
        return all(d <= f + _SLACK for d, f in zip(demand, free, strict=True) if d > 0)

    def room(self, demand: Vector) -> float:
        """How many VMs of ``demand`` the hosts take in all (inf for a zero demand)."""
        dims = [i for i in range(3) if demand[i] > 0]
        if not dims:
            return float("inf") if self._classes else 0.0
        used = len(self._by_slot)
        need = np.asarray(demand, dtype=float)[dims]
        copies = np.floor((self._slot_free[:used][:, dims] + _SLACK) / need).min(axis=1)
        return float((np.maximum(copies, 0) * self._slot_hosts[:used]).sum())

    def place(self, demand: Vector, count: int) -> list[tuple[int, int]]:
        """Place ``count`` VMs of ``demand`` as the packing would, one at a time.

        Returns (row, VMs) runs in placement order. Raises
        :class:`~hpc_nova_scheduler.core.algorithm.NoPlacement`, leaving
        every host as it was, when they do not all fit.
        """
        if count < 1:
            raise NoPlacement("a request needs at least one VM")
        demand = tuple(map(float, demand))
        if self.room(demand) < count:
            raise NoPlacement(f"fewer than {count} VMs fit on the hosts")
        journal: list[tuple[list[int], _Class, Vector]] = []
        try:
            return self._greedy(demand, count, journal)
        except NoPlacement:
            for rows, source, free in reversed(journal):
                self._remove(self._classes[(source.capacity, free)], rows)
                self._move(rows, source.capacity, source.free)
            raise

    def _greedy(self, demand: Vector, count: int, journal: list) -> list[tuple[int, int]]:
        packing = self.packing
        used = len(self._by_slot)
        slot_free = self._slot_free[:used]
        live = self._slot_hosts[:used] > 0
        dims = [i for i in range(3) if demand[i] > 0]
        if dims:
            need = np.asarray(demand)[dims]
            live &= (need <= slot_free[:, dims] + _SLACK).all(axis=1)
        slots = np.flatnonzero(live)
        keys = blind_keys(packing, slot_free[slots], self._slot_capacity[slots], np.asarray(demand))
        order = np.lexsort((self._slot_first[slots], *reversed(keys)))
        ranked = [self._by_slot[s] for s in slots[order].tolist()]
        ranked_keys = list(zip(*(k[order].tolist() for k in keys), strict=True))
        if not keys:
            ranked_keys = [()] * len(ranked)
        # A class is named by its vectors: one emptied and made again is the same class.
        key_of = {(c.capacity, c.free): k for c, k in zip(ranked, ranked_keys, strict=True)}
        # Classes this request changes leave the ranked list for a heap of
        # (key, first row, tie, name); an entry is live while ``queued``
        # still holds its first row.
        changed: list = []
        queued: dict[tuple[Vector, Vector], int | None] = {}
        tie = itertools.count()
        cursor = 0

        def best(pop: bool):
            """The best class as (key, first row, class); ``pop`` takes it."""
            nonlocal cursor
            while cursor < len(ranked):
                cls = ranked[cursor]
                if cls.rows and (cls.capacity, cls.free) not in queued:
                    break
                cursor += 1
            found = None
            if cursor < len(ranked):
                cls = ranked[cursor]
                found = (ranked_keys[cursor], cls.rows[0], cls)
            while changed:
                key, row, _, name = changed[0]
                cls = self._classes.get(name)
                if cls is not None and queued.get(name) == row and cls.rows[0] == row:
                    if found is None or (key, row) < found[:2]:
                        found = (key, row, cls)
                        if pop:
                            heapq.heappop(changed)
                            queued[name] = None
                            return found
                    break
                heapq.heappop(changed)
            if found is not None and pop:
                cursor += 1
                queued[(found[2].capacity, found[2].free)] = None
            return found

        def requeue(cls: _Class) -> None:
            name = (cls.capacity, cls.free)
            if not cls.rows or queued.get(name) == cls.rows[0]:
                return
            key = key_of.get(name)
            if key is None:
                if not self.fits(cls.free, demand):
                    return
                key = key_of[name] = blind_key_one(packing, cls.free, cls.capacity, demand)
            queued[name] = cls.rows[0]
            heapq.heappush(changed, (key, cls.rows[0], next(tie), name))

        runs: list[tuple[int, int]] = []
        placed = 0
        while placed < count:
            chosen = best(pop=True)
            if chosen is None:
                raise NoPlacement(f"only {placed} of {count} VMs fit on the hosts")
            key, row, cls = chosen
            after = _minus(cls.free, demand)
            if after == cls.free:  # a demand of nothing: every VM stays on this host
                runs.append((row, count - placed))
                break
            if (
                self.fits(after, demand)
                and blind_key_one(packing, after, cls.capacity, demand) <= key
            ):
                take = 1  # the host stays ahead of its class: the next VM may go there too
            else:
                # The hosts of the class come first, in position order, up to
                # the next class's first host; each gets one VM and falls behind.
                rival = best(pop=False)
                if rival is None or rival[0] != key:
                    take = len(cls.rows)
                else:
                    take = bisect.bisect_left(cls.rows, rival[1])
                take = min(take, count - placed)
            rows = cls.rows[:take]
            del cls.rows[:take]
            self._sync(cls)
            target = self._move(rows, cls.capacity, after)
            journal.append((rows, cls, after))
            runs.extend((r, 1) for r in rows)
            placed += take
            requeue(cls)
            requeue(target)
        merged: list[tuple[int, int]] = []
        for row, vms in runs:
            if merged and merged[-1][0] == row:
                merged[-1] = (row, merged[-1][1] + vms)
            else:
                merged.append((row, vms))
        return merged

    def release(self, runs: Sequence[tuple[int, int]], demand: Vector) -> None:
        """Give back VMs of ``demand`` placed as ``runs`` (row, VMs)."""
        demand = tuple(map(float, demand))
        per_row: dict[int, int] = {}
        for row, vms in runs:
            per_row[row] = per_row.get(row, 0) + vms
        # Hosts of one class that give back as many VMs land in one class: move them together.
        groups: dict[tuple, list[int]] = {}
        capacity, free = self._capacity, self._free
        for row, vms in per_row.items():
            groups.setdefault((capacity[row], free[row], vms), []).append(row)
        for (cap, old, vms), rows in groups.items():
            rows.sort()
            cls = self._classes[(cap, old)]
            self._remove(cls, rows)
            self._move(rows, cap, _plus(old, demand, vms))

    def _remove(self, cls: _Class, rows: list[int]) -> None:
        """Take ``rows`` (ascending) out of ``cls``."""
        if len(rows) == len(cls.rows):
            cls.rows = []
        elif len(rows) <= 16:
            for row in reversed(rows):
                del cls.rows[bisect.bisect_left(cls.rows, row)]
        else:
            gone = set(rows)
            cls.rows = [row for row in cls.rows if row not in gone]
        self._sync(cls)
