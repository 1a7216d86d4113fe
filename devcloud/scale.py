"""What ``benchmarks/control_plane_scale.py`` reads off a cloud of many nodes.

Two things the benchmark cannot get from the API:

- **The scheduler's own timing of ``select_destinations``**, from its log.
  With :data:`TIMING_LOG_LEVELS` nova-scheduler logs "Starting to schedule
  for instances" (``nova.scheduler.manager``, at DEBUG) as it enters
  ``select_destinations``, before it asks Placement; the versioned
  ``scheduler.select_destinations.end`` notification, written by the
  ``log`` notification driver, marks a choice made, and oslo.messaging's
  "Expected exception" (DEBUG) a request refused. A worker serves one
  request per context, so the lines of one call share the process and the
  request id of the log line's context.
- **Whether a better placement existed in the whole cloud**, which the
  scheduler, seeing only Placement's candidates, could not know:
  :class:`Cloud` keeps the benchmark's own servers node by node and answers,
  for a request, whether one rack had room for all of it
  (:meth:`Cloud.one_rack_fits`) and how many nodes were idle
  (:meth:`Cloud.idle_nodes`). The benchmark is the cloud's only user, so its
  ledger is the whole occupancy.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

#: ``[DEFAULT] default_log_levels`` entries that make nova-scheduler log the
#: start and refusal of each ``select_destinations`` at DEBUG, with the rest
#: of the log at INFO (oslo.log's own defaults are kept before them).
TIMING_LOG_LEVELS = ("nova.scheduler.manager=DEBUG", "oslo_messaging.rpc.server=DEBUG")

_LINE = re.compile(
    r"^(?P<when>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) (?P<pid>\d+) (?P<level>[A-Z]+) "
    r"(?P<logger>\S+) \[(?P<context>[^\]]*)\] ?(?P<message>.*)$"
)
_START = "Starting to schedule for instances:"
_END_LOGGER = "oslo.messaging.notification.scheduler.select_destinations.end"
_REFUSED = "Expected exception during message handling"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclasses.dataclass
class Timing:
    """One ``select_destinations`` as the scheduler worker logged it."""

    pid: int
    context: str
    started: datetime.datetime
    instances: tuple[str, ...]
    ended: datetime.datetime | None = None
    refused: bool = False

    @property
    def seconds(self) -> float | None:
        if self.ended is None:
            return None
        return (self.ended - self.started).total_seconds()


def _when(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f")


def _request_id(context: str) -> str:
    """The context's own request id: the second ``req-`` of the log context
    (the first is the global request id, shared by every service)."""
    ids = re.findall(r"req-[0-9a-f-]+", context)
    return ids[-1] if ids else context


def scheduler_timings(lines: Iterable[str]) -> list[Timing]:
    """Every ``select_destinations`` begun in ``lines`` (a scheduler log),
    with its end where the log has one."""
    open_calls: dict[tuple[int, str], Timing] = {}
    found: list[Timing] = []
    for line in lines:
        match = _LINE.match(line)
        if match is None:
            continue
        key = (int(match["pid"]), _request_id(match["context"]))
        message = match["message"]
        if message.startswith(_START):
            timing = Timing(
                pid=key[0],
                context=key[1],
                started=_when(match["when"]),
                instances=tuple(_UUID.findall(message)),
            )
            open_calls[key] = timing
            found.append(timing)
        elif match["logger"] == _END_LOGGER or message.startswith(_REFUSED):
            timing = open_calls.pop(key, None)
            if timing is not None:
                timing.ended = _when(match["when"])
                timing.refused = message.startswith(_REFUSED)
    return found


def read_timings(log: Path, offset: int = 0) -> list[Timing]:
    """:func:`scheduler_timings` of ``log`` from byte ``offset`` on."""
    with log.open("rb") as stream:
        stream.seek(offset)
        text = stream.read().decode(errors="replace")
    return scheduler_timings(text.splitlines())


@dataclasses.dataclass(frozen=True)
class Node:
    """A node as the checker knows it: where it is and how big."""

    host: str
    rack: str
    block: str
    cpu_group: str
    vcpus: int


@dataclasses.dataclass
class Cloud:
    """The benchmark's servers, node by node, and what the cloud had room for."""

    nodes: Mapping[str, Node]
    #: node -> vCPUs used
    used: dict[str, int] = dataclasses.field(default_factory=dict)
    #: node -> servers on it
    servers: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    #: server -> (node, vCPUs, dedicated)
    where: dict[str, tuple[str, int, bool]] = dataclasses.field(default_factory=dict)
    #: node -> servers on it that hold it dedicated (ExtremeHPC)
    dedicated: dict[str, set[str]] = dataclasses.field(default_factory=dict)

    def add(self, server: str, node: str, vcpus: int, *, dedicated: bool = False) -> None:
        if server in self.where or node not in self.nodes:
            return
        self.where[server] = (node, vcpus, dedicated)
        self.used[node] = self.used.get(node, 0) + vcpus
        self.servers.setdefault(node, set()).add(server)
        if dedicated:
            self.dedicated.setdefault(node, set()).add(server)

    def remove(self, server: str) -> None:
        found = self.where.pop(server, None)
        if found is None:
            return
        node, vcpus, dedicated = found
        self.used[node] -= vcpus
        self.servers[node].discard(server)
        if dedicated:
            self.dedicated[node].discard(server)

    def free(self, node: str) -> int:
        """vCPUs another application could use: none on a dedicated node."""
        if self.dedicated.get(node):
            return 0
        return self.nodes[node].vcpus - self.used.get(node, 0)

    def idle_nodes(self) -> int:
        """Nodes with no server: each could be dedicated to an ExtremeHPC application."""
        return sum(1 for node in self.nodes if not self.servers.get(node))

    def one_rack_fits(self, count: int, vcpus: int) -> bool:
        """Whether some rack of one processor group had room for ``count``
        servers of ``vcpus`` each; a node dedicated to an ExtremeHPC
        application has no room for others."""
        room: dict[tuple[str, str], int] = {}
        for name, node in self.nodes.items():
            slots = self.free(name) // vcpus
            if slots:
                key = (node.rack, node.cpu_group)
                room[key] = room.get(key, 0) + slots
                if room[key] >= count:
                    return True
        return False


@dataclasses.dataclass(frozen=True)
class Spread:
    """Where one request's servers landed."""

    racks: int
    blocks: int
    cpu_groups: int
    nodes: int


def spread(nodes: Mapping[str, Node], placed: Iterable[str]) -> Spread:
    """Racks, blocks, processor groups and nodes spanned by ``placed`` (node names)."""
    chosen = [nodes[name] for name in placed if name in nodes]
    return Spread(
        racks=len({node.rack for node in chosen}),
        blocks=len({node.block for node in chosen}),
        cpu_groups=len({node.cpu_group for node in chosen}),
        nodes=len({name for name in placed if name in nodes}),
    )


def hot_frames(
    collapsed: Iterable[str], top: int = 15, within: Sequence[str] = ()
) -> list[tuple[str, float, float]]:
    """``(frame, inclusive share, self share)`` of the ``top`` frames by
    inclusive samples, from py-spy's ``raw`` output (collapsed stacks: frames
    joined by ``;``, then the sample count).

    A frame that recurs in one stack counts once for it, so shares stay at
    most 1. ``within``: rank only frames whose text holds one of these
    (``"nova/"``, say): the thread's bootstrap, eventlet's hub and the RPC
    server hold every sample and say nothing. Shares are of all samples.
    """
    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    total = 0
    for line in collapsed:
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        frames = stack.split(";")
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + samples
        own[frames[-1]] = own.get(frames[-1], 0) + samples
    if not total:
        return []
    kept = [item for item in inclusive.items() if not within or any(w in item[0] for w in within)]
    ranked = sorted(kept, key=lambda item: -item[1])[:top]
    return [(frame, count / total, own.get(frame, 0) / total) for frame, count in ranked]
