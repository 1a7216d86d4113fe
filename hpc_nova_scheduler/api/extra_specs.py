"""Flavor extra spec validators for the ``hpc`` namespace.

Nova loads this module through the ``nova.api.extra_spec_validators`` entry
point and calls :func:`register`.  From microversion 2.86 nova-api then
rejects a bad ``hpc:`` value with HTTP 400 when the spec is set, and rejects
any ``hpc:`` key not registered here, naming the key.

Nova hands a validator one ``(name, value)`` at a time, before it reads the
flavor (``FlavorExtraSpecsController._check_extra_specs_value``), so the
flavor's stored specs and the VM count of a later ``POST /servers`` are out
of reach. The topology specs are checked alone, against the cloud's
``[hpc_scheduler] topology_levels``, and against the other topology specs
set in the same call (:func:`_specs_of_this_call`). The two Placement
traits the agent keeps for narrowing (``trait:CUSTOM_HPC_IDLE``,
``trait:CUSTOM_HPC_ROOMY_RACK``) are checked against an ``hpc:app_class``
set in the same call. What nova-api cannot see, the scheduler refuses with
NoValidHost and a logged reason.
"""

from __future__ import annotations

import threading

from nova import exception
from nova.api.validation.extra_specs import base
from oslo_context import context as oslo_context
from oslo_log import log as logging

from hpc_nova_scheduler import conf
from hpc_nova_scheduler.core import narrowing, profile
from hpc_nova_scheduler.topology import levels as topology

LOG = logging.getLogger(__name__)


def _invalid(error: profile.ProfileError) -> exception.ValidationError:
    return exception.ValidationError(
        f"Validation failed; extra spec '{error.key}': {error.reason}."
    )


class HpcExtraSpecValidator(base.ExtraSpecValidator):
    """Validates through :mod:`hpc_nova_scheduler.core.profile`.

    Nova's stock validator knows only int, bool and regex-matched strings;
    the cache score is a float and the class is case-insensitive, so the
    check is delegated to the same parser the scheduler uses.
    """

    def validate(self, name: str, value: str) -> None:
        try:
            profile.validate_extra_spec(name, value)
            if name == profile.SPEC_APP_CLASS:
                narrowing.check_narrowing_specs(_specs_of_this_call(name, value))
        except profile.ProfileError as error:
            raise _invalid(error) from None


def configured_levels(name: str) -> tuple[str, ...]:
    """The cloud's topology levels as nova-api reads them from its CONF.

    A bad ``topology_levels`` makes the spec uncheckable: a one-line
    ValidationError (HTTP 400) naming the option, and an error in
    nova-api's log, rather than a traceback.
    """
    option = topology.OPTION
    try:
        return topology.configured(conf.CONF)
    except topology.LevelsOptionError as error:
        reason = error.reason
        LOG.error("Cannot check the flavor extra spec %s: %s: %s", name, option, reason)
        raise exception.ValidationError(
            f"Validation failed; extra spec '{name}' cannot be checked: "
            f"the cloud's {option} is wrong: {reason}."
        ) from None


class _CallSpecs(threading.local):
    """The topology specs validated so far in this thread's current request."""

    def __init__(self) -> None:
        self.request_id: str | None = None
        self.specs: dict[str, str] = {}


_CALL = _CallSpecs()


def _specs_of_this_call(name: str, value: str) -> dict[str, str]:
    """``name`` with the topology specs validated before it in the same call.

    Nova validates every key of one ``POST .../os-extra_specs`` body in one
    loop, in the thread that serves the request, before anything is stored;
    the request's context (oslo.context's current context, stored by
    ``nova.context.RequestContext`` when the auth middleware makes it) tells
    one request from the next. Once the last key of the body is validated,
    every pair of keys in it has been checked. Without a current context only
    ``name`` itself is returned.
    """
    current = oslo_context.get_current()
    request_id = getattr(current, "request_id", None)
    if request_id is None:
        return {name: value}
    if _CALL.request_id != request_id:
        _CALL.request_id = request_id
        _CALL.specs = {}
    _CALL.specs[name] = value
    return dict(_CALL.specs)


def check_together(specs: dict[str, str], levels: tuple[str, ...]) -> None:
    """Raise :class:`profile.ProfileError` for topology specs that contradict each other.

    Each value has passed :func:`topology.validate_spec` already. A missing
    partner (a segment size without its level, or the reverse) is not an
    error here: it may be stored on the flavor already, or come in a later
    call; the scheduler refuses a flavor that still lacks it.
    """
    trial = {name: value for name, value in specs.items() if name in profile.TOPOLOGY_SPECS}
    if topology.SPEC_SEGMENT_LEVEL in trial:
        trial.setdefault(topology.SPEC_SEGMENT, "1")
    else:
        trial.pop(topology.SPEC_SEGMENT, None)
    topology.spec_from_extra_specs(trial, levels)


class HpcTopologyValidator(base.ExtraSpecValidator):
    """Validates a topology spec through :mod:`hpc_nova_scheduler.topology.levels`.

    Alone: a level this cloud names (or ``host``), a segment a whole number
    from 1. Together with the topology specs set in the same call: a
    preferred level inside the required one, a segment level not outside it.
    """

    def validate(self, name: str, value: str) -> None:
        levels = configured_levels(name)
        try:
            topology.validate_spec(name, value, levels)
            check_together(_specs_of_this_call(name, value), levels)
        except profile.ProfileError as error:
            raise _invalid(error) from None


class NarrowingTraitValidator(base.ExtraSpecValidator):
    """``trait:CUSTOM_HPC_IDLE`` and ``trait:CUSTOM_HPC_ROOMY_RACK``: Nova's values, one class each.

    Nova's own validator of ``trait:CUSTOM_*`` checks the value; this one
    takes its place for these keys (nova-api looks a name up before any
    pattern) and also refuses ``required`` next to an ``hpc:app_class``
    in the same call that is not the trait's class (ExtremeHPC for the
    idle trait, SyncHPC for the roomy racks). A class stored on the flavor
    before is out of a validator's reach: the scheduler refuses such a
    flavor's requests, naming the key.
    """

    def validate(self, name: str, value: str) -> None:
        if value not in (narrowing.REQUIRED, narrowing.FORBIDDEN):
            raise exception.ValidationError(
                f"Validation failed; extra spec '{name}': expected "
                f"{narrowing.REQUIRED} or {narrowing.FORBIDDEN}, got {value!r}."
            )
        if value != narrowing.REQUIRED:
            return
        specs = _specs_of_this_call(name, value)
        if profile.SPEC_APP_CLASS not in specs:
            return
        try:
            narrowing.check_narrowing_specs(specs)
        except profile.ProfileError as error:
            raise _invalid(error) from None


_CLASSES = ", ".join(c.value for c in profile.AppClass)
_LEVELS = (
    "A topology level of this cloud: one of [hpc_scheduler] topology_levels "
    "(rack unless the operator names more, such as block,rack), or host; "
    "case-insensitive."
)

EXTRA_SPEC_VALIDATORS = [
    HpcExtraSpecValidator(
        name=profile.SPEC_APP_CLASS,
        description=(
            "The application class of seed 003 that decides how the VMs are "
            f"placed ({_CLASSES}; case-insensitive). Absent means NonHPC."
        ),
        value={"type": str, "description": f"One of {_CLASSES}."},
    ),
    HpcExtraSpecValidator(
        name=profile.SPEC_CACHE_SCORE,
        description=(
            "The application's cache score, in units of 100K last-level "
            "cache misses per second per VM. Absent means 0."
        ),
        value={"type": str, "description": "A finite number >= 0."},
    ),
    HpcExtraSpecValidator(
        name=profile.SPEC_APP_NAME,
        description=(
            "The application's name in the plugin's profile database; the "
            "hpc_app_name scheduler hint overrides it for one request."
        ),
        value={"type": str, "description": "A non-empty name."},
    ),
    HpcExtraSpecValidator(
        name=profile.SPEC_PREEMPTIBLE,
        description=(
            "Under fair share, the VMs are preemptible: they may use any "
            "platform's idle cores beyond the project's entitlement, never "
            "count against it, and may be taken back (stopped, shelved or "
            "deleted, as the operator's fairshare_reclaim says) when a "
            "project below its entitlement needs the cores. Absent means "
            "false. Without fair share it changes nothing, but a flavor whose "
            "only hpc: key it is is placed by the plugin, as NonHPC."
        ),
        value={"type": bool, "description": "true or false; case-insensitive."},
    ),
    HpcTopologyValidator(
        name=topology.SPEC_REQUIRED,
        description=(
            "Every VM of one request in one domain of this level (one rack, "
            "one block...), or the request is refused whole with NoValidHost."
        ),
        value={"type": str, "description": _LEVELS},
    ),
    HpcTopologyValidator(
        name=topology.SPEC_PREFERRED,
        description=(
            "The VMs of one request in as few domains of this level as "
            "possible; never a reason to refuse. Must lie inside "
            "hpc:topology_required when both are set."
        ),
        value={"type": str, "description": _LEVELS},
    ),
    HpcTopologyValidator(
        name=topology.SPEC_SEGMENT,
        description=(
            "Split the request into segments of this many VMs, each inside "
            "one domain of hpc:topology_segment_level (which must be set "
            "too). It must divide the request's VM count."
        ),
        value={
            "type": int,
            "min": 1,
            "max": topology.MAX_SEGMENT,
            "description": f"A whole number of VMs from 1 to {topology.MAX_SEGMENT}.",
        },
    ),
    HpcTopologyValidator(
        name=topology.SPEC_SEGMENT_LEVEL,
        description=(
            "The level each segment of hpc:topology_segment fits inside; not "
            "outside hpc:topology_required when both are set."
        ),
        value={"type": str, "description": _LEVELS},
    ),
    NarrowingTraitValidator(
        name=narrowing.IDLE_SPEC,
        description=(
            "Require or forbid the trait hpc-scheduler-agent keeps on the compute "
            "nodes that hold no instance ([hpc_scheduler] idle_trait_interval). "
            "An ExtremeHPC flavor requires it, so that Placement's sample of "
            "candidates holds idle hosts only; only an ExtremeHPC flavor may."
        ),
        value={
            "type": str,
            "enum": [narrowing.REQUIRED, narrowing.FORBIDDEN],
            "description": "required or forbidden.",
        },
    ),
    NarrowingTraitValidator(
        name=narrowing.ROOMY_SPEC,
        description=(
            "Require or forbid the trait hpc-scheduler-agent keeps on every host "
            "of the roomiest racks ([hpc_scheduler] roomy_rack_trait), as many "
            "whole racks as [scheduler] max_placement_results hosts hold. A "
            "SyncHPC flavor requires it, so that Placement offers whole racks "
            "rather than a sample of every rack; only a SyncHPC flavor may."
        ),
        value={
            "type": str,
            "enum": [narrowing.REQUIRED, narrowing.FORBIDDEN],
            "description": "required or forbidden.",
        },
    ),
]


def register() -> list[base.ExtraSpecValidator]:
    return EXTRA_SPEC_VALIDATORS
