"""The cloud's domains as a tree, and the problems of its tags."""

from __future__ import annotations

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.topology import tree
from hpc_nova_scheduler.topology.tree import Cloud, HostCores

LEVELS = ("block", "rack")


def tags(block: str | None, rack: str | None) -> dict[str, frozenset[str]]:
    found = {}
    if block:
        found["hpc:block"] = frozenset({block})
    if rack:
        found["hpc:rack"] = frozenset({rack})
    return found


hosts = st.dictionaries(
    st.from_regex(r"n[0-9]{1,3}", fullmatch=True),
    st.tuples(
        st.sampled_from([None, "b1", "b2"]),
        st.sampled_from([None, "r1", "r2", "r3"]),
        st.integers(0, 16),
    ),
    max_size=20,
)


class TestTree(testtools.TestCase):
    @given(hosts)
    def test_every_domain_sums_its_hosts(self, layout) -> None:
        cloud = Cloud(
            {name: HostCores(16.0, float(free)) for name, (_, _, free) in layout.items()},
            {name: tags(block, rack) for name, (block, rack, _) in layout.items()},
        )
        root = tree.tree(cloud, LEVELS)
        self.assertEqual(len(layout), root.hosts)
        leaves = [node.name for _, node in root.walk() if node.level == "host"]
        self.assertEqual(sorted(layout), sorted(leaves))
        for _, node in root.walk():
            if node.children:
                self.assertEqual(node.hosts, sum(child.hosts for child in node.children))
                self.assertEqual(node.free, sum(child.free for child in node.children))
                self.assertEqual(node.total, sum(child.total for child in node.children))

    def test_a_rack_in_two_blocks_is_a_problem_naming_its_hosts(self) -> None:
        cloud = Cloud(
            {name: HostCores(8.0, 8.0) for name in ("n1", "n2")},
            {"n1": tags("b1", "r1"), "n2": tags("b2", "r1")},
        )
        (problem,) = tree.problems(cloud, LEVELS)
        self.assertEqual(
            "rack r1: hosts sit in 2 blocks (block b1: n1; block b2: n2) (n1, n2)", str(problem)
        )
        self.assertEqual([], tree.problems(cloud, ("rack",)))
