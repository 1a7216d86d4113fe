"""After Figure 8: a short stream on hosts nested in topology levels.

``hpc-nova-scheduler demo --topology block=2,rack=2`` reads the shape as
``simulate --topology`` does (outermost first; each level's number is how
many domains of the next level one of its domains holds, the last level's
how many hosts) and builds two domains of the outermost level: with
``block=2,rack=2``, eight hosts N1-N8 of Figure 8's size (4 vCPU, 8 GB) in
blocks b1 and b2 of racks r1 and r2 each, tagged ``hpc:block`` and
``hpc:rack`` and with ``[hpc_scheduler] topology_levels = block,rack``. A
domain is known by its path: rack r1 of block b1 is ``b1/r1``.

Four applications of one-vCPU VMs follow, each kept running, sized from
the shape so that each shows one constraint (``c`` VMs fill an innermost
domain, here a rack of 8):

1. ``hpc:topology_required=rack`` with ``c - c/4`` VMs: one rack.
2. ``hpc:topology_required=rack`` with ``c + 1`` VMs: no rack holds it, so
   it is refused whole (NoValidHost), though the cloud has room.
3. ``hpc:topology_preferred=block`` (AsyncHPC, which otherwise ignores
   racks) with three quarters of a block: the block that still holds it
   whole, not a VM in the other.
4. ``hpc:topology_segment=c/2`` per rack, three segments: each whole in
   one rack, the segments spread over the racks with room for one.

Each is judged against the room the earlier ones left (:func:`expect`):
placed when its constraint can be met, then within it (and, preferring a
level, over as few of its domains as can hold it), refused whole when not.
No request is deferred.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Mapping, Sequence

from hpc_nova_scheduler.core.profile import AppClass

# The layout, the stream and the judgement import nothing of Nova: the
# command line checks --topology with them before Nova's harness loads.

#: VMs of one vCPU and 2 GB a host of Figure 8's size holds.
VMS_PER_HOST = 4
#: The outermost level has two domains, so that the stream has a choice.
OUTER_DOMAINS = 2
#: In-process computes the demo starts at most (the machine is shared).
MAX_HOSTS = 16
CACHE_SCORE = 0.0


class ShapeError(ValueError):
    """A ``--topology`` the demo cannot build; the message says why."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """The hosts and each one's domain at every level."""

    levels: tuple[str, ...]
    #: Host -> its value at each level, outermost first (``("b1", "r2")``).
    values: dict[str, tuple[str, ...]]
    #: Hosts per domain of each level.
    sizes: tuple[int, ...]

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(self.values)

    def domain(self, host: str, level: str) -> str:
        """The host's domain at ``level``, named by its path (``b1/r2``)."""
        depth = self.levels.index(level)
        return "/".join(self.values[host][: depth + 1])

    def tags(self) -> dict[str, dict[str, list[str]]]:
        """``HpcCloud.TAGS``: aggregate key -> value -> hosts."""
        found: dict[str, dict[str, list[str]]] = {}
        for host, values in self.values.items():
            for level, value in zip(self.levels, values, strict=True):
                found.setdefault(f"hpc:{level}", {}).setdefault(value, []).append(host)
        return found


def layout(shape: Sequence[tuple[str, int]]) -> Layout:
    """Hosts N1... in two domains of the outermost level, filled in order.

    Values are numbered within their parent domain (``r1``, ``r2`` in each
    block), named by the level's first letter, or the whole level name
    where two levels share it.
    """
    levels = tuple(level for level, _ in shape)
    counts = tuple(int(n) for _, n in shape)
    if len(levels) < 2:
        raise ShapeError(
            "needs two levels or more, outermost first (e.g. block=2,rack=2): the stream "
            "prefers the outermost and requires the innermost"
        )
    if any(n < 2 for n in counts[:-1]):
        raise ShapeError(
            "every level but the last must hold 2 domains or more of the next one, so that "
            "a domain is more than its one child"
        )
    sizes = tuple(math.prod(counts[depth:]) for depth in range(len(levels)))
    total = OUTER_DOMAINS * sizes[0]
    if total > MAX_HOSTS:
        raise ShapeError(
            f"makes {total} hosts ({OUTER_DOMAINS} x {sizes[0]}); the demo starts "
            f"{MAX_HOSTS} at most"
        )
    first = [level[0] for level in levels]
    prefixes = [
        letter if first.count(letter) == 1 else level
        for letter, level in zip(first, levels, strict=True)
    ]
    values = {}
    for index in range(total):
        path = []
        for depth, prefix in enumerate(prefixes):
            within = (index // sizes[depth]) % (counts[depth - 1] if depth else OUTER_DOMAINS)
            path.append(f"{prefix}{within + 1}")
        values[f"N{index + 1}"] = tuple(path)
    return Layout(levels, values, sizes)


@dataclasses.dataclass(frozen=True)
class TopologyApp:
    """One application of the stream."""

    name: str
    app_class: AppClass
    count: int
    #: ``hpc:topology_*`` extra specs, without the ``hpc:`` prefix.
    specs: dict[str, str]

    def describe(self) -> str:
        spec = self.specs
        if "topology_segment" in spec:
            return f"segments of {spec['topology_segment']} per {spec['topology_segment_level']}"
        if "topology_required" in spec:
            return f"required {spec['topology_required']}"
        return f"preferred {spec['topology_preferred']}"


def stream(found: Layout) -> tuple[TopologyApp, ...]:
    """The four applications, sized from the layout (module docstring)."""
    outer, inner = found.levels[0], found.levels[-1]
    rack = found.sizes[-1] * VMS_PER_HOST
    block = found.sizes[0] * VMS_PER_HOST
    segment = max(1, rack // 2)
    return (
        TopologyApp(
            f"mpi-{inner}", AppClass.SYNC_HPC, rack - rack // 4, {"topology_required": inner}
        ),
        TopologyApp(
            f"mpi-{inner}-too-big", AppClass.SYNC_HPC, rack + 1, {"topology_required": inner}
        ),
        TopologyApp(
            f"spark-{outer}", AppClass.ASYNC_HPC, block - block // 4, {"topology_preferred": outer}
        ),
        TopologyApp(
            "mpi-segments",
            AppClass.SYNC_HPC,
            3 * segment,
            {"topology_segment": str(segment), "topology_segment_level": inner},
        ),
    )


@dataclasses.dataclass(frozen=True)
class Expected:
    """What an application should get, given the room left when it comes."""

    placed: bool
    #: With ``topology_preferred``: the fewest domains of that level that hold it.
    domains: int | None = None


def free_room(found: Layout, running: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """VMs each host still holds, with the ``running`` applications (VMs per host) on it.

    Every VM has one vCPU and 2 GB and a cache score of 0: room is the only
    limit in this cloud of one processor group.
    """
    free = dict.fromkeys(found.hosts, VMS_PER_HOST)
    for vms_per_host in running:
        for host, vms in vms_per_host.items():
            free[host] -= vms
    return free


def expect(found: Layout, app: TopologyApp, free: Mapping[str, int]) -> Expected:
    """Whether ``app`` fits its constraint in the room ``free`` left, and for a
    preferred level how few of its domains can hold it."""
    spec = app.specs
    if "topology_required" in spec:
        rooms = by_domain(found, free, spec["topology_required"]).values()
        return Expected(max(rooms, default=0) >= app.count)
    if "topology_segment" in spec:
        size = int(spec["topology_segment"])
        rooms = by_domain(found, free, spec["topology_segment_level"]).values()
        return Expected(
            app.count % size == 0 and sum(room // size for room in rooms) >= app.count // size
        )
    rooms = sorted(by_domain(found, free, spec["topology_preferred"]).values(), reverse=True)
    if sum(rooms) < app.count:
        return Expected(False)
    held = 0
    for number, room in enumerate(rooms, start=1):
        held += room
        if held >= app.count:
            return Expected(True, number)
    raise AssertionError("unreachable: the rooms add up to the count")


@dataclasses.dataclass
class TopologyOutcome:
    app: TopologyApp
    vms_per_host: dict[str, int]
    refused: bool
    expected: Expected
    #: Why it is not what the application asked for; None when it is.
    why: str | None = None


@dataclasses.dataclass
class TopologyRun:
    layout: Layout
    outcomes: list[TopologyOutcome]


def by_domain(found: Layout, vms_per_host: Mapping[str, int], level: str) -> dict[str, int]:
    """VMs (or room) per domain of ``level``, in path order; ``host`` is each host."""
    counts: collections.Counter = collections.Counter()
    for host, vms in vms_per_host.items():
        counts[host if level == "host" else found.domain(host, level)] += vms
    return dict(sorted(counts.items()))


def judge(
    found: Layout,
    app: TopologyApp,
    expected: Expected,
    vms_per_host: Mapping[str, int],
    refused: bool,
) -> str | None:
    """Why the outcome is not what ``app`` asked for, or None when it is."""
    if refused:
        return None if not expected.placed else "refused, though the room left could hold it"
    if not expected.placed:
        return f"placed ({_where(found, vms_per_host)}), though the room left cannot hold it"
    placed = sum(vms_per_host.values())
    if placed != app.count:
        return f"{placed} of {app.count} VMs placed"
    spec = app.specs
    if "topology_required" in spec:
        level = spec["topology_required"]
        spread = by_domain(found, vms_per_host, level)
        if len(spread) > 1:
            return f"spans {len(spread)} {level} domains ({_where(found, vms_per_host)})"
    if "topology_segment" in spec:
        size, level = int(spec["topology_segment"]), spec["topology_segment_level"]
        split = sorted(d for d, n in by_domain(found, vms_per_host, level).items() if n % size)
        if split:
            return f"a segment of {size} is split across {level} domains ({', '.join(split)})"
    if expected.domains is not None:
        level = spec["topology_preferred"]
        spread = by_domain(found, vms_per_host, level)
        if len(spread) > expected.domains:
            return f"spans {len(spread)} {level} domains where {expected.domains} could hold it"
    return None


def _where(found: Layout, vms_per_host: Mapping[str, int]) -> str:
    inner = found.levels[-1]
    return ", ".join(f"{d}: {n}" for d, n in by_domain(found, vms_per_host, inner).items())


def describe_placement(found: Layout, vms_per_host: Mapping[str, int]) -> str:
    """``b1/r2: 6`` per innermost domain, and how many outermost domains."""
    if not vms_per_host:
        return "-"
    outer = found.levels[0]
    outers = len(by_domain(found, vms_per_host, outer))
    return f"{_where(found, vms_per_host)} ({outers} {outer}{'s' if outers > 1 else ''})"


def cloud_class(found: Layout, alpha: float, db_url: str | None) -> type:
    """The in-process cloud of the layout, with the plugin and the levels."""
    from hpc_nova_scheduler.demo import figure8
    from hpc_nova_scheduler.demo.cloud import HpcCloud

    flags = {
        "cache_threshold": alpha,
        "sync_cache_threshold": alpha,
        "topology_levels": list(found.levels),
    }
    attributes = {
        "HOSTS": dict.fromkeys(found.hosts, figure8.NODE),
        "TAGS": found.tags(),
        "HPC_FLAGS": flags,
        "DB_URL": db_url,
    }
    return type("TopologyCloud", (HpcCloud,), attributes)


def run(
    shape: Sequence[tuple[str, int]],
    alpha: float = 200.0,
    db_url: str | None = None,
    build_timeout: float | None = None,
    log_path: str | None = None,
) -> TopologyRun:
    """Boot the stream once, each application kept running; raises
    :class:`figure8.DemoFailure` as Figure 8's runs do."""
    from hpc_nova_scheduler.demo import figure8

    build_timeout = figure8.BUILD_TIMEOUT if build_timeout is None else build_timeout
    found = layout(shape)
    cloud = cloud_class(found, alpha, db_url)("runTest")
    try:
        cloud.start()
        figure8.wait_for_computes(cloud, found.hosts, figure8.COMPUTES_TIMEOUT)
        return _drive(cloud, found, build_timeout)
    finally:
        try:
            if log_path and getattr(cloud, "stdlog", None) is not None:
                with open(log_path, "w", encoding="utf-8") as log:
                    log.write(cloud.stdlog.logger.output)
        finally:
            cloud.stop()


def _drive(cloud, found: Layout, build_timeout: float) -> TopologyRun:
    from hpc_nova_scheduler.demo import figure8

    outcomes = []
    for app in stream(found):
        flavor = cloud.hpc_flavor(
            ram=figure8.VM_RAM_MB,
            app_class=app.app_class.value,
            cache_score=CACHE_SCORE,
            app_name=app.name,
            **app.specs,
        )
        expected = expect(found, app, free_room(found, [o.vms_per_host for o in outcomes]))
        servers = figure8._boot(cloud, flavor, app.count, build_timeout)
        result = figure8.request_result(servers, app.count)
        if result.verdict is figure8.Verdict.FAILED:
            raise figure8.DemoFailure(f"{app.name}: {result.message}")
        refused = result.verdict is figure8.Verdict.DEFERRED
        if refused:
            figure8._delete(cloud, servers, figure8.DELETE_TIMEOUT)
        hosts = {} if refused else cloud.hosts_of(servers)
        outcomes.append(
            TopologyOutcome(
                app, hosts, refused, expected, judge(found, app, expected, hosts, refused)
            )
        )
    return TopologyRun(found, outcomes)
