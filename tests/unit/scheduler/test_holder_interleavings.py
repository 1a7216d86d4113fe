"""Dedicated hosts stay dedicated under every interleaving (issue 43).

Two ExtremeHPC VMs, each in its own cell, go through their lives as Nova
takes them: claimed by a scheduler, recorded as placed (the claim taken
off in the same transaction), created in their cell, their build request
deleted, claimed by their compute (``instance.host`` set), heard of by each
of two scheduler workers' host states on its own time, deleted, and
forgotten by the host states. In between, each worker asks which hosts
are dedicated (a request left to Nova), or what runs on every host (an HPC
request), writing back what it learned as the filter does; and the agent's
sweep repairs ``app_running``. Hypothesis draws the interleavings.

While a VM lives (from its claim until Nova deletes it), every answer of
every worker names its host as held by its application, and no path
deletes its record.

The Nova side is a model of what Nova's databases return at each step:
the functional test of the same window
(``tests.functional.test_corunners.TestHostStateLag``) runs it in Nova.
"""

from __future__ import annotations

import dataclasses
import types

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpc_nova_scheduler.agent import reconcile
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import corunners
from tests import db_backends

WORKERS = ("w1", "w2")
HOSTS = {"h1": "cell-1", "h2": "cell-1", "h3": "cell-2", "h4": "cell-2"}

# Each step of a VM's life, and the steps that must come before it.
LIFE = {
    "claim": (),
    "placed": ("claim",),
    "cell": ("placed",),
    "unbuild": ("cell",),
    "compute": ("unbuild",),
    "heard:w1": ("compute",),
    "heard:w2": ("compute",),
    "delete": ("compute",),
    "forgot:w1": ("delete",),
    "forgot:w2": ("delete",),
}
QUERIES = ("plain:w1", "plain:w2", "hpc:w1", "hpc:w2", "sweep")


@dataclasses.dataclass
class VM:
    uuid: str
    application: str
    host: str
    done: set[str] = dataclasses.field(default_factory=set)

    @property
    def cell(self) -> str:
        return HOSTS[self.host]

    def enabled(self) -> list[str]:
        found = []
        for step, before in LIFE.items():
            if step in self.done or not all(b in self.done for b in before):
                continue
            if step.startswith("heard:") and "delete" in self.done:
                continue
            found.append(step)
        return found

    @property
    def alive(self) -> bool:
        return "claim" in self.done and "delete" not in self.done

    def listed_by(self, worker: str) -> bool:
        return f"heard:{worker}" in self.done and f"forgot:{worker}" not in self.done

    def in_cell(self) -> types.SimpleNamespace | None:
        if "cell" not in self.done:
            return None
        on_compute = "compute" in self.done
        return types.SimpleNamespace(
            uuid=self.uuid,
            host=self.host if on_compute else None,
            node=self.host if on_compute else None,
            vm_state="active" if on_compute else "building",
            deleted="delete" in self.done,
            project_id="p",
            flavor=types.SimpleNamespace(extra_specs={"hpc:app_class": "ExtremeHPC"}, vcpus=2),
        )

    @property
    def scheduling(self) -> bool:
        return "placed" in self.done and "unbuild" not in self.done


class World:
    """What Nova's cell and API databases answer, VM by VM."""

    def __init__(self, vms: list[VM]) -> None:
        self.vms = {vm.uuid: vm for vm in vms}

    # The co-runner source's reads (NovaInstances).
    def get(self, uuids_by_cell):
        found = {}
        for cell, uuids in uuids_by_cell.items():
            for uuid in uuids:
                vm = self.vms.get(uuid)
                instance = vm.in_cell() if vm is not None else None
                # Only the cell the instance is in has it.
                if instance is not None and vm.cell == cell:
                    found[uuid] = instance
        return found

    def scheduling(self, uuids):
        return {u for u in uuids if u in self.vms and self.vms[u].scheduling}

    def hinted_names(self, uuids):
        return {}

    # reconcile's view (NovaView).
    @property
    def nova(self) -> World:
        return self

    def look_up(self, uuids):
        found = {}
        for uuid in uuids:
            instance = self.vms[uuid].in_cell() if uuid in self.vms else None
            if instance is not None:
                found[uuid] = reconcile.Found(
                    uuid=uuid,
                    host=instance.host,
                    nodename=instance.node,
                    deleted=instance.deleted,
                    vm_state=instance.vm_state,
                    extra_specs=dict(instance.flavor.extra_specs),
                    project_id="p",
                    vcpus=2,
                )
        return found, self.scheduling(uuids)

    def hpc_instances(self):
        found, _ = self.look_up(list(self.vms))
        return [f for f in found.values() if f.host and not f.deleted]

    def host_states(self, worker: str) -> list[types.SimpleNamespace]:
        return [
            types.SimpleNamespace(
                host=host,
                nodename=host,
                cell_uuid=cell,
                instances={
                    vm.uuid: None
                    for vm in self.vms.values()
                    if vm.host == host and vm.listed_by(worker)
                },
            )
            for host, cell in HOSTS.items()
        ]


class TestInterleavings(db_backends.DatabaseTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.database.sync()

    def _clear(self) -> None:
        self.database.forget_running([vm.instance_uuid for vm in self.database.list_running()])
        self.database.release_claims({c.claim_id for c in self.database.live_claims()})

    def _step(self, world: World, vm: VM, step: str) -> None:
        if step == "claim":
            self.database.claim(
                [
                    db_api.Claim(
                        claim_id=f"claim-{vm.uuid}",
                        instance_uuid=vm.uuid,
                        application_id=vm.application,
                        host=vm.host,
                        nodename=vm.host,
                        app_class=AppClass.EXTREME_HPC,
                        cache_score=0.0,
                        vms=1,
                        cell_uuid=vm.cell,
                        cores=2,
                    )
                ],
                lambda view: None,
                ttl=3600,
            )
        elif step == "placed":
            self.database.record_placed(
                db_api.RunningRecord(
                    vm.uuid,
                    vm.host,
                    AppClass.EXTREME_HPC,
                    0.0,
                    "IS.B",
                    nodename=vm.host,
                    request_id=vm.application,
                    project_id="p",
                    cores=2,
                ),
                f"claim-{vm.uuid}",
            )
        vm.done.add(step)

    def _ask(self, world: World, sources, query: str) -> None:
        if query == "sweep":
            reconcile.apply(self.database, reconcile.plan(self.database.list_running(), world))
            return
        kind, worker = query.split(":")
        states = world.host_states(worker)
        if kind == "plain":
            knowledge = sources[worker].dedicated_hosts(
                states, self.database, application_id="plain-request"
            )
        else:
            knowledge = sources[worker].collect(states, self.database, application_id="hpc-request")
        for vm in world.vms.values():
            if not vm.alive:
                continue
            holding = {
                held.application_id
                for held in knowledge.vms.get(vm.host, ())
                if held.app_class is AppClass.EXTREME_HPC
            }
            self.assertIn(vm.application, holding, f"{query}: {vm.host} not held by {vm.uuid}")
        # Written back as the filter does (PluginData._write_back).
        if knowledge.backfill:
            self.database.record_running(knowledge.backfill)
        if knowledge.moved:
            self.database.record_running(knowledge.moved)
        if knowledge.stale:
            self.database.forget_running(knowledge.stale)

    @settings(
        max_examples=50,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=st.data())
    def test_a_living_extreme_vm_holds_its_host_for_every_worker(self, data) -> None:
        self._clear()
        world = World([VM("x", "app-x", "h1"), VM("y", "app-y", "h3")])
        sources = {worker: corunners.CoRunnerSource(world) for worker in WORKERS}
        for _ in range(30):
            moves = [(vm, step) for vm in world.vms.values() for step in vm.enabled()]
            moves += [(None, query) for query in QUERIES]
            vm, action = data.draw(st.sampled_from(moves))
            if vm is None:
                self._ask(world, sources, action)
            else:
                self._step(world, vm, action)
            recorded = {row.instance_uuid for row in self.database.list_running()}
            for each in world.vms.values():
                if "placed" in each.done and each.alive:
                    self.assertIn(each.uuid, recorded, f"the record of {each.uuid} was deleted")
