"""Faults a stress run can inject mid-burst, and what they did.

Each fault starts a third of the way into the load, from a thread of its
own, and records when it began and ended, so that the report can say what
happened to the requests in flight meanwhile.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable

from devcloud import backends, config, control, services
from devcloud.layout import Run
from hpc_nova_scheduler.agent.allocator import CHECK_SECONDS, LEASE_SECONDS
from hpc_nova_scheduler.db import api as db_api

Say = Callable[[str], None]
#: Seconds the plugin database refuses connections (the issue's 20 s).
PLUGIN_DATABASE_OUTAGE = 20.0


@dataclasses.dataclass
class Window:
    name: str
    started: float = 0.0
    ended: float = 0.0
    detail: str = ""
    #: What the fault left broken (the stress run fails on any).
    problems: list[str] = dataclasses.field(default_factory=list)


def _wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return False


def kill_scheduler_worker(run: Run, window: Window, rng: random.Random, say: Say) -> None:
    """kill -9 one nova-scheduler worker; its launcher starts another."""
    (scheduler,) = run.services_named("nova-scheduler")
    workers = services.children(scheduler.pid)
    if not workers:
        raise services.ServiceError("nova-scheduler has no worker processes to kill")
    victim = rng.choice(workers)
    window.started = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    say(f"fault: killed nova-scheduler worker {victim} (kill -9)")
    respawned = _wait_for(
        lambda: len([p for p in services.children(scheduler.pid) if p != victim]) >= len(workers),
        60,
    )
    if not respawned:
        services.stop(scheduler)
        services.replace(run, scheduler)
        window.detail = f"worker {victim} killed; its launcher did not replace it: restarted"
    else:
        now = sorted(set(services.children(scheduler.pid)) - set(workers))
        window.detail = f"worker {victim} killed; the launcher started {now}"
    window.ended = time.monotonic()
    say(f"fault: {window.detail}")


def kill_compute(run: Run, window: Window, rng: random.Random, say: Say) -> None:
    """kill -9 one nova-compute, and start it again 20 s later."""
    computes = run.services_named("nova-compute")
    victim = rng.choice(computes)
    window.started = time.monotonic()
    os.killpg(victim.pid, signal.SIGKILL)
    say(f"fault: killed {victim.name} (kill -9)")
    time.sleep(20)
    services.replace(run, victim)
    window.ended = time.monotonic()
    window.detail = f"{victim.name} killed, restarted after 20 s"
    say(f"fault: {window.detail}")


def restart_rabbitmq(run: Run, window: Window, rng: random.Random, say: Say) -> None:
    """Stop and start RabbitMQ's application (every virtual host)."""
    window.started = time.monotonic()
    backends.rabbitmq_app("stop_app")
    say("fault: RabbitMQ stopped")
    time.sleep(5)
    backends.rabbitmq_app("start_app")
    subprocess.run(["rabbitmqctl", "-q", "await_startup"], timeout=120, check=False)
    window.ended = time.monotonic()
    window.detail = "RabbitMQ stopped for 5 s and started again"
    say(f"fault: {window.detail}")


def refuse_plugin_database(run: Run, window: Window, rng: random.Random, say: Say) -> None:
    """The plugin's database refuses connections for 20 s.

    Its account is locked and its sessions ended: every scheduler worker
    loses the database at once, as when the database server goes away,
    while Nova's own databases stay up.
    """
    window.started = time.monotonic()
    ended = backends.lock_plugin_account(run, True)
    say(f"fault: plugin database account locked, {ended} session(s) ended")
    try:
        time.sleep(PLUGIN_DATABASE_OUTAGE)
    finally:
        backends.lock_plugin_account(run, False)
    window.ended = time.monotonic()
    window.detail = (
        f"plugin database refused connections for {PLUGIN_DATABASE_OUTAGE:.0f} s "
        f"(database_failure_policy = {run.policy})"
    )
    say(f"fault: {window.detail}")


def _utc() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def kill_agent(run: Run, window: Window, rng: random.Random, say: Say) -> None:
    """kill -9 hpc-scheduler-agent during a run of its tasks, start it again.

    Killed at a random moment of its allocator's cycle, once it has recorded
    a run: with the load's placements its allocator runs at every look, so
    the kill lands in or between runs of its tasks, never on an idle agent.
    The new agent must write a fair-share generation (under ``--fairness``)
    and sweep again within one interval of each; the killed one never let
    the lease go, so the new one takes it once it expires.
    """
    (agent,) = run.services_named(control.AGENT)
    # The operator's account: the plugin's may be locked by the plugin-db fault.
    database = db_api.Database(run.database_url("hpc", as_plugin=False))
    try:
        if not _wait_for(lambda: bool(database.task_runs()), 60):
            raise services.ServiceError("hpc-scheduler-agent recorded no run in 60 s")
        time.sleep(rng.uniform(0.0, CHECK_SECONDS))
        window.started = time.monotonic()
        os.killpg(agent.pid, signal.SIGKILL)
        say(f"fault: killed {control.AGENT} (pid {agent.pid}, kill -9 of its process group)")
        restarted = services.replace(run, agent)
        since, restarted_at = _utc(), time.monotonic()
        say(f"fault: {control.AGENT} started again (pid {restarted.pid})")
        fair = run.fairness != "none"
        interval = config.fairshare_interval(run) if fair else run.reconcile_interval
        new_name = f":{restarted.pid}"

        def swept() -> bool:
            return any(
                r.task == "sweep" and r.agent.endswith(new_name) and r.finished_at >= since
                for r in database.task_runs()
            )

        def generation() -> bool:
            latest = database.latest_generation()
            return latest is not None and latest.created_at >= since

        checks = [("sweep", swept, run.reconcile_interval + 30)]
        if fair:
            # The lease of the killed agent expires first, then a run is due.
            checks.append(("fair-share generation", generation, interval + LEASE_SECONDS))
        found = []
        for label, check, bound in checks:
            if _wait_for(check, bound):
                found.append(f"{label} fresh {time.monotonic() - restarted_at:.0f} s after")
            else:
                problem = f"no {label} within {bound:.0f} s of the agent's restart"
                window.problems.append(problem)
                found.append(problem)
        if fair:
            latest = database.latest_generation()
            say(
                f"fault: fair-share generation {latest.number} of {latest.created_at:%H:%M:%S} "
                f"(UTC), fairshare_interval {config.fairshare_interval(run)} s"
            )
    finally:
        database.dispose()
    window.ended = time.monotonic()
    window.detail = f"{control.AGENT} killed (kill -9) and restarted; " + "; ".join(found)
    say(f"fault: {window.detail}")


FAULTS: dict[str, Callable[[Run, Window, random.Random, Say], None]] = {
    "plugin-db": refuse_plugin_database,
    "scheduler-worker": kill_scheduler_worker,
    "compute": kill_compute,
    "rabbitmq": restart_rabbitmq,
    "agent-kill": kill_agent,
}
