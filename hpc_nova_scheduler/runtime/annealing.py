"""Seed 000's placement: candidate VC configurations and simulated annealing.

A virtual cluster (VC) of R VMs runs on nodes of one or more types. Kim et
al. limit each application to a few candidate configurations:

* k = 2 log2 T of the T node types are selected (here: the application's
  fastest alone, so that its preferences count, as the paper allows);
* per selected type two homogeneous configurations, the most scaled out
  (one VM a node) and the most consolidated (as many VMs a node as it has
  cores);
* for i = 1 .. s, heterogeneous configurations over 2^i types with R / 2^i
  VMs on each: log2 T tuples of 2^i types in which every selected type
  appears 2^(i-1) times (one tuple when 2^i = k), two configurations each;

2 (k + sum_i min(C(k, 2^i), log2 T)) in all (log2 T rounded).

The objective of a placement is the geometric mean over the applications
of their speedup: the worst run time alone among their candidates over the
estimated run time. The estimate comes from a runtime model (seed 000's
``runtime-trees``): an application runs at the pace of its slowest node,
judged with the co-runners on that node.

Simulated annealing (parameters unspecified in the paper, chosen here and
tested for sensitivity): start from a random placement; move one random
application to another of its candidates on random nodes with room;
accept a better state, and a worse one with probability
exp(delta / temperature) on the log of the objective; cool geometrically.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Callable, Sequence

#: Temperature at the start, on the log of the geometric mean speedup.
TEMPERATURE = 0.05
COOLING = 0.995
ITERATIONS = 3000


@dataclasses.dataclass(frozen=True)
class NodeType:
    name: str
    nodes: int
    cores: int


@dataclasses.dataclass(frozen=True)
class Configuration:
    """VMs per node type, and whether spread one a node or packed."""

    blocks: tuple[tuple[str, int], ...]
    consolidated: bool

    def loads(self, cores: dict[str, int]) -> list[tuple[str, list[int]]]:
        """Per block, its node type and the VMs on each of its nodes."""
        found = []
        for name, vms in self.blocks:
            per_node = min(cores[name], vms) if self.consolidated else 1
            found.append(
                (
                    name,
                    [per_node] * (vms // per_node) + ([vms % per_node] if vms % per_node else []),
                )
            )
        return found

    def describe(self, cores: dict[str, int]) -> str:
        """Seed 000's notation, e.g. ``T1(4,4)`` or ``T1(1,1),T2(1,1)``."""
        return ",".join(f"{name}({','.join(map(str, nodes))})" for name, nodes in self.loads(cores))


def rounded_log2(types: int) -> int:
    return max(1, round(math.log2(types))) if types > 1 else 1


def candidate_count(types: int, s: int) -> int:
    """2 (k + sum_{i=1..s} min(C(k, 2^i), log2 T)), k = 2 log2 T (at most T)."""
    log_t = rounded_log2(types)
    k = min(types, 2 * log_t)
    return 2 * (k + sum(min(math.comb(k, 2**i), log_t) for i in range(1, s + 1) if 2**i <= k))


def candidates(
    types: Sequence[NodeType], vms: int, s: int, preference: Sequence[str] | None = None
) -> list[Configuration]:
    """An application's candidate configurations, seed 000's way.

    ``preference`` orders the type names, best first (default: as given).
    """
    if vms < 2**s or vms % 2**s:
        raise ValueError(f"{vms} VMs do not split into 2^{s} equal blocks")
    log_t = rounded_log2(len(types))
    k = min(len(types), 2 * log_t)
    order = list(preference) if preference else [t.name for t in types]
    chosen = order[:k]
    found = [
        Configuration(((name, vms),), consolidated)
        for name in chosen
        for consolidated in (False, True)
    ]
    for i in range(1, s + 1):
        width = 2**i
        if width > k:
            break
        if width == k:
            tuples = [tuple(chosen)]
        else:
            # log2 T tuples of `width` types, each type appearing width / 2 times:
            # a rotation over the chosen types.
            count = min(math.comb(k, width), log_t)
            tuples = []
            for start in range(count):
                picked = tuple(chosen[(start * width + j) % k] for j in range(width))
                if len(set(picked)) < width:
                    picked = tuple(chosen[(start + j) % k] for j in range(width))
                tuples.append(picked)
        for names in tuples:
            for consolidated in (False, True):
                found.append(
                    Configuration(tuple((name, vms // width) for name in names), consolidated)
                )
    return found


@dataclasses.dataclass(frozen=True)
class ClusterApplication:
    name: str
    vms: int
    candidates: tuple[Configuration, ...]


#: Where an application's VMs run: (node type, node index) -> VMs there.
Layout = dict[tuple[str, int], int]
#: Run time of an application with a layout, given every application's layout.
Estimator = Callable[[str, Layout, dict[str, Layout]], float]


def _layout(
    config: Configuration, types: dict[str, NodeType], free: dict[tuple[str, int], int], rng
) -> Layout | None:
    """Nodes for ``config`` among those with room, picked at random; None if none fit."""
    layout: Layout = {}
    room = dict(free)
    for name, needs in config.loads({t.name: t.cores for t in types.values()}):
        nodes = [n for n in range(types[name].nodes) if (name, n) not in layout]
        rng.shuffle(nodes)
        for need in needs:
            spot = next((n for n in nodes if room[(name, n)] >= need), None)
            if spot is None:
                return None
            nodes.remove(spot)
            layout[(name, spot)] = need
            room[(name, spot)] -= need
    return layout


@dataclasses.dataclass
class Annealing:
    types: Sequence[NodeType]
    applications: Sequence[ClusterApplication]
    estimate: Estimator
    #: Each application's worst run time alone among its candidates.
    worst_alone: dict[str, float]
    temperature: float = TEMPERATURE
    cooling: float = COOLING
    iterations: int = ITERATIONS
    seed: int = 0

    def objective(self, layouts: dict[str, Layout]) -> float:
        """The geometric mean speedup of a placement."""
        logs = [
            math.log(self.worst_alone[app] / self.estimate(app, layout, layouts))
            for app, layout in layouts.items()
        ]
        return math.exp(math.fsum(logs) / len(logs))

    def _free(self, layouts: dict[str, Layout], without: str | None = None):
        free = {(t.name, n): t.cores for t in self.types for n in range(t.nodes)}
        for app, layout in layouts.items():
            if app != without:
                for node, vms in layout.items():
                    free[node] -= vms
        return free

    def run(self) -> tuple[dict[str, Configuration], dict[str, Layout], float]:
        rng = random.Random(self.seed)
        by_name = {t.name: t for t in self.types}
        layouts: dict[str, Layout] = {}
        configs: dict[str, Configuration] = {}
        for app in self.applications:
            options = list(app.candidates)
            rng.shuffle(options)
            for config in options:
                layout = _layout(config, by_name, self._free(layouts), rng)
                if layout is not None:
                    layouts[app.name], configs[app.name] = layout, config
                    break
            else:
                raise ValueError(f"no candidate configuration of {app.name} fits the cluster")
        value = math.log(self.objective(layouts))
        best = (dict(configs), dict(layouts), value)
        temperature = self.temperature
        for _ in range(self.iterations):
            moved = self._move(rng, by_name, configs, layouts)
            if moved is not None:
                trial_configs, trial = moved
                new = math.log(self.objective(trial))
                if new >= value or rng.random() < math.exp((new - value) / temperature):
                    configs, layouts, value = trial_configs, trial, new
                    if value > best[2]:
                        best = (dict(configs), dict(layouts), value)
            temperature *= self.cooling
        return best[0], best[1], math.exp(best[2])

    def _move(self, rng, by_name, configs, layouts):
        """Another candidate for one random application; if it does not fit, one
        other application is moved out of its way to a candidate that fits
        (the paper's "adjusting the other applications affected")."""
        app = rng.choice(self.applications)
        config = rng.choice(app.candidates)
        layout = _layout(config, by_name, self._free(layouts, app.name), rng)
        if layout is not None:
            return {**configs, app.name: config}, {**layouts, app.name: layout}
        others = [a for a in self.applications if a.name != app.name]
        if not others:
            return None
        other = rng.choice(others)
        rest = {k: v for k, v in layouts.items() if k not in (app.name, other.name)}
        layout = _layout(config, by_name, self._free(rest), rng)
        if layout is None:
            return None
        rest[app.name] = layout
        options = list(other.candidates)
        rng.shuffle(options)
        for alternative in options:
            placed = _layout(alternative, by_name, self._free(rest), rng)
            if placed is not None:
                rest[other.name] = placed
                return {**configs, app.name: config, other.name: alternative}, rest
        return None

    def exhaustive(self) -> float:
        """The best objective over every candidate and every choice of nodes.

        Nodes of one type holding the same applications with the same VMs
        are interchangeable: of the layouts that differ only by such a
        swap, one is searched (the objective cannot tell them apart), which
        makes clusters of a few nodes a type searchable.
        """
        by_name = {t.name: t for t in self.types}
        best = 0.0

        def residents(layouts: dict[str, Layout]) -> dict[tuple[str, int], tuple]:
            found: dict[tuple[str, int], list] = {}
            for app, layout in layouts.items():
                for node, vms in layout.items():
                    found.setdefault(node, []).append((app, vms))
            return {node: tuple(sorted(apps)) for node, apps in found.items()}

        def layouts_of(config: Configuration, free, held):
            # Every assignment of the blocks' node loads to distinct nodes
            # with room, one per class of interchangeable choices.
            slots = config.loads({t.name: t.cores for t in self.types})
            seen: set[tuple] = set()

            def place(index: int, layout: Layout):
                if index == len(slots):
                    signature = tuple(
                        sorted((node[0], held.get(node, ()), vms) for node, vms in layout.items())
                    )
                    if signature not in seen:
                        seen.add(signature)
                        yield dict(layout)
                    return
                name, needs = slots[index]
                nodes = range(by_name[name].nodes)
                for chosen in itertools.permutations(nodes, len(needs)):
                    if all(free[(name, n)] >= need for n, need in zip(chosen, needs, strict=True)):
                        extra = {(name, n): need for n, need in zip(chosen, needs, strict=True)}
                        yield from place(index + 1, {**layout, **extra})

            yield from place(0, {})

        def search(index: int, layouts: dict[str, Layout]):
            nonlocal best
            if index == len(self.applications):
                best = max(best, self.objective(layouts))
                return
            app = self.applications[index]
            free = self._free(layouts)
            held = residents(layouts)
            for config in app.candidates:
                for layout in layouts_of(config, free, held):
                    search(index + 1, {**layouts, app.name: layout})

        search(0, {})
        return best


def model_estimator(model, profiles: dict) -> Estimator:
    """Run times from a runtime model: the slowest node, its co-runners counted."""
    from hpc_nova_scheduler.interference.base import Tenant

    def estimate(app: str, layout: Layout, layouts: dict[str, Layout]) -> float:
        hosts = []
        for node, vms in layout.items():
            tenants = [Tenant.of(profiles[app], vms, node[0])]
            tenants += [
                Tenant.of(profiles[other], theirs[node], node[0])
                for other, theirs in layouts.items()
                if other != app and node in theirs
            ]
            hosts.append(tenants)
        return max(found[0] for found in model.runtimes(hosts, first_only=True))

    return estimate


def worst_alone(
    types: Sequence[NodeType], application: ClusterApplication, estimate: Estimator
) -> float:
    """The application's slowest run time alone among its candidates."""
    by_name = {t.name: t for t in types}
    empty = {(t.name, n): t.cores for t in types for n in range(t.nodes)}
    worst = 0.0
    for config in application.candidates:
        layout = _layout(config, by_name, empty, random.Random(0))
        if layout is not None:
            worst = max(worst, estimate(application.name, layout, {application.name: layout}))
    if worst <= 0:
        raise ValueError(f"no candidate configuration of {application.name} fits the cluster")
    return worst
