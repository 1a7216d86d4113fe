"""Schema migrations of the plugin database, run through alembic.

The migration scripts live in the top-level ``migrations/`` folder of the
source tree and are installed under ``share/hpc-nova-scheduler/migrations``.
"""

from __future__ import annotations

import os
import threading

from alembic import command as alembic_command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from hpc_nova_scheduler import resources

# alembic's commands keep the migration they run in module state (the
# context and op proxies, the loaded env.py): two at once in one process,
# even on two databases, mix up their engines, fail with KeyError('script')
# or crash the interpreter. Scheduler threads that open the fallback copy
# together therefore take turns here.
_running = threading.RLock()


def _forget_running() -> None:
    # Held by another thread of the parent as a worker forks, it would stay
    # held in the child, where that thread does not exist.
    global _running
    _running = threading.RLock()


os.register_at_fork(after_in_child=_forget_running)


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(resources.migrations_dir()))
    # env.py runs the migrations on this engine instead of opening its own.
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema up to ``revision`` (the newest by default)."""
    with _running:
        alembic_command.upgrade(alembic_config(engine), revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the schema back to ``revision`` (tests; operators restore backups)."""
    with _running:
        alembic_command.downgrade(alembic_config(engine), revision)


def current_revision(engine: Engine) -> str | None:
    """The schema's revision, or ``None`` for a database never synced."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str | None:
    script = ScriptDirectory(str(resources.migrations_dir()))
    return script.get_current_head()
