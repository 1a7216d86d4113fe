"""Nova's and Neutron's API applications, for a WSGI server that is not uwsgi.

Both parse ``sys.argv`` as their own command line when the application
loads (uwsgi passes ``--pyargv`` there); under gunicorn that would be
gunicorn's options, which they refuse. Gunicorn calls these factories
(``devcloud.wsgi:nova()``); the configuration comes from
``OS_NOVA_CONFIG_DIR`` / ``OS_NOVA_CONFIG_FILES`` (the paste file first)
and ``OS_NEUTRON_CONFIG_DIR`` / ``OS_NEUTRON_CONFIG_FILES``.
"""

from __future__ import annotations

import sys


def nova():
    sys.argv = sys.argv[:1]
    from nova.wsgi.osapi_compute import application

    return application


def neutron():
    sys.argv = sys.argv[:1]
    # Every model, as neutron-db-manage loads them: without an agent or
    # service plugin nothing else imports the ones whose relationships
    # Neutron's port queries name (Port.port_forwardings).
    import neutron.db.migration.models.head  # noqa: F401
    from sqlalchemy import orm

    # Backrefs exist once the mappers are configured, and Neutron names
    # them before its first query would configure them.
    orm.configure_mappers()
    from neutron.wsgi.api import application

    return application
