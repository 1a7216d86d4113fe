"""Processes of one run: started in sessions of their own, stopped by pid.

Every service leads its own process group (gunicorn's and nova-scheduler's
workers are in it), so stopping a service signals exactly the processes it
started, and nothing else on the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from devcloud.layout import Run, Service


class ServiceError(RuntimeError):
    """A command or service of the run failed; the message says where to look."""


def tool(name: str) -> str:
    """A console script of this virtual environment."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise ServiceError(f"{name} is not installed in {path.parent}")
    return str(path)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run_command(run: Run, command: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """Run a setup command to the end; its output goes to logs/setup.log."""
    log = run.path / "logs" / "setup.log"
    with log.open("a") as stream:
        stream.write(f"\n$ {' '.join(command)}\n")
        stream.flush()
        done = subprocess.run(
            list(command),
            cwd=run.folder,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
        )
        stream.write(done.stdout)
    if done.returncode:
        raise ServiceError(
            f"{' '.join(command[:3])} failed (exit {done.returncode}); "
            f"see {log}:\n{done.stdout[-2000:]}"
        )
    return done.stdout


def spawn(
    run: Run,
    name: str,
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    url: str | None = None,
) -> Service:
    log = run.path / "logs" / f"{name}.log"
    with log.open("ab") as stream:
        process = subprocess.Popen(
            list(command),
            cwd=run.folder,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    service = Service(name=name, pid=process.pid, command=list(command), log=str(log), url=url)
    run.services.append(service)
    run.save()
    return service


def replace(run: Run, service: Service, env: Mapping[str, str] | None = None) -> Service:
    """Start ``service``'s command again (after a fault killed it)."""
    run.services.remove(service)
    return spawn(run, service.name, service.command, env=env, url=service.url)


def _processes():
    """``(pid, state, parent pid, process group)`` of every process now."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(entry), fields[0], int(fields[1]), int(fields[2])


def _live(state: str) -> bool:
    return state not in ("Z", "X")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return _live(state)


def age(pid: int) -> float:
    """Seconds since process ``pid`` started: its start time (the 22nd field
    of ``/proc/<pid>/stat``, in clock ticks since boot) against the uptime."""
    with open(f"/proc/{pid}/stat") as stat:
        started = int(stat.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as uptime:
        up = float(uptime.read().split()[0])
    return up - started / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """CPU seconds process ``pid`` has used, in user and kernel mode, all its
    threads (the 14th and 15th fields of ``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return bool(group_members(pid))


def group_members(pgid: int) -> list[int]:
    return [pid for pid, state, _, group in _processes() if group == pgid and _live(state)]


def children(pid: int) -> list[int]:
    """Live child processes of ``pid``, whichever of its threads forked them."""
    return sorted(p for p, state, parent, _ in _processes() if parent == pid and _live(state))


def stop(service: Service, timeout: float = 10.0) -> bool:
    """Stop a service's process group: SIGTERM, then SIGKILL. True if it ran."""
    return bool(stop_all([service], timeout))


def stop_all(group: Sequence[Service], timeout: float = 15.0) -> list[Service]:
    """Stop several services at once; the ones that were running."""
    running = [service for service in group if group_alive(service.pid)]
    for service in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(service.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(group_alive(s.pid) for s in running):
        time.sleep(0.2)
    for service in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(service.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(group_alive(s.pid) for s in running):
        time.sleep(0.1)
    return running


def wait_http(service: Service, path: str = "/", timeout: float = 120.0) -> None:
    """Wait until the service answers HTTP at all (any status)."""
    deadline = time.monotonic() + timeout
    while True:
        if not alive(service.pid):
            raise ServiceError(
                f"{service.name} exited while starting; see {service.log}:\n"
                f"{_tail(Path(service.log))}"
            )
        try:
            urllib.request.urlopen(f"{service.url}{path}", timeout=5).close()
            return
        except urllib.error.HTTPError:
            return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise ServiceError(f"{service.name} did not answer at {service.url} in {timeout:.0f} s")
        time.sleep(0.5)


def check_running(service: Service) -> None:
    if not group_alive(service.pid):
        raise ServiceError(f"{service.name} exited; see {service.log}:\n{_tail(Path(service.log))}")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
