"""An outage of the plugin database under ``degrade``, in real Nova.

The scheduler places from Nova's data and the fallback copy: stored
profiles, the interference table and every dedicated host still count;
the copy's placements reach the database once it answers again.
"""

from __future__ import annotations

import uuid

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord
from hpc_nova_scheduler.demo.fake_driver import Shape
from hpc_nova_scheduler.scheduler.fallback import FallbackStore
from tests.functional import base

UNREACHABLE = "mysql+pymysql://nobody:x@127.0.0.1:1/none?connect_timeout=1"


class TestOutage(base.HpcTestCase):
    HOSTS = {"n1": Shape(), "n2": Shape(), "n3": Shape()}
    RACKS = {"r1": ["n1", "n2", "n3"]}
    CPU_GROUPS = {"g": ["n1", "n2", "n3"]}

    def go_down(self, policy: str = "degrade") -> None:
        # What every sweep does before the outage.
        FallbackStore().refresh(self.database)
        self.flags(connection=UNREACHABLE, database_failure_policy=policy, group="hpc_scheduler")

    def unknown_consumer_on(self, host: str) -> None:
        """Resources Placement holds for a VM that no compute has reported
        yet, as one placed just before the outage by another worker."""
        provider = self._get_provider_uuid_by_host(host)
        self.placement.put(
            f"/allocations/{uuid.uuid4()}",
            {
                "allocations": {provider: {"resources": {"VCPU": 1, "MEMORY_MB": 512}}},
                "project_id": self.api.project_id,
                "user_id": "someone",
                "consumer_generation": None,
            },
            version="1.28",
        )

    def copy(self):
        return FallbackStore().database()

    def test_dedication_holds_and_the_database_gets_the_placements_back(self) -> None:
        async_hpc = self.hpc_flavor(app_class="AsyncHPC", cache_score="10")
        self.go_down()
        extreme = self.launch(self.hpc_flavor(app_class="ExtremeHPC", app_name="IS"))
        dedicated = self.hosts_of(extreme)
        self.assertEqual(1, len(dedicated))
        later = self.launch(async_hpc, 3, hints={"hpc_app_name": "EP"})
        self.assertEqual(3, sum(self.hosts_of(later).values()))
        self.assertFalse(set(self.hosts_of(later)) & set(dedicated), (dedicated, later))
        in_copy = {vm.instance_uuid: vm for vm in self.copy().list_running()}
        self.assertEqual("IS", in_copy[extreme[0]["id"]].app_name)
        self.assertEqual({"EP"}, {in_copy[s["id"]].app_name for s in later})
        self.assertEqual([], self.database.list_running())

        self.flags(connection=self.db_url, group="hpc_scheduler")
        self.launch(async_hpc, hints={"hpc_app_name": "EP"})
        rows = {vm.instance_uuid: vm for vm in self.database.list_running()}
        self.assertEqual("IS", rows[extreme[0]["id"]].app_name)
        self.assertEqual({"EP"}, {rows[s["id"]].app_name for s in later})
        self.assertEqual([], self.copy().list_running())

    def test_a_sweep_hands_over_and_refreshes_the_copy(self) -> None:
        self.go_down()
        (server,) = self.launch(self.hpc_flavor(app_class="SyncHPC"), hints={"hpc_app_name": "LU"})
        self.flags(connection=self.db_url, group="hpc_scheduler")
        self.database.import_profiles(
            [ProfileRecord(name="LU", app_class=AppClass.SYNC_HPC, cache_score=16.0)]
        )
        self.sweep()
        self.assertEqual(
            [(server["id"], "LU")],
            [(vm.instance_uuid, vm.app_name) for vm in self.database.list_running()],
        )
        self.assertEqual([], self.copy().list_running())
        self.assertEqual(["LU"], [p.name for p in self.copy().list_profiles()])

    def test_hosts_with_consumers_nobody_knows_are_kept_off(self) -> None:
        self.unknown_consumer_on("n1")
        self.go_down()
        sync = self.hpc_flavor(app_class="SyncHPC", cache_score="5")
        self.assertNotIn("n1", self.hosts_of(self.launch(sync, 3)))
        plain = self.hosts_of(self.launch(self.hpc_flavor(), 3))
        self.assertNotIn("n1", plain)

    def test_requests_left_to_nova_keep_off_unknown_consumers_under_reject(self) -> None:
        self.unknown_consumer_on("n2")
        self.go_down("reject")
        self.assert_refused(self.launch(self.hpc_flavor(app_class="SyncHPC")))
        self.assertNotIn("n2", self.hosts_of(self.launch(self.hpc_flavor(), 4)))


class TestOutageOnOneHost(base.HpcTestCase):
    HOSTS = {"n1": Shape()}

    def test_stored_profiles_and_harmful_pairs_still_count(self) -> None:
        self.database.import_interferences([InterferenceRecord("CG", "MG", 40.0, 30.0)])
        self.database.import_profiles(
            [ProfileRecord(name="FT", app_class=AppClass.EXTREME_HPC, cache_score=30.0)]
        )
        async_hpc = self.hpc_flavor(app_class="AsyncHPC", cache_score="10")
        # Named only by its hint, which Nova's request spec remembers.
        self.assertEqual(
            {"n1": 1}, self.hosts_of(self.launch(async_hpc, hints={"hpc_app_name": "CG"}))
        )
        FallbackStore().refresh(self.database)
        self.flags(connection=UNREACHABLE, database_failure_policy="degrade", group="hpc_scheduler")

        self.assert_refused(self.launch(async_hpc, hints={"hpc_app_name": "MG"}))
        # FT's stored profile makes it ExtremeHPC: it cannot join CG.
        self.assert_refused(self.launch(self.hpc_flavor(), hints={"hpc_app_name": "FT"}))
        self.assertEqual(
            {"n1": 1}, self.hosts_of(self.launch(async_hpc, hints={"hpc_app_name": "EP"}))
        )
