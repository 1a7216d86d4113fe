"""The agent's reclaims on every backend: requested, marked, acted on after the grace.

Nova's API is a small stand-in here (:class:`Compute`), to make it fail on
purpose; the functional tests (``tests/functional/test_reclaim.py``) act
through the real one in Nova's harness.
"""

from __future__ import annotations

import datetime

from openstack import exceptions
from oslo_config import fixture as config_fixture
from oslo_utils import timeutils

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler.agent import reclaim as reclaim_mod
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.db import migration
from hpc_nova_scheduler.fairshare import platforms
from hpc_nova_scheduler.scheduler import fairness
from tests import db_backends
from tests.unit.fairshare.test_live_reclaim import NODES, TAGS


class Server:
    def __init__(self, status: str) -> None:
        self.status = status


class Compute:
    """The calls the reclaimer makes, on servers by id; ``failing`` calls raise."""

    def __init__(self) -> None:
        self.servers: dict[str, Server] = {}
        self.metadata: dict[str, dict[str, str]] = {}
        self.calls: list[tuple[str, str]] = []
        self.failing: set[str] = set()

    def _call(self, name: str, server: str) -> Server:
        self.calls.append((name, server))
        if name in self.failing:
            raise exceptions.HttpException(message=f"{name} refused", http_status=409)
        if server not in self.servers:
            raise exceptions.NotFoundException(message=f"server {server} not found")
        return self.servers[server]

    def get_server(self, server):
        return self._call("get", server)

    def set_server_metadata(self, server, **metadata):
        self._call("metadata", server)
        self.metadata.setdefault(server, {}).update(metadata)

    def stop_server(self, server):
        self._call("stop", server).status = "SHUTOFF"

    def shelve_server(self, server):
        self._call("shelve", server).status = "SHELVED"

    def shelve_offload_server(self, server):
        self._call("offload", server).status = "SHELVED_OFFLOADED"

    def delete_server(self, server, ignore_missing=True):
        self._call("delete", server)
        del self.servers[server]


class Connection:
    def __init__(self) -> None:
        self.compute = Compute()

    def close(self) -> None:
        pass


class ReclaimerTests:
    def setUp(self) -> None:
        super().setUp()
        migration.upgrade(self.database.engine)
        self.config = self.useFixture(config_fixture.Config(hpc_conf.CONF))
        self.config.config(
            fairness_policy="pa-rr",
            fairshare_interval=300,
            fairshare_enforcement="borrow",
            fairshare_reclaim="stop",
            fairshare_reclaim_grace=60,
            group="hpc_scheduler",
        )
        self.cloud = platforms.build_cloud(NODES, TAGS)
        self.now = timeutils.utcnow().replace(microsecond=0)
        self.connection = Connection()
        self.reclaimer = reclaim_mod.Reclaimer(
            lambda: self.database, lambda: TAGS, "me", lambda: self.connection
        )
        self.database.set_share("pa", 1.0)
        self.database.set_share("pb", 1.0)
        for n, host in enumerate(("a0", "a0", "a1", "a1")):
            self.place(f"b{n}", "pb", host)
        self.database.write_generation(
            "pa-rr",
            {"pa": {"amd": 8}, "pb": {"intel": 16}},
            {"templates": {}, "affinity": {}, "cloud": platforms.cloud_as_json(self.cloud)},
        )
        self.database.take_lease("me", 600)

    def place(self, uuid: str, project: str, host: str) -> None:
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
            cores=4,
            loan=db_api.BORROWED,
            loan_platform="amd",
            loan_over=4,
        )
        self.database.claim([claim], lambda view: None, ttl=60)
        vm = db_api.RunningRecord(
            uuid, host, AppClass.ASYNC_HPC, 1.0, nodename=host, project_id=project, cores=4
        )
        self.database.record_placed(vm, f"c-{uuid}")
        self.connection.compute.servers[uuid] = Server("ACTIVE")

    def options(self) -> hpc_conf.FairnessSettings:
        return fairness.settings()

    def at(self, seconds: float) -> datetime.datetime:
        return self.now + datetime.timedelta(seconds=seconds)

    def request(self) -> loans_db.ReclaimRecord:
        self.database.set_demand("pa", 4, "blast")
        (record,) = self.reclaimer.request(self.options(), self.now)
        return record

    def test_a_victim_is_marked_then_stopped_after_the_grace(self) -> None:
        record = self.request()
        victim = record.instance_uuid
        value = self.connection.compute.metadata[victim][reclaim_mod.METADATA_KEY]
        self.assertTrue(value.startswith(f"{self.at(60):%Y-%m-%dT%H:%M:%SZ}; stop; pa has 0"))
        self.assertEqual([], self.reclaimer.act(self.options(), self.at(30)))
        self.assertEqual(
            [(record.id, loans_db.ACTED)], self.reclaimer.act(self.options(), self.at(61))
        )
        self.assertEqual("SHUTOFF", self.connection.compute.servers[victim].status)
        self.assertTrue(next(x for x in self.database.loans() if x.instance_uuid == victim).stopped)
        # Its cores count no more; no second victim for the same demand.
        self.assertEqual(12, sum(self.database.cores_in_use()["pb"].values()))
        self.assertEqual([], self.reclaimer.request(self.options(), self.at(62)))
        # Its tenant starts it again: it counts again.
        self.connection.compute.servers[victim].status = "ACTIVE"
        self.assertEqual(
            [(record.id, loans_db.RESTARTED)], self.reclaimer.act(self.options(), self.at(70))
        )
        self.assertFalse(
            next(x for x in self.database.loans() if x.instance_uuid == victim).stopped
        )

    def test_a_victim_still_building_is_marked_once_nova_accepts_it(self) -> None:
        self.connection.compute.failing.add("metadata")
        record = self.request()
        self.assertIsNone(self.database.reclaims()[0].marked_at)
        self.assertEqual([], self.reclaimer.act(self.options(), self.at(10)))
        self.assertIsNone(self.database.reclaims()[0].marked_at)
        self.connection.compute.failing.discard("metadata")
        self.assertEqual([], self.reclaimer.act(self.options(), self.at(20)))
        (marked,) = self.database.reclaims()
        self.assertEqual(self.at(20), marked.marked_at)
        self.assertIn(
            reclaim_mod.METADATA_KEY, self.connection.compute.metadata[record.instance_uuid]
        )
        # Marked, it is not marked again at the next look.
        calls = len(self.connection.compute.calls)
        self.reclaimer.act(self.options(), self.at(30))
        self.assertEqual(calls, len(self.connection.compute.calls))

    def test_a_failing_call_is_retried_then_reported_and_takes_no_second_victim(self) -> None:
        self.config.config(fairshare_reclaim_attempts=3, group="hpc_scheduler")
        self.connection.compute.failing.add("stop")
        record = self.request()
        self.assertEqual([], self.reclaimer.act(self.options(), self.at(61)))
        self.assertEqual([], self.reclaimer.act(self.options(), self.at(66)))
        self.assertEqual(
            [(record.id, loans_db.FAILED)], self.reclaimer.act(self.options(), self.at(71))
        )
        (failed,) = self.database.reclaims([loans_db.FAILED])
        self.assertEqual(3, failed.attempts)
        self.assertIn("stop refused", failed.error)
        self.assertEqual(3, [c[0] for c in self.connection.compute.calls].count("stop"))
        self.assertEqual([], self.reclaimer.request(self.options(), self.at(80)))

    def test_a_victim_gone_or_back_within_its_entitlement_is_spared(self) -> None:
        record = self.request()
        del self.connection.compute.servers[record.instance_uuid]
        self.assertEqual(
            [(record.id, loans_db.CANCELLED)], self.reclaimer.act(self.options(), self.at(61))
        )
        # A new generation entitles pb to amd: its VMs are no longer beyond it.
        self.database.write_generation(
            "pa-rr",
            {"pa": {"amd": 0}, "pb": {"amd": 16}},
            {"templates": {}, "affinity": {}, "cloud": platforms.cloud_as_json(self.cloud)},
        )
        self.database.add_loan(
            loans_db.LoanRecord(
                "b0", "pb", "amd", 4, db_api.BORROWED, self.now, 4, False, "a0", "a0"
            )
        )
        (second,) = self.database.request_reclaims(
            [loans_db.NewReclaim("b0", "pb", "amd", 4, db_api.BORROWED, "pa", "test")],
            "stop",
            0,
            self.now,
        )
        self.assertEqual(
            [(second.id, loans_db.CANCELLED)], self.reclaimer.act(self.options(), self.at(1))
        )
        (cancelled,) = [r for r in self.database.reclaims() if r.id == second.id]
        self.assertIn("no longer 4 cores beyond its entitlement", cancelled.error)

    def test_shelve_offloads_and_delete_deletes(self) -> None:
        self.config.config(fairshare_reclaim="shelve", group="hpc_scheduler")
        record = self.request()
        self.reclaimer.act(self.options(), self.at(61))
        compute = self.connection.compute
        self.assertEqual("SHELVED", compute.servers[record.instance_uuid].status)
        # Followed: offloaded at the next look.
        self.reclaimer.act(self.options(), self.at(66))
        self.assertEqual("SHELVED_OFFLOADED", compute.servers[record.instance_uuid].status)
        self.config.config(fairshare_reclaim="delete", group="hpc_scheduler")
        self.database.set_demand("pa", 8, "blast")
        (deleted,) = self.reclaimer.request(self.options(), self.at(70))
        self.assertEqual("delete", deleted.mode)
        self.reclaimer.act(self.options(), self.at(131))
        self.assertNotIn(deleted.instance_uuid, compute.servers)

    def test_only_the_lease_holder_acts(self) -> None:
        self.request()
        self.database.release_lease("me")
        self.database.take_lease("another", 600)
        self.assertEqual([], self.reclaimer.act(self.options(), self.at(61)))
        self.assertNotIn("stop", [c[0] for c in self.connection.compute.calls])

    def test_off_requests_nothing(self) -> None:
        self.config.config(fairshare_reclaim="off", group="hpc_scheduler")
        self.database.set_demand("pa", 4, "blast")
        self.assertEqual([], self.reclaimer.request(self.options(), self.now))
        self.assertEqual([], self.database.reclaims())


db_backends.for_each_backend(globals(), ReclaimerTests, "TestReclaimer")
