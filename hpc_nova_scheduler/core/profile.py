"""Application classes and the per-request application profile (seed 003).

A tenant describes an application through flavor extra specs in the ``hpc``
namespace and, optionally, the ``hpc_app_name`` scheduler hint.  Everything
that reads those values goes through :func:`profile_from_request` so that
nova-api validation, the scheduler and the command line agree on one meaning.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Iterable, Mapping
from typing import Any

SPEC_NAMESPACE = "hpc"
SPEC_APP_CLASS = "hpc:app_class"
SPEC_CACHE_SCORE = "hpc:cache_score"
SPEC_APP_NAME = "hpc:app_name"
#: Fair share (issue 45): the VMs may be taken back at any time, and never
#: count against their project's entitlement. Not part of the profile: it
#: says how the VMs may be treated, not what the application is.
SPEC_PREEMPTIBLE = "hpc:preemptible"
KNOWN_SPECS = (SPEC_APP_CLASS, SPEC_CACHE_SCORE, SPEC_APP_NAME, SPEC_PREEMPTIBLE)
#: The tenant's topology constraints, parsed by :mod:`.topology` against the
#: cloud's levels (required, preferred, segment size, segment level).
TOPOLOGY_SPECS = (
    "hpc:topology_required",
    "hpc:topology_preferred",
    "hpc:topology_segment",
    "hpc:topology_segment_level",
)
HINT_APP_NAME = "hpc_app_name"

#: Longest application name accepted; matches the database column.
APP_NAME_MAX_LENGTH = 255


class ProfileError(ValueError):
    """A profile value is invalid; ``key`` names the offending field."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.reason = message


class AppClass(enum.Enum):
    """Seed 003's application classes, from most to least sensitive."""

    EXTREME_HPC = "ExtremeHPC"
    SYNC_HPC = "SyncHPC"
    ASYNC_HPC = "AsyncHPC"
    NON_HPC = "NonHPC"

    @classmethod
    def parse(cls, text: str, key: str = SPEC_APP_CLASS) -> AppClass:
        """Return the class named by ``text``, ignoring case and spaces."""
        if not isinstance(text, str):
            raise ProfileError(key, f"expected a class name, got {text!r}")
        wanted = text.strip().lower()
        for member in cls:
            if member.value.lower() == wanted:
                return member
        choices = ", ".join(m.value for m in cls)
        raise ProfileError(key, f"unknown application class {text!r}; use one of {choices}")

    @property
    def is_hpc(self) -> bool:
        return self is not AppClass.NON_HPC

    @property
    def needs_dedicated_hosts(self) -> bool:
        return self is AppClass.EXTREME_HPC

    @property
    def topology_aware(self) -> bool:
        """Whether Algorithm 1 fills racks in capacity order for this class."""
        return self in (AppClass.EXTREME_HPC, AppClass.SYNC_HPC)

    @property
    def needs_homogeneity(self) -> bool:
        """NonHPC may span processor groups; every HPC class may not."""
        return self.is_hpc

    def __str__(self) -> str:
        return self.value


#: The largest cache score taken as a measurement: 10^10 last-level cache
#: misses per second, beyond what any server's memory system can serve.
MAX_CACHE_SCORE = 100_000.0


def parse_cache_score(value: Any, key: str = SPEC_CACHE_SCORE) -> float:
    """Parse a cache score (units of 100K LLC misses/s): finite, 0 to MAX_CACHE_SCORE."""
    if isinstance(value, bool):
        raise ProfileError(key, f"expected a number, got {value!r}")
    if isinstance(value, int | float):
        score = float(value)
    elif isinstance(value, str):
        try:
            score = float(value.strip())
        except ValueError:
            raise ProfileError(key, f"{value!r} is not a number") from None
    else:
        raise ProfileError(key, f"expected a number, got {value!r}")
    if math.isnan(score) or math.isinf(score):
        raise ProfileError(key, f"{value!r} is not a finite number")
    if score < 0:
        raise ProfileError(key, f"{value!r} is negative; cache scores are >= 0")
    if score > MAX_CACHE_SCORE:
        raise ProfileError(
            key,
            f"{value!r} is beyond any measurement; cache scores are at most {MAX_CACHE_SCORE:g}",
        )
    return score


def parse_app_name(value: Any, key: str = SPEC_APP_NAME) -> str:
    """Parse an application name: non-empty once stripped, bounded length."""
    if not isinstance(value, str):
        raise ProfileError(key, f"expected a name, got {value!r}")
    name = value.strip()
    if not name:
        raise ProfileError(key, "the application name is empty")
    if len(name) > APP_NAME_MAX_LENGTH:
        raise ProfileError(
            key, f"the application name is longer than {APP_NAME_MAX_LENGTH} characters"
        )
    return name


#: What ``hpc:preemptible`` accepts (case-insensitive).
PREEMPTIBLE_VALUES = {"true": True, "false": False}


def parse_preemptible(value: Any, key: str = SPEC_PREEMPTIBLE) -> bool:
    """Parse ``hpc:preemptible``: ``true`` or ``false``, ignoring case and spaces."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        found = PREEMPTIBLE_VALUES.get(value.strip().lower())
        if found is not None:
            return found
    raise ProfileError(key, f"expected true or false, got {value!r}")


def preemptible_from_specs(extra_specs: Mapping[str, Any] | None) -> bool:
    """Whether the flavor's VMs are preemptible (absent: not)."""
    specs = extra_specs or {}
    return parse_preemptible(specs[SPEC_PREEMPTIBLE]) if SPEC_PREEMPTIBLE in specs else False


@dataclasses.dataclass(frozen=True, slots=True)
class ApplicationProfile:
    """What the scheduler knows of one request's application.

    ``app_name`` ties the request to a row of the profile database; it is
    ``None`` when the tenant gave none.
    """

    app_class: AppClass = AppClass.NON_HPC
    cache_score: float = 0.0
    app_name: str | None = None

    @property
    def is_hpc(self) -> bool:
        return self.app_class.is_hpc

    def to_extra_specs(self) -> dict[str, str]:
        """The flavor extra specs that describe this profile (canonical form)."""
        specs = {
            SPEC_APP_CLASS: self.app_class.value,
            SPEC_CACHE_SCORE: _format_score(self.cache_score),
        }
        if self.app_name is not None:
            specs[SPEC_APP_NAME] = self.app_name
        return specs


def _format_score(score: float) -> str:
    return str(int(score)) if score.is_integer() else repr(score)


def validate_extra_spec(name: str, value: Any) -> None:
    """Validate one ``hpc:`` extra spec; raise :class:`ProfileError` if bad."""
    if name == SPEC_APP_CLASS:
        AppClass.parse(value, key=name)
    elif name == SPEC_CACHE_SCORE:
        parse_cache_score(value, key=name)
    elif name == SPEC_APP_NAME:
        parse_app_name(value, key=name)
    elif name == SPEC_PREEMPTIBLE:
        parse_preemptible(value, key=name)
    else:
        known = ", ".join((*KNOWN_SPECS, *TOPOLOGY_SPECS))
        raise ProfileError(
            name,
            f"unknown extra spec in the '{SPEC_NAMESPACE}' namespace; known: {known}",
        )


def _hint_value(hints: Mapping[str, Any], key: str) -> Any:
    # Nova keeps scheduler hints as lists, whatever the client sent.
    value = hints.get(key)
    if isinstance(value, list | tuple):
        if len(value) != 1:
            raise ProfileError(key, f"expected one value, got {len(value)}")
        value = value[0]
    return value


def profile_from_request(
    extra_specs: Mapping[str, Any] | None,
    scheduler_hints: Mapping[str, Any] | None = None,
) -> ApplicationProfile:
    """Build the request's profile from flavor extra specs and hints.

    Extra specs outside the ``hpc`` namespace are ignored; an unknown key
    inside it is an error, as nova-api would have said when it was set.
    """
    specs = extra_specs or {}
    for name in specs:
        if name.startswith(SPEC_NAMESPACE + ":") and name not in (*KNOWN_SPECS, *TOPOLOGY_SPECS):
            validate_extra_spec(name, specs[name])
    app_class = (
        AppClass.parse(specs[SPEC_APP_CLASS]) if SPEC_APP_CLASS in specs else AppClass.NON_HPC
    )
    cache_score = parse_cache_score(specs[SPEC_CACHE_SCORE]) if SPEC_CACHE_SCORE in specs else 0.0
    app_name = parse_app_name(specs[SPEC_APP_NAME]) if SPEC_APP_NAME in specs else None
    hint = _hint_value(scheduler_hints or {}, HINT_APP_NAME)
    if hint is not None:
        app_name = parse_app_name(hint, key=HINT_APP_NAME)
    return ApplicationProfile(app_class=app_class, cache_score=cache_score, app_name=app_name)


def has_hpc_specs(extra_specs: Iterable[str]) -> bool:
    """Whether any extra spec is in the ``hpc`` namespace."""
    return any(name.startswith(SPEC_NAMESPACE + ":") for name in extra_specs)
