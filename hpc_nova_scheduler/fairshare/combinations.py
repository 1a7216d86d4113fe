"""Task run times beside co-runners: seed 002's combinations on a node.

Seed 002 runs a node's cores in one of three shapes (section 2.3):

* AllCore: every core runs tasks of one application;
* TwoApp: two applications, half the cores each;
* FourApp: four applications, a quarter each.

A shape fits a node when its size divides the node's cores, so a 2-core
node of gene takes AllCore or TwoApp only. :class:`CombinationTable`
answers the run time of a task of application K on platform P beside a
set of applications (K included), from measured or generated means:

1. the set's own mean, when it was measured;
2. otherwise K's solo run time stretched by its normalised co-runner
   affinity on P (the mean slowdown over the sets that were measured),
   for a set with co-runners;
3. otherwise the solo run time: nothing says the co-runners hurt.

A set of one application (AllCore, or a claimant alone on a node) with no
measurement of its own takes rule 2 too: its cores run other tasks of the
same application, which are co-runners as well.

**Unmeasured pairs.** An application with no solo run on a platform has
neutral platform affinity there (1.0, :mod:`.affinity`), so the first level
may give it cores on it. Its solo run time there is then estimated
(:meth:`CombinationTable.estimated_solo`) as the mean of its measured solo
times (over every platform of the table it ran alone on): the reading under
which its EPA there, over those platforms, is exactly the neutral 1.0,
neither faster nor slower than its usual. Such a pair has no co-runner runs
(they need a solo run), so rules 2 and 3 treat the estimate as a measured
solo time: unstretched unless ``corunner_normalised`` names the pair.
:meth:`~CombinationTable.solo_runtime` still answers None for the pair: the
affinity metrics must tell measured from estimated. An application with no
solo run on any platform is an error.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from hpc_nova_scheduler.core.sharing import Platform, SharingError

#: The shapes of a node: how many applications share it, cores split equally.
SHAPES: dict[int, str] = {1: "AllCore", 2: "TwoApp", 4: "FourApp"}


def shape_name(size: int) -> str:
    return SHAPES.get(size, f"{size}App")


class CombinationTable:
    """Mean task run times per (application, platform, co-runner set)."""

    def __init__(
        self,
        solo: Mapping[tuple[str, str], float],
        combinations: Mapping[tuple[str, str, frozenset[str]], float] | None = None,
        corunner_normalised: Mapping[tuple[str, str], float] | None = None,
    ) -> None:
        """``solo``: r(K, P); ``combinations``: (K, P, set with K) -> mean seconds;
        ``corunner_normalised``: (K, P) -> mean slowdown in percent, derived
        from ``combinations`` where not given."""
        for (app, platform), seconds in solo.items():
            if not seconds > 0:
                raise SharingError(f"{app} on {platform}: solo run time must be > 0")
        self.solo = dict(solo)
        # Each application's mean solo time over its measured platforms: the
        # estimate for a platform it never ran alone on.
        by_app: dict[str, list[float]] = {}
        for (app, _), seconds in self.solo.items():
            by_app.setdefault(app, []).append(seconds)
        self._mean_solo = {app: sum(times) / len(times) for app, times in by_app.items()}
        self._combinations = dict(combinations or {})
        for app, platform, apps in self._combinations:
            if app not in apps:
                raise SharingError(f"{app} on {platform}: its co-runner set must contain it")
            if (app, platform) not in self.solo:
                raise SharingError(f"{app} on {platform}: co-runner runs without a solo run")
        self._slowdown = dict(corunner_normalised or {})
        measured: dict[tuple[str, str], list[float]] = {}
        for (app, platform, _), seconds in self._combinations.items():
            measured.setdefault((app, platform), []).append(seconds / self.solo[(app, platform)])
        for pair, ratios in measured.items():
            self._slowdown.setdefault(pair, (sum(ratios) / len(ratios) - 1.0) * 100.0)

    def solo_runtime(self, application: str, platform: str) -> float | None:
        """The measured solo run time; None when ``application`` never ran alone there."""
        return self.solo.get((application, platform))

    def estimated_solo(self, application: str, platform: str) -> float:
        """The measured solo run time, or else the mean of the application's measured ones.

        SharingError when ``application`` has no solo run on any platform.
        """
        measured = self.solo.get((application, platform))
        if measured is not None:
            return measured
        mean = self._mean_solo.get(application)
        if mean is None:
            raise SharingError(f"no solo run time of {application} on any platform")
        return mean

    def runtime(self, application: str, platform: str, applications: frozenset[str]) -> float:
        """Seconds for a task of ``application`` on ``platform`` beside ``applications``."""
        known = self._combinations.get((application, platform, applications))
        if known is not None:
            return known
        solo = self.estimated_solo(application, platform)
        return solo * (1.0 + self._slowdown.get((application, platform), 0.0) / 100.0)

    def combinations(self, platform: Platform, applications: Sequence[str]) -> list[frozenset[str]]:
        """Every AllCore, TwoApp and FourApp set of ``applications`` a node of ``platform`` fits."""
        distinct = sorted(set(applications))
        found: list[frozenset[str]] = []
        for size in SHAPES:
            if size > len(distinct) or platform.cores_per_node % size:
                continue
            found.extend(frozenset(c) for c in itertools.combinations(distinct, size))
        return found

    def items(self) -> list[tuple[tuple[str, str, frozenset[str]], float]]:
        """The measured (or generated) combinations, for reports."""
        return sorted(
            self._combinations.items(), key=lambda kv: (kv[0][0], kv[0][1], sorted(kv[0][2]))
        )
