"""Run applications alone and in pairs, pinned to cores, and measure them.

Alone, each application runs on the first core, ``warmup`` times unmeasured
and then ``repetitions`` times; its profile is the mean run time and the
mean of each counter. In pairs, the two run at once on two cores that share
the last-level cache and the memory bus: each is restarted as soon as it
ends, as load, until the other has finished a run, so that every measured
run had its partner running throughout (seed 001's method). The slowdown of
each is its mean run time in the pair over its mean run time alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

from hpc_nova_scheduler.characterise import counters

#: How often a pair's processes are looked at.
POLL_SECONDS = 0.002


class CharacteriseError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Program:
    """An application to characterise: its profile name and the command that runs it."""

    name: str
    command: tuple[str, ...]


@dataclasses.dataclass
class Alone:
    application: Program
    runtimes: list[float]
    counters: dict[str, float]

    @property
    def runtime(self) -> float:
        return statistics.fmean(self.runtimes)

    @property
    def spread(self) -> float:
        """The population standard deviation of the runs' times."""
        return statistics.pstdev(self.runtimes)


@dataclasses.dataclass
class Pair:
    a: Program
    b: Program
    runtimes_a: list[float]
    runtimes_b: list[float]


class _Process:
    """One run of an application on one core, through :mod:`.launch`.

    Pinned just after the spawn (the affinity passes to the command, which
    has not started yet). Its standard error goes to a temporary file, for
    the message of a failure.
    """

    def __init__(self, app: Program, core: int, perf_output: str | None) -> None:
        argv = list(app.command)
        if perf_output is not None:
            argv = counters.perf_command(perf_output) + argv
        self.app = app
        self.scratch = tempfile.TemporaryDirectory()
        self.result = os.path.join(self.scratch.name, "result.json")
        self.stderr = open(os.path.join(self.scratch.name, "stderr"), "w+b")  # noqa: SIM115
        launcher = [sys.executable, "-m", "hpc_nova_scheduler.characterise.launch"]
        devnull = os.open(os.devnull, os.O_RDWR)
        actions = [
            (os.POSIX_SPAWN_DUP2, devnull, 0),
            (os.POSIX_SPAWN_DUP2, devnull, 1),
            (os.POSIX_SPAWN_DUP2, self.stderr.fileno(), 2),
        ]
        try:
            self.pid = os.posix_spawn(
                sys.executable, [*launcher, self.result, "--", *argv], os.environ,
                file_actions=actions,
            )  # fmt: skip
        finally:
            os.close(devnull)
        self.status: int | None = None
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(self.pid, {core})

    def poll(self, block: bool) -> tuple[float, dict] | None:
        """(wall time, resource usage) once it has ended; None while it runs."""
        pid, status, _ = os.wait4(self.pid, 0 if block else os.WNOHANG)
        if pid == 0:
            return None
        self.status = os.waitstatus_to_exitcode(status)
        try:
            if self.status != 0:
                self.stderr.seek(0)
                lines = self.stderr.read().decode(errors="replace").strip().splitlines()
                detail = f": {lines[-1]}" if lines else ""
                raise CharacteriseError(f"{self.app.name} exited with status {self.status}{detail}")
            with open(self.result) as stream:
                found = json.load(stream)
        finally:
            self.close()
        return found["wall"], found

    def close(self) -> None:
        self.stderr.close()
        self.scratch.cleanup()

    def stop(self) -> None:
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.wait4(self.pid, 0)
            self.status = -signal.SIGKILL
            self.close()


class Characteriser:
    def __init__(
        self,
        cores: tuple[int, int],
        repetitions: int = 3,
        warmup: int = 1,
        *,
        use_perf: bool | None = None,
        resctrl_root=counters.RESCTRL,
        say: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.cores = cores
        self.repetitions = repetitions
        self.warmup = warmup
        self.use_perf = counters.perf_available() if use_perf is None else use_perf
        self.resctrl_root = resctrl_root
        self.say = say
        #: Events perf could not count here, reported once.
        self.unsupported: set[str] = set()
        self._told = False

    def _run_alone(self, app: Program) -> tuple[float, dict[str, float]]:
        with tempfile.TemporaryDirectory() as scratch:
            output = os.path.join(scratch, "perf.csv") if self.use_perf else None
            group = None
            if counters.ResctrlGroup.available(self.resctrl_root):
                group = counters.ResctrlGroup(self.resctrl_root, f"hpc-{os.getpid()}")
                group.create()
            try:
                process = _Process(app, self.cores[0], output)
                if group is not None:
                    group.add(process.pid)
                wall, usage = process.poll(block=True)
                found = counters.rusage_counters(usage, wall)
                if group is not None:
                    found.update(group.read())
            finally:
                if group is not None:
                    group.remove()
            if output is not None and os.path.exists(output):
                with open(output) as stream:
                    perf = counters.parse_perf(stream.read())
                found.update(perf.values)
                self.unsupported.update(perf.unsupported)
        return wall, found

    def alone(self, app: Program) -> Alone:
        for _ in range(self.warmup):
            self._run_alone(app)
        runs = [self._run_alone(app) for _ in range(self.repetitions)]
        self._tell_limits()
        return Alone(app, [w for w, _ in runs], counters.mean_counters([c for _, c in runs]))

    def _tell_limits(self) -> None:
        if self._told:
            return
        self._told = True
        if not self.use_perf:
            self.say("perf is not installed: counters from the kernel's resource usage only")
        elif self.unsupported:
            self.say(
                "hardware counters are not available here (perf: not supported): "
                f"{', '.join(sorted(self.unsupported))}; measured what the kernel gives"
            )
        if not counters.ResctrlGroup.available(self.resctrl_root):
            self.say("resctrl is not mounted: no LLC occupancy or memory bandwidth")

    def pair(self, a: Program, b: Program) -> Pair:
        runs_a, runs_b = [], []
        for index in range(self.warmup + self.repetitions):
            wall_a, wall_b = self._together(a, b)
            if index >= self.warmup:
                runs_a.append(wall_a)
                runs_b.append(wall_b)
        return Pair(a, b, runs_a, runs_b)

    def _together(self, a: Program, b: Program) -> tuple[float, float]:
        apps = (a, b)
        processes = [_Process(app, core, None) for app, core in zip(apps, self.cores, strict=True)]
        walls: list[float | None] = [None, None]
        try:
            while None in walls:
                for i, process in enumerate(processes):
                    ended = process.poll(block=False)
                    if ended is None:
                        continue
                    if walls[i] is None:
                        walls[i] = ended[0]
                    if walls[1 - i] is None:
                        # Load for the partner until it has finished a run.
                        processes[i] = _Process(apps[i], self.cores[i], None)
                time.sleep(POLL_SECONDS)
        finally:
            for process in processes:
                process.stop()
        return walls[0], walls[1]

    def characterise(
        self, apps: Sequence[Program], pairs: bool = True
    ) -> tuple[list[Alone], list[Pair]]:
        alone = []
        for app in apps:
            self.say(f"{app.name}: alone on core {self.cores[0]}")
            alone.append(self.alone(app))
        together = []
        if pairs:
            for a, b in itertools.combinations(apps, 2):
                self.say(f"{a.name} + {b.name}: on cores {self.cores[0]} and {self.cores[1]}")
                together.append(self.pair(a, b))
        return alone, together


def slowdown(pair_runs: Sequence[float], alone: Alone) -> float:
    """Percent longer in the pair than alone (negative: faster)."""
    return 100.0 * (statistics.fmean(pair_runs) / alone.runtime - 1.0)
