"""One scheduling request as the plugin sees it, and what it decided for it.

Nova hands the filter and the weigher a ``RequestSpec`` for every instance
of a request. :class:`Request` is that spec read once, at the filter's
entry, into plain values that the filter's helpers receive instead of the
spec. :class:`RequestState` is what the filter decided for the request; the
weigher reads it through :func:`request_state`, so neither imports the
other.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from typing import Any

from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.core.algorithm import NO_TOPOLOGY, Plan
from hpc_nova_scheduler.core.cluster import Resources
from hpc_nova_scheduler.core.profile import ApplicationProfile
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.scheduler import host_view
from hpc_nova_scheduler.topology.levels import TopologySpec


@dataclasses.dataclass(frozen=True)
class Request:
    """What the plugin reads of a ``RequestSpec``, read once per round."""

    #: The instance this round places (Nova sets it on the spec each round).
    instance_uuid: str | None = None
    project_id: str | None = None
    #: The flavor's extra specs; None when the flavor cannot be read.
    extra_specs: dict[str, str] | None = dataclasses.field(default_factory=dict)
    hints: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The server group's uuid ("" for a group without one); None: no group.
    group_uuid: str | None = None
    #: The server group's members (empty: no group, or no members listed).
    members: frozenset[str] = frozenset()
    num_instances: int = 1
    #: One VM's demand as Placement counts it; read for planned requests only.
    demand: Resources | None = None

    @property
    def plain(self) -> bool:
        """No ``hpc:`` extra spec and no application hint: a request left to Nova."""
        return not self.hpc

    @property
    def hpc(self) -> bool:
        """Whether the request asks for HPC placement (an unreadable flavor does)."""
        if self.extra_specs is None:
            return True
        return (
            core_profile.has_hpc_specs(self.extra_specs) or core_profile.HINT_APP_NAME in self.hints
        )

    @classmethod
    def of_flavor(cls, spec_obj: Any) -> Request:
        """Only what tells an HPC request from a plain one: extra specs and hints.

        Never raises: when the rest of the spec cannot be read, this still
        tells whether the request may be left to Nova (an unreadable flavor
        may not).
        """
        try:
            specs: dict | None = dict(spec_obj.flavor.extra_specs or {})
        except Exception:
            specs = None
        try:
            hints = {}
            if spec_obj.obj_attr_is_set("scheduler_hints") and spec_obj.scheduler_hints:
                hints = dict(spec_obj.scheduler_hints)
        except Exception:
            specs, hints = None, {}  # unreadable hints may name an application
        return cls(extra_specs=specs, hints=hints)

    @classmethod
    def from_spec(cls, spec_obj: Any, planning: bool = False) -> Request:
        """The request of ``spec_obj``; with its demand when ``planning`` an HPC one."""
        request = cls.of_flavor(spec_obj)
        group = spec_obj.instance_group if spec_obj.obj_attr_is_set("instance_group") else None
        members: frozenset[str] = frozenset()
        if group is not None and "members" in group:
            members = frozenset(group.members or ())
        # A plain request is left to Nova whatever it lacks; an HPC one needs
        # its count, or it would be planned for the wrong number of VMs.
        count = spec_obj.num_instances if request.hpc else _field(spec_obj, "num_instances", 1)
        request = dataclasses.replace(
            request,
            instance_uuid=spec_obj.instance_uuid,
            project_id=_field(spec_obj, "project_id", None),
            group_uuid=group.uuid or "" if group is not None else None,
            members=members,
            num_instances=max(1, count),
        )
        if planning and request.hpc and request.extra_specs is not None:
            request = dataclasses.replace(request, demand=host_view.demand(spec_obj))
        return request


def _field(spec_obj: Any, name: str, default: Any) -> Any:
    """A field of the spec, or ``default`` where it is not set: a request left to
    Nova must not fail on a field only planned requests need."""
    try:
        return getattr(spec_obj, name)
    except Exception:  # an unset versioned-object field raises NotImplementedError
        return default


@dataclasses.dataclass
class RequestState:
    """What the filter decided for one scheduling request."""

    profile: ApplicationProfile
    application_id: str
    plan: Plan | None = None
    #: The tenant's topology constraints (``hpc:topology_*``).
    topology: TopologySpec = NO_TOPOLOGY
    #: Where the VM being moved runs now (host, node); None for a new request.
    moving_from: tuple[str, str | None] | None = None
    refusal: str | None = None
    #: For requests left to Nova: the hosts they must avoid.
    avoid: frozenset[str] = frozenset()
    database: db_api.Database | None = None
    #: VMs the plan still puts on each host.
    remaining: dict[str, int] = dataclasses.field(default_factory=dict)
    #: The instance of the previous round, whose host Nova has chosen since.
    pending: str | None = None
    #: The hosts kept for each instance, so that a repeated round (Nova
    #: filters again when it looks for alternates) gets the same answer.
    answers: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    #: The claim of the plan in the plugin database, if one was written.
    claim_id: str | None = None
    #: Alternate hosts, best first, offered behind the planned ones.
    spares: tuple[str, ...] = ()
    #: The planned hosts offered in the current round (the weigher puts
    #: them first).
    planned_now: frozenset[str] = frozenset()
    #: Instances on each offered host when the pending instance was offered
    #: them: the host Nova claimed for it is the one that gained one.
    seen: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: For ExtremeHPC: the plan's host states, and the VMs of the
    #: application that may share them (checked against Placement).
    dedicated: dict[str, Any] = dataclasses.field(default_factory=dict)
    own_vms: frozenset[str] = frozenset()
    #: Cores of each VM (its flavor's vCPUs), recorded for fair share.
    vm_cores: int = 0
    #: ``hpc:preemptible``: under fair share its VMs use idle cores, never
    #: the project's entitlement, and may be taken back.
    preemptible: bool = False


#: The state of every request being scheduled. Nova hands the filter the
#: same RequestSpec object for every instance of a request, and drops it when
#: the request is done. Requests run in threads of their own.
REQUESTS: weakref.WeakKeyDictionary[Any, RequestState] = weakref.WeakKeyDictionary()
_REQUESTS_LOCK = threading.Lock()

#: Set when nova-scheduler loads ``HpcPlanWeigher``: only then are alternates
#: offered, since without it Nova's weighers could prefer one to a planned host.
PLAN_WEIGHER = threading.Event()


def request_state(spec_obj: Any) -> RequestState | None:
    """What the filter decided for the request of ``spec_obj``, if anything."""
    with _REQUESTS_LOCK:
        return REQUESTS.get(spec_obj)


def remember(spec_obj: Any, state: RequestState) -> None:
    with _REQUESTS_LOCK:
        REQUESTS[spec_obj] = state
