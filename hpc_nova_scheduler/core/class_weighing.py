"""Nova's weighers over the classes of :mod:`.state_classes`.

Nova's RAM and CPU weighers normalise each candidate's free RAM and cores
over all candidates (min-max, as ``nova.weights.normalize``), so every VM
weighs every host again: :func:`~hpc_nova_scheduler.core.algorithm.plan`
does, and so did this engine, one numpy pass per VM. But a host's weight
depends on it only through its free RAM and cores, its *point*: hosts at
one point weigh the same. Here the candidates are kept per point (the
untouched hosts of each class in row order, and the hosts the request has
touched one by one), so a round weighs the points, not the hosts. And while
the candidates' minima and maxima stay put, no weight changes but the
chosen host's: the hosts at the best points are then taken by row, one VM
each, without weighing anything again.

The weights are the planner's to the bit: the same float operations on the
same values, ties broken by row as plan() breaks them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

#: (free RAM, free cores): what Nova's weighers read of a host.
Point = tuple[float, float]


class WeighedHosts:
    """The candidates of one request, per point.

    ``classes``: per untouched class, its state (free, cache total,
    SyncHPC, admitted by the fixed conditions) and its hosts in row order.
    """

    def __init__(self, classes: Sequence[tuple[Sequence[float], float, bool, bool, list[int]]]):
        #: Per class: its state and the index of its next untouched host.
        self._classes = classes
        self._next = [0] * len(classes)
        #: Per point: a heap of (row, class index or -1 for a touched host),
        #: and how many hosts stand there.
        self._heaps: dict[Point, list[tuple[int, int]]] = {}
        self._count: dict[Point, int] = {}
        #: Touched hosts: row -> [free, cache total, SyncHPC, admitted].
        self._touched: dict[int, list] = {}
        for i, (free, _, _, _, hosts) in enumerate(classes):
            point = (free[1], free[0])
            self._heaps.setdefault(point, []).append((hosts[0], i))
            self._count[point] = self._count.get(point, 0) + len(hosts)
        for heap in self._heaps.values():
            heapq.heapify(heap)

    def __bool__(self) -> bool:
        return bool(self._count)

    def weights(self) -> tuple[dict[Point, float], Callable[[Point], float]]:
        """Each point's weight over the candidates now, and the weighing
        itself (for points that appear while the extremes hold)."""
        rams = [point[0] for point in self._count]
        cores = [point[1] for point in self._count]
        low_ram, high_ram, low_cores, high_cores = min(rams), max(rams), min(cores), max(cores)
        span_ram, span_cores = high_ram - low_ram, high_cores - low_cores

        def weigh(point: Point) -> float:
            # nova.weights.normalize: all equal weigh 0; RAM's weight first.
            ram = (point[0] - low_ram) / span_ram if high_ram != low_ram else 0.0
            cpu = (point[1] - low_cores) / span_cores if high_cores != low_cores else 0.0
            return ram + cpu

        self.extremes = (low_ram, high_ram, low_cores, high_cores)
        return {point: weigh(point) for point in self._count}, weigh

    def take(self, points: list[Point]) -> tuple[int, list, Point]:
        """The host with the smallest row at ``points``, out of the
        candidates: its row, its load [free, cache, SyncHPC, admitted] (a
        list of its own) and its point."""
        point = points[0]
        if len(points) > 1:
            point = min(points, key=lambda p: self._heaps[p][0])
        heap = self._heaps[point]
        row, source = heap[0]
        if source < 0:
            heapq.heappop(heap)
            load = self._touched.pop(row)
        else:
            free, cache, sync, admitted, hosts = self._classes[source]
            self._next[source] += 1
            at = self._next[source]
            if at < len(hosts):
                heapq.heapreplace(heap, (hosts[at], source))
            else:
                heapq.heappop(heap)
            load = [list(free), cache, sync, admitted]
        self._count[point] -= 1
        if not self._count[point]:
            del self._count[point], self._heaps[point]
        return row, load, point

    def put(self, row: int, load: list) -> Point:
        """A touched host back among the candidates, at its new point."""
        point = (load[0][1], load[0][0])
        self._touched[row] = load
        if point in self._count:
            heapq.heappush(self._heaps[point], (row, -1))
            self._count[point] += 1
        else:
            self._heaps[point] = [(row, -1)]
            self._count[point] = 1
        return point

    def holds(self, point: Point) -> bool:
        return point in self._count


def weigh_and_take(
    hosts: WeighedHosts,
    count: int,
    place: Callable[[list], bool],
    short_of: Callable[[int], Exception],
) -> list[int]:
    """The rows of ``count`` VMs, one at a time to the candidate of the
    highest weight (the smallest row among equals), as Nova weighs them.

    ``place`` puts one VM on a host's load and says whether the host is
    still a candidate; ``short_of`` is the error when candidates run out.
    """
    chosen: list[int] = []
    while len(chosen) < count:
        if not hosts:
            raise short_of(len(chosen))
        weights, weigh = hosts.weights()
        best = max(weights.values())
        at_best = [point for point, weight in weights.items() if weight == best]
        low_ram, _, low_cores, _ = hosts.extremes
        # The extremes hold while the best points keep hosts and no host
        # falls below the minima: then no weight but the chosen host's changes.
        while len(chosen) < count:
            row, load, point = hosts.take(at_best)
            chosen.append(row)
            if not place(load):
                if not hosts.holds(point):
                    break  # a point emptied: an extreme may have moved
                continue
            moved = hosts.put(row, load)
            if not hosts.holds(point):
                break
            if moved[0] < low_ram or moved[1] < low_cores or not weigh(moved) < best:
                break  # a new minimum, or the host still among the best
    return chosen


__all__ = ["WeighedHosts", "weigh_and_take"]
