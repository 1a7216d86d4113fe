"""Six bin-packing baselines: FF, BF, WF and their Decreasing variants.

Seed 004 compares its ILS with First, Best and Worst Fit, each also with
the applications sorted first, without defining them. Here each works on
an application's normalised (cpu, mem) demand, on identical hosts of
capacity (1, 1):

* an application fits a host if both its demands fit in what is left;
* First Fit takes the first open host it fits, in the order hosts were
  opened; Best Fit the one left with the least room, Worst Fit the one
  left with the most, room measured as the sum of both remaining shares
  (ties: the first opened);
* when no open host fits, the next host is opened;
* the Decreasing variants first sort the applications by their larger
  normalised demand, largest first (ties keep the batch's order).

They ignore interference: they are what seed 004's ILS must match on host
count while it lowers interference.
"""

from __future__ import annotations

from typing import ClassVar

from hpc_nova_scheduler.core.errors import CannotPlace
from hpc_nova_scheduler.planners.base import SLACK, Batch, Placement, Planner


class NoRoom(CannotPlace):
    """The batch does not fit on the hosts it may use."""


class _Fit(Planner):
    #: "first", "best" or "worst".
    rule: ClassVar[str]
    decreasing: ClassVar[bool] = False

    def place(self, batch: Batch) -> Placement:
        order = list(range(len(batch.apps)))
        if self.decreasing:
            order.sort(key=lambda a: -max(batch.apps[a].cpu, batch.apps[a].mem))
        host_of = [0] * len(batch.apps)
        loads: list[list[float]] = []
        for a in order:
            app = batch.apps[a]
            fits = [
                h
                for h, (cpu, mem) in enumerate(loads)
                if cpu + app.cpu <= 1.0 + SLACK and mem + app.mem <= 1.0 + SLACK
            ]
            if fits:
                if self.rule == "first":
                    host = fits[0]
                else:
                    sign = 1.0 if self.rule == "best" else -1.0
                    host = min(
                        fits,
                        key=lambda h: sign * (2.0 - loads[h][0] - loads[h][1] - app.cpu - app.mem),
                    )
            elif len(loads) < batch.hosts:
                if app.cpu > 1.0 + SLACK or app.mem > 1.0 + SLACK:
                    raise NoRoom(f"{app.name} needs more than one host")
                loads.append([0.0, 0.0])
                host = len(loads) - 1
            else:
                raise NoRoom(f"{batch.hosts} hosts cannot hold the batch ({self.name})")
            loads[host][0] += app.cpu
            loads[host][1] += app.mem
            host_of[a] = host
        return Placement(tuple(host_of))


class FirstFit(_Fit):
    name = "ff"
    summary = "First Fit on normalised (cpu, mem)"
    rule = "first"


class BestFit(_Fit):
    name = "bf"
    summary = "Best Fit: the open host left with the least room"
    rule = "best"


class WorstFit(_Fit):
    name = "wf"
    summary = "Worst Fit: the open host left with the most room"
    rule = "worst"


class FirstFitDecreasing(FirstFit):
    name = "ffd"
    summary = "First Fit, largest demand first"
    decreasing = True


class BestFitDecreasing(BestFit):
    name = "bfd"
    summary = "Best Fit, largest demand first"
    decreasing = True


class WorstFitDecreasing(WorstFit):
    name = "wfd"
    summary = "Worst Fit, largest demand first"
    decreasing = True


BASELINES = (
    FirstFit,
    BestFit,
    WorstFit,
    FirstFitDecreasing,
    BestFitDecreasing,
    WorstFitDecreasing,
)
