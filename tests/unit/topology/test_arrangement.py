"""BestFit, as Algorithm 1 reaches it through core's DomainOrder protocol."""

from __future__ import annotations

import numpy as np
import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.core import domains
from hpc_nova_scheduler.topology import arrangement


class TestDomainOrder(testtools.TestCase):
    def test_algorithm_1_finds_bestfit_by_its_entry_point(self) -> None:
        self.assertIsInstance(domains.domain_order(), arrangement.BestFit)
        self.assertIs(domains.domain_order(), domains.domain_order())

    @given(
        st.lists(
            st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 4)),
            min_size=1,
            max_size=30,
        ),
        st.integers(0, 40),
    )
    def test_an_order_is_a_permutation_that_fills_the_tightest_rack_first(
        self, hosts, need
    ) -> None:
        codes = np.array([[b for b, _, _ in hosts], [b * 4 + r for b, r, _ in hosts]])
        room = np.array([float(c) for _, _, c in hosts])
        own = np.zeros(len(hosts), dtype=bool)
        idx = np.arange(len(hosts))
        order = domains.domain_order().arrange(codes, room, own, idx, need)
        self.assertEqual(sorted(idx.tolist()), sorted(order.tolist()))
        _, rack_rooms, _ = domains.domain_rooms(codes[1], room, own, idx)
        fitting = rack_rooms[rack_rooms >= need]
        if need and fitting.size:
            # The first host sits in a rack that holds the request, the tightest such.
            first_rack = codes[1][order[0]]
            racks, rooms, _ = domains.domain_rooms(codes[1], room, own, idx)
            self.assertEqual(fitting.min(), rooms[np.searchsorted(racks, first_rack)])
