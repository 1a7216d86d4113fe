"""Flavor extra spec validators for the ``hpc`` namespace.

Nova loads this module through the ``nova.api.extra_spec_validators`` entry
point and calls :func:`register`.  From microversion 2.86 nova-api then
rejects a bad ``hpc:`` value with HTTP 400 when the spec is set, and rejects
any ``hpc:`` key not registered here, naming the key.
"""

from __future__ import annotations

from nova import exception
from nova.api.validation.extra_specs import base

from hpc_nova_scheduler.core import profile


class HpcExtraSpecValidator(base.ExtraSpecValidator):
    """Validates through :mod:`hpc_nova_scheduler.core.profile`.

    Nova's stock validator knows only int, bool and regex-matched strings;
    the cache score is a float and the class is case-insensitive, so the
    check is delegated to the same parser the scheduler uses.
    """

    def validate(self, name: str, value: str) -> None:
        try:
            profile.validate_extra_spec(name, value)
        except profile.ProfileError as error:
            raise exception.ValidationError(
                f"Validation failed; extra spec '{error.key}': {error.reason}."
            ) from None


_CLASSES = ", ".join(c.value for c in profile.AppClass)

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
]


def register() -> list[base.ExtraSpecValidator]:
    return EXTRA_SPEC_VALIDATORS
