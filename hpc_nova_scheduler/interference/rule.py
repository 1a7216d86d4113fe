"""Admission by an interference model, host by host.

A host may take VMs of an application only if every application that
would then run there, the new one and the ones already there, keeps its
predicted slowdown within the tolerance. The planner asks this for every
candidate host before it packs (as it asks the cache thresholds under seed
003's rule), and the claim step asks it again with what runs on the host
by then.

The model needs a profile for every application on the host. A co-runner
it cannot judge (no application name, no stored profile, or a profile
without the features the model reads) makes the host inadmissible: a
guess could put an application next to one that slows it past the
tolerance. An application alone on a host is admitted without asking the
model: nothing there can interfere with it.

:class:`ModelRule` is core's :class:`~hpc_nova_scheduler.core.judge.HostJudge`:
the planner and the claim step ask it through that protocol alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from hpc_nova_scheduler.core.judge import Resident
from hpc_nova_scheduler.core.records import ProfileRecord
from hpc_nova_scheduler.interference.base import (
    InterferenceModel,
    MissingFeatures,
    ModelNotReady,
    Tenant,
)


@dataclasses.dataclass(frozen=True)
class ModelRule:
    model: InterferenceModel
    #: Slowdown, in percent, that no application may be predicted to exceed.
    tolerance: float
    #: Profiles by application name: the request's and its possible co-runners'.
    profiles: Mapping[str, ProfileRecord]

    @property
    def name(self) -> str:
        """The model's name, which refusals and the operator's log carry."""
        return self.model.name

    def refusal(self, residents: Sequence[Resident], host_type: str | None = None) -> str | None:
        """Why these applications may not share a host of ``host_type``; None if they may."""
        return self.refusals([residents], [host_type])[0]

    def refusals(
        self,
        hosts: Sequence[Sequence[Resident]],
        host_types: Sequence[str | None] | None = None,
    ) -> list[str | None]:
        """:meth:`refusal` of several hosts, the model asked once for all of them."""
        types = list(host_types) if host_types is not None else [None] * len(hosts)
        # Hosts alike (the same applications, VMs and type) get one answer:
        # an application spread over a cloud leaves many such hosts.
        first: dict[tuple, int] = {}
        alike: list[int] = []
        for index, found in enumerate(hosts):
            alike.append(first.setdefault((types[index], tuple(found)), index))
        distinct = sorted(first.values())
        answers = self._distinct_refusals(
            [hosts[i] for i in distinct], [types[i] for i in distinct]
        )
        by_index = dict(zip(distinct, answers, strict=True))
        return [by_index[alike[index]] for index in range(len(hosts))]

    def _distinct_refusals(
        self, hosts: Sequence[Sequence[Resident]], types: Sequence[str | None]
    ) -> list[str | None]:
        reasons: list[str | None] = [None] * len(hosts)
        judged: list[tuple[int, list[Tenant]]] = []
        for index, found in enumerate(hosts):
            if len(found) < 2:
                continue
            tenants = self._tenants(found, types[index])
            if isinstance(tenants, str):
                reasons[index] = tenants
            else:
                judged.append((index, tenants))
        try:
            predictions = self.model.predict_many([tenants for _, tenants in judged])
        except (MissingFeatures, ModelNotReady) as error:
            if len(judged) == 1:
                reasons[judged[0][0]] = str(error)
                return reasons
            # Which host lacks what: ask each alone, so each refusal says its own reason.
            for index, tenants in judged:
                reasons[index] = self.refusal([(t.name, t.vms) for t in tenants], types[index])
            return reasons
        for (index, tenants), prediction in zip(judged, predictions, strict=True):
            if not self.model.judge(prediction, tenants, self.tolerance):
                reasons[index] = self._why(tenants, prediction)
        return reasons

    def _tenants(self, found: Sequence[Resident], host_type: str | None) -> list[Tenant] | str:
        model = self.model.name
        tenants = []
        for name, vms in found:
            if name is None:
                return f"a co-runner without an application name: model {model} cannot judge it"
            profile = self.profiles.get(name)
            if profile is None:
                return f"no profile of {name}: model {model} cannot judge it"
            tenants.append(Tenant.of(profile, vms, host_type))
        return tenants

    def _why(self, tenants: Sequence[Tenant], prediction) -> str:
        worst = max(range(len(tenants)), key=lambda i: prediction.slowdowns[i])
        if prediction.worst <= self.tolerance:
            return f"model {self.model.name} does not admit {' + '.join(t.name for t in tenants)}"
        # As Nova's filters say it: the value, its limit, and who judged.
        return (
            f"predicted slowdown {prediction.slowdowns[worst]:.1f}% of {tenants[worst].name} "
            f"next to {' + '.join(t.name for i, t in enumerate(tenants) if i != worst)} "
            f"> tolerance {self.tolerance:g}% ({self.model.name})"
        )
