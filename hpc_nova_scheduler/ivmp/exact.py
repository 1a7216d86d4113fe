"""The exact optimum of seed 004's placement for small batches, by HiGHS.

Set partitioning: every set of applications that fits one host (CPU and
memory within 1, at most the model's n applications) is a column whose
cost is that host's share of f (alpha F / (omega |M|) + (1 - alpha) / |M|,
the ILS's cost on a feasible placement); choose columns covering each
application exactly once, at most |M| of them, at least cost. The columns
are enumerated, so the model prices each host content exactly, whatever
its form; the number of columns grows fast with the batch, and beyond
``max_columns`` the batch is refused as too large rather than solved
partly. HiGHS (``scipy.optimize.milp``) stops at ``time_limit`` seconds
with its best placement, the bound it proved and the gap between them.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from hpc_nova_scheduler.core.errors import CannotPlace
from hpc_nova_scheduler.ivmp.ils import Cost, IlsParameters, tuned
from hpc_nova_scheduler.ivmp.model import IvmpModel
from hpc_nova_scheduler.planners.base import SLACK, Batch, Placement, Planner

MAX_COLUMNS = 200_000
TIME_LIMIT = 60.0


class TooLarge(CannotPlace):
    """The batch has more possible host contents than the solver is given."""


@dataclasses.dataclass(frozen=True)
class Exact:
    #: The best placement found (None: none within the time limit).
    placement: Placement | None
    value: float | None
    #: The lower bound HiGHS proved on f.
    bound: float
    optimal: bool
    columns: int
    seconds: float

    @property
    def gap(self) -> float | None:
        """(value - bound) / value, 0 when optimal."""
        if self.value is None:
            return None
        return 0.0 if self.optimal else max(0.0, (self.value - self.bound) / self.value)


def contents(batch: Batch, limit: int, max_columns: int = MAX_COLUMNS) -> list[tuple[int, ...]]:
    """Every set of applications one host can hold, at most ``limit`` of them."""
    apps = batch.apps
    found: list[tuple[int, ...]] = []

    def grow(start: int, held: tuple[int, ...], cpu: float, mem: float) -> None:
        for a in range(start, len(apps)):
            c, m = cpu + apps[a].cpu, mem + apps[a].mem
            if c > 1.0 + SLACK or m > 1.0 + SLACK:
                continue
            content = (*held, a)
            found.append(content)
            if len(found) > max_columns:
                raise TooLarge(
                    f"more than {max_columns} possible host contents: too large to solve exactly"
                )
            if len(content) < limit:
                grow(a + 1, content, c, m)

    grow(0, (), 0.0, 0.0)
    return found


def solve(
    batch: Batch,
    model: IvmpModel,
    parameters: IlsParameters | None = None,
    time_limit: float = TIME_LIMIT,
    max_columns: int = MAX_COLUMNS,
) -> Exact:
    """The least-cost feasible placement, or HiGHS's best within ``time_limit``."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csc_array

    started = time.perf_counter()
    cost = Cost(batch, model, parameters or IlsParameters())
    columns = contents(batch, getattr(model, "max_apps", 12), max_columns)
    counts, totals, spreads = (np.array(x) for x in zip(*map(cost.sums, columns), strict=True))
    zeros = np.zeros(len(columns))
    prices = cost.parts(counts, totals, spreads, zeros, zeros)
    rows = np.concatenate([np.array(c) for c in columns])
    cols = np.repeat(np.arange(len(columns)), counts.astype(int))
    cover = csc_array((np.ones(len(rows)), (rows, cols)), shape=(len(batch.apps), len(columns)))
    constraints = [
        LinearConstraint(cover, 1, 1),
        LinearConstraint(np.ones((1, len(columns))), 0, batch.hosts),
    ]
    result = milp(
        prices,
        integrality=np.ones(len(columns)),
        bounds=Bounds(0, 1),
        constraints=constraints,
        # HiGHS stops at a 0.01 % relative gap by default: ask for the optimum.
        options={"time_limit": float(time_limit), "mip_rel_gap": 0.0},
    )
    seconds = time.perf_counter() - started
    found_bound = getattr(result, "mip_dual_bound", None)
    bound = float(found_bound) if found_bound is not None else float("nan")
    if result.x is None:
        return Exact(None, None, bound, False, len(columns), seconds)
    chosen = np.flatnonzero(result.x > 0.5)
    host_of = [0] * len(batch.apps)
    for host, column in enumerate(chosen.tolist()):
        for a in columns[column]:
            host_of[a] = host
    optimal = result.status == 0
    value = float(result.fun)
    return Exact(
        Placement(tuple(host_of)),
        value,
        value if optimal else bound,
        optimal,
        len(columns),
        seconds,
    )


class ExactPlanner(Planner):
    """The MILP optimum (or HiGHS's best within the time limit) of small batches."""

    name = "milp"
    summary = "seed 004's objective solved exactly by HiGHS (set partitioning), small batches"

    def __init__(
        self,
        model: IvmpModel | None = None,
        parameters: IlsParameters | None = None,
        time_limit: float = TIME_LIMIT,
        max_columns: int = MAX_COLUMNS,
        **options: Any,
    ) -> None:
        self.parameters = tuned(parameters, options)
        super().__init__(**options)
        if model is None:
            from hpc_nova_scheduler.ivmp.model import IvmpExtended

            model = IvmpExtended()
        self.model = model
        self.time_limit = float(time_limit)
        self.max_columns = int(max_columns)
        self.last: Exact | None = None

    def place(self, batch: Batch) -> Placement:
        self.last = solve(batch, self.model, self.parameters, self.time_limit, self.max_columns)
        if self.last.placement is None:
            raise TooLarge(f"HiGHS found no placement within {self.time_limit:g} s")
        return self.last.placement
