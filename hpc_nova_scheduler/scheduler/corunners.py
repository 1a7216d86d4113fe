"""Who runs on each candidate host, and as which application.

Nova's host states say which instances are on a host (in memory, kept
current by the computes or read per host from Nova's database). The plugin's
``app_running`` table says what each instance is (class, cache score,
application), including VMs placed moments ago by this or another scheduler
process that no compute has claimed yet. Everything else is asked of Nova's
database in one batched query per cell: the flavors of VMs that predate the
plugin (recorded afterwards, so they are asked about once), and the fate of
records that no host state shows (still being built, moved, or gone);
those reads are in :mod:`.nova_instances`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from oslo_log import log as logging

from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.cluster import RunningVM
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler.host_view import host_key
from hpc_nova_scheduler.scheduler.nova_instances import NovaInstances, hinted_names, look_up

LOG = logging.getLogger(__name__)

#: vm_states of an instance that is not yet on a compute but will be.
_IN_FLIGHT = ("building",)


def lenient_profile(extra_specs: Mapping[str, Any] | None) -> core_profile.ApplicationProfile:
    """The profile of a running VM's flavor, tolerating invalid old values.

    A flavor may carry values set before validation existed (or through a
    microversion older than 2.86); each unreadable value falls back to its
    default, with a warning, because the VM runs whatever its specs say.
    """
    specs = extra_specs or {}
    try:
        return core_profile.profile_from_request(specs)
    except core_profile.ProfileError as error:
        LOG.warning(
            "hpc-nova-scheduler: a running VM's flavor has an invalid %s (%s); "
            "using the default for it",
            error.key,
            error.reason,
        )
    fields = {}
    for key, name, parse in (
        (core_profile.SPEC_APP_CLASS, "app_class", core_profile.AppClass.parse),
        (core_profile.SPEC_CACHE_SCORE, "cache_score", core_profile.parse_cache_score),
        (core_profile.SPEC_APP_NAME, "app_name", core_profile.parse_app_name),
    ):
        if key in specs:
            with contextlib.suppress(core_profile.ProfileError):
                fields[name] = parse(specs[key])
    return core_profile.ApplicationProfile(**fields)


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


def record_from_flavor(
    uuid: str,
    host: str,
    nodename: str | None,
    extra_specs: Mapping[str, Any] | None,
    project_id: str | None,
    hinted_name: str | None = None,
) -> db_api.RunningRecord:
    """The app_running row of a VM the plugin did not place, from its flavor.

    ``hinted_name`` is the ``hpc_app_name`` hint it was booted with, which
    names it where the flavor does not.
    """
    found = lenient_profile(extra_specs)
    app_name = found.app_name
    if app_name is None and hinted_name is not None:
        with contextlib.suppress(core_profile.ProfileError):
            app_name = core_profile.parse_app_name(hinted_name, key=core_profile.HINT_APP_NAME)
    return db_api.RunningRecord(
        instance_uuid=uuid,
        host=host,
        nodename=nodename,
        app_class=found.app_class,
        cache_score=found.cache_score,
        app_name=app_name,
        project_id=project_id,
    )


class PlacedHere:
    """The VMs this scheduler service placed lately.

    Nova's host manager keeps its host states between requests and takes
    each VM it places off them at once (``consume_from_request``): this
    service's own VMs are counted there until their compute reports, and
    must not be taken off the free cores a second time. Another service's
    are not. Kept for :data:`KEEP` seconds, far longer than a compute takes
    to report a VM.
    """

    KEEP = 600.0

    def __init__(self) -> None:
        self._placed: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, instance_uuid: str) -> None:
        now = time.monotonic()
        with self._lock:
            self._placed[instance_uuid] = now
            if len(self._placed) > 4096:
                self._placed = {
                    uuid: at for uuid, at in self._placed.items() if now - at < self.KEEP
                }

    def __contains__(self, instance_uuid: object) -> bool:
        with self._lock:
            at = self._placed.get(instance_uuid)  # type: ignore[arg-type]
        return at is not None and time.monotonic() - at < self.KEEP


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
                hs.nodename,
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
            by_key = {host_key(hs): hs for hs in host_states}
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

        def dedicate(key: str, record: db_api.RunningRecord) -> None:
            knowledge.vms.setdefault(key, []).append(_as_running(record, record.request_id))

        for record in extreme_rows:
            uuid = record.instance_uuid
            if uuid in exclude or (application_id and record.request_id == application_id):
                continue
            if uuid in located:
                dedicate(host_key(located[uuid]), record)
            elif uuid in unlocated:
                if uuid in scheduling or _in_flight(instances.get(uuid)):
                    dedicate(record.key, record)
                else:
                    knowledge.stale.append(uuid)
        for uuid, record in self._from_flavors.items():
            if record.app_class is core_profile.AppClass.EXTREME_HPC and uuid not in exclude:
                dedicate(host_key(located[uuid]), record)
        if extreme_claims:
            # Hosts promised to ExtremeHPC requests still being placed.
            keys = {host_key(hs) for hs in host_states}
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
    ) -> Knowledge:
        """Co-runners of every host; ``database`` None means Nova only.

        ``exclude`` are instances that do not count (one being moved);
        ``own`` are instances of the requesting application itself (members
        of its server group).
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
            return _as_running(record, application_id if own_vm else record.request_id)

        for uuid, hs in located.items():
            if uuid in exclude:
                continue
            record = rows.get(uuid) or self._from_flavors.get(uuid)
            if record is None:
                # Gone from Nova's database since the host state was read:
                # it still holds its slot, nothing more is known.
                record = db_api.RunningRecord(uuid, hs.host, core_profile.AppClass.NON_HPC, 0.0)
            knowledge.vms[host_key(hs)].append(as_vm(record))

        for uuid, hs in unlocated.items():
            instance = instances.get(uuid)
            if uuid in scheduling or _in_flight(instance):
                # Placed (here or by another scheduler), not yet on its compute.
                knowledge.vms[host_key(hs)].append(as_vm(rows[uuid]))
                self._take(knowledge, host_key(hs), uuid, rows[uuid].cores)
            elif instance is None or instance.deleted or instance.vm_state in ("error", "deleted"):
                knowledge.stale.append(uuid)
            elif instance.host == hs.host:
                # On its compute already; this host state has not heard yet.
                knowledge.vms[host_key(hs)].append(as_vm(rows[uuid]))
                self._take(knowledge, host_key(hs), uuid, rows[uuid].cores)
            elif instance.host and instance.host != hs.host:
                # Rebuilt on an alternate or moved: its new host's state will
                # show it; the record follows, keeping its application.
                knowledge.moved.append(
                    dataclasses.replace(
                        rows[uuid], host=instance.host, nodename=getattr(instance, "node", None)
                    )
                )
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
    by_key = {host_key(hs): hs for hs in host_states}
    located: dict[str, Any] = {}
    for hs in host_states:
        for uuid in getattr(hs, "instances", None) or {}:
            located[uuid] = hs
    return by_key, located


def _as_running(record: db_api.RunningRecord, application_id: str | None) -> RunningVM:
    return RunningVM(
        uuid=record.instance_uuid,
        app_class=record.app_class,
        cache_score=record.cache_score,
        app_name=record.app_name,
        application_id=application_id,
    )


def _in_flight(instance: Any) -> bool:
    return (
        instance is not None
        and not instance.deleted
        and not instance.host
        and instance.vm_state in _IN_FLIGHT
    )
