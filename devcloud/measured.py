"""``stress --measured``: measured cache pressure in placement and in rebalancing, on a real cloud.

Under ``up --measured`` each compute's guests are measured by its own
``hpc-scheduler-collector``, from counters the cache-pressure ground truth
drives (:mod:`devcloud.counters`). Two scenes, on the first compute (H):

1. **Co-runners.** A SyncHPC VM declared at 10 whose application really
   fills 55 of the 60 that H's cache holds (server metadata
   ``fake_cache_score``) runs on H. Once it is measured, a SyncHPC
   co-runner declared at 10 is asked for H (Nova's requested host,
   microversion 2.74, which the scheduler's filters still judge) and three
   declared at 25 are asked for any host. Under ``declared`` the plugin
   lets the co-runner onto H (10 + 10 within beta); under ``measured`` it
   refuses H (55 + 10 over beta) and none of the three lands there.
2. **Rebalance.** Under ``max``, a SyncHPC VM declared at 40 and one at
   10 share H (50, within beta). The second's application then enters a
   phase of 45 (``phases.json``): the cache fills, the second measures
   about 32, the first counts its declared 40, and H's pressure as the
   agent counts it passes beta. The agent must ask Nova to live-migrate
   one VM within ``measured_rebalance_sustain`` plus one
   ``measured_rebalance_interval`` of H passing beta, and H must come back
   within beta.

3. **Suspects.** An application of three SyncHPC VMs declared (and
   really) 25 lands on two or three hosts of one processor group; an
   antagonist declared 10 that really thrashes the cache at 140 is asked
   onto the host of one that runs there alone (35 declared, within beta).
   Its cache contention slows that VM: its CPI (the fake PMU's,
   :mod:`devcloud.fake_pmu`) rises by the ground truth's slowdown, 1.73
   times its siblings'. ``hpc-nova-scheduler interference suspects`` must
   name it the victim and the antagonist its suspect; then, under ``max``,
   the agent must move the antagonist (a suspect goes first where that
   moves no more VMs), not the victim.

The cloud's ``cache_pressure_source`` is restored at the end.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import secrets
import time
from collections.abc import Callable

from oslo_utils import timeutils

from devcloud import config, control, counters, operator, services, stress
from devcloud.layout import Run
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.demo.measured_driver import WORKLOAD_KEY
from hpc_nova_scheduler.measured import pressure, suspects

Say = Callable[[str], None]

#: The liar: declared 10, really 55 of H's 60.
LIAR_DECLARED, LIAR_TRUE = 10, 55.0
#: The rebalance: a VM declared (and really) 40 beside one of 10 that turns to 45.
STEADY, DRIFTER, DRIFTED = 40, 10, 45.0
#: The suspects: an application of three VMs declared 25, an antagonist
#: declared 10 that really thrashes the cache at 140 (slowing a VM of 25
#: beside it by 1 + (25/60)(105/60) = 1.73, over CPI2's 1.5).
SIBLING, ANTAGONIST_DECLARED, ANTAGONIST_TRUE = 25, 10, 140.0
#: Seconds to wait for a VM to be measured, and for the rebalance to act.
MEASURE_TIMEOUT, REBALANCE_TIMEOUT = 90.0, 180.0
#: Seconds to wait for the records of deleted servers to go.
SETTLE_TIMEOUT = 120.0
#: The stress looks once a second: what it saw first may be a second late.
LOOK = 1.0


@dataclasses.dataclass
class Scene:
    run: Run
    conn: object
    database: db_api.Database
    say: Say
    tag: str = dataclasses.field(default_factory=lambda: f"m{secrets.token_hex(2)}")
    servers: list[str] = dataclasses.field(default_factory=list)

    def boot(
        self,
        name: str,
        flavor: str,
        *,
        host: str | None = None,
        true_score: float | None = None,
        count: int = 1,
    ) -> stress.Settled:
        name = f"{self.tag}-{name}"
        self.conn.compute.create_server(
            name=name,
            image_id=self.run.image_id,
            flavor_id=self.run.flavors[flavor],
            networks="none",
            min_count=count,
            max_count=count,
            metadata={} if true_score is None else {WORKLOAD_KEY: f"{true_score:g}"},
            **({"host": host} if host else {}),
        )
        settled = stress.await_request(
            self.conn, f"^{name}(-[0-9]+)?$", count, time.monotonic() + stress.BUILD_TIMEOUT
        )
        self.servers.extend(settled.servers)
        return settled

    def settle(self) -> None:
        """Wait until the plugin's records are of live servers only: a deleted
        server's record counts on its host until the agent's reconcile sweep
        (``reconcile_interval``) removes it, and would skew a scene."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while time.monotonic() < deadline:
            live = {
                s.id
                for s in stress.read(lambda: list(self.conn.compute.servers(all_projects=True)))
            }
            if {r.instance_uuid for r in self.database.list_running()} <= live:
                return
            time.sleep(LOOK)

    def refused(self) -> str:
        """The plugin's last refusal in nova-scheduler's log, to say why a boot failed."""
        log = self.run.path / "logs" / "nova-scheduler.log"
        try:
            lines = log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        for line in reversed(lines):
            if "hpc-nova-scheduler: no placement" in line or "refusing" in line:
                return " (nova-scheduler: " + line.split("hpc-nova-scheduler: ", 1)[-1] + ")"
        return " (no refusal of the plugin's in nova-scheduler's log)"

    def host_of(self, uuid: str) -> str | None:
        return stress.where(self.run, self.conn.compute.get_server(uuid))

    def delete(self, uuids: list[str]) -> None:
        """Delete ``uuids`` and wait until they are gone."""
        stress.delete_and_wait(self.conn, uuids, stress.BUILD_TIMEOUT)
        self.servers = [uuid for uuid in self.servers if uuid not in uuids]

    @staticmethod
    def settings(source: str) -> pressure.Settings:
        """The cloud's ``measured_*`` options (``up --measured``), under ``source``."""
        return pressure.Settings(
            source=source,
            stale_after=float(config.MEASURED["measured_stale_after"]),
            min_samples=int(config.MEASURED["measured_min_samples"]),
        )

    def scores(self, source: str) -> pressure.Scores:
        """Every VM's score under ``source``, as the cloud's schedulers count it now."""
        reports = {r.host: r for r in self.database.measured_hosts()}
        instances = self.database.measured_instances()
        return pressure.Scores(self.settings(source), reports, instances, timeutils.utcnow())

    def measured(self, uuid: str, at_least: float) -> float | None:
        """Wait until VM ``uuid`` counts with a measured score of ``at_least``; that score."""
        deadline = time.monotonic() + MEASURE_TIMEOUT
        while time.monotonic() < deadline:
            score = self.scores(pressure.MEASURED).measured(uuid)
            if score is not None and score >= at_least:
                return score
            time.sleep(LOOK)
        return None

    def pressure(self, host: str, source: str) -> float:
        """``host``'s cache pressure as the agent's measured rebalance counts it."""
        scores = self.scores(source)
        return sum(
            scores.score(r.instance_uuid, r.cache_score)
            for r in self.database.list_running()
            if r.host == host
        )


def co_runners(scene: Scene, host: str, source: str) -> tuple[str, int, list[str]]:
    """The targeted co-runner's result on ``host``, how many of three untargeted
    landed there, and the servers to delete."""
    targeted = scene.boot(f"co-{source}", "hpc.SyncHPC.10.s", host=host)
    spread = scene.boot(f"any-{source}", "hpc.SyncHPC.25.s", count=3)
    landed = "refused"
    if targeted.result == "active":
        landed = "on H" if scene.host_of(targeted.servers[0]) == host else "elsewhere"
    on_host = sum(1 for uuid in spread.servers if scene.host_of(uuid) == host)
    return landed, on_host, [*targeted.servers, *spread.servers]


def scene_co_runners(scene: Scene, host: str) -> list[str]:
    scene.settle()
    problems = []
    liar = scene.boot("liar", f"hpc.SyncHPC.{LIAR_DECLARED}.s", host=host, true_score=LIAR_TRUE)
    if liar.result != "active" or scene.host_of(liar.servers[0]) != host:
        return [
            f"co-runners: the VM declared {LIAR_DECLARED} did not start on {host}" + scene.refused()
        ]
    score = scene.measured(liar.servers[0], at_least=0.8 * LIAR_TRUE)
    if score is None:
        return [f"co-runners: the VM on {host} was not measured in {MEASURE_TIMEOUT:g} s"]
    scene.say(
        f"co-runners: a SyncHPC VM declared {LIAR_DECLARED} measures {score:.1f} on {host} (H)"
    )
    expected = {pressure.DECLARED: "on H", pressure.MEASURED: "refused"}
    for source in (pressure.DECLARED, pressure.MEASURED):
        if scene.run.cache_source != source:
            control.set_cache_source(scene.run, source, say=scene.say)
        landed, on_host, made = co_runners(scene, host, source)
        scene.say(
            f"co-runners under {source}: SyncHPC 10 asked for H: {landed}; "
            f"3 x SyncHPC 25 for any host: {on_host} on H"
        )
        if landed != expected[source]:
            problems.append(
                f"co-runners: under {source} the co-runner asked for H was {landed}, "
                f"not {expected[source]}"
            )
        if source == pressure.MEASURED and on_host:
            problems.append(f"co-runners: under measured {on_host} SyncHPC VMs landed on H")
        scene.delete(made)
    scene.delete(liar.servers)
    return problems


def _utc(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    return timeutils.normalize_time(timeutils.parse_isotime(text))


def scene_rebalance(scene: Scene, host: str, *, on_time: bool) -> list[str]:
    scene.settle()
    if scene.run.cache_source != pressure.MAX:
        control.set_cache_source(scene.run, pressure.MAX, say=scene.say)
    beta = config.BETA
    sustain = float(config.MEASURED["measured_rebalance_sustain"])
    every = float(config.MEASURED["measured_rebalance_interval"])
    steady = scene.boot("steady", f"hpc.SyncHPC.{STEADY}.s", host=host)
    drifter = scene.boot("drifter", f"hpc.SyncHPC.{DRIFTER}.s", host=host)
    pair = [*steady.servers, *drifter.servers]
    if steady.result != "active" or drifter.result != "active":
        return [
            f"rebalance: the VMs declared {STEADY} and {DRIFTER} did not both start on {host}"
            + scene.refused()
        ]
    if any(scene.measured(uuid, at_least=0.0) is None for uuid in pair):
        return [f"rebalance: the VMs on {host} were not measured in {MEASURE_TIMEOUT:g} s"]
    before = scene.pressure(host, pressure.MAX)
    scene.say(f"rebalance: under max, H holds {STEADY} + {DRIFTER}: pressure {before:.1f}")
    counters.write_phases(scene.run.measured_folder(), {drifter.servers[0]: DRIFTED})
    phased = timeutils.utcnow()
    over_at = back_at = None
    moved: list[str] = []
    deadline = time.monotonic() + REBALANCE_TIMEOUT
    peak = before
    while time.monotonic() < deadline:
        now = timeutils.utcnow()
        total = scene.pressure(host, pressure.MAX)
        peak = max(peak, total)
        if over_at is None and total > beta:
            over_at = now
        moved = [uuid for uuid in pair if scene.host_of(uuid) not in (host, None)]
        if over_at is not None and moved and total <= beta:
            back_at = now
            break
        time.sleep(LOOK)
    counters.write_phases(scene.run.measured_folder(), {})
    if over_at is None:
        return [f"rebalance: H never passed beta after the phase (peak {peak:.1f})"]
    scene.say(
        f"rebalance: the drifter's phase turned to {DRIFTED:g}; H passed beta "
        f"{(over_at - phased).total_seconds():.0f} s later (peak {peak:.1f})"
    )
    if back_at is None:
        return [f"rebalance: H still over beta {REBALANCE_TIMEOUT:g} s after the phase"]
    asked = [
        _utc(m.created_at)
        for uuid in pair
        for m in scene.conn.compute.migrations(instance_uuid=uuid, migration_type="live-migration")
    ]
    asked = sorted(a for a in asked if a is not None)
    bound = sustain + every
    problems = []
    if not asked:
        problems.append("rebalance: H came back within beta with no live migration")
    else:
        waited = (asked[0] - over_at).total_seconds()
        scene.say(
            f"rebalance: {len(asked)} live migration(s), the first asked {waited:.1f} s after H "
            f"passed beta (sustain {sustain:g} + interval {every:g} = {bound:g} s); H within "
            f"beta {(back_at - over_at).total_seconds():.1f} s after passing it"
        )
        if on_time and waited > bound + LOOK:
            problems.append(f"rebalance: the first move came {waited:.1f} s after, over {bound:g}")
        if len(asked) != 1:
            problems.append(f"rebalance: {len(asked)} VMs moved where one was enough")
    scene.delete(pair)
    return problems


def _suspected(scene: Scene, victim: str, antagonist: str) -> bool:
    """Whether CPI2's rule, on the figures now, names ``victim`` and ``antagonist``."""
    settings = scene.settings(pressure.MEASURED)
    fresh = suspects.fresh_figures(
        scene.database.measured_instances(), timeutils.utcnow(), settings
    )
    vms = suspects.measured_vms(
        scene.database.list_running(), fresh, min_samples=settings.min_samples
    )
    return any(
        s.victim.instance_uuid == victim and antagonist in {v.instance_uuid for v in s.suspects}
        for s in suspects.find(vms)
    )


def listed_suspects(run: Run) -> list[dict]:
    """``hpc-nova-scheduler interference suspects --format json``, as an operator runs it."""
    text = services.run_command(
        run,
        [
            services.tool("hpc-nova-scheduler"),
            "--config-file",
            str(run.path / "etc" / "nova.conf"),
            "interference",
            "suspects",
            "--format",
            "json",
        ],
    )
    return json.loads(text)


def scene_suspects(scene: Scene) -> list[str]:
    scene.settle()
    if scene.run.cache_source != pressure.DECLARED:
        control.set_cache_source(scene.run, pressure.DECLARED, say=scene.say)
    application = scene.boot("app", f"hpc.SyncHPC.{SIBLING}.s", count=3)
    if application.result != "active":
        return [
            f"suspects: the application of three VMs did not start: {application.detail}"
            + scene.refused()
        ]
    hosts = {uuid: scene.host_of(uuid) for uuid in application.servers}
    # Two share a host at most (50 within beta): one runs alone.
    victim = min(u for u in application.servers if list(hosts.values()).count(hosts[u]) == 1)
    host = hosts[victim]
    antagonist = scene.boot(
        "antagonist",
        f"hpc.SyncHPC.{ANTAGONIST_DECLARED}.s",
        host=host,
        true_score=ANTAGONIST_TRUE,
    )
    if antagonist.result != "active":
        return [
            f"suspects: the antagonist did not start on {host}: {antagonist.detail}"
            + scene.refused()
        ]
    (loud,) = antagonist.servers
    deadline = time.monotonic() + MEASURE_TIMEOUT
    while time.monotonic() < deadline and not _suspected(scene, victim, loud):
        time.sleep(LOOK)
    listed = listed_suspects(scene.run)
    mine = [entry for entry in listed if entry["victim"] == victim]
    named = [vm["instance"] for entry in mine for vm in entry["suspects"]]
    if not mine or loud not in named:
        return [
            f"suspects: interference suspects does not name {victim} slowed by {loud}: {listed}"
        ]
    (entry,) = mine
    scene.say(
        f"suspects: the application's VM on {host} (with the antagonist) runs at CPI "
        f"{entry['cpi']:.2f}, its siblings at {entry['siblings_cpi']:.2f}; interference "
        f"suspects names the antagonist"
    )
    control.set_cache_source(scene.run, pressure.MAX, say=scene.say)
    deadline = time.monotonic() + REBALANCE_TIMEOUT
    moved: list[str] = []
    while time.monotonic() < deadline and not moved:
        moved = [u for u in [*application.servers, loud] if scene.host_of(u) != hosts.get(u, host)]
        time.sleep(LOOK)
    problems = []
    if moved != [loud]:
        problems.append(f"suspects: under max the agent moved {moved or 'nothing'}, not {loud}")
    else:
        scene.say("suspects: under max the agent live-migrated the antagonist, not the victim")
    scene.delete([*application.servers, loud])
    return problems


def check(run: Run, say: Say, *, on_time: bool = True) -> list[str]:
    """Both scenes; what went wrong, one line each. ``on_time``: a first
    move later than sustain plus one interval is one (the trial's claim; a
    test on a loaded machine reports the delay only)."""
    if not run.measured or not run.plugin:
        return ["--measured needs a cloud up with --measured and the plugin on"]
    original = run.cache_source
    conn = operator.connect(run)
    database = db_api.Database(run.database_url("hpc", as_plugin=False))
    scene = Scene(run, conn, database, say)
    host = config.hosts(run)[0]
    problems: list[str] = []
    try:
        problems += scene_suspects(scene)
        problems += scene_rebalance(scene, host, on_time=on_time)
        problems += scene_co_runners(scene, host)
    finally:
        scene.delete(list(scene.servers))
        if run.cache_source != original:
            control.set_cache_source(run, original, say=say)
        database.dispose()
    return problems
