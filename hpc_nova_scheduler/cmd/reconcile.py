"""``hpc-nova-scheduler reconcile [--dry-run]``: app_running against Nova.

Run it on a host with the scheduler's nova.conf (it reads Nova's API and
cell databases through Nova's own objects), for instance after
nova-scheduler was down while servers were deleted or moved.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TextIO, TypeVar

from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from hpc_nova_scheduler.cmd import common

T = TypeVar("T")


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "reconcile",
        help="repair app_running from Nova's own view of its instances",
        description=(
            "Remove records of instances that are gone, move records of instances "
            "that run elsewhere, and add records of HPC instances that have none."
        ),
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would change, change nothing"
    )
    parser.set_defaults(func=run)


def _load_nova(args: argparse.Namespace) -> None:
    from nova import config as nova_config
    from nova import objects

    files = list(args.config_file or [])
    argv = ["hpc-nova-scheduler"]
    for path in files:
        argv += ["--config-file", path]
    if args.config_dir:
        argv += ["--config-dir", args.config_dir]
    nova_config.parse_args(argv, init_rpc=False)
    # Loading a cell mapping reads [DEFAULT] transport_url, which only RPC's
    # set-up registers: register it, though these commands send no message.
    import oslo_messaging

    oslo_messaging.TransportURL.parse(nova_config.CONF)
    objects.register_all()


def read_cloud(args: argparse.Namespace, read: Callable[[], T]) -> T:
    """``read()`` with Nova configured from the command's files; Nova's and the
    databases' errors become one :class:`~.common.CommandError` line."""
    from nova import exception as nova_exception

    try:
        _load_nova(args)
        return read()
    except (
        db_exc.CantStartEngineError,
        db_exc.DBError,
        sa_exc.SQLAlchemyError,
        nova_exception.NovaException,
    ) as error:
        raise common.CommandError(
            f"cannot read Nova's compute nodes and aggregates: {common._cause(error)}; "
            "pass nova-scheduler's nova.conf with --config-file"
        ) from None


def run(args: argparse.Namespace, out: TextIO) -> int:
    # Nova is imported only here: the other commands run without it.
    from nova import exception as nova_exception

    from hpc_nova_scheduler.agent import reconcile

    database = common.database(args)
    try:
        rows = database.list_running()
        try:
            _load_nova(args)
            changes = reconcile.plan(rows, reconcile.NovaView())
        except (
            db_exc.CantStartEngineError,
            db_exc.DBError,
            sa_exc.SQLAlchemyError,
            nova_exception.NovaException,
        ) as error:
            raise common.CommandError(
                f"cannot read Nova's databases ({error}); pass nova-scheduler's "
                "nova.conf with --config-file"
            ) from None
        for line in changes.describe():
            out.write(f"{line}\n")
        if not changes:
            out.write("app_running matches Nova; nothing to change\n")
            return 0
        counts = (
            f"{len(changes.stale)} stale, {len(changes.moved)} moved, "
            f"{len(changes.missing)} missing"
        )
        if args.dry_run:
            out.write(f"{counts}; nothing changed (--dry-run)\n")
            return 0
        reconcile.apply(database, changes)
        out.write(f"{counts}; app_running repaired\n")
        return 0
    finally:
        database.dispose()
