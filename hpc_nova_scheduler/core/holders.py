"""Who holds a host: one rule, read the same way by every path that asks.

A VM the plugin recorded can be in one of several places at once, as the
different sources tell it: the plugin's ``app_running`` row names the host
it was placed on; a live claim promises room to a request still being
placed; Nova's cell database says which compute has claimed the instance
(``instance.host``) or that it is still being built; and each scheduler
worker's host state lists the instances its computes have reported, which
lags behind Nova's database by as long as a compute takes to report.

Every path that needs to know where a recorded VM is (HPC requests,
requests left to Nova, the sweep and ``reconcile``) asks :func:`locate`,
so that "this host is dedicated to that application" has one answer
whichever path asks and however the sources interleave. The rule errs
towards holding: a record is let go only when Nova says the VM is gone.
The rebalancer reads servers through Nova's API, where a server's host is
Nova's instance host (rule 6 without the lag), and the simulator knows
every VM's host exactly (rule 1).

1. A host state lists the instance: it holds that host (Nova's own view).
2. Nova still schedules it (a build request, no cell yet): it holds the
   host it was recorded on.
3. No cell has it, and it is not being scheduled: gone.
4. Deleted (or being deleted): gone.
5. No compute has it (``instance.host`` empty):

   - building: it holds the host it was recorded on (placed, on its way);
   - error: its build failed and Nova cleared its host: gone;
   - any other state (shelved offloaded): it holds no host, and its record
     stays for when it comes back.

6. A compute has it: on the recorded host, it holds that host even though
   no host state has heard yet (the window where a compute has claimed a VM
   and the scheduler's host state still shows the host without it); on
   another host (rebuilt on an alternate, moved), it holds that one and the
   record follows it.
"""

from __future__ import annotations

import dataclasses
import enum


def host_key(host: str, nodename: str | None) -> str:
    """A host's name, with its node where the two differ (as the scheduler names it)."""
    return host if nodename in (None, host) else f"{host}/{nodename}"


class Whereabouts(enum.Enum):
    SEEN = "seen by a host state"
    ON_COMPUTE = "on its compute, not yet in the host state"
    IN_FLIGHT = "placed, not yet on its compute"
    MOVED = "on another host than its record"
    PARKED = "on no host"
    GONE = "gone"


#: The vm_states of an instance that has no host yet but is on its way to one.
_ON_ITS_WAY = ("building",)


@dataclasses.dataclass(frozen=True)
class NovaInstance:
    """An instance as Nova's cell database holds it (the fields the rule reads)."""

    host: str | None
    nodename: str | None
    deleted: bool = False
    vm_state: str | None = None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Where a VM is, and the host key it holds (None when it holds none)."""

    whereabouts: Whereabouts
    key: str | None = None
    #: Its host and node where Nova has it elsewhere than its record (MOVED).
    host: str | None = None
    nodename: str | None = None

    @property
    def gone(self) -> bool:
        return self.whereabouts is Whereabouts.GONE


def locate(
    recorded_host: str | None,
    recorded_node: str | None,
    *,
    seen: str | None,
    instance: NovaInstance | None,
    scheduling: bool,
) -> Verdict:
    """Where one VM is and which host it holds (the rule of this module).

    ``recorded_host``/``recorded_node``: its ``app_running`` row (None for
    a VM with no row). ``seen``: the key of the host state that lists it,
    None if none of those the caller read does. ``instance``: Nova's cell
    database's answer, None when no cell has the instance; it is only read
    when ``seen`` is None. ``scheduling``: Nova's API database still has its
    build request.
    """
    if seen is not None:
        return Verdict(Whereabouts.SEEN, seen)
    recorded = None if recorded_host is None else host_key(recorded_host, recorded_node)
    if scheduling:
        return Verdict(Whereabouts.IN_FLIGHT, recorded)
    if instance is None or instance.deleted or instance.vm_state == "deleted":
        return Verdict(Whereabouts.GONE)
    if not instance.host:
        if instance.vm_state in _ON_ITS_WAY:
            return Verdict(Whereabouts.IN_FLIGHT, recorded)
        if instance.vm_state == "error":
            return Verdict(Whereabouts.GONE)
        return Verdict(Whereabouts.PARKED)
    if instance.host == recorded_host and (
        recorded_node is None or instance.nodename is None or instance.nodename == recorded_node
    ):
        return Verdict(Whereabouts.ON_COMPUTE, recorded)
    return Verdict(
        Whereabouts.MOVED,
        host_key(instance.host, instance.nodename),
        host=instance.host,
        nodename=instance.nodename,
    )
