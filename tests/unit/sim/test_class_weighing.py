"""Nova's weighers per point of free RAM and cores, against weighing every
host each VM as plan() does."""

from __future__ import annotations

import fixtures
import numpy as np
import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.core import algorithm
from hpc_nova_scheduler.core.algorithm import PACKING_NOVA_WEIGHERS, Policy
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.criteria import Thresholds
from hpc_nova_scheduler.core.profile import AppClass, ApplicationProfile
from hpc_nova_scheduler.core.state import ClusterState
from hpc_nova_scheduler.sim import class_weighing
from hpc_nova_scheduler.sim.state_classes import StateClasses

DEMAND = (1.0, 256.0, 0.0)


def every_host_each_vm(hosts: list[tuple[int, list[float]]], count: int) -> list[int]:
    """The reference: every VM weighs every candidate (one with a core and
    the RAM left) with the planner's normalisation; ties to the lower row."""
    free = {row: list(f) for row, f in hosts}
    chosen = []
    for _ in range(count):
        rows = sorted(r for r, f in free.items() if f[0] >= DEMAND[0] and f[1] >= DEMAND[1])
        if not rows:
            break
        values = np.array([free[r] for r in rows])
        weight = algorithm._normalised(values[:, 1]) + algorithm._normalised(values[:, 0])
        best = rows[int(np.lexsort((np.array(rows), -weight))[0])]
        free[best] = [f - d for f, d in zip(free[best], DEMAND, strict=True)]
        chosen.append(best)
    return chosen


def place(load: list) -> bool:
    load[0] = [f - d for f, d in zip(load[0], DEMAND, strict=True)]
    return load[0][0] >= DEMAND[0] and load[0][1] >= DEMAND[1]


class Short(Exception):
    pass


class TestWeighAndTake(testtools.TestCase):
    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.integers(1, 4),
                st.sampled_from([256.0, 512.0, 1024.0, 2048.0, 4096.0]),
                st.integers(1, 6),
            ),
            min_size=1,
            max_size=8,
        ),
        st.integers(1, 40),
        st.randoms(use_true_random=False),
    )
    def test_the_same_hosts_as_weighing_every_host(self, classes, count, random) -> None:
        """Classes of hosts (cores, RAM free; how many) with their rows
        shuffled among them: the same hosts in the same order, or both
        short at the same VM."""
        sizes = [n for _, _, n in classes]
        rows = list(range(sum(sizes)))
        random.shuffle(rows)
        members, hosts = [], []
        for cores, ram, n in classes:
            mine, rows = sorted(rows[:n]), rows[n:]
            members.append(([float(cores), ram, 0.0], 0.0, False, True, mine))
            hosts.extend((row, [float(cores), ram, 0.0]) for row in mine)
        expected = every_host_each_vm(hosts, count)

        def short(placed: int) -> Exception:
            return Short(placed)

        weighed = class_weighing.WeighedHosts(members)
        if len(expected) < count:
            error = self.assertRaises(
                Short, class_weighing.weigh_and_take, weighed, count, place, short
            )
            self.assertEqual(len(expected), error.args[0])
        else:
            segments = class_weighing.weigh_and_take(weighed, count, place, short)
            self.assertEqual({1}, {vms for _, vms in segments})
            self.assertEqual(expected, [row for rows, _ in segments for row in rows])

    def test_a_wide_job_on_a_busy_cloud_weighs_points_not_hosts(self) -> None:
        """Hosts made different by earlier jobs (each its own cache total,
        so its own class): a job of 90 VMs is placed as plan() places it,
        in far fewer rounds of weighing than VMs, hosts that weigh alike
        taken together."""
        policy = Policy.nova_like(PACKING_NOVA_WEIGHERS)
        cloud = ClusterState()
        for row in range(48):
            cloud.add_host(f"h{row:03d}", Resources(4, 8192, 0), rack=f"r{row // 16}")
        thresholds = Thresholds(200, 60)
        classes = StateClasses(cloud.columns(), policy, thresholds)
        for row in range(40):
            small = algorithm.PlacementRequest(
                ApplicationProfile(AppClass.ASYNC_HPC, 1.0 + row / 2, f"s{row}"),
                Resources(1, 1024 * (1 + row % 3), 0),
                1 + row % 3,
                f"small{row}",
            )
            cloud.apply(
                algorithm.Plan((cloud.columns().names[row],) * small.count, None, ()), small
            )
            classes.apply([row] * small.count, small)
        wide = algorithm.PlacementRequest(
            ApplicationProfile(AppClass.SYNC_HPC, 5.0, "wide"), Resources(1, 512, 0), 90, "wide"
        )
        expected = algorithm.plan(wide, cloud.columns(), thresholds, policy=policy).hosts
        rounds = []
        original = class_weighing.WeighedHosts.weights

        def counted(self):
            rounds.append(1)
            return original(self)

        self.useFixture(
            fixtures.MonkeyPatch(f"{class_weighing.__name__}.WeighedHosts.weights", counted)
        )
        segments = classes.plan_segments(wide)
        rows = [row for hosts, vms in segments for row in hosts for _ in range(vms)]
        self.assertEqual(expected, tuple(classes.names[r] for r in rows))
        self.assertLess(len(rounds), wide.count / 3)
        # Hosts that weigh alike were taken together.
        self.assertLess(len(segments), wide.count / 3, segments)
