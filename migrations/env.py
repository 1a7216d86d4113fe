"""Alembic environment of the hpc-nova-scheduler plugin database.

Run through ``hpc-nova-scheduler db sync``, which hands over the engine;
offline (SQL script) mode is not supported.
"""

from alembic import context

from hpc_nova_scheduler.db import models

target_metadata = models.Base.metadata


def run_migrations_online() -> None:
    engine = context.config.attributes.get("engine")
    if engine is None:
        raise RuntimeError("run migrations through 'hpc-nova-scheduler db sync'")
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=True,
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():
    raise RuntimeError("offline migrations are not supported")
run_migrations_online()
