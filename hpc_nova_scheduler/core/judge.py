"""What core asks of a judge of shared hosts, and what it tells of a refusal.

Seed 003 admits a host by its cache scores (:mod:`.criteria`); the research
systems admit it by an interference model instead. Core plans with either
without knowing which model it is: it hands a :class:`HostJudge` the
applications that would run on each candidate host, and the judge answers
with a reason for every host it refuses. The systems implement the
protocol (:class:`hpc_nova_scheduler.interference.rule.ModelRule`); core
imports none of them.

A :class:`Refusal` names the host, the rule that refused it and the value
against that rule's limit, for the operator's log. It is a small tuple,
formatted only when a log line is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

from hpc_nova_scheduler.core.cluster import RunningVM

#: One application on a host: its name (None: unknown) and its VMs there.
Resident = tuple[str | None, int]


class HostJudge(Protocol):
    """Whether applications may share a host, and if not, why."""

    @property
    def name(self) -> str:
        """The judge's name in refusals and logs (the model's name)."""

    def refusal(self, residents: Sequence[Resident], host_type: str | None = None) -> str | None:
        """Why these applications may not share a host of ``host_type``; None if they may."""

    def refusals(
        self,
        hosts: Sequence[Sequence[Resident]],
        host_types: Sequence[str | None] | None = None,
    ) -> list[str | None]:
        """:meth:`refusal` of several hosts at once, in their order."""


class Refusal(NamedTuple):
    """Why a host was left out of a plan: the rule, and its value against the limit."""

    host: str
    #: The rule, as the operator's summary counts it: "alpha", "ExtremeHPC", ...
    rule: str
    #: The value against its limit, e.g. "cache 118 > alpha 100".
    detail: str

    def __str__(self) -> str:
        return f"{self.host}: {self.detail}"


def residents(
    vms: Iterable[RunningVM], application_id: str, app_name: str | None, adding: int
) -> list[Resident]:
    """The applications on a host once ``adding`` VMs of the request join ``vms``.

    VMs are grouped by application; the request's own VMs already there
    count with the new ones. A VM without an application id is an
    application of its own.
    """
    counts: dict[str, int] = {}
    names: dict[str, str | None] = {}
    for index, vm in enumerate(vms):
        key = vm.application_id or f"vm:{vm.uuid}:{index}"
        counts[key] = counts.get(key, 0) + 1
        names.setdefault(key, vm.app_name)
    counts[application_id] = counts.get(application_id, 0) + adding
    names[application_id] = app_name
    return [(names[key], count) for key, count in counts.items() if count > 0]


def summary(refusals: Iterable[Refusal]) -> str:
    """How many hosts each rule refused, most first: "alpha 8, ExtremeHPC 3"."""
    counts: dict[str, int] = {}
    for refusal in refusals:
        counts[refusal.rule] = counts.get(refusal.rule, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{rule} {count}" for rule, count in ranked)
