"""What every ``hpc-nova-scheduler`` command shares.

Configuration (the files given with ``--config-file``, by default nova.conf
where oslo.config finds it, so a command sees the same ``[hpc_scheduler]``
options as nova-scheduler), the plugin database, tables on standard output,
and one layer that turns every expected failure into a one-line error and
a non-zero exit status.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Sequence
from typing import TextIO

import prettytable
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
from sqlalchemy import exc as sa_exc

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.core.profile import ProfileError
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import migration

PROG = "hpc-nova-scheduler"
#: A command: parsed arguments and standard output in, exit status out.
Handler = Callable[[argparse.Namespace, TextIO], int]


class CommandError(Exception):
    """A failure to report in one line, without a traceback."""


class UsageError(Exception):
    """An option or argument argparse refused; exit status 2, as argparse's."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(f"{prog}: error: {message}")


class Parser(argparse.ArgumentParser):
    """argparse, with its errors raised instead of printed, so that callers
    (and tests) get them on their own error stream."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(self.prog, message)


def load_conf(args: argparse.Namespace) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    hpc_conf.register_opts(conf)
    logging.register_options(conf)
    # alembic narrates every migration step at INFO; the command says
    # what matters itself.
    logging.set_defaults(
        default_log_levels=[
            *logging.get_default_log_levels(),
            "alembic=WARN",
            "stevedore=WARN",
        ]
    )
    files = args.config_file or cfg.find_config_files(project="nova", prog=PROG)
    try:
        conf(
            args=[],
            project=PROG,
            default_config_files=files,
            default_config_dirs=[args.config_dir] if args.config_dir else [],
        )
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigFileParseError) as error:
        raise CommandError(str(error)) from None
    _check_values(conf)
    if args.connection:
        conf.set_override("connection", args.connection, group=hpc_conf.GROUP_NAME)
    if args.debug:
        conf.set_override("debug", True)
    logging.setup(conf, PROG)
    return conf


def _check_values(conf: cfg.ConfigOpts) -> None:
    """Every ``[hpc_scheduler]`` value parsed now: a bad one is one line naming
    the option and its file, not a traceback from wherever it is first read."""
    for opt in hpc_conf.ALL_OPTS:
        try:
            getattr(conf.hpc_scheduler, opt.dest)
        except (cfg.ConfigFileValueError, ValueError) as error:
            text = str(error)
            where = re.search(r"detail='([^']*)'", text)
            reason = text.split(" is not valid: ", 1)[-1]
            source = f" in {where.group(1)}" if where else ""
            raise CommandError(f"[{hpc_conf.GROUP_NAME}] {opt.name}{source}: {reason}") from None


def database(args: argparse.Namespace, *, require_schema: bool = True) -> db_api.Database:
    try:
        found = db_api.Database.from_conf(args.conf)
    except db_api.DatabaseUnavailable as error:
        raise CommandError(str(error)) from None
    if require_schema:
        current = found.revision()
        head = migration.head_revision()
        if current is None:
            raise CommandError(f"the plugin database has no schema yet; run '{PROG} db sync'")
        if current != head:
            raise CommandError(
                f"the plugin database is at revision {current}, the code needs "
                f"{head}; run '{PROG} db sync'"
            )
    return found


def check_output_path(option: str, path: str, *, folder: bool = False) -> None:
    """Refuse an output path that could not be written without surprise.

    Said before any work, so a mistyped path costs nothing and leaves
    nothing behind: its parent must be an existing folder (a command makes
    at most the last folder of a path, never a tree), and a file must not
    be a folder nor a folder a file.
    """
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        why = "is not a directory" if os.path.exists(parent) else "does not exist"
        raise CommandError(f"{option} {path}: {parent} {why}")
    if folder and os.path.exists(path) and not os.path.isdir(path):
        raise CommandError(f"{option} {path}: not a directory")
    if not folder and os.path.isdir(path):
        raise CommandError(f"{option} {path}: is a directory")


def run_grid(args: argparse.Namespace, fn, cells: Sequence, **options) -> list:
    """Run ``fn`` over ``cells`` on local processes or ``--dask``, as ``sweep.run_grid``.

    An unreachable Dask scheduler is a one-line error naming ``--dask``.
    """
    from hpc_nova_scheduler import sweep

    try:
        return sweep.run_grid(fn, cells, workers=args.workers, dask_address=args.dask, **options)
    except sweep.DaskUnreachable as error:
        raise CommandError(f"--dask: {error}") from None


def report_failed(args: argparse.Namespace, results: Sequence) -> bool:
    """Say which cells failed twice (one line each); whether any did."""
    from hpc_nova_scheduler import sweep

    broken = sweep.failed(results)
    for result in broken:
        args.err.write(f"{PROG}: error: {result.key} failed twice: {result.error}\n")
    return bool(broken)


def table(columns: Sequence[str], rows: Sequence[Sequence[object]], out: TextIO) -> None:
    table = prettytable.PrettyTable(list(columns))
    table.align = "l"
    for row in rows:
        table.add_row(["" if v is None else v for v in row])
    out.write(table.get_string() + "\n")


#: SQLAlchemy's default driver of a database, and the driver installed with us.
DRIVERS = {
    "mysql": "mysql+pymysql",
    "mariadb": "mysql+pymysql",
    "postgresql": "postgresql+psycopg2",
    "postgres": "postgresql+psycopg2",
}


def _cause(error: BaseException) -> str:
    """The driver's own message, on one line: what went wrong, not the SQL."""
    inner: BaseException = getattr(error, "inner_exception", None) or error
    inner = getattr(inner, "orig", None) or inner
    lines = str(inner).strip().splitlines()
    return lines[0] if lines else type(inner).__name__


def _missing_driver(args: argparse.Namespace, error: ImportError) -> str:
    conf = getattr(args, "conf", None)
    url = conf[hpc_conf.GROUP_NAME].connection if conf is not None else None
    scheme = (url or "").partition("://")[0]
    better = DRIVERS.get(scheme)
    if better is None:
        return f"a module the command needs is not installed: {error}"
    return (
        f"the database URL {scheme}://... needs the Python driver {error.name!r}, which is "
        f"not installed; use {better}://... instead (installed with hpc-nova-scheduler)"
    )


def run(args: argparse.Namespace, handler: Handler, out: TextIO, err: TextIO) -> int:
    """Run ``handler``; report an expected failure in one line and return non-zero.

    1 for a failure, 130 when interrupted (Ctrl-C), as shells expect.
    """
    try:
        args.conf = load_conf(args)
        return handler(args, out)
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return 130
    except datafiles.DataFileError as error:
        err.write(f"{PROG}: {len(error.errors)} problem(s), nothing written:\n{error}\n")
    except db_api.DatabaseUnavailable as error:
        # The driver's message runs on (a hint, SQLAlchemy's "Background on this
        # error" link): its first line says what failed.
        lines = str(error).strip().splitlines()
        err.write(f"{PROG}: {lines[0] if lines else type(error).__name__}\n")
    except (CommandError, ProfileError, OSError) as error:
        err.write(f"{PROG}: {error}\n")
    except db_exc.DBConnectionError as error:
        err.write(f"{PROG}: cannot connect to the plugin database: {_cause(error)}\n")
    except (db_exc.DBError, sa_exc.SQLAlchemyError) as error:
        err.write(f"{PROG}: database error: {_cause(error)}\n")
    except ImportError as error:
        err.write(f"{PROG}: {_missing_driver(args, error)}\n")
    return 1


def add_cloud_arguments(parser: argparse.ArgumentParser) -> None:
    """``--os-cloud``: the cloud to read, as python-openstackclient names it."""
    parser.add_argument(
        "--os-cloud",
        metavar="NAME",
        help="cloud from clouds.yaml (default: $OS_CLOUD, else the OS_* variables); "
        "reading every host and server needs an admin account",
    )


def connect(args: argparse.Namespace):
    """An openstacksdk connection to the cloud ``--os-cloud`` names."""
    import openstack
    from keystoneauth1 import exceptions as auth_exceptions
    from openstack import exceptions

    try:
        return openstack.connect(cloud=args.os_cloud)
    except (exceptions.SDKException, auth_exceptions.ClientException) as error:
        raise CommandError(
            f"no cloud to talk to ({error}); give --os-cloud or set the OS_* variables"
        ) from None
