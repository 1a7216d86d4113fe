"""Co-runners, the interference table, server groups and failure handling in Nova."""

from __future__ import annotations

import fixtures
from nova.tests.functional.api import client

from hpc_nova_scheduler.core.records import InterferenceRecord
from hpc_nova_scheduler.demo.fake_driver import Shape
from tests.functional import base

UNREACHABLE = "mysql+pymysql://nobody:x@127.0.0.1:1/none?connect_timeout=1"


class TestInterferenceTable(base.HpcTestCase):
    HOSTS = {"n1": Shape(), "n2": Shape()}

    def test_harmful_pair_never_shares_a_host(self) -> None:
        self.database.import_interferences([InterferenceRecord("LU.C", "IS.B", 35.0, 2.0)])
        lu = self.hpc_flavor(app_class="AsyncHPC", app_name="LU.C")
        first = self.hosts_of(self.launch(lu))
        # Best fit would put the next VM next to the first; the table forbids it.
        is_b = self.hosts_of(
            self.launch(self.hpc_flavor(app_class="AsyncHPC"), hints={"hpc_app_name": "IS.B"})
        )
        self.assertFalse(set(first) & set(is_b), (first, is_b))
        # An application with no harmful record packs next to it.
        other = self.hosts_of(self.launch(self.hpc_flavor(app_class="AsyncHPC", app_name="EP.B")))
        self.assertEqual(set(first), set(other) - set(is_b) or set(first))

    def test_harmless_record_allows_sharing(self) -> None:
        self.database.import_interferences([InterferenceRecord("A", "B", 3.0, 2.0)])
        a = self.hosts_of(
            self.launch(self.hpc_flavor(ram=2048, app_class="AsyncHPC", app_name="A"))
        )
        b = self.hosts_of(
            self.launch(self.hpc_flavor(ram=2048, app_class="AsyncHPC", app_name="B"))
        )
        self.assertEqual(a, b)


class TestServerGroup(base.HpcTestCase):
    """The members of one server group are one application."""

    HOSTS = {"n1": Shape(), "n2": Shape(), "n3": Shape()}

    def test_group_members_share_their_dedicated_hosts(self) -> None:
        extreme = self.hpc_flavor(app_class="ExtremeHPC", app_name="IS.B")
        group = self.server_group("soft-affinity")
        first = self.hosts_of(self.launch(extreme, 2, group=group))
        second = self.hosts_of(self.launch(extreme, 2, group=group))
        self.assertEqual(first, second)
        stranger = self.hosts_of(self.launch(extreme, 2))
        self.assertFalse(set(stranger) & set(first))

    def test_group_stays_on_its_processor_group(self) -> None:
        sync = self.hpc_flavor(app_class="SyncHPC")
        group = self.server_group("soft-affinity")
        first = self.hosts_of(self.launch(sync, 3, group=group))
        rows = self.database.list_running()
        self.assertEqual({group}, {row.request_id for row in rows})
        second = self.hosts_of(self.launch(sync, 1, group=group))
        self.assertEqual(set(first), set(second))


class TestCoRunners(base.HpcTestCase):
    HOSTS = {"n1": Shape(), "n2": Shape()}
    HPC_FLAGS = {"sync_cache_threshold": 60.0}

    def test_placements_are_recorded(self) -> None:
        servers = self.launch(
            self.hpc_flavor(app_class="SyncHPC", cache_score=7, app_name="ChaNGa"), 2
        )
        rows = {row.instance_uuid: row for row in self.database.list_running()}
        self.assertEqual({s["id"] for s in servers}, set(rows))
        for server in servers:
            row = rows[server["id"]]
            self.assertEqual(
                (server["OS-EXT-SRV-ATTR:host"], "SyncHPC", 7.0, "ChaNGa"),
                (row.host, row.app_class.value, row.cache_score, row.app_name),
            )

    def test_vms_from_before_the_plugin_count(self) -> None:
        extreme = self.launch(self.hpc_flavor(app_class="ExtremeHPC"))
        dedicated = self.hosts_of(extreme)
        # As if the plugin had never seen it: only its flavor tells.
        self.database.forget_running([s["id"] for s in extreme])
        later = self.hosts_of(self.launch(self.hpc_flavor(), 3))
        self.assertFalse(set(later) & set(dedicated))
        recorded = {row.instance_uuid for row in self.database.list_running()}
        self.assertIn(extreme[0]["id"], recorded)

    def test_deleted_vms_stop_counting(self) -> None:
        heavy = self.hpc_flavor(app_class="SyncHPC", cache_score=25)
        first = self.launch(heavy, 4)
        self.assertEqual({"n1": 2, "n2": 2}, self.hosts_of(first))
        self.assert_refused(self.launch(heavy))
        for server in first:
            self._delete_server(server)
        self.assertEqual(1, sum(self.hosts_of(self.launch(heavy)).values()))
        live = {row.instance_uuid for row in self.database.list_running()}
        self.assertFalse(live & {s["id"] for s in first})


class TestNeverBreakNova(base.HpcTestCase):
    HOSTS = {"n1": Shape(), "n2": Shape()}

    def test_invalid_spec_from_an_old_microversion_is_refused_not_guessed(self) -> None:
        flavor = self.hpc_flavor()
        self.admin_api.microversion = "2.85"
        self.admin_api.post_extra_spec(flavor, {"extra_specs": {"hpc:cache_score": "lots"}})
        self.admin_api.microversion = "latest"
        self.assert_refused(self.launch(flavor))
        # The scheduler is fine: the next request is placed.
        self.assertEqual(1, len(self.hosts_of(self.launch(self.hpc_flavor(app_class="SyncHPC")))))

    def test_database_outage_rejects_hpc_and_fails_open_for_non_hpc(self) -> None:
        self.flags(connection=UNREACHABLE, group="hpc_scheduler")
        self.assertEqual(1, len(self.hosts_of(self.launch(self.hpc_flavor(app_class="NonHPC")))))
        self.assertEqual(1, len(self.hosts_of(self.launch(self.hpc_flavor()))))
        self.assert_refused(self.launch(self.hpc_flavor(app_class="SyncHPC")))

    def test_database_outage_degrades_when_configured(self) -> None:
        self.flags(connection=UNREACHABLE, database_failure_policy="degrade", group="hpc_scheduler")
        extreme = self.hosts_of(
            self.launch(self.hpc_flavor(app_class="ExtremeHPC", app_name="IS.B"))
        )
        # Dedication still holds, from Nova's own view of the flavors.
        later = self.hosts_of(self.launch(self.hpc_flavor(app_class="AsyncHPC"), 2))
        self.assertFalse(set(later) & set(extreme))

    def test_database_recovers(self) -> None:
        url = self.db_url
        self.flags(connection=UNREACHABLE, group="hpc_scheduler")
        self.assert_refused(self.launch(self.hpc_flavor(app_class="SyncHPC")))
        self.flags(connection=url, group="hpc_scheduler")
        self.assertEqual(1, len(self.hosts_of(self.launch(self.hpc_flavor(app_class="SyncHPC")))))

    def test_missing_profile_uses_the_flavor(self) -> None:
        servers = self.launch(self.hpc_flavor(app_class="AsyncHPC", app_name="unknown-app"))
        self.assertEqual(1, len(self.hosts_of(servers)))

    def test_stored_profile_fills_what_the_flavor_leaves_out(self) -> None:
        from hpc_nova_scheduler.core.profile import AppClass
        from hpc_nova_scheduler.core.records import ProfileRecord

        self.database.import_profiles([ProfileRecord("IS.B", AppClass.EXTREME_HPC, 47.0)])
        servers = self.launch(self.hpc_flavor(), hints={"hpc_app_name": "IS.B"})
        row = self.database.list_running()[0]
        self.assertEqual(
            (servers[0]["id"], AppClass.EXTREME_HPC, 47.0),
            (row.instance_uuid, row.app_class, row.cache_score),
        )

    def test_bad_hint_is_refused(self) -> None:
        self.assert_refused(
            self.launch(self.hpc_flavor(app_class="AsyncHPC"), hints={"hpc_app_name": " "})
        )


class TestApiErrors(base.HpcTestCase):
    HOSTS = {"n1": Shape()}

    def test_validation_still_applies(self) -> None:
        self.assertRaises(client.OpenStackApiException, self.hpc_flavor, app_class="Hyper")


class TestMoves(base.HpcTestCase):
    """A migrated VM stays part of its application, and its record follows it."""

    HOSTS = {"n1": Shape(), "n2": Shape(), "n3": Shape()}

    def test_cold_migration_keeps_the_application(self) -> None:
        servers = self.launch(self.hpc_flavor(app_class="ExtremeHPC"), 2)
        source = self.hosts_of(servers)
        self.assertEqual([2], list(source.values()))
        application = {row.request_id for row in self.database.list_running()}
        self.assertEqual(1, len(application))
        # The other VM of the application holds the source host; the moving
        # one must land on a host with nothing else.
        moved = self._migrate_server(servers[0])
        moved = self._confirm_resize(moved)
        target = moved["OS-EXT-SRV-ATTR:host"]
        self.assertNotIn(target, source)
        rows = {row.instance_uuid: row for row in self.database.list_running()}
        self.assertEqual(
            (target, application.pop()),
            (rows[servers[0]["id"]].host, rows[servers[0]["id"]].request_id),
        )
        # Nothing else lands next to the moved ExtremeHPC VM.
        later = self.hosts_of(self.launch(self.hpc_flavor()))
        self.assertNotIn(target, later)
        self.assertNotIn(next(iter(source)), later)

    def test_migrating_one_vm_of_a_multi_create_request_places_one_vm(self) -> None:
        servers = self.launch(self.hpc_flavor(vcpus=2, app_class="SyncHPC"), 4)
        first = self.hosts_of(servers)
        self.assertEqual([2, 2], sorted(first.values()))
        # Only the empty third host has room, and only for 2 of the 4 VMs the
        # original request asked for: the move must plan one VM, not four.
        moved = self._confirm_resize(self._migrate_server(servers[0]))
        self.assertNotIn(moved["OS-EXT-SRV-ATTR:host"], first)


class HeldHostStates(fixtures.Fixture):
    """The scheduler's host states have not heard of ``held`` instances yet.

    Nova's host states learn of a VM when its compute reports it; until then
    a host state shows the host without it, although the compute has
    already claimed the VM (``instance.host`` is set in its cell). This
    holds that report back for the instances in ``held``, deterministically.
    """

    def __init__(self, host_manager) -> None:
        super().__init__()
        self.host_manager = host_manager
        self.held: set[str] = set()

    def _setUp(self) -> None:
        heard = self.host_manager._get_instance_info

        def not_yet(context, compute):
            return {u: i for u, i in heard(context, compute).items() if u not in self.held}

        self.host_manager._get_instance_info = not_yet
        self.addCleanup(setattr, self.host_manager, "_get_instance_info", heard)


class TestHostStateLag(base.HpcTestCase):
    """A dedicated host stays dedicated while the host state has not heard of its VM."""

    HOSTS = {"n1": Shape(), "n2": Shape()}

    def setUp(self) -> None:
        super().setUp()
        self.lag = self.useFixture(HeldHostStates(self.scheduler.manager.host_manager))

    def _boot_on(self, flavor_id: str, host: str, expected: str) -> dict:
        body = {"server": self._build_server(flavor_id=flavor_id, networks="none", host=host)}
        return self._wait_for_state_change(self.api.post_server(body), expected)

    def test_plain_vm_keeps_off_a_host_its_compute_gave_to_extreme_hpc(self) -> None:
        extreme = self._boot_on(self.hpc_flavor(app_class="ExtremeHPC"), "n1", "ACTIVE")
        # The compute has claimed it; the scheduler's host state has not heard.
        self.lag.held.add(extreme["id"])
        plain = self._boot_on(self._create_flavor(memory_mb=1024, vcpu=1, disk=1), "n1", "ERROR")
        self.assertIn("No valid host", plain["fault"]["message"])
        self.assertEqual(
            [extreme["id"]], [row.instance_uuid for row in self.database.list_running()]
        )
        # Once the host state hears of it, it is still dedicated.
        self.lag.held.clear()
        again = self._boot_on(self._create_flavor(memory_mb=1024, vcpu=1, disk=1), "n1", "ERROR")
        self.assertIn("No valid host", again["fault"]["message"])

    def test_hpc_vm_keeps_off_it_too(self) -> None:
        extreme = self._boot_on(self.hpc_flavor(app_class="ExtremeHPC"), "n1", "ACTIVE")
        self.lag.held.add(extreme["id"])
        servers = self.launch(self.hpc_flavor(app_class="AsyncHPC"), 2)
        self.assertNotIn("n1", self.hosts_of(servers))
        self.assertEqual({"n2": 2}, self.hosts_of(servers))
