"""Who runs on each candidate host, and as which application.

Nova's host states say which instances are on a host (in memory, kept current
by the computes or read per host from Nova's database; every node of a
multi-node service lists all of them, see :func:`.host_view.node_of`). The
plugin's ``app_running`` table says what each instance is (class, cache
score, application), including VMs placed moments ago by this or another
scheduler process that no compute has claimed yet. Everything else is asked
of Nova's database in one batched query per cell: the flavors of VMs that
predate the plugin (recorded afterwards, so they are asked about once), and
the fate of records that no host state shows (still being built, moved, or
gone); those reads are in :mod:`.nova_instances`. What a record that no
host state lists holds is decided by the holder rule
(:func:`hpc_nova_scheduler.core.holders.locate`), for requests planned by
the plugin and requests left to Nova alike.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from oslo_log import log as logging

from hpc_nova_scheduler.core import holders
from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.measured.pressure import Scores
from hpc_nova_scheduler.scheduler import host_view
from hpc_nova_scheduler.scheduler.flavor_records import record_from_flavor
from hpc_nova_scheduler.scheduler.nova_instances import NovaInstances, hinted_names, look_up
from hpc_nova_scheduler.scheduler.placed_here import PlacedHere

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Knowledge:
    """Co-runners per host key, and what to write back to ``app_running``."""

    vms: dict[str, list[RunningVM]]
    backfill: list[db_api.RunningRecord] = dataclasses.field(default_factory=list)
    stale: list[str] = dataclasses.field(default_factory=list)
    #: Records whose instance now runs on another host (rebuilt on an
    #: alternate, or moved), rewritten to keep their application.
    moved: list[db_api.RunningRecord] = dataclasses.field(default_factory=list)
    #: Cores per host key that Nova's host state does not count yet: VMs
    #: other requests' claims still plan there, and VMs placed but not yet
    #: on their compute. Two schedulers would otherwise both plan into the
    #: same free cores and leave Placement to refuse one request's VMs
    #: halfway.
    taken_cores: dict[str, float] = dataclasses.field(default_factory=dict)
    #: The claims counted in ``taken_cores``, to tell the ones written since.
    claims_seen: set[str] = dataclasses.field(default_factory=set)


def _serialised(method):
    # Requests are scheduled concurrently; the caches below are shared.
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper


class CoRunnerSource:
    """Builds :class:`Knowledge` for a list of Nova host states."""

    def __init__(self, nova: NovaInstances | None = None) -> None:
        self.nova = nova or NovaInstances()
        #: Filled by the rounds of this service's requests.
        self.placed_here = PlacedHere()
        self._from_flavors: dict[str, db_api.RunningRecord] = {}
        #: Instances known to have an app_running row, so requests left to
        #: Nova need not read every row to find the few that are missing.
        self._recorded: set[str] = set()
        self._lock = threading.Lock()

    def _learn_flavors(
        self, unknown: Mapping[str, Any], instances: Mapping[str, Any]
    ) -> list[db_api.RunningRecord]:
        learned = []
        unnamed = [
            uuid
            for uuid in unknown
            if uuid in instances
            and core_profile.SPEC_APP_NAME not in (instances[uuid].flavor.extra_specs or {})
        ]
        hinted = hinted_names(self.nova, unnamed)
        for uuid, hs in unknown.items():
            instance = instances.get(uuid)
            if instance is None:
                continue
            record = record_from_flavor(
                uuid,
                hs.host,
                host_view.node_of(hs, uuid, (instance.host, getattr(instance, "node", None))),
                instance.flavor.extra_specs,
                instance.project_id,
                hinted.get(uuid),
            )
            self._from_flavors[uuid] = record
            learned.append(record)
        return learned

    @_serialised
    def dedicated_hosts(
        self,
        host_states: Sequence[Any],
        database: db_api.Database | None,
        *,
        exclude: Iterable[str] = (),
        application_id: str | None = None,
    ) -> Knowledge:
        """Only which hosts run another application's ExtremeHPC VMs.

        What a request left to Nova needs, read cheaply: the ExtremeHPC rows
        (few), plus the rows of instances this process has not seen before.
        ``vms`` of the result maps each such host to its ExtremeHPC VMs.
        """
        exclude = set(exclude)
        located: dict[str, Any] = {}
        for hs in host_states:
            instances = getattr(hs, "instances", None)
            if instances:
                located.update(dict.fromkeys(instances, hs))
        extreme_rows: list[db_api.RunningRecord] = []
        extreme_claims: list[db_api.Claim] = []
        if database is not None:
            extreme_rows, extreme_claims = database.of_class(core_profile.AppClass.EXTREME_HPC)
            # Set operations: this runs for every request, over every VM.
            self._recorded.intersection_update(located)
            fresh = located.keys() - self._recorded
            if fresh:
                self._recorded.update(
                    vm.instance_uuid for vm in database.running_for((), list(fresh))
                )
            unknown = {
                u: located[u]
                for u in fresh
                if u not in self._recorded and u not in self._from_flavors
            }
        else:
            unknown = {u: hs for u, hs in located.items() if u not in self._from_flavors}
        unlocated_rows = [
            vm
            for vm in extreme_rows
            if vm.instance_uuid not in located and vm.instance_uuid not in exclude
        ]
        unlocated: dict[str, Any] = {}
        if unlocated_rows:
            by_key = {host_view.host_key(hs): hs for hs in host_states}
            unlocated = {
                vm.instance_uuid: by_key[vm.key] for vm in unlocated_rows if vm.key in by_key
            }
        asked: dict[str | None, list[str]] = {}
        for uuid, hs in {**unknown, **unlocated}.items():
            asked.setdefault(getattr(hs, "cell_uuid", None), []).append(uuid)
        instances, scheduling = look_up(self.nova, asked)
        knowledge = Knowledge(vms={})
        learned = self._learn_flavors(unknown, instances)
        self._from_flavors = {u: vm for u, vm in self._from_flavors.items() if u in located}
        if database is not None:
            knowledge.backfill = learned
            self._recorded.update(vm.instance_uuid for vm in learned)

        def dedicate(key: str | None, record: db_api.RunningRecord) -> None:
            # None: a VM Nova lists, on the node of its service it runs on.
            uuid, at = record.instance_uuid, (record.host, record.nodename)
            key = key or host_view.key_of(located[uuid], uuid, at)
            knowledge.vms.setdefault(key, []).append(_as_running(record, record.request_id))

        for record in extreme_rows:
            uuid = record.instance_uuid
            if uuid in exclude or (application_id and record.request_id == application_id):
                continue
            if uuid in located:
                dedicate(None, record)
            elif uuid in unlocated:
                key = _follow(knowledge, record, instances, scheduling)
                if key is not None:
                    dedicate(key, record)
        for uuid, record in self._from_flavors.items():
            if record.app_class is core_profile.AppClass.EXTREME_HPC and uuid not in exclude:
                dedicate(None, record)
        if extreme_claims:
            # Hosts promised to ExtremeHPC requests still being placed.
            keys = {host_view.host_key(hs) for hs in host_states}
            for claim in extreme_claims:
                if claim.key in keys and claim.application_id != application_id:
                    knowledge.vms.setdefault(claim.key, []).extend(
                        claimed_vms(claim, claim.application_id)
                    )
        return knowledge

    @_serialised
    def collect(
        self,
        host_states: Sequence[Any],
        database: db_api.Database | None,
        *,
        exclude: Iterable[str] = (),
        own: Iterable[str] = (),
        application_id: str | None = None,
        scores: Scores | None = None,
    ) -> Knowledge:
        """Co-runners of every host; ``database`` None means Nova only.

        ``exclude`` are instances that do not count (one being moved);
        ``own`` are instances of the requesting application itself (members
        of its server group); ``scores`` the measured cache scores the VMs
        count with (None: their declared scores). Claims stand for VMs not
        running yet: they keep their declared scores.
        """
        exclude, own = set(exclude), set(own)
        by_key, located = _locate(host_states)
        rows: dict[str, db_api.RunningRecord] = {}
        claims: list[db_api.Claim] = []
        if database is not None:
            names = {hs.host for hs in host_states}
            # Claims first: a VM moves from its claim to its row, never back,
            # so reading in this order may count it twice but never miss it.
            claims = database.live_claims(names)
            rows = {vm.instance_uuid: vm for vm in database.running_for(names, located)}

        # Records on a candidate host that Nova does not show there.
        unlocated = {
            uuid: by_key[row.key]
            for uuid, row in rows.items()
            if uuid not in located and uuid not in exclude and row.key in by_key
        }
        unknown = {
            uuid: hs
            for uuid, hs in located.items()
            if uuid not in rows and uuid not in self._from_flavors
        }
        asked: dict[str | None, list[str]] = {}
        for uuid, hs in {**unknown, **unlocated}.items():
            asked.setdefault(getattr(hs, "cell_uuid", None), []).append(uuid)
        instances, scheduling = look_up(self.nova, asked)

        knowledge = Knowledge(vms={key: [] for key in by_key})
        self._learn_flavors(unknown, instances)
        # Forget what no longer runs here, so the cache stays bounded.
        self._from_flavors = {u: vm for u, vm in self._from_flavors.items() if u in located}
        if database is not None:
            knowledge.backfill = [self._from_flavors[u] for u in unknown if u in self._from_flavors]
            self._recorded.update(rows)
            self._recorded.update(vm.instance_uuid for vm in knowledge.backfill)

        def as_vm(record: db_api.RunningRecord) -> RunningVM:
            own_vm = record.instance_uuid in own
            return _as_running(record, application_id if own_vm else record.request_id, scores)

        for uuid, hs in located.items():
            if uuid in exclude:
                continue
            record = rows.get(uuid) or self._from_flavors.get(uuid)
            if record is None:
                # Gone from Nova's database since the host state was read:
                # it still holds its slot, nothing more is known.
                record = db_api.RunningRecord(uuid, hs.host, core_profile.AppClass.NON_HPC, 0.0)
            key = host_view.key_of(hs, uuid, (record.host, record.nodename))
            if key in knowledge.vms:  # else on a node of the service that is no candidate
                knowledge.vms[key].append(as_vm(record))

        for uuid in unlocated:
            key = _follow(knowledge, rows[uuid], instances, scheduling)
            if key in knowledge.vms:
                # Placed, or on its compute, and no host state has heard yet:
                # the host state does not count its resources either.
                knowledge.vms[key].append(as_vm(rows[uuid]))
                self._take(knowledge, key, uuid, rows[uuid].cores)
        for claim in claims:
            if claim.key in knowledge.vms:
                # Room promised to requests still being placed counts as theirs.
                knowledge.vms[claim.key].extend(claimed_vms(claim, claim.application_id))
                # Every claim, the application's own included (another
                # request of its server group): this request's is not written yet.
                cores = claim_cores(claim)
                knowledge.taken_cores[claim.key] = knowledge.taken_cores.get(claim.key, 0) + cores
                knowledge.claims_seen.add(claim.claim_id)
        return knowledge

    def _take(self, knowledge: Knowledge, key: str, instance_uuid: str, cores: int) -> None:
        """Count a VM's cores that the host state may not count yet."""
        if instance_uuid not in self.placed_here:
            knowledge.taken_cores[key] = knowledge.taken_cores.get(key, 0) + cores


def claim_cores(claim: db_api.Claim) -> float:
    """The cores of the VMs a claim still plans (not its spare slots)."""
    return float(max(0, claim.vms) * max(0, claim.cores))


def claimed_vms(claim: db_api.Claim, application_id: str | None) -> list[RunningVM]:
    """The VMs a claim stands for on its host: planned ones and spare slots."""
    return [
        RunningVM(
            uuid=f"claim:{claim.claim_id}:{claim.key}:{i}",
            app_class=claim.app_class,
            cache_score=claim.cache_score,
            app_name=claim.app_name,
            application_id=application_id,
        )
        for i in range(max(0, claim.vms) + max(0, claim.spare))
    ]


def _locate(host_states: Sequence[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Host states by key, and the host state each instance is on."""
    by_key = {host_view.host_key(hs): hs for hs in host_states}
    located: dict[str, Any] = {}
    for hs in host_states:
        for uuid in getattr(hs, "instances", None) or {}:
            located[uuid] = hs
    return by_key, located


def _as_running(
    record: db_api.RunningRecord, application_id: str | None, scores: Scores | None = None
) -> RunningVM:
    declared = record.cache_score
    return RunningVM(
        uuid=record.instance_uuid,
        app_class=record.app_class,
        cache_score=declared if scores is None else scores.score(record.instance_uuid, declared),
        app_name=record.app_name,
        application_id=application_id,
    )


def nova_instance(instance: Any) -> holders.NovaInstance | None:
    """What the holder rule reads of an instance of Nova's cell database."""
    if instance is None:
        return None
    return holders.NovaInstance(
        host=instance.host,
        nodename=getattr(instance, "node", None),
        deleted=bool(instance.deleted),
        vm_state=instance.vm_state,
    )


def _follow(
    knowledge: Knowledge,
    record: db_api.RunningRecord,
    instances: Mapping[str, Any],
    scheduling: set[str],
) -> str | None:
    """The host key a record no host state lists holds, by the holder rule.

    A record whose VM is gone is marked stale; one whose VM Nova has on
    another host follows it, keeping its application.
    """
    uuid = record.instance_uuid
    verdict = holders.locate(
        record.host,
        record.nodename,
        seen=None,
        instance=nova_instance(instances.get(uuid)),
        scheduling=uuid in scheduling,
    )
    if verdict.gone:
        knowledge.stale.append(uuid)
    elif verdict.whereabouts is holders.Whereabouts.MOVED:
        knowledge.moved.append(
            dataclasses.replace(record, host=verdict.host, nodename=verdict.nodename)
        )
    return verdict.key
