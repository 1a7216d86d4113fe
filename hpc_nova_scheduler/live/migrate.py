"""Carrying out a migration plan through the compute API, one move at a time.

Each server of a move is migrated to the move's named host, live (the
default; block migration chosen by Nova) or cold (migrate, then confirm
the resize). The destination is not forced: Nova's scheduler, with the
plugin's filters, checks the named host like any other request, so a move
the cloud no longer allows is refused there rather than done. Before a
server moves, its host and state must still be what the plan assumed;
after, it must be on the target in the state it had, and the move is not
over until Nova has closed its migration record and Placement no longer
holds the source host for it: the server turns ACTIVE on the target before
the source compute frees its share, and the next move may need that room.
The first failure stops everything. Moves made before it stay made; the
servers of the failing move that already reached its target are sent back
to its source, so that an application is not left split across hosts, and
the error says what happened, what went back and what could not.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from hpc_nova_scheduler.live import view
from hpc_nova_scheduler.planners.rebalance import Move

#: Server statuses a move can rest in once its task state clears.
SETTLED_STATUSES = ("ACTIVE", "SHUTOFF", "VERIFY_RESIZE", "ERROR")
#: The migration record's status when a move is over, by kind of migration.
FINISHED = {"live": "completed", "cold": "confirmed"}
#: Migration statuses that end a move without it having been made.
FAILED = ("error", "failed", "cancelled")


class MoveFailed(Exception):
    """A move could not be made; ``done`` moves were made before it."""

    def __init__(self, done: int, move: Move, server: str, reason: str) -> None:
        self.done = done
        self.move = move
        self.server = server
        super().__init__(
            f"move {done + 1} ({move.unit.name} from {move.source} to {move.target}), "
            f"server {server}: {reason}"
        )


def _newest(migrations: Sequence):
    return max(migrations, key=lambda m: str(m.created_at or ""))


@dataclasses.dataclass(frozen=True)
class Mover:
    """How to move: ``migration`` is live or cold; seconds to wait for one server."""

    conn: object
    migration: str = "live"
    timeout: float = 600.0
    poll: float = 1.0

    def __post_init__(self) -> None:
        if self.migration not in ("live", "cold"):
            raise ValueError(f"migration must be live or cold, not {self.migration!r}")

    def _wait(self, deadline: float, poll: Callable[[], object], describe: Callable[[], str]):
        """``poll()`` until it returns something true; past ``deadline``, say why."""
        while True:
            result = poll()
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(f"{describe()} after {self.timeout:g} s")
            time.sleep(self.poll)

    def _settled(self, server_id: str, deadline: float, passing: tuple[str, ...] = ()):
        """The server once no task runs on it and its status is not in ``passing``."""
        seen = {}

        def poll():
            server = seen["server"] = self.conn.compute.get_server(server_id)
            settled = server.status in SETTLED_STATUSES and server.status not in passing
            return server if settled and not server.task_state else None

        return self._wait(
            deadline,
            poll,
            lambda: f"still {seen['server'].task_state or seen['server'].status}",
        )

    def _migrations(self, server_id: str) -> list:
        return list(self.conn.compute.migrations(instance_uuid=server_id))

    def _closed(self, server_id: str, known: set, deadline: float) -> None:
        """Wait until this move's migration record is finished and its allocation freed."""
        wanted = FINISHED[self.migration]
        seen = {"status": "not listed"}

        def finished():
            fresh = [m for m in self._migrations(server_id) if m.id not in known]
            if not fresh:
                return None
            migration = _newest(fresh)
            seen["status"] = migration.status
            if migration.status in FAILED:
                raise RuntimeError(f"its migration ended {migration.status}")
            return migration if migration.status == wanted else None

        migration = self._wait(
            deadline, finished, lambda: f"its migration is still {seen['status']}"
        )

        if not migration.uuid:
            raise RuntimeError("Nova does not name its migration: compute API 2.59 is needed")

        def freed() -> bool:
            # Nova marks the migration finished, then frees the source host's share.
            body = view.placement_json(self.conn, f"/allocations/{migration.uuid}")
            return not body.get("allocations")

        self._wait(
            deadline,
            freed,
            lambda: f"Placement still holds {migration.source_compute} for its migration",
        )

    def _last_migration_error(self, server_id: str) -> str:
        try:
            migrations = self._migrations(server_id)
        except Exception:  # the reason is a courtesy: never hide the failure itself
            return ""
        if not migrations:
            return ""
        return f" (its last migration is {_newest(migrations).status})"

    def move_server(self, server_id: str, source: str, target: str) -> None:
        """Move one server from ``source`` to ``target`` or raise RuntimeError."""
        server = self.conn.compute.get_server(server_id)
        allowed = ("ACTIVE",) if self.migration == "live" else ("ACTIVE", "SHUTOFF")
        if server.compute_host != source:
            raise RuntimeError(f"it is on {server.compute_host} now, not {source}")
        if server.status not in allowed or server.task_state:
            raise RuntimeError(f"it is {server.task_state or server.status}")
        status = server.status
        known = {m.id for m in self._migrations(server_id)}
        deadline = time.monotonic() + self.timeout
        if self.migration == "live":
            self.conn.compute.live_migrate_server(server, host=target, block_migration="auto")
        else:
            self.conn.compute.migrate_server(server, host=target)
        server = self._settled(server_id, deadline)
        if self.migration == "cold" and server.status == "VERIFY_RESIZE":
            self.conn.compute.confirm_server_resize(server)
            # Nova answers the confirmation at once and the source compute
            # finishes it later, with no task state in between.
            server = self._settled(server_id, deadline, passing=("VERIFY_RESIZE",))
        if server.compute_host != target:
            raise RuntimeError(
                f"Nova left it on {server.compute_host}{self._last_migration_error(server_id)}"
            )
        if server.status != status:
            raise RuntimeError(f"it is {server.status} on {target}, it was {status}")
        self._closed(server_id, known, deadline)


def failures() -> tuple[type[Exception], ...]:
    """The errors of a move that stop a plan rather than the program."""
    from keystoneauth1 import exceptions as auth_exceptions
    from openstack import exceptions

    return (
        RuntimeError,
        TimeoutError,
        exceptions.SDKException,
        auth_exceptions.ClientException,
    )


def _move_back(mover: Mover, move: Move, moved: Sequence[str], failing: str) -> str:
    """Return the servers of a move that failed half way to its source.

    An application's VMs are moved one at a time; one refused after others
    went would leave a tightly coupled application split across hosts. The
    failing server itself may have reached the target too (its migration
    record failed, or it was too slow to be waited for): it goes back with
    the others if it rests there, and is named if it is still moving.
    """
    back = list(moved)
    note = ""
    try:
        server = mover.conn.compute.get_server(failing)
        if server.task_state:
            note = f"; server {failing} is still {server.task_state}"
        elif server.compute_host == move.target:
            back.append(failing)
    except failures() as error:
        note = f"; server {failing} could not be read ({error})"
    if not back:
        return note
    stranded = []
    for server_id in reversed(back):
        try:
            mover.move_server(server_id, move.target, move.source)
        except failures() as error:
            stranded.append(f"{server_id} ({error})")
    if not stranded:
        return f"; the {len(back)} of its servers on {move.target} went back to {move.source}{note}"
    return f"; the application is split: still on {move.target}: {', '.join(stranded)}{note}"


def carry_out(
    mover: Mover,
    moves: Sequence[Move],
    *,
    after_each: Callable[[int, Move], None] | None = None,
) -> int:
    """Make ``moves`` in order; return how many were made, or raise MoveFailed.

    A failure half way through a move sends the servers that reached its
    target back to its source (see :func:`_move_back`).
    """
    stopping = failures()
    for done, move in enumerate(moves):
        moved: list[str] = []
        for server_id in move.unit.servers:
            try:
                mover.move_server(server_id, move.source, move.target)
            except stopping as error:
                reason = str(error) + _move_back(mover, move, moved, server_id)
                raise MoveFailed(done, move, server_id, reason) from None
            moved.append(server_id)
        if after_each is not None:
            after_each(done + 1, move)
    return len(moves)
