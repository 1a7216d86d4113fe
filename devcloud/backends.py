"""The run's databases on MariaDB and its virtual host on RabbitMQ.

Each run gets databases of its own (``hpc<run>_nova`` and so on) and a
RabbitMQ virtual host of its own, so that runs, and CI beside a developer's
run, never share a queue or a table.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
import urllib.parse

import sqlalchemy as sa

from devcloud.layout import Run

#: Where the plugin's account may connect from: this machine, by TCP or socket.
ACCOUNT_HOSTS = ("127.0.0.1", "localhost")


class BackendError(RuntimeError):
    """MariaDB or RabbitMQ is missing or refused what the run needs."""


def _server(run: Run) -> sa.Engine:
    return sa.create_engine(run.mysql, isolation_level="AUTOCOMMIT", pool_pre_ping=True)


def create_databases(run: Run) -> None:
    engine = _server(run)
    try:
        with engine.connect() as connection:
            for role in run.database_roles():
                name = run.database(role)
                connection.execute(
                    sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                )
                run.databases.append(name)
                run.save()
    except sa.exc.OperationalError as error:
        raise BackendError(f"MariaDB at {run.mysql} refused: {error.orig}") from error
    finally:
        engine.dispose()


def create_plugin_account(run: Run) -> None:
    """An account that may use the plugin's database and nothing else."""
    user, password = f"hpc{run.run_id}", secrets.token_hex(12)
    engine = _server(run)
    try:
        with engine.connect() as connection:
            for host in ACCOUNT_HOSTS:
                connection.execute(
                    sa.text(f"CREATE USER '{user}'@'{host}' IDENTIFIED BY '{password}'")
                )
                run.hpc_account = (user, password)
                run.save()
                connection.execute(
                    sa.text(
                        f"GRANT ALL PRIVILEGES ON `{run.database('hpc')}`.* TO '{user}'@'{host}'"
                    )
                )
    finally:
        engine.dispose()


def lock_plugin_account(run: Run, locked: bool) -> int:
    """Lock (or unlock) the plugin's account; a lock also ends its sessions.

    A locked account's connections are refused, as when the database
    server is unreachable for the plugin; the rest of the cloud is not
    touched. Returns how many sessions were ended.
    """
    if not run.hpc_account:
        raise BackendError("this run has no plugin account to lock (made before it existed)")
    user = run.hpc_account[0]
    engine = _server(run)
    ended = 0
    try:
        with engine.connect() as connection:
            for host in ACCOUNT_HOSTS:
                action = "LOCK" if locked else "UNLOCK"
                connection.execute(sa.text(f"ALTER USER '{user}'@'{host}' ACCOUNT {action}"))
            if locked:
                sessions = connection.execute(
                    sa.text("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = :user"),
                    {"user": user},
                ).scalars()
                for session in list(sessions):
                    with contextlib.suppress(sa.exc.OperationalError):
                        connection.execute(sa.text(f"KILL CONNECTION {int(session)}"))
                        ended += 1
    finally:
        engine.dispose()
    return ended


def drop_databases(run: Run) -> list[str]:
    dropped = []
    engine = _server(run)
    try:
        with engine.connect() as connection:
            for name in list(run.databases):
                connection.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
                dropped.append(name)
            if run.hpc_account:
                for host in ACCOUNT_HOSTS:
                    connection.execute(
                        sa.text(f"DROP USER IF EXISTS '{run.hpc_account[0]}'@'{host}'")
                    )
    finally:
        engine.dispose()
    return dropped


def _rabbitmqctl(*args: str) -> str:
    tool = shutil.which("rabbitmqctl")
    if tool is None:
        raise BackendError("rabbitmqctl is not on PATH; the cloud needs a local RabbitMQ")
    done = subprocess.run([tool, "-q", *args], capture_output=True, text=True, timeout=60)
    if done.returncode:
        raise BackendError(f"rabbitmqctl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def create_vhost(run: Run) -> None:
    vhost = f"hpc-{run.run_id}"
    user = urllib.parse.urlsplit(run.rabbit).username or "guest"
    _rabbitmqctl("add_vhost", vhost)
    run.vhost = vhost
    run.save()
    _rabbitmqctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
    for cell in range(2, run.cells + 1):
        name = f"{vhost}-cell{cell}"
        _rabbitmqctl("add_vhost", name)
        run.cell_vhosts.append(name)
        run.save()
        _rabbitmqctl("set_permissions", "-p", name, user, ".*", ".*", ".*")


def delete_vhost(run: Run) -> bool:
    for name in list(run.cell_vhosts):
        _rabbitmqctl("delete_vhost", name)
        run.cell_vhosts.remove(name)
    if not run.vhost:
        return False
    _rabbitmqctl("delete_vhost", run.vhost)
    return True


def rabbitmq_app(action: str) -> None:
    """``rabbitmqctl stop_app`` or ``start_app``: every virtual host at once."""
    _rabbitmqctl(action)
