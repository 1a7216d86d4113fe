"""Throw-away plugin databases on SQLite, MariaDB and PostgreSQL.

MariaDB and PostgreSQL come from oslo.db's provisioning, which finds the
servers through ``OS_TEST_DBAPI_ADMIN_CONNECTION`` (the quick-start script
points it at the local servers). A test on a backend that does not answer
skips, unless ``HPC_REQUIRE_DB_BACKENDS`` (set in CI) makes it a failure.
"""

from __future__ import annotations

import os

import fixtures
import testtools
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import provision

from hpc_nova_scheduler.db import api as db_api

SQLITE = "sqlite"
MYSQL = "mysql"
POSTGRESQL = "postgresql"


def backends_required() -> bool:
    return os.environ.get("HPC_REQUIRE_DB_BACKENDS", "").lower() in ("1", "true", "yes")


def unavailable_reason(backend: str) -> str | None:
    """Why ``backend`` cannot be used here, or ``None`` when it can."""
    if backend == SQLITE:
        return None
    try:
        provision.Backend.backend_for_database_type(backend)
    except db_exc.BackendNotAvailable as error:
        return f"{backend} is not available: {error}"
    return None


class DatabaseURL(fixtures.Fixture):
    """A new, empty database on ``backend``; ``url`` says where."""

    def __init__(self, backend: str) -> None:
        super().__init__()
        self.backend = backend
        self.url = ""

    def _setUp(self) -> None:
        if self.backend == SQLITE:
            path = self.useFixture(fixtures.TempDir()).path
            self.url = f"sqlite:///{os.path.join(path, 'hpc.sqlite')}"
            return
        backend = provision.Backend.backend_for_database_type(self.backend)
        ident = provision._random_ident()
        backend.create_named_database(ident)
        self.addCleanup(backend.drop_named_database, ident, conditional=True)
        self.url = backend.provisioned_database_url(ident).render_as_string(hide_password=False)


class DatabaseTestCase(testtools.TestCase):
    """Base of tests that run against one backend, named by ``BACKEND``."""

    BACKEND = SQLITE

    def setUp(self) -> None:
        super().setUp()
        reason = unavailable_reason(self.BACKEND)
        if reason is not None:
            if backends_required():
                self.fail(f"{reason} (HPC_REQUIRE_DB_BACKENDS is set)")
            self.skipTest(reason)
        self.db_url = self.useFixture(DatabaseURL(self.BACKEND)).url
        self.database = db_api.Database(self.db_url)
        self.addCleanup(self.database.dispose)


def for_each_backend(namespace: dict, base: type, name: str) -> None:
    """Define ``<name>SQLite``, ``<name>MariaDB`` and ``<name>PostgreSQL``.

    Call at module level with ``globals()``: each class runs every test of
    ``base`` on its backend.
    """
    for backend, label in ((SQLITE, "SQLite"), (MYSQL, "MariaDB"), (POSTGRESQL, "PostgreSQL")):
        cls_name = f"{name}{label}"
        namespace[cls_name] = type(
            cls_name,
            (base, DatabaseTestCase),
            {"BACKEND": backend, "__module__": namespace["__name__"]},
        )
