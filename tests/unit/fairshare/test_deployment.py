"""The numpy layout of :class:`.deployment.Deployment` against the rules it implements.

``stable_layout`` and ``stable_cores`` state the rules one node at a time;
the deployment lays a plan over all of a platform's nodes at once, through
node patterns. Any run of plans must give every core the same owner and
run time both ways.
"""

from __future__ import annotations

import collections

import numpy as np
import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core.sharing import NodeTemplate, Platform
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.deployment import (
    Deployment,
    NodeKey,
    Workload,
    stable_cores,
    stable_layout,
)

PLATFORMS = [Platform("p", 6, 4), Platform("q", 3, 2)]
USERS = ("A", "B", "C")
#: Run times that differ by platform and co-runners, so that a changed
#: template is seen in the run times too.
TIMES = CombinationTable(
    {(u, p.name): 10.0 * (i + 1) + j for i, u in enumerate(USERS) for j, p in enumerate(PLATFORMS)},
    {
        ("A", "p", frozenset({"A", "B"})): 17.0,
        ("B", "p", frozenset({"A", "B"})): 23.0,
        ("C", "q", frozenset({"A", "C"})): 41.0,
    },
)
#: Node templates that fit each platform: a 4-core node and a 2-core one.
KEYS = {
    "p": [
        (("A", 4),),
        (("B", 4),),
        (("A", 2), ("B", 2)),
        (("B", 2), ("A", 2)),
        (("A", 1), ("B", 1), ("C", 2)),
        (("C", 3),),
    ],
    "q": [(("A", 2),), (("C", 2),), (("A", 1), ("C", 1)), (("B", 1),)],
}


@st.composite
def plans(draw: st.DrawFn) -> list[dict[str, list[NodeTemplate]]]:
    """A few plans: per platform, templates (a key may come twice) within its nodes."""
    found = []
    for _ in range(draw(st.integers(1, 5))):
        plan = {}
        for platform in PLATFORMS:
            left = platform.nodes
            templates = []
            for key in draw(st.lists(st.sampled_from(KEYS[platform.name]), max_size=4)):
                nodes = draw(st.integers(0, left))
                left -= nodes
                templates.append(NodeTemplate(platform.name, key, nodes))
            plan[platform.name] = templates
        found.append(plan)
    return found


class Reference:
    """The rules node by node: keys, then each changed node's cores."""

    def __init__(self, workload: Workload) -> None:
        self.index = {u: i for i, u in enumerate(workload.users)}
        self.keys: list[list[NodeKey]] = [[None] * p.nodes for p in PLATFORMS]
        self.owner = [[-1] * p.cores for p in PLATFORMS]
        self.runtime = [[0.0] * p.cores for p in PLATFORMS]

    def apply(self, plan: dict[str, list[NodeTemplate]]) -> set[tuple[int, int]]:
        changed = set()
        for p, platform in enumerate(PLATFORMS):
            wanted = [(t.slots, t.nodes) for t in plan[platform.name] if t.nodes]
            new = stable_layout(self.keys[p], wanted)
            cpn = platform.cores_per_node
            for node, key in enumerate(new):
                if key == self.keys[p][node]:
                    continue
                changed.add((p, node))
                cores = slice(node * cpn, (node + 1) * cpn)
                self.owner[p][cores], self.runtime[p][cores] = stable_cores(
                    self.owner[p][cores], self.slots(platform, key)
                )
            self.keys[p] = new
        return changed

    def slots(self, platform: Platform, key: NodeKey) -> list[tuple[int, int, float]]:
        apps = frozenset(u for u, _ in key or ())
        return [(self.index[u], c, TIMES.runtime(u, platform.name, apps)) for u, c in key or ()]


class TestLayout(testtools.TestCase):
    @settings(max_examples=200, deadline=None)
    @given(plans())
    def test_every_core_as_the_rules_say(self, runs) -> None:
        workload = Workload.build(PLATFORMS, dict.fromkeys(USERS, 10), TIMES)
        lists = Deployment(PLATFORMS, workload, TIMES)
        arrays = Deployment(PLATFORMS, workload, TIMES, lists=False)
        reference = Reference(workload)
        for plan in runs:
            expected = reference.apply(plan)
            self.assertEqual(expected, set(lists.apply(plan)))
            self.assertEqual(expected, set(arrays.apply(plan)))
            owner = [u for block in reference.owner for u in block]
            runtime = [r for block in reference.runtime for r in block]
            self.assertEqual(owner, lists.owner)
            self.assertEqual(runtime, lists.runtime)
            for deployment in (lists, arrays):
                np.testing.assert_array_equal(owner, deployment.owners)
                np.testing.assert_array_equal(runtime, deployment.runtimes)
                for p in range(len(PLATFORMS)):
                    counts = collections.Counter(reference.keys[p])
                    counts.pop(None, None)
                    self.assertEqual(list(counts.items()), deployment.laid(p))

    def test_without_lists_only_the_arrays(self) -> None:
        workload = Workload.build(PLATFORMS, {"A": 1}, TIMES)
        deployment = Deployment(PLATFORMS, workload, TIMES, lists=False)
        deployment.apply({"p": [NodeTemplate("p", (("A", 4),), 2)]})
        self.assertEqual(([], []), (deployment.owner, deployment.runtime))
        self.assertEqual(8, int((deployment.owners == 0).sum()))
