"""Seed 000's annealing as a batch planner (``plan --planner annealing``).

A batch (``planners/base.py``) is applications on identical hosts, each
application whole on one host. Seed 000's annealing (:mod:`.annealing`)
then has one node type, the hosts, and one candidate configuration per
application: all of it on one node. A move puts an application on another
host with room; a placement is judged as seed 000 judges it, by the
geometric mean over the applications of their speedup, each run time
predicted by the runtime model (``runtime-trees``) next to the host's
co-runners.

The node type is the host type every application of the batch has a
runtime profile (``solo_runs``) on, the first in sorted order where they
share several. Room is counted in thousandths of a host, each application
taking the larger of its CPU and memory share, so that a placement that
fits both is never refused and one that does not is never made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from hpc_nova_scheduler.core.errors import CannotPlace
from hpc_nova_scheduler.interference.base import MissingFeatures, Tenant
from hpc_nova_scheduler.planners.base import SLACK, Batch, Placement, Planner
from hpc_nova_scheduler.runtime import annealing
from hpc_nova_scheduler.runtime.trees import KIND, RuntimeTrees

#: A host's room, in units of a thousandth of a host.
UNITS = 1000


class NoRuntimeProfiles(CannotPlace):
    """The batch's applications have no runtime profile on a common host type."""


def host_type(batch: Batch) -> str:
    """The host type every application has a runtime profile on (the first sorted)."""
    missing = [app.name for app in batch.apps if not app.profile.solo_runs]
    if len(missing) == len(batch.apps):
        raise NoRuntimeProfiles(
            "annealing predicts run times with seed 000's runtime model, which needs each "
            "application's runtime profile (solo_runs); no application of the batch has one"
        )
    if missing:
        raise NoRuntimeProfiles(
            f"no runtime profile (solo_runs) for {', '.join(sorted(set(missing)))}; "
            "annealing predicts every application's run time"
        )
    common = set.intersection(*(set(app.profile.solo_runs) for app in batch.apps))
    if not common:
        raise NoRuntimeProfiles(
            "the applications' runtime profiles (solo_runs) share no host type to plan on"
        )
    return sorted(common)[0]


def units(cpu: float, mem: float) -> int:
    """An application's room on a host, in thousandths, rounded up."""
    return max(1, math.ceil(max(cpu, mem) * UNITS - SLACK * UNITS))


class AnnealingPlanner(Planner):
    """Seed 000's simulated annealing of the geometric mean speedup."""

    name: ClassVar[str] = "annealing"
    summary: ClassVar[str] = "seed 000: simulated annealing of the predicted geometric mean speedup"

    def __init__(
        self,
        model: RuntimeTrees | None = None,
        runtime_model: str | None = None,
        iterations: int = annealing.ITERATIONS,
        seed: int = 0,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.model = model
        self.runtime_model = runtime_model
        self.iterations = iterations
        self.seed = seed

    def _model(self) -> RuntimeTrees:
        if self.model is not None:
            return self.model
        if self.runtime_model is None:
            raise CannotPlace(
                f"annealing needs a fitted {KIND} model: give --runtime-model FILE "
                f"(written by 'model fit --model {KIND} ... --save FILE')"
            )
        from hpc_nova_scheduler.interference import model_registry
        from hpc_nova_scheduler.interference.stored import StoredModelError

        try:
            found = model_registry.from_file(KIND, self.runtime_model)
        except OSError as error:
            raise CannotPlace(f"{self.runtime_model}: {error.strerror or error}") from None
        except StoredModelError as error:
            raise CannotPlace(f"{self.runtime_model}: {error}") from None
        if not isinstance(found, RuntimeTrees):
            raise CannotPlace(f"{self.runtime_model}: not a {KIND} model")
        self.model = found
        return found

    def place(self, batch: Batch) -> Placement:
        kind = host_type(batch)
        model = self._model()
        profiles = {app.name: app.profile for app in batch.apps}
        try:
            model.check([Tenant.of(profile, 1, kind) for profile in profiles.values()])
        except MissingFeatures as error:
            raise CannotPlace(str(error)) from None
        # One name per application of the batch: two copies are two applications.
        names = [f"{index}:{app.name}" for index, app in enumerate(batch.apps)]
        profile_of = dict(zip(names, (app.profile for app in batch.apps), strict=True))
        node = annealing.NodeType(kind, batch.hosts, UNITS)
        apps = []
        for name, app in zip(names, batch.apps, strict=True):
            need = units(app.cpu, app.mem)
            if need > UNITS:
                raise CannotPlace(f"{app.name} needs more than one host")
            config = annealing.Configuration(((kind, need),), consolidated=True)
            apps.append(annealing.ClusterApplication(name, need, (config,)))
        estimate = _estimator(model, profile_of, kind)
        worst = {app.name: annealing.worst_alone([node], app, estimate) for app in apps}
        search = annealing.Annealing(
            [node], apps, estimate, worst, iterations=self.iterations, seed=self.seed
        )
        try:
            _, layouts, _ = search.run()
        except ValueError as error:
            raise CannotPlace(str(error)) from None
        host_of = []
        for name in names:
            ((_, host),) = layouts[name].keys()
            host_of.append(host)
        return Placement(tuple(host_of))


def _estimator(model: RuntimeTrees, profiles: dict[str, Any], kind: str) -> annealing.Estimator:
    """Run times from the runtime model: one VM group an application, next to
    the host's co-runners; each co-location predicted once."""
    known: dict[tuple[str, tuple[str, ...]], float] = {}

    def estimate(app: str, layout: annealing.Layout, layouts: dict[str, annealing.Layout]) -> float:
        (node,) = layout
        others = tuple(sorted(o for o, theirs in layouts.items() if o != app and node in theirs))
        # The model sums the co-runners' metrics: their order does not matter.
        key = (profiles[app].name, tuple(sorted(profiles[o].name for o in others)))
        if key not in known:
            tenants: Sequence[Tenant] = [
                Tenant.of(profiles[app], 1, kind),
                *(Tenant.of(profiles[o], 1, kind) for o in others),
            ]
            known[key] = model.runtimes([tenants], first_only=True)[0][0]
        return known[key]

    return estimate
