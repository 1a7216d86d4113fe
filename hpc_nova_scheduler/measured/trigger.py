"""When a host's measured cache pressure has stayed over its limit, and whom to move.

Seed 003 holds a host's cache pressure (the total of its VMs' cache scores)
to alpha, and to beta where a SyncHPC VM runs. Placement keeps new VMs
within those limits; measured scores can take a host over them afterwards,
when an application changes phase. A host over its limit for ``sustain``
seconds in a row is *due*: the fewest VMs whose departure brings it back
within the limit are moved (by live migration, the destination chosen by
nova-scheduler and the plugin, which count measured scores too). A host
acted on is left alone for ``cooldown`` seconds: the moved VMs' figures
need time to settle on their new hosts, and a second move of the same
host on stale figures would chase noise.

Never moved: ExtremeHPC VMs (their host is theirs; seed 003 never shares
it, so their pressure harms no one). Preferred: VMs flagged as suspects
(CPI far above their application's siblings), when moving them takes no
more VMs than moving the loudest.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence


@dataclasses.dataclass(frozen=True)
class Resident:
    """A VM on a host that may be due, with the score it counts with."""

    instance_uuid: str
    score: float
    movable: bool = True
    suspect: bool = False


@dataclasses.dataclass(frozen=True)
class Limits:
    alpha: float
    beta: float

    def of(self, runs_sync: bool) -> float:
        """Seed 003's limit of a host's total (beta binds where SyncHPC runs)."""
        return min(self.alpha, self.beta) if runs_sync else self.alpha


#: Totals this close to the limit are within it: scores subtracted one by
#: one need not land on the limit to the last bit.
ROUNDING = 1e-9


def _taken(order: Iterable[Resident], total: float, limit: float) -> list[Resident] | None:
    within = limit + ROUNDING * max(1.0, abs(total))
    taken = []
    for resident in order:
        if total <= within:
            break
        taken.append(resident)
        total -= resident.score
    return taken if total <= within else None


def fewest_to_move(residents: Sequence[Resident], total: float, limit: float) -> list[Resident]:
    """The fewest movable residents whose departure brings ``total`` within
    ``limit`` (none if it is within already, or if moving every movable one
    would not be enough: then moving some would only spread the pressure).

    The loudest first is the fewest; suspects first where that is as few.
    """
    movable = [r for r in residents if r.movable and r.score > 0]
    loudest = sorted(movable, key=lambda r: (-r.score, r.instance_uuid))
    fewest = _taken(loudest, total, limit)
    if fewest is None:
        return []
    suspects = sorted(movable, key=lambda r: (not r.suspect, -r.score, r.instance_uuid))
    preferred = _taken(suspects, total, limit)
    if preferred is not None and len(preferred) <= len(fewest):
        return preferred
    return fewest


@dataclasses.dataclass
class Watch:
    """Which hosts have been over their limit for ``sustain`` seconds, out of cooldown."""

    sustain: float
    cooldown: float
    over_since: dict[str, datetime.datetime] = dataclasses.field(default_factory=dict)
    acted_at: dict[str, datetime.datetime] = dataclasses.field(default_factory=dict)

    def observe(self, over: Mapping[str, bool], now: datetime.datetime) -> list[str]:
        """Note which hosts are over their limit now (``over``: every host with
        a fresh report); the hosts due, by name. A host not in ``over`` (its
        report went stale) starts its sustain again when it comes back."""
        for host in list(self.over_since):
            if not over.get(host, False):
                del self.over_since[host]
        due = []
        for host, is_over in sorted(over.items()):
            if not is_over:
                continue
            since = self.over_since.setdefault(host, now)
            if (now - since).total_seconds() < self.sustain:
                continue
            acted = self.acted_at.get(host)
            if acted is not None and (now - acted).total_seconds() < self.cooldown:
                continue
            due.append(host)
        return due

    def acted(self, host: str, now: datetime.datetime) -> None:
        """``host`` was acted on: cooldown starts, and so does its sustain."""
        self.acted_at[host] = now
        self.over_since.pop(host, None)
