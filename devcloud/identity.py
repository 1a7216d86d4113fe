"""The dev cloud's stand-in for Keystone: service tokens of an agreed form.

The cloud has no Keystone. Its clients send the identity headers Nova's
``keystonecontext`` reads (:func:`devcloud.operator.connect`), which a
service configured through keystoneauth options cannot do: its ``[...]``
group of ``nova.conf`` names an auth plugin, not headers. This paste filter
sits where ``authtoken`` sits in Nova's pipeline and turns an
``X-Auth-Token`` of the form ``devcloud:<user>:<project>:<role>,<role>``
into those headers, as ``authtoken`` would after asking Keystone. A service
then reaches Nova with keystoneauth's ``admin_token`` plugin (``auth_type =
admin_token``, ``endpoint = <nova>/v2.1``, ``token = devcloud:...``), the
way ``hpc-scheduler-agent`` does for reclaim (``[hpc_scheduler_agent]``).

Any other request passes unchanged: the stress clients' headers keep
working. Like the rest of the cloud this trusts whoever reaches 127.0.0.1;
never expose it.

Imported by the Nova API's gunicorn workers (``--pythonpath`` is the source
tree): nothing here imports Nova or the rest of ``devcloud``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

PREFIX = "devcloud"
#: Identity headers ``keystonecontext`` reads (oslo.context's, old names
#: included), as WSGI environ keys: a token replaces all of them.
IDENTITY_KEYS = (
    "HTTP_X_USER_ID",
    "HTTP_X_USER",
    "HTTP_X_USER_NAME",
    "HTTP_X_PROJECT_ID",
    "HTTP_X_PROJECT_NAME",
    "HTTP_X_TENANT_ID",
    "HTTP_X_TENANT",
    "HTTP_X_TENANT_NAME",
    "HTTP_X_ROLES",
    "HTTP_X_ROLE",
    "HTTP_X_IDENTITY_STATUS",
)


def token(user: str, project: str, roles: Iterable[str]) -> str:
    """The token that stands for ``user`` of ``project`` with ``roles``."""
    roles = list(roles)
    for part in (user, project, *roles):
        if not part or ":" in part or "," in part:
            raise ValueError(f"{part!r}: a user, project or role is non-empty, without : or ,")
    return f"{PREFIX}:{user}:{project}:{','.join(roles)}"


def parse(value: str | None) -> tuple[str, str, tuple[str, ...]] | None:
    """(user, project, roles) of a token :func:`token` made; None for any other value."""
    if not value:
        return None
    parts = value.split(":")
    if len(parts) != 4 or parts[0] != PREFIX:
        return None
    _, user, project, roles = parts
    found = tuple(role for role in roles.split(",") if role)
    if not user or not project or not found:
        return None
    return user, project, found


class ServiceTokens:
    """WSGI middleware: identity headers from a service token, before ``keystonecontext``."""

    def __init__(self, application: Callable) -> None:
        self.application = application

    def __call__(self, environ: dict, start_response: Callable):
        found = parse(environ.get("HTTP_X_AUTH_TOKEN"))
        if found is not None:
            user, project, roles = found
            # The token says who calls: headers sent beside it do not.
            for key in IDENTITY_KEYS:
                environ.pop(key, None)
            environ["HTTP_X_USER_ID"] = user
            environ["HTTP_X_PROJECT_ID"] = project
            environ["HTTP_X_ROLES"] = ",".join(roles)
            environ["HTTP_X_IDENTITY_STATUS"] = "Confirmed"
        return self.application(environ, start_response)


def filter_factory(global_conf: dict, **local_conf: str) -> Callable:
    """paste.deploy's entry (``paste.filter_factory = devcloud.identity:filter_factory``)."""
    return ServiceTokens
