"""Seed 003's interference criteria and the interference table.

``meetsInterferenceCriteria`` of Algorithm 1: the cache scores on a host,
with the new VM, stay within alpha, and within beta when the host runs or
receives SyncHPC (the text's reading, settled in seed-notes). The
interference table forbids co-locating applications recorded as harmful to
each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import SOURCE_PRIORITY, InterferenceRecord

#: Rounding guard so that a total equal to the threshold is accepted even
#: after floating-point sums.
EPSILON = 1e-9


@dataclasses.dataclass(frozen=True, slots=True)
class Thresholds:
    """alpha: any host; beta: hosts that run or receive SyncHPC."""

    alpha: float
    beta: float

    def admits(self, total_after: float, involves_sync: bool) -> bool:
        if total_after > self.alpha + EPSILON:
            return False
        return not (involves_sync and total_after > self.beta + EPSILON)


@dataclasses.dataclass(frozen=True)
class InterferenceTable:
    """Unordered pairs of application names that must not share a host."""

    harmful: frozenset[tuple[str, str]] = frozenset()

    @staticmethod
    def _key(a: str, b: str) -> tuple[str, str]:
        return (a, b) if a <= b else (b, a)

    def conflicts(self, a: str | None, b: str | None) -> bool:
        if a is None or b is None:
            return False
        return self._key(a, b) in self.harmful

    def conflicts_with_any(self, app: str | None, others: Iterable[str | None]) -> bool:
        return app is not None and any(self.conflicts(app, other) for other in others)

    @classmethod
    def from_records(
        cls, records: Iterable[InterferenceRecord], tolerance: float
    ) -> InterferenceTable:
        """Harmful pairs, judging each pair by its most trusted record.

        A measurement overrides an operator's estimate, which overrides a
        model's prediction; a pair is harmful when either side's slowdown in
        that record exceeds ``tolerance`` percent.
        """
        best: dict[tuple[str, str], InterferenceRecord] = {}
        for record in records:
            key = (record.app_a, record.app_b)
            current = best.get(key)
            if current is None or SOURCE_PRIORITY[record.source] < SOURCE_PRIORITY[current.source]:
                best[key] = record
        return cls(frozenset(key for key, record in best.items() if record.is_harmful(tolerance)))


def involves_sync(request_class: AppClass, host_classes: Iterable[AppClass]) -> bool:
    return request_class is AppClass.SYNC_HPC or AppClass.SYNC_HPC in host_classes
