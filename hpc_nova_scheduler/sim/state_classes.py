"""Seed 003's placement planned per class of hosts in the same state.

:mod:`.host_classes` plans blind packings per class of hosts with equal
free and total resources. The policies this project exists for read more of
a host: its cache total and whether it runs SyncHPC VMs (the alpha and beta
thresholds), its rack (Algorithm 1 fills racks in capacity order) and its
processor group (homogeneity). :class:`StateClasses` keeps the hosts in
classes by exactly that state, so that an idle cloud of thousands of hosts
is a class per rack and a request scores classes, not hosts; a class is
split only when a placement makes its hosts differ.

It is the same greedy as :func:`~hpc_nova_scheduler.core.algorithm.plan`
over a :class:`~hpc_nova_scheduler.core.state.ClusterState`, not an
approximation: every host of a class has the same sort key but for its row,
so the untouched hosts come out of the classes in (key, row) order, and the
hosts a request has touched are rescored one by one with the planner's own
Python-float functions, as its MDOBP does. Free vectors and cache totals
change by the same float operations in the same order as ClusterState's.
Tests replay logs through both and require the same placements job by job.

An interference model that admits hosts (a
:class:`~hpc_nova_scheduler.core.judge.HostJudge`) reads each host's
co-runners: built with ``judged``, the classes are split by them too, and
the model is asked once per class, in the order plan() asks it per host.

Topology levels beyond the rack and the tenant's ``required`` and
``preferred`` levels order the racks by BestFit
(:mod:`~hpc_nova_scheduler.topology.arrangement`), which reads nothing of a
host but its room: it runs on the classes, each weighing its room times
its hosts.

What it does not serve (:meth:`StateClasses.serves`) stays with plan()
over every host: ExtremeHPC (dedication reads every co-runner), segments
and constraints at the host level (packed host by host), and applications
that already run somewhere. The greedy of one request over the classes is
:mod:`.class_greedy`.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from collections.abc import Iterator, Sequence

import numpy as np

from hpc_nova_scheduler.core.algorithm import (
    NO_TOPOLOGY,
    PACKING_COSINE,
    PACKING_NOVA_WEIGHERS,
    NoPlacement,
    PlacementRequest,
    Policy,
    _cosine_key_one,
    _cosine_keys,
    _depth,
    best_group,
    blind_key_one,
    blind_keys,
    first_domain_holding,
    fits_many,
    vm_copies,
)
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.core.columns import HostColumns, counted_rows, ordered_sum
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.judge import HostJudge, Resident
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.sim.class_greedy import ClassGreedy
from hpc_nova_scheduler.topology import arrangement
from hpc_nova_scheduler.topology import levels as topo

Vector = tuple[float, float, float]
#: VMs of one application on one host: (the VM, how many, each one's demand).
Run = tuple[RunningVM, int, Vector]
#: (processor group, rack, capacity, free, cache total, runs SyncHPC,
#: co-runners); a part the policy never reads is left constant so that
#: classes stay few.
Name = tuple[int, int, Vector, Vector, float, bool, tuple[Resident, ...]]
#: A plan as (hosts, VMs on each) in placement order: a block of hosts that
#: take as many VMs each stays one entry.
Segments = list[tuple[list[int], int]]


@dataclasses.dataclass(slots=True)
class Groups:
    """Hosts grouped by (class, VMs taken, VM runs): group ``i`` is
    ``keys[i]`` and the hosts ``every[bounds[i]:bounds[i + 1]]``, ascending
    within it (``rows``: all of them, in that order, as an array; None
    where they are few and recorded group by group). ``every`` is None
    where the hosts were grouped in numpy: the groups are then slices of
    ``rows`` (a wide job's class mostly moves whole, and its hosts need
    not be spelt out as a list)."""

    keys: list[tuple[int, int, int]]
    bounds: list[int]
    rows: np.ndarray | None
    every: list[int] | None

    #: From this many groups, the hosts' classes and VMs are best recorded
    #: all at once (:meth:`StateClasses._mark`): for fewer, numpy's cost per
    #: call outweighs it.
    marked_at_once_from = 5

    @property
    def many(self) -> bool:
        """Whether the hosts' classes and VMs are recorded all at once."""
        return self.rows is not None and len(self.keys) >= self.marked_at_once_from

    def __iter__(self) -> Iterator[tuple[tuple[int, int, int], list[int] | np.ndarray]]:
        every, bounds = self.every if self.every is not None else self.rows, self.bounds
        for i, key in enumerate(self.keys):
            yield key, every[bounds[i] : bounds[i + 1]]


class StateClasses:
    """The hosts of one cloud in classes by the state a policy reads.

    Rows are the positions of ``columns`` (an idle cloud's, for example
    :meth:`~hpc_nova_scheduler.core.state.ClusterState.columns`); plans are
    lists of rows, one per VM in placement order. Nothing but
    :meth:`apply` and :meth:`release` changes the hosts.
    """

    def __init__(
        self,
        columns: HostColumns,
        policy: Policy,
        thresholds: Thresholds,
        judged: bool = False,
    ) -> None:
        """``judged``: plans will be asked with a judge of co-runners."""
        reason = self.serves(policy)
        if reason:
            raise ValueError(reason)
        if columns.vms.any():
            raise ValueError("state classes start from an idle cloud")
        self.policy = policy
        self.thresholds = thresholds
        self.names = list(columns.names)
        size = len(self.names)
        self._capacity: list[Vector] = [tuple(c) for c in columns.capacity.tolist()]
        #: The same per host as arrays, for writing many classes at once.
        self._host_capacity = np.array(columns.capacity, dtype=float)
        #: The hosts' distinct capacities, and per demand the most VMs of it one holds.
        # (From the tuples: numpy's unique over rows compares them as records,
        # a tenth of a second on CEA-Curie's 23,328 hosts.)
        self._capacities = np.array(sorted(set(self._capacity)), dtype=float)
        self._most_per_host: dict[tuple[float, ...], int] = {}
        #: Per memory, the most one-core VMs of it a host holds.
        self._most_one_core: dict[float, float] = {}
        #: Per host, the id of its VMs as runs (VM, how many, demand) in
        #: placement order: an application's VMs on a host arrive together,
        #: as one run. Hosts that run the same VMs share one id (0: none),
        #: however they came to, so that a wide job's hosts are grouped in
        #: numpy, not one by one, and hosts alike move together.
        self._row_runs = np.zeros(size, dtype=np.int64)
        self._runs_by_id: dict[int, tuple[Run, ...]] = {0: ()}
        #: Per id, its runs as (application id, how many, demand): what
        #: tells them apart, since an application is placed once (plan
        #: refuses one that runs; :attr:`_rows_of` keeps one placement per
        #: id), and hashes cheaply (a VM's hash is Python's).
        self._runs_key: dict[int, tuple[tuple[str, int, Vector], ...]] = {0: ()}
        self._id_of_runs: dict[tuple[tuple[str, int, Vector], ...], int] = {(): 0}
        #: Per id, what the class name reads of those VMs (:meth:`_runs_part`).
        self._runs_part: dict[int, tuple[float, bool, tuple]] = {}
        #: How many hosts hold each id: an id no host holds is forgotten.
        self._runs_hosts: dict[int, int] = {0: 0}
        self._last_runs_id = 0
        #: application id -> its host rows, ascending (a list for a few).
        self._rows_of: dict[str, np.ndarray | list[int]] = {}
        self.levels = tuple(columns.levels)
        self._racks = len(columns.rack_names)
        self._rack = columns.rack.tolist()
        #: Each rack's domain at every level, outermost first (a rack sits in
        #: one domain per level: domains are named by their path).
        depth = len(self.levels)
        self._rack_domains = np.zeros((depth, self._racks), dtype=np.int64)
        self._rack_domains[:, columns.rack] = columns.domain[:depth]
        self.group_names = sorted(set(columns.cpu_groups))
        code = {name: i for i, name in enumerate(self.group_names)}
        self._group = [code[g] for g in columns.cpu_groups]
        self._host_rack = np.array(columns.rack, dtype=np.int64)
        self._host_group = np.array(self._group, dtype=np.int64)
        # Only what the policy reads splits classes.
        self._by_rack = policy.topology
        self.judged = judged
        self._by_group = policy.homogeneity or judged
        self._by_cache = policy.cache_criteria
        #: Per host, what its class name reads of the host itself: its
        #: processor group, rack (-1 where the policy reads neither) and
        #: capacity.
        self._host_part: list[tuple[int, int, Vector]] = [
            (
                self._group[row] if self._by_group else -1,
                self._rack[row] if self._by_rack else -1,
                self._capacity[row],
            )
            for row in range(size)
        ]
        self._slot_of: dict[Name, int] = {}
        self._name_of: list[Name | None] = []
        self._members: list[list[int]] = []
        self._spare: list[int] = []
        slots = 8
        self._s_free = np.zeros((slots, 3))
        self._s_capacity = np.zeros((slots, 3))
        self._s_cache = np.zeros(slots)
        self._s_sync = np.zeros(slots, dtype=bool)
        self._s_rack = np.zeros(slots, dtype=np.int64)
        self._s_group = np.zeros(slots, dtype=np.int64)
        self._s_hosts = np.zeros(slots, dtype=np.int64)
        self._s_first = np.zeros(slots, dtype=np.int64)
        #: Per memory asked of :meth:`one_core_room` lately, per class, the
        #: one-core VMs of it a host holds: kept as classes are written.
        self._one_core_fits: dict[float, np.ndarray] = {}
        #: Per kind of request (application class, topology constraints),
        #: what :meth:`_check` tells of it.
        self._checks: dict[tuple, tuple[str, int | None, str]] = {}
        #: Per (free resources, memory), those fits: a cloud's hosts come
        #: to few distinct free vectors.
        self._fit_of: dict[tuple[Vector, float], float] = {}
        #: Per class, the write (:meth:`_flush`) that gave it its state: the
        #: packing keys kept for it are good while this has not changed.
        self._s_stamp = np.zeros(slots, dtype=np.int64)
        self._flushes = 0
        #: demand -> per class, its packing keys and the stamp they are of.
        self._packing_keys: dict[tuple, tuple[np.ndarray, list[np.ndarray]]] = {}
        #: Per (free resources, total, demand), the cosine packing keys as
        #: Python floats: what a plan over a few classes reads (a small
        #: cloud's classes come to few distinct states).
        self._key_of: dict[tuple[Vector, Vector, tuple], tuple[float, float]] = {}
        #: Per host, its class.
        self._row_slot = np.zeros(size, dtype=np.int64)
        #: Classes made (class -> a host of it) and classes whose hosts
        #: changed since the arrays above were last written (:meth:`_flush`).
        self._fresh: dict[int, int] = {}
        self._dirty: set[int] = set()
        #: Classes renamed whole (their hosts moved to a new state together)
        #: since: their capacity, rack and group, which are their hosts', stay.
        self._renamed: set[int] = set()
        # The idle hosts by class, each class joined at once (classes made
        # in the order of their first hosts, as one by one would).
        idle: dict[Name, list[int]] = {}
        for row in range(size):
            idle.setdefault(self._name(row, self._capacity[row], 0), []).append(row)
        for name, rows in idle.items():
            self._join_block(rows, name[3], 0, name=name)
        self._flush()

    @staticmethod
    def serves(
        policy: Policy, app_class: AppClass | None = None, spec: topo.TopologySpec = NO_TOPOLOGY
    ) -> str:
        """Why these state classes cannot plan for ``policy`` (requests of
        ``app_class`` with constraints ``spec``); empty if they can."""
        if policy.classes and app_class is AppClass.EXTREME_HPC:
            return "ExtremeHPC dedication reads every co-runner of a host"
        if not policy.topology:
            spec = NO_TOPOLOGY
        ranked = policy.classes or not spec.empty
        if policy.packing == PACKING_NOVA_WEIGHERS and policy.topology and ranked:
            return "Nova's weighers in topology order are planned over every host"
        if spec.segment is not None:
            return "segments are packed host by host"
        if topo.HOST_LEVEL in (spec.required, spec.preferred):
            return "constraints at the host level are packed host by host"
        return ""

    #: Up to this many admissible classes, a request scores them in Python:
    #: numpy's cost per call would outweigh arrays this short. Both ways
    #: agree to the bit (the tests run both).
    few_slots = 24
    #: From this many VMs that reach as many classes (or classes of equal
    #: keys), the greedy plans from every reached class's chains at once, in
    #: numpy (:meth:`.ClassGreedy.filled`): below that, a few chains cost
    #: less than the numpy calls that would replace them (each chain's
    #: trajectory is a dozen numpy calls per VM a host takes). At 64 rather
    #: than 8, SDSC-SP2's first 8,000 jobs on 128 cores cost 6.5% fewer
    #: instructions and CEA-Curie's wide jobs under hpc-aware about 1% more.
    #: Both ways agree to the bit (the tests run both).
    filling_from = 64
    #: From this many VMs left, hosts of classes with equal keys that the
    #: greedy merges by row are taken at once, in numpy, not one by one.
    #: At 64 rather than 16: 2.3% fewer instructions on SDSC-SP2's first
    #: 8,000 jobs, 0.6% on LLNL-Thunder's first 5,000, CEA-Curie's wide
    #: jobs unchanged. Both ways agree to the bit (the tests run both).
    merging_from = 64
    #: Up to this many hosts join or leave a class's sorted list one by
    #: one (each a bisection and a shift of the list); more are merged in
    #: one pass, since shifting a list of thousands of hosts for each of
    #: thousands of rows costs more than one linear merge. The same bound
    #: has the greedy cut a wide job's hosts into segments in numpy, not
    #: host by host. Both ways agree (the tests run both).
    one_by_one = 16
    #: Up to this many hosts, a placement or release counts and groups
    #: them in Python (a job on a host or a few dozen is most jobs of most
    #: logs; numpy's cost per call outweighs so few); more in numpy. Both
    #: ways agree (the tests run both).
    few_hosts = 64
    #: From a plan's hosts (counted once per segment) this many times
    #: fewer than the cloud's, they are counted over every host (two
    #: passes of bincount) rather than sorted: a wide job's hosts cost
    #: less to count than to sort. Both ways agree (the tests run both).
    counting_share = 8
    #: Up to this many classes, :meth:`_flush` writes the arrays class by
    #: class; more at once (numpy's cost per call outweighs a few).
    flush_one_by_one = 8
    #: Demands whose packing keys are kept (the oldest is dropped).
    kept_demands = 4
    #: Memories whose one-core fits are kept (the oldest is dropped).
    kept_memories = 2
    #: Fits per (free resources, memory) kept before they are forgotten.
    kept_fits = 4096
    #: Packing keys per (free resources, total, demand) kept before they
    #: are forgotten.
    kept_keys = 4096

    def __len__(self) -> int:
        return len(self.names)

    def class_count(self) -> int:
        return len(self._slot_of)

    # -- classes -------------------------------------------------------------

    def _name(self, row: int, free: Vector, runs_id: int) -> Name:
        """The class of host ``row`` with ``free`` resources left and the
        VMs of ``runs_id``."""
        return (*self._host_part[row], free, *self._part(runs_id))

    def _part(self, runs_id: int) -> tuple[float, bool, tuple]:
        """:meth:`_part_of` the VMs of ``runs_id``, kept per id."""
        part = self._runs_part.get(runs_id)
        if part is None:
            part = self._runs_part[runs_id] = self._part_of(self._runs_by_id[runs_id])
        return part

    def _part_of(self, runs: tuple[Run, ...]) -> tuple[float, bool, tuple]:
        """What a class name reads of a host's VMs: the cache total (theirs
        summed in placement order, what ClusterState's sums come to) and
        whether one is SyncHPC, where the thresholds read them; the
        applications and their VMs where a judge reads them."""
        cache, sync = 0.0, False
        if self._by_cache:
            # (ordered_sum's left-to-right sum, without a generator per host:
            # releases on a small cloud work this out for most hosts they free.)
            for vm, vms, _ in runs:
                score = vm.cache_score
                for _ in range(vms):
                    cache += score
                sync = sync or vm.app_class is AppClass.SYNC_HPC
        # In the order plan() describes them to a judge (applications in the
        # order they came).
        judged = tuple((vm.app_name, vms) for vm, vms, _ in runs) if self.judged else ()
        return cache, sync, judged

    def _slot(self, name: Name, row: int) -> int:
        slot = self._slot_of.get(name)
        if slot is not None:
            return slot
        if self._spare:
            slot = self._spare.pop()
            self._name_of[slot] = name
            self._members[slot] = []
        else:
            slot = len(self._name_of)
            self._name_of.append(name)
            self._members.append([])
            if slot == len(self._s_hosts):
                self._grow()
        self._slot_of[name] = slot
        self._fresh[slot] = row
        return slot

    def _flush(self) -> None:
        """Write the per-class arrays the planner reads where classes were
        made or their hosts changed: once before they are read next (a plan,
        the precheck, the free cores), so that a wide job moving hundreds of
        groups pays a few numpy calls, not a dozen per group, and releases
        and placements with no plan between them (a job that starts, jobs
        that end at once) are written together."""
        if not (self._fresh or self._renamed or self._dirty):
            return
        # (Index arrays, not lists: numpy reads a list index far slower.)
        name_of = self._name_of
        fresh = [slot for slot in self._fresh if name_of[slot] is not None]
        renamed = [
            slot for slot in self._renamed if name_of[slot] is not None and slot not in self._fresh
        ]
        self._renamed.clear()
        if fresh or renamed:
            self._flushes += 1
        if len(fresh) + len(renamed) <= self.flush_one_by_one:
            fit_of = self._fit_of
            if len(fit_of) > self.kept_fits:
                fit_of.clear()
            for slot in fresh:
                row = self._fresh[slot]
                self._s_capacity[slot] = name_of[slot][2]
                self._s_rack[slot] = self._rack[row]
                self._s_group[slot] = self._group[row]
            for slot in itertools.chain(fresh, renamed):
                self._s_stamp[slot] = self._flushes
                name = name_of[slot]
                self._s_free[slot] = name[3]
                for memory, fits in self._one_core_fits.items():
                    fit = fit_of.get((name[3], memory))
                    if fit is None:
                        fit = fit_of[name[3], memory] = _one_core_fit_one(name[3], memory)
                    fits[slot] = fit
                self._s_cache[slot] = name[4]
                self._s_sync[slot] = name[5]
        else:
            # (A renamed class's hosts give its capacity, rack and group as
            # a made one's do.)
            for slot in renamed:
                self._fresh[slot] = self._members[slot][0]
            fresh += renamed
            # What a host's row gives (capacity, rack, group) is read from
            # arrays by the rows the classes were made from; what the name
            # alone tells (free, cache total, SyncHPC) in one table, one
            # conversion.
            names = [self._name_of[slot] for slot in fresh]
            made = np.array([self._fresh[slot] for slot in fresh], dtype=np.int64)
            table = np.array([(*name[3], name[4], name[5]) for name in names])
            at = np.array(fresh)
            self._s_stamp[at] = self._flushes
            self._s_capacity[at] = self._host_capacity[made]
            self._s_free[at] = table[:, 0:3]
            for memory, fits in self._one_core_fits.items():
                fits[at] = _one_core_fit(table[:, 0:3], memory)
            self._s_cache[at] = table[:, 3]
            self._s_sync[at] = table[:, 4] != 0
            self._s_rack[at] = self._host_rack[made]
            self._s_group[at] = self._host_group[made]
        self._fresh.clear()
        members = self._members
        if len(self._dirty) <= self.flush_one_by_one:
            for slot in self._dirty:
                self._s_hosts[slot] = len(members[slot])
                if members[slot]:
                    self._s_first[slot] = members[slot][0]
        else:
            dirty = list(self._dirty)
            self._s_hosts[np.array(dirty)] = [len(members[slot]) for slot in dirty]
            kept = [slot for slot in dirty if members[slot]]
            self._s_first[np.array(kept, dtype=np.int64)] = [members[slot][0] for slot in kept]
        self._dirty.clear()

    def _grow(self) -> None:
        size = 2 * len(self._s_hosts)
        for attribute in (
            "_s_free",
            "_s_capacity",
            "_s_cache",
            "_s_sync",
            "_s_rack",
            "_s_group",
            "_s_hosts",
            "_s_first",
            "_s_stamp",
        ):
            old = getattr(self, attribute)
            new = np.zeros((size, *old.shape[1:]), dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, attribute, new)
        for memory, fits in self._one_core_fits.items():
            self._one_core_fits[memory] = np.concatenate([fits, np.zeros(size - len(fits))])

    def _leave_block(self, slot: int, rows: list[int]) -> None:
        """Take ``rows`` (ascending, all of class ``slot``) out of their class."""
        members = self._members[slot]
        count = len(rows)
        start = 0 if members[0] == rows[0] else bisect.bisect_left(members, rows[0])
        if members[start + count - 1] == rows[-1]:
            # The usual case: a plan takes a stretch of a class's hosts (rows
            # are distinct members, so equal ends mean the same stretch).
            del members[start : start + count]
        elif count <= self.one_by_one:
            for row in rows:
                del members[bisect.bisect_left(members, row)]
        elif count * 8 < (stop := bisect.bisect_right(members, rows[-1], start)) - start:
            # Hosts scattered over a long stretch of the list (Nova's
            # weighers spread VMs over the idle class): the stretches between
            # them are kept, each end found by bisection from the last.
            kept = members[:start]
            at = start
            for row in rows:
                end = bisect.bisect_left(members, row, at)
                kept += members[at:end]
                at = end + 1
            kept += members[at:]
            self._members[slot] = members = kept
        else:
            # Many of the hosts between the first and the last leave: that
            # stretch is filtered, the rest of the list kept as it is.
            gone = set(rows)
            members[start:stop] = [row for row in members[start:stop] if row not in gone]
        self._dirty.add(slot)
        if members:
            return
        del self._slot_of[self._name_of[slot]]
        self._name_of[slot] = None
        self._spare.append(slot)

    def _runs_id(self, runs: tuple[Run, ...], key: tuple) -> int:
        """The id of hosts that hold ``runs`` (``key``: as
        :attr:`_runs_key`; 0 for none): the one hosts already holding them
        have, else a new one.

        One id per set of VMs, not one per placement that led to it:
        otherwise hosts that came to run the same VMs by different ways
        (a job placed over several classes, then another released from
        them) would keep apart, and every later placement or release would
        move them group by group (on LLNL-Thunder, three times the moves).
        """
        known = self._id_of_runs.get(key)
        if known is not None:
            return known
        self._last_runs_id += 1
        self._runs_by_id[self._last_runs_id] = runs
        self._runs_key[self._last_runs_id] = key
        self._id_of_runs[key] = self._last_runs_id
        self._runs_hosts[self._last_runs_id] = 0
        return self._last_runs_id

    def _join_block(
        self,
        rows: list[int],
        free: Vector,
        runs_id: int,
        mark: bool = True,
        name: Name | None = None,
        array: np.ndarray | None = None,
    ) -> int:
        """Put ``rows`` (ascending, all in the same state now: ``free``
        resources left and the VMs of ``runs_id``; ``name``: that class, if
        known; ``array``: the same rows as an array, if the caller has one)
        in their class, and return it. ``mark`` False: the caller records
        each host's class and VMs itself (for many groups at once)."""
        self._runs_hosts[runs_id] += len(rows)
        if name is None:
            name = self._name(rows[0], free, runs_id)
        slot = self._slot(name, rows[0])
        members = self._members[slot]
        if not members or members[-1] < rows[0]:
            members.extend(rows)
        elif (at := bisect.bisect_left(members, rows[0])) == bisect.bisect_left(
            members, rows[-1], at
        ):
            members[at:at] = rows  # they fall between two members: one insertion
        elif len(rows) <= self.one_by_one:
            for row in rows:
                bisect.insort(members, row)
        else:
            members.extend(rows)
            members.sort()  # two sorted runs: merged in linear time
        self._dirty.add(slot)
        if not mark:
            return slot
        if len(rows) == 1:
            self._row_slot[rows[0]] = slot
            self._row_runs[rows[0]] = runs_id
        else:
            at = np.array(rows) if array is None else array
            self._row_slot[at] = slot
            self._row_runs[at] = runs_id
        return slot

    def _move(
        self,
        slot: int,
        rows: list[int] | np.ndarray,
        free: Vector,
        runs_id: int,
        after: int,
        part: tuple[float, bool, tuple],
        mark: bool,
    ) -> int:
        """Move ``rows`` (ascending, all of class ``slot`` with the VMs of
        ``runs_id``: a list, or a slice of an array where the hosts were
        grouped in numpy) to the state ``free`` with the VMs of ``after``
        (``part``: what the class name reads of them), and return their
        class now (``mark``: as :meth:`_join_block`)."""
        count = len(rows)
        runs_hosts = self._runs_hosts
        left = runs_hosts[runs_id] - count
        if left or not runs_id:
            runs_hosts[runs_id] = left
        else:
            # No host holds those VMs any more: their id is forgotten.
            del runs_hosts[runs_id], self._runs_by_id[runs_id]
            del self._id_of_runs[self._runs_key.pop(runs_id)]
            self._runs_part.pop(runs_id, None)
        first = rows[0] if isinstance(rows, list) else rows.item(0)
        name = (*self._host_part[first], free, *part)
        slot_of = self._slot_of
        if count == len(self._members[slot]):
            # The whole class moves (a wide job takes whole racks): unless
            # another class is in that state, it keeps its list of hosts.
            # (One lookup that also claims the name if it is free.)
            known = len(slot_of)
            if slot_of.setdefault(name, slot) == slot:
                if len(slot_of) > known:
                    del slot_of[self._name_of[slot]]
                    self._name_of[slot] = name
                    self._renamed.add(slot)
                # (Else the class's own state: a request of nothing.)
                runs_hosts[after] += count
                if mark:
                    self._row_runs[first if count == 1 else np.asarray(rows)] = after
                return slot
        array = None
        if not isinstance(rows, list):
            array, rows = rows, rows.tolist()
        self._leave_block(slot, rows)
        return self._join_block(rows, free, after, mark, name, array)

    def _part_after(self, runs_id: int, vm: RunningVM, vms: int) -> tuple[float, bool, tuple]:
        """:meth:`_part_of` the VMs of ``runs_id`` and ``vms`` more of ``vm``:
        the cache total goes on summing left to right, as ClusterState's does."""
        cache, sync, judged = self._part(runs_id)
        if self._by_cache:
            for _ in range(vms):
                cache += vm.cache_score
            sync = sync or vm.app_class is AppClass.SYNC_HPC
        if self.judged:
            judged = (*judged, (vm.app_name, vms))
        return cache, sync, judged

    # -- planning ------------------------------------------------------------

    def packing_keys(self, slots: np.ndarray, demand: tuple[float, ...]) -> tuple:
        """:func:`~hpc_nova_scheduler.core.algorithm.blind_keys` of the
        classes ``slots`` for a VM of ``demand``, to the bit.

        A class's keys read only its state, which is its name: they are
        kept per demand and worked out again only for classes made or
        renamed since (a placement changes a few classes; a plan reads
        hundreds), one by one in Python for a few.
        """
        packing = self.policy.packing
        if packing != PACKING_COSINE:
            # Keys that are a column of the free resources cost nothing to read.
            free, capacity = self._s_free[slots], self._s_capacity[slots]
            return blind_keys(packing, free, capacity, np.array(demand, dtype=float))
        kept = self._packing_keys.get(demand)
        if kept is None or len(kept[0]) < len(self._s_stamp):
            if kept is None and len(self._packing_keys) >= self.kept_demands:
                del self._packing_keys[next(iter(self._packing_keys))]
            size = len(self._s_stamp)
            kept = self._packing_keys[demand] = (
                np.full(size, -1),
                [np.zeros(size), np.zeros(size)],
            )
        stamps, keys = kept
        stale = slots[stamps[slots] != self._s_stamp[slots]]
        # One by one costs a few microseconds a class; at once, a few dozen.
        if len(stale) > self.few_slots // 3:
            free, capacity = self._s_free[stale], self._s_capacity[stale]
            computed = _cosine_keys(free, capacity, np.array(demand, dtype=float))
            for column, values in zip(keys, computed, strict=True):
                column[stale] = values
        else:
            for slot, key in zip(stale, self._cosine_keys_of(stale.tolist(), demand), strict=True):
                for column, value in zip(keys, key, strict=True):
                    column[slot] = value
        stamps[stale] = self._s_stamp[stale]
        return tuple(column[slots] for column in keys)

    def listed_packing_keys(self, slots: list[int], demand: tuple[float, ...]) -> list[tuple]:
        """:meth:`packing_keys` of a few classes as tuples of Python floats,
        to the bit: no numpy call, whose cost would outweigh so few."""
        packing, name_of = self.policy.packing, self._name_of
        if packing != PACKING_COSINE:
            return [blind_key_one(packing, name_of[s][3], name_of[s][2], demand) for s in slots]
        return self._cosine_keys_of(slots, demand)

    def _cosine_keys_of(self, slots: list[int], demand: tuple[float, ...]) -> list[tuple]:
        """The cosine keys of the classes ``slots`` one by one, in Python
        floats (:func:`_cosine_key_one`), kept per (free, total, demand)."""
        key_of = self._key_of
        if len(key_of) > self.kept_keys:
            key_of.clear()
        keys = []
        for slot in slots:
            _, _, capacity, free, *_ = self._name_of[slot]
            key = key_of.get((free, capacity, demand))
            if key is None:
                key = key_of[free, capacity, demand] = _cosine_key_one(free, capacity, demand)
            keys.append(key)
        return keys

    def one_core_room(self, memory_mb: float) -> float:
        """How many one-core VMs of ``memory_mb`` fit in all: one_core_vms()
        on the classes, whole cores kept per class. Fewer than a request's
        VMs refuse it: the necessary condition the simulator checks before
        planning."""
        self._flush()
        used = len(self._name_of)
        fits = self._one_core_fits.get(memory_mb)
        if fits is None:
            # Worked out over every class once, then kept as classes change.
            if len(self._one_core_fits) >= self.kept_memories:
                del self._one_core_fits[next(iter(self._one_core_fits))]
            fits = np.zeros(len(self._s_hosts))
            fits[:used] = _one_core_fit(self._s_free[:used], memory_mb)
            self._one_core_fits[memory_mb] = fits
        return float(np.dot(fits[:used], self._s_hosts[:used]))

    def most_one_core(self, memory_mb: float) -> float:
        """The most one-core VMs of ``memory_mb`` an idle host holds: all
        that a host can come to add to :meth:`one_core_room`."""
        most = self._most_one_core.get(memory_mb)
        if most is None:
            # Asked at every refused precheck, of the few memories jobs ask.
            most = float(_one_core_fit(self._capacities, memory_mb).max())
            self._most_one_core[memory_mb] = most
        return most

    def plan(self, request: PlacementRequest, rule: HostJudge | None = None) -> list[int]:
        """The rows of ``request``'s VMs, in placement order, as
        :func:`~hpc_nova_scheduler.core.algorithm.plan` would choose them
        over every host (``rule``: its judge of co-runners, which replaces
        the cache thresholds); raise :class:`NoPlacement`. Changes nothing."""
        return [
            row
            for rows, vms in self.plan_segments(request, rule)
            for row in rows
            for _ in range(vms)
        ]

    def most_vms(self, request: PlacementRequest, rule: HostJudge | None = None) -> int | None:
        """The most VMs of ``request``'s kind a plan holds now (every count
        up to it plans, none beyond); None where the planner cannot tell.

        One plan of more VMs than any host could hold, refused at its room
        check: no greedy runs."""
        per_host = self.most_per_host(request.demand.as_tuple())
        beyond = dataclasses.replace(request, count=len(self.names) * per_host + 1)
        try:
            self.plan_segments(beyond, rule)
        except NoPlacement as refusal:
            return refusal.room
        return None  # a demand of nothing: no count is too many

    def plan_segments(self, request: PlacementRequest, rule: HostJudge | None = None) -> Segments:
        """:meth:`plan` as segments (hosts, VMs on each), for
        :meth:`apply_segments`: a wide job's plan is not spelt out VM by VM."""
        if request.count < 1:
            raise NoPlacement("a request needs at least one VM")
        self._flush()
        kind = (request.app_class, request.topology)
        checked = self._checks.get(kind)
        if checked is None:
            # Once per kind of request: a replay asks a few kinds thousands of times.
            checked = self._checks[kind] = self._check(*kind)
        reason, required, unknown = checked
        if request.application_id in self._rows_of or any(request.held_domains):
            reason = "an application that already runs is planned over every host"
        if rule is not None and not self.judged:
            reason = "classes built without co-runners cannot be judged by a model"
        if reason:
            raise ValueError(reason)
        if unknown:
            # A level this cloud lacks refuses the request before any judge is asked.
            raise NoPlacement(unknown)
        used = len(self._name_of)
        live = self._s_hosts[:used] > 0
        admitted = None if rule is None else self._admitted(request, rule, live.nonzero()[0])
        # Classes whose hosts take no VM of the request add nothing to a
        # rack's or domain's room and are never admissible: left out.
        demand = request.demand.as_tuple()
        copies = self.kept_copies(demand)
        if copies is None:
            live &= fits_many(self._s_free[:used], np.array(demand, dtype=float))
        else:
            live &= copies[:used] >= 1
        homogeneous = self.policy.homogeneity and request.app_class.needs_homogeneity
        if not homogeneous or len(self.group_names) == 1:
            return self._plan_slots(request, live.nonzero()[0], required, rule, admitted)
        groups = self._s_group[:used]

        def in_group(group: str) -> tuple[Segments, tuple]:
            code = self.group_names.index(group)
            inside = (live & (groups == code)).nonzero()[0]
            segments = self._plan_slots(request, inside, required, rule, admitted)
            rows = set(itertools.chain.from_iterable(rows for rows, _ in segments))
            racks = sorted({self._rack[r] for r in rows})
            spans = tuple(len(set(codes.tolist())) for codes in self._rack_domains[:, racks])
            return segments, (*spans, len(rows))

        return best_group(request.count, self.group_names, in_group)

    def _plan_slots(
        self,
        request: PlacementRequest,
        slots: np.ndarray,
        required: int | None,
        rule: HostJudge | None,
        admitted: np.ndarray | None,
    ) -> Segments:
        """The request's plan on the classes ``slots`` (one processor group);
        ``required``: the depth of its required level, if any."""
        if not slots.size:
            raise NoPlacement("no candidate hosts", room=0)
        if required is None:
            return ClassGreedy(self, request, slots, rule, admitted).run()
        # The required level's domains, tightest first, each tried whole.
        room = ClassGreedy(self, request, slots, rule, admitted).room * self._s_hosts[slots]
        codes = self._rack_domains[:, self._s_rack[slots]]
        own = np.zeros(len(slots), dtype=bool)
        everyone = np.arange(len(slots))

        def largest_room() -> float:
            _, rooms, _ = arrangement.domain_rooms(codes[required], room, own, everyone)
            return float(rooms.max())

        try:
            return first_domain_holding(
                arrangement.tightest_first(codes, room, own, everyone, required, request.count),
                lambda domain: ClassGreedy(
                    self, request, slots[codes[required] == domain], rule, admitted, required + 1
                ).run(),
                request.topology.required,
                request.count,
                largest_room,
            )
        except NoPlacement as refusal:
            refusal.room = round(largest_room())
            raise

    def _check(self, app_class: AppClass, spec: topo.TopologySpec) -> tuple[str, int | None, str]:
        """Why requests of ``app_class`` with constraints ``spec`` are not
        planned here (:meth:`serves`; empty if they are), the depth of the
        level they require (None: none, or a policy without topology), and
        why that level is refused (a level this cloud lacks; empty if none)."""
        reason = self.serves(self.policy, app_class, spec)
        if not self.policy.topology:
            return reason, None, ""
        try:
            required = _depth(topo.SPEC_REQUIRED, spec.required, self.levels)
            _depth(topo.SPEC_PREFERRED, spec.preferred, self.levels)
        except NoPlacement as refusal:
            return reason, None, refusal.reason
        return reason, required, ""

    def kept_copies(self, demand: tuple[float, ...]) -> np.ndarray | None:
        """Per class (slot), how many VMs of ``demand`` a host holds
        (:func:`~hpc_nova_scheduler.core.algorithm.vm_copies` to the bit),
        where the classes keep it: the one-core fits of a memory
        :meth:`one_core_room` was asked of lately, for a VM of one core and
        no disk. None otherwise. Entries of classes no host is in are stale.

        (The same floats: a core's floor((free + 1e-9) / 1) is floor(free +
        1e-9), the memory's the same division, their minimum at least 0.)
        """
        if demand[0] != 1 or demand[2] != 0:
            return None
        return self._one_core_fits.get(demand[1])

    def _admitted(self, request: PlacementRequest, rule: HostJudge, live: np.ndarray) -> np.ndarray:
        """Per class, whether ``rule`` admits the request's application there
        with as many of its VMs as a host of the class could take.

        One question per class that can take a VM, in the order of their
        first hosts: the judge then sees the hosts plan() shows it, alike
        ones once, in the same order.
        """
        admitted = np.zeros(len(self._name_of), dtype=bool)
        demand = request.demand.as_tuple()
        kept = self.kept_copies(demand)
        if kept is None:
            copies = vm_copies(self._s_free[live], np.array(demand, dtype=float))
        else:
            copies = kept[live]
        asked = live[copies > 0]
        copies = copies[copies > 0]
        order = np.argsort(self._s_first[asked], kind="stable")
        asked, copies = asked[order].tolist(), copies[order].tolist()
        own = request.profile.app_name
        hosts = [
            [*self._name_of[slot][6], (own, int(vms))]
            for slot, vms in zip(asked, copies, strict=True)
        ]
        types = [self.group_names[int(self._s_group[slot])] for slot in asked]
        for slot, reason in zip(asked, rule.refusals(hosts, types), strict=True):
            admitted[slot] = reason is None
        return admitted

    # -- placing and releasing -----------------------------------------------

    def apply(self, rows: Sequence[int], request: PlacementRequest) -> None:
        """Place the request's VMs on ``rows`` (one per VM, as planned)."""
        self.apply_segments([(list(rows), 1)], request)

    def apply_segments(self, segments: Segments, request: PlacementRequest) -> None:
        """Place the request's VMs as :meth:`plan_segments` planned them:
        ``vms`` VMs on each host of ``rows``, for each (rows, vms).

        Hosts of one class that take as many VMs end in one state: they
        move to their new class together, computed once.
        """
        profile = request.profile
        demand = request.demand.as_tuple()
        vm = RunningVM(
            uuid=f"{request.application_id}#",
            app_class=profile.app_class,
            cache_score=profile.cache_score,
            app_name=profile.app_name,
            application_id=request.application_id,
        )
        hosts, counts = _per_host(segments, self.few_hosts, len(self.names) / self.counting_share)
        # Hosts that ran the same VMs and take as many hold the same VMs
        # after, whatever their class: one id for them.
        afters: dict[tuple[int, int], tuple[int, tuple]] = {}
        groups = self._groups(hosts, counts)
        mark_each = not groups.many
        slots, runs_ids = [], []
        name_of, move = self._name_of, self._move
        d0, d1, d2 = demand
        for (slot, vms, runs_id), rows in groups:
            # One VM at a time, as ClusterState does: the floats must agree.
            a, b, c = name_of[slot][3]
            for _ in range(vms):
                a, b, c = a - d0, b - d1, c - d2
            known = afters.get((runs_id, vms))
            if known is None:
                runs = (*self._runs_by_id[runs_id], (vm, vms, demand))
                key = (*self._runs_key[runs_id], (request.application_id, vms, demand))
                after = self._runs_id(runs, key)
                part = self._runs_part.get(after)
                if part is None:
                    part = self._runs_part[after] = self._part_after(runs_id, vm, vms)
                known = afters[runs_id, vms] = (after, part)
            slots.append(move(slot, rows, (a, b, c), runs_id, *known, mark_each))
            runs_ids.append(known[0])
        if not mark_each:
            self._mark(groups, slots, runs_ids)
        self._rows_of[request.application_id] = hosts

    def _groups(
        self, rows: np.ndarray | list[int], counts: np.ndarray | list[int] | None
    ) -> Groups:
        """``rows`` (ascending) grouped by (class, count, VM runs; counts
        None: all 0), each group's rows ascending: the hosts that end in one
        state."""
        if isinstance(rows, list):
            if len(rows) == 1:
                # One host (most jobs of many logs): one group, read at once.
                row = rows[0]
                count = counts[0] if counts else 0
                key = (self._row_slot.item(row), count, self._row_runs.item(row))
                return Groups([key], [0, 1], None, rows)
            # A few hosts: grouped in Python, in the order numpy's sort gives.
            counts = counts or [0] * len(rows)
            at = np.array(rows)
            slots = self._row_slot[at].tolist()
            runs = self._row_runs[at].tolist()
            size = len(rows)
            if (
                slots.count(slots[0]) == size
                and runs.count(runs[0]) == size
                and counts.count(counts[0]) == size
            ):
                # One class's hosts that ran and take the same VMs (a job
                # spread over hosts alike): one group, in the rows' order.
                return Groups([(slots[0], counts[0], runs[0])], [0, size], None, rows)
            keys: list[tuple[int, int, int]] = []
            bounds, every = [], []
            for slot, count, runs_id, row in sorted(zip(slots, counts, runs, rows, strict=True)):
                if not keys or keys[-1] != (slot, count, runs_id):
                    keys.append((slot, count, runs_id))
                    bounds.append(len(every))
                every.append(row)
            # Many groups record their hosts' classes at once (:meth:`_mark`).
            at_once = len(keys) >= Groups.marked_at_once_from
            array = np.array(every, dtype=np.int64) if at_once else None
            return Groups(keys, [*bounds, len(every)], array, every)
        slots, runs = self._row_slot[rows], self._row_runs[rows]
        # lexsort is stable and the rows come ascending: they stay so
        # within each group without being a key.
        if counts is None:
            counts = np.zeros(len(rows), dtype=np.int64)
            order = np.lexsort((runs, slots))
        else:
            order = np.lexsort((runs, counts, slots))
        rows, slots, counts, runs = rows[order], slots[order], counts[order], runs[order]
        change = np.ones(len(rows), dtype=bool)
        change[1:] = (
            (slots[1:] != slots[:-1]) | (counts[1:] != counts[:-1]) | (runs[1:] != runs[:-1])
        )
        starts = change.nonzero()[0].tolist()
        keys = zip(
            slots[starts].tolist(), counts[starts].tolist(), runs[starts].tolist(), strict=True
        )
        return Groups(list(keys), [*starts, len(rows)], rows, None)

    def _mark(self, groups: Groups, slots: list[int], runs: list[int]) -> None:
        """Record each group's hosts' new class and VMs, all at once."""
        # (Arrays' own repeat: np.diff and np.repeat wrap lists at a cost
        # per call that outweighs a few dozen hosts.)
        bounds = np.array(groups.bounds)
        sizes = bounds[1:] - bounds[:-1]
        self._row_slot[groups.rows] = np.array(slots).repeat(sizes)
        self._row_runs[groups.rows] = np.array(runs).repeat(sizes)

    def release(self, application_id: str) -> int:
        """Remove every VM of the application (it finished); return how
        many hosts it ran on.

        Hosts of one class that ran the same VMs end in one state: each
        such group is worked out once and moves together.
        """
        rows = self._rows_of.pop(application_id, None)
        if rows is None:
            return 0
        #: Per VM runs met: the id and part of what is kept, and the
        #: demands given back, one per VM in placement order.
        afters: dict[int, tuple[int, tuple, list[tuple[float, float, float]]]] = {}
        groups = self._groups(rows, None)
        mark_each = not groups.many
        slots, runs_ids = [], []
        name_of, move = self._name_of, self._move
        for (slot, _, runs_id), hosts in groups:
            # Hosts that ran the same VMs hold the same ones after.
            known = afters.get(runs_id)
            if known is None:
                kept, kept_key, freed = [], [], []
                runs, key = self._runs_by_id[runs_id], self._runs_key[runs_id]
                for run, run_key in zip(runs, key, strict=True):
                    vm, vms, demand = run
                    if vm.application_id == application_id:
                        freed += [demand] * vms
                    else:
                        kept.append(run)
                        kept_key.append(run_key)
                after = self._runs_id(tuple(kept), tuple(kept_key))
                known = afters[runs_id] = (after, self._part(after), freed)
            after, part, freed = known
            # One VM at a time, as ClusterState does: the floats must agree.
            a, b, c = name_of[slot][3]
            for d0, d1, d2 in freed:
                a, b, c = a + d0, b + d1, c + d2
            slots.append(move(slot, hosts, (a, b, c), runs_id, after, part, mark_each))
            runs_ids.append(after)
        if not mark_each:
            self._mark(groups, slots, runs_ids)
        return len(rows)

    def most_per_host(self, demand: tuple[float, ...]) -> int:
        """The most VMs of ``demand`` an idle host holds: all that a host
        can come to take more of the request than it takes now."""
        most = self._most_per_host.get(demand)
        if most is None:
            copies = vm_copies(self._capacities, np.array(demand, dtype=float))
            most = self._most_per_host[demand] = int(copies.max())
        return most

    def rows_of(self, application_id: str) -> list[int]:
        rows = self._rows_of.get(application_id, [])
        return list(rows) if isinstance(rows, list) else rows.tolist()

    def vms_on(self, row: int) -> list[RunningVM]:
        runs = self._runs_by_id[int(self._row_runs[row])]
        return [vm for vm, vms, _ in runs for _ in range(vms)]

    def free_of(self, row: int) -> Vector:
        return self._name_of[int(self._row_slot[row])][3]

    def capacity_of(self, row: int) -> Vector:
        return self._capacity[row]

    def empty_rows(self) -> set[int]:
        """The hosts no VM runs on."""
        return set(np.flatnonzero(self._row_runs == 0).tolist())

    def cache_of(self, row: int) -> float:
        """The host's cache total: its VMs' scores summed in placement order."""
        return ordered_sum(vm.cache_score for vm in self.vms_on(row))

    def free_cores(self) -> float:
        self._flush()
        used = len(self._name_of)
        return float((self._s_free[:used, 0] * self._s_hosts[:used]).sum())


def _per_host(
    segments: Segments, few: int, counted_from: float
) -> tuple[np.ndarray, np.ndarray] | tuple[list[int], list[int]]:
    """The hosts of a plan's segments, ascending, and how many VMs each
    takes in all (a host may come back in later segments): as lists for up
    to ``few`` hosts, else as arrays, counted over every host from
    ``counted_from`` hosts in the segments on (else sorted)."""
    if sum(len(rows) for rows, _ in segments) <= few:
        vms_on: dict[int, int] = {}
        for rows, vms in segments:
            for row in rows:
                vms_on[row] = vms_on.get(row, 0) + vms
        hosts = sorted(vms_on)
        return hosts, [vms_on[row] for row in hosts]
    if len(segments) == 1:
        rows, vms = segments[0]
        every = np.asarray(rows, dtype=np.int64)
        if len(rows) == 1:
            return every, np.full(1, vms, dtype=np.int64)
        each = None
    else:
        every = np.fromiter(
            itertools.chain.from_iterable(rows for rows, _ in segments), dtype=np.int64
        )
        each = np.repeat(
            np.fromiter((vms for _, vms in segments), dtype=np.int64, count=len(segments)),
            np.fromiter((len(rows) for rows, _ in segments), dtype=np.int64, count=len(segments)),
        )
    hosts, counts = counted_rows(every, each, len(every) >= counted_from)
    return hosts, (counts * vms if each is None else counts)


def _one_core_fit(free: np.ndarray, memory_mb: float) -> np.ndarray:
    """How many one-core VMs of ``memory_mb`` each row's free resources
    hold (none below 0: a host short of room holds none)."""
    fit = np.floor(free[:, 0] + 1e-9)
    if memory_mb > 0:
        fit = np.minimum(fit, np.floor((free[:, 1] + 1e-9) / memory_mb))
    return np.maximum(fit, 0.0)


def _one_core_fit_one(free: Sequence[float], memory_mb: float) -> float:
    """:func:`_one_core_fit` for one row, in Python floats, to the bit."""
    fit = math.floor(free[0] + 1e-9)
    if memory_mb > 0:
        fit = min(fit, math.floor((free[1] + 1e-9) / memory_mb))
    return float(max(fit, 0))


def one_core_vms(free: np.ndarray, memory_mb: float, hosts: np.ndarray | None = None) -> float:
    """How many one-core VMs of ``memory_mb`` fit in these free resources
    in all (``hosts``: how many hosts each row stands for): a necessary
    condition of any plan, cheap enough to try before planning."""
    fit = _one_core_fit(free, memory_mb)
    if hosts is not None:
        fit = fit * hosts
    return float(fit.sum())


__all__ = ["StateClasses", "one_core_vms"]
