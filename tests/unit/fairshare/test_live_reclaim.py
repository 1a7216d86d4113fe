"""The reclaim decision over the plugin database, on SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import datetime

from oslo_utils import timeutils

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.db import migration
from hpc_nova_scheduler.fairshare import live_reclaim, platforms
from tests import db_backends

#: Two platforms of two 8-core hosts each; racks r1 (a0, i0) and r2 (a1, i1).
NODES = [platforms.Node(f"a{i}", f"a{i}", 8) for i in range(2)] + [
    platforms.Node(f"i{i}", f"i{i}", 8) for i in range(2)
]
TAGS = {f"a{i}": {"hpc:cpu_group": frozenset({"amd"})} for i in range(2)} | {
    f"i{i}": {"hpc:cpu_group": frozenset({"intel"})} for i in range(2)
}
RACK = {"a0": "r1", "i0": "r1", "a1": "r2", "i1": "r2"}


def rack_of(key: str) -> dict[str, str]:
    return {"rack": RACK[key.split("/", 1)[0]]}


class LiveReclaimTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)
        self.cloud = platforms.build_cloud(NODES, TAGS)
        self.now = timeutils.utcnow()
        self.placed = 0
        for project in ("pa", "pb"):
            self.database.set_share(project, 1.0)

    def generation(self, allocation) -> db_api.Generation:
        self.database.write_generation(
            "pa-rr",
            allocation,
            {
                "templates": {},
                "affinity": {"pa": {"amd": 2.0, "intel": 1.0}, "pb": {"amd": 1.0, "intel": 2.0}},
                "cloud": platforms.cloud_as_json(self.cloud),
            },
        )
        return self.database.latest_generation()

    def place(self, uuid, project, host, cores, loan=None) -> None:
        claim = db_api.Claim(
            claim_id=f"c-{uuid}",
            instance_uuid=uuid,
            application_id=uuid,
            host=host,
            nodename=host,
            app_class=AppClass.ASYNC_HPC,
            cache_score=0.0,
            vms=1,
            project_id=project,
            cores=cores,
            loan=loan,
            loan_platform=self.cloud.platform_of[host] if loan else None,
            loan_over=cores if loan else None,
        )
        self.assertIsNone(self.database.claim([claim], lambda view: None, ttl=60))
        # A second apart: MariaDB keeps whole seconds, and youngest-first needs an order.
        self.placed += 1
        timeutils.set_time_override(self.now + datetime.timedelta(seconds=self.placed))
        self.addCleanup(timeutils.clear_time_override)
        vm = db_api.RunningRecord(
            uuid, host, AppClass.ASYNC_HPC, 1.0, nodename=host, project_id=project, cores=cores
        )
        self.database.record_placed(vm, f"c-{uuid}")

    def fill_amd_with_pb(self) -> None:
        # pb is entitled to nothing on amd and borrowed all of it.
        for n, host in enumerate(("a0", "a0", "a1", "a1")):
            self.place(f"b{n}", "pb", host, 4, db_api.BORROWED)

    def test_declared_demand_takes_back_borrowed_cores_on_its_best_platform(self) -> None:
        self.fill_amd_with_pb()
        generation = self.generation({"pa": {"amd": 8}, "pb": {"intel": 16}})
        self.database.set_demand("pa", 8, "blast")
        found = live_reclaim.plan(self.database, generation, 300, self.now)
        self.assertEqual(["b3", "b2"], [r.victim.instance_uuid for r in found.reclaims])
        self.assertEqual({"pa"}, {r.beneficiary for r in found.reclaims})
        amd = next(p for p in found.platforms if p.state.name == "amd")
        self.assertEqual((16, 0, {"pb": 16}), (amd.state.capacity, amd.state.idle, amd.state.use))
        self.assertEqual(
            [], live_reclaim.plan(self.database, generation, 300, self.now, only="intel").reclaims
        )

    def test_a_refusal_is_unmet_demand_until_a_placement_meets_it(self) -> None:
        self.fill_amd_with_pb()
        generation = self.generation({"pa": {"amd": 8}, "pb": {"intel": 16}})
        self.database.record_refusal("pa", "blast", 4)
        found = live_reclaim.plan(self.database, generation, 300, self.now)
        self.assertEqual(["b3"], [r.victim.instance_uuid for r in found.reclaims])
        # Too old to count: outside the last interval.
        later = self.now + datetime.timedelta(seconds=400)
        self.assertEqual([], live_reclaim.plan(self.database, generation, 300, later).reclaims)

    def test_a_required_rack_is_freed_inside_one_rack(self) -> None:
        self.fill_amd_with_pb()
        generation = self.generation({"pa": {"amd": 8}, "pb": {"intel": 16}})
        self.database.record_refusal("pa", "blast", 8, topology_level="rack")
        found = live_reclaim.plan(self.database, generation, 300, self.now, domains_of=rack_of)
        victims = {r.victim.instance_uuid for r in found.reclaims}
        self.assertIn(victims, ({"b0", "b1"}, {"b2", "b3"}))
        self.assertIn("in rack", found.reclaims[0].reason)

    def test_reclaims_under_way_and_stopped_victims_take_no_second_victim(self) -> None:
        self.fill_amd_with_pb()
        generation = self.generation({"pa": {"amd": 8}, "pb": {"intel": 16}})
        self.database.set_demand("pa", 4, "blast")
        first = live_reclaim.plan(self.database, generation, 300, self.now)
        (written,) = self.database.request_reclaims(
            live_reclaim.new_reclaims(first.reclaims), "stop", 60, self.now
        )
        self.assertEqual([], live_reclaim.plan(self.database, generation, 300, self.now).reclaims)
        # A failed one still covers its demand while its victim runs.
        self.database.update_reclaim(written.id, state=loans_db.FAILED, error="500")
        self.assertEqual([], live_reclaim.plan(self.database, generation, 300, self.now).reclaims)
        # Stopped, it counts no more: its cores are idle for pa.
        self.database.update_reclaim(written.id, state=loans_db.ACTED)
        self.database.set_stopped(written.instance_uuid, True)
        again = live_reclaim.plan(self.database, generation, 300, self.now)
        self.assertEqual([], again.reclaims)
        amd = next(p for p in again.platforms if p.state.name == "amd")
        self.assertEqual(4, amd.state.idle)

    def test_preemptible_vms_count_for_the_platform_not_the_project(self) -> None:
        self.place("p0", "pa", "a0", 8, db_api.PREEMPTIBLE)
        self.place("b0", "pb", "a1", 8, db_api.BORROWED)
        generation = self.generation({"pa": {"amd": 8}, "pb": {"intel": 16}})
        self.database.set_demand("pa", 16, "blast")
        found = live_reclaim.plan(self.database, generation, 300, self.now)
        amd = next(p for p in found.platforms if p.state.name == "amd")
        self.assertEqual(({"pb": 8}, 8), (amd.state.use, amd.state.preemptible))
        # pa's own preemptible VM goes first: it never counted as pa's.
        self.assertEqual(["p0"], [r.victim.instance_uuid for r in found.reclaims])


db_backends.for_each_backend(globals(), LiveReclaimTests, "TestLiveReclaim")
