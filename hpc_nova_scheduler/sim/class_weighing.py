"""Nova's weighers over the classes of :mod:`.state_classes`.

Nova's RAM and CPU weighers normalise each candidate's free RAM and cores
over all candidates (min-max, as ``nova.weights.normalize``), so every VM
weighs every host again: :func:`~hpc_nova_scheduler.core.algorithm.plan`
does, and so did this engine, one numpy pass per VM. But a host's weight
depends on it only through its free RAM and cores, its *point*: hosts at
one point weigh the same. Here the candidates are kept per point (the
untouched hosts of each class in row order, and the hosts the request has
touched, in blocks of hosts that took VMs alike), so a round weighs the
points, not the hosts. And while the candidates' minima and maxima stay
put, no weight changes but the chosen hosts': the hosts at the best points
are then taken by row, one VM each, a block's hosts at once up to the next
rival's row, without weighing anything again.

The weights are the planner's to the bit: the same float operations on the
same values, ties broken by row as plan() breaks them.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Sequence

#: (free RAM, free cores): what Nova's weighers read of a host.
Point = tuple[float, float]


class WeighedHosts:
    """The candidates of one request, per point, in blocks of hosts in the
    same state (a class's untouched hosts, or hosts that took VMs alike).

    ``classes``: per untouched class, its state (free, cache total,
    SyncHPC, admitted by the fixed conditions) and its hosts in row order.
    """

    def __init__(self, classes: Sequence[tuple[Sequence[float], float, bool, bool, list[int]]]):
        #: Per block: [state (free, cache, SyncHPC, admitted), its rows, the next one's index].
        self._blocks: list[list] = []
        #: Per point: a heap of (a block's next row, the block), and how
        #: many hosts stand there.
        self._heaps: dict[Point, list[tuple[int, int]]] = {}
        self._count: dict[Point, int] = {}
        for free, cache, sync, admitted, hosts in classes:
            self._add((list(free), cache, sync, admitted), hosts, heapify=False)
        for heap in self._heaps.values():
            heapq.heapify(heap)

    def _add(self, state: tuple, rows: list[int], heapify: bool = True) -> Point:
        point = (state[0][1], state[0][0])
        self._blocks.append([state, rows, 0])
        entry = (rows[0], len(self._blocks) - 1)
        heap = self._heaps.get(point)
        if heap is None:
            self._heaps[point] = [entry]
            self._count[point] = len(rows)
        else:
            if heapify:
                heapq.heappush(heap, entry)
            else:
                heap.append(entry)
            self._count[point] += len(rows)
        return point

    def __bool__(self) -> bool:
        return bool(self._count)

    def weights(self) -> tuple[dict[Point, float], Callable[[Point], float], Point]:
        """Each point's weight over the candidates now, the weighing itself
        (for points that appear while the extremes hold), and the minima."""
        rams = [point[0] for point in self._count]
        cores = [point[1] for point in self._count]
        low_ram, high_ram, low_cores, high_cores = min(rams), max(rams), min(cores), max(cores)
        span_ram, span_cores = high_ram - low_ram, high_cores - low_cores

        def weigh(point: Point) -> float:
            # nova.weights.normalize: all equal weigh 0; RAM's weight first.
            ram = (point[0] - low_ram) / span_ram if high_ram != low_ram else 0.0
            cpu = (point[1] - low_cores) / span_cores if high_cores != low_cores else 0.0
            return ram + cpu

        return {point: weigh(point) for point in self._count}, weigh, (low_ram, low_cores)

    def next_state(self, points: list[Point]) -> tuple[tuple, Point]:
        """The state of the host with the smallest row at ``points``, and its point."""
        point = points[0]
        if len(points) > 1:
            point = min(points, key=lambda p: self._heaps[p][0])
        return self._blocks[self._heaps[point][0][1]][0], point

    def take(self, point: Point, points: list[Point], limit: int) -> list[int]:
        """From the block whose row is smallest at ``points`` (at ``point``),
        its hosts in row order before any other host at ``points``, at most
        ``limit``: out of the candidates."""
        heap = self._heaps[point]
        index = heap[0][1]
        block = self._blocks[index]
        rows, start = block[1], block[2]
        # The rival: the smallest row of any other block at the best points.
        rival = None
        if len(heap) > 1:
            rival = heap[1][0] if len(heap) == 2 else min(heap[1][0], heap[2][0])
        for other in points:
            if other != point:
                row = self._heaps[other][0][0]
                rival = row if rival is None or row < rival else rival
        end = min(len(rows), start + limit)
        if rival is not None and end - start > 1:
            end = min(end, bisect.bisect_left(rows, rival, start + 1, end))
        taken = rows[start:end]
        block[2] = end
        if end < len(rows):
            heapq.heapreplace(heap, (rows[end], index))
        else:
            heapq.heappop(heap)
        self._count[point] -= len(taken)
        if not self._count[point]:
            del self._count[point], self._heaps[point]
        return taken

    def put(self, rows: list[int], state: tuple) -> Point:
        """Hosts that took VMs alike back among the candidates, as one block."""
        return self._add(state, rows)

    def holds(self, point: Point) -> bool:
        return point in self._count


def weigh_and_take(
    hosts: WeighedHosts,
    count: int,
    place: Callable[[list], bool],
    short_of: Callable[[int], Exception],
) -> list[tuple[list[int], int]]:
    """``count`` VMs, one at a time to the candidate of the highest weight
    (the smallest row among equals), as Nova weighs them; as segments
    (hosts, one VM each) in placement order.

    ``place`` puts one VM on a load [free, cache, SyncHPC, admitted] and
    says whether the host is still a candidate; ``short_of`` is the error
    when candidates run out.
    """
    chosen: list[tuple[list[int], int]] = []
    placed = 0
    while placed < count:
        if not hosts:
            raise short_of(placed)
        weights, weigh, (low_ram, low_cores) = hosts.weights()
        best = max(weights.values())
        at_best = [point for point, weight in weights.items() if weight == best]
        # The extremes hold while the best points keep hosts and no host
        # falls below the minima: then no weight but the chosen hosts' changes.
        while placed < count:
            state, point = hosts.next_state(at_best)
            load = [list(state[0]), *state[1:]]
            stays = place(load)
            moved = (load[0][1], load[0][0])
            # Hosts that would move the minima or stay among the best: one.
            alone = stays and (
                moved[0] < low_ram or moved[1] < low_cores or not weigh(moved) < best
            )
            rows = hosts.take(point, at_best, 1 if alone else count - placed)
            chosen.append((rows, 1))
            placed += len(rows)
            if stays:
                hosts.put(rows, tuple(load))
            if alone or not hosts.holds(point):
                break  # an extreme may have moved
    return chosen


__all__ = ["WeighedHosts", "weigh_and_take"]
