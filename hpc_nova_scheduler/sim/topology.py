"""Network topology in the replay: the cloud's hierarchy and the jobs' constraints.

``simulate --topology block=4,rack=16`` nests the simulated hosts in levels,
outermost first: each level's number is how many domains of the next level
one of its domains holds, the last level's how many hosts. ``block=4,rack=16``
is racks of 16 hosts and blocks of 4 racks (64 hosts); ``pod=2,block=4,rack=16``
adds pods of 2 blocks. Hosts fill the domains in order (host i is in rack
i // 16 and block i // 64), so only the last domain of a level may be
partly filled. The last level is the rack the placement has always known
and replaces ``--hosts-per-rack``; ``--topology rack=16`` is
``--hosts-per-rack 16``.

``simulate --topology-spec none,preferred=rack,required=rack,seed003`` replays
each topology-aware scenario (``hpc-aware``) once per *configuration*,
as ``--betas`` does per beta:

* ``none``: no constraint; with several levels the engine places by
  BestFit over the nested domains (:mod:`hpc_nova_scheduler.topology.arrangement`).
* ``required=LEVEL`` / ``preferred=LEVEL`` (``+`` joins two, e.g.
  ``required=block+preferred=rack``): every job of several VMs carries
  that ``hpc:topology_required`` / ``hpc:topology_preferred``, as a
  tenant's flavor would. Single-VM jobs carry none (one host is inside
  every domain).
* ``seed003``: no constraint, and the placement sees the racks alone, not
  the levels outside them: seed 003's largest-rack-first ordering on the
  same hosts, whose blocks the replay still counts.

Policies blind to topology (``least-free-pes``, ``mdobp``, ``mdobp-cache``,
...) would ignore every configuration, so they are replayed once.

A job that no domain of its required level can hold even on the idle
cloud would wait forever at the head of the queue: it is refused at
arrival and counted as *topology refused* (beside *never fit*, the jobs no
idle cloud holds at all). Any other job refused for its topology waits
and is retried as every job that does not fit now is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hpc_nova_scheduler.core.profile import ProfileError
from hpc_nova_scheduler.sim.settings import Scenario
from hpc_nova_scheduler.topology import levels as topo

#: The configuration without constraints.
NONE = "none"
#: Seed 003's ordering: the placement sees the racks alone.
SEED003 = "seed003"
#: The keys of a configuration, and the flavor extra specs they stand for.
KEYS = {"required": topo.SPEC_REQUIRED, "preferred": topo.SPEC_PREFERRED}


def parse_topology(text: str) -> tuple[tuple[str, int], ...]:
    """``LEVEL=N,...`` outermost first; raises ValueError saying what is wrong."""
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise ValueError("expected LEVEL=N,... outermost first, e.g. block=4,rack=16")
    found: list[tuple[str, int]] = []
    for item in items:
        name, sep, count = item.partition("=")
        try:
            number = int(count)
        except ValueError:
            number = 0
        if not sep or not name.strip() or number < 1:
            raise ValueError(
                f"{item!r} is not LEVEL=N with N a whole number above 0 "
                "(e.g. block=4,rack=16: 4 racks a block, 16 hosts a rack)"
            )
        found.append((name.strip().lower(), number))
    try:
        topo.parse_levels([name for name, _ in found])
    except topo.TopologyError as error:
        raise ValueError(str(error)) from None
    return tuple(found)


@dataclasses.dataclass(frozen=True)
class Configuration:
    """One way to replay a topology-aware scenario: the jobs' constraints
    (``pairs``: key and level, as given) or seed 003's flat view."""

    label: str
    pairs: tuple[tuple[str, str], ...] = ()
    flat: bool = False

    def spec(self, levels: Sequence[str]) -> topo.TopologySpec:
        """The constraints, checked against the cloud's ``levels`` (ValueError)."""
        try:
            return topo.spec_from_extra_specs(
                {KEYS[key]: level for key, level in self.pairs}, levels
            )
        except ProfileError as error:
            raise ValueError(f"{self.label}: {error}") from None


def parse_configurations(text: str) -> tuple[Configuration, ...]:
    """``none,preferred=rack,required=rack,seed003``; ValueError if malformed."""
    found: list[Configuration] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            raise ValueError(f"expected {NONE}, {SEED003} or KEY=LEVEL items, comma-separated")
        lowered = item.lower()
        if lowered in (NONE, SEED003):
            config = Configuration(lowered, flat=lowered == SEED003)
        else:
            pairs = []
            for part in lowered.split("+"):
                key, sep, level = (piece.strip() for piece in part.partition("="))
                if not sep or key not in KEYS or not level:
                    raise ValueError(
                        f"{item!r}: expected {NONE}, {SEED003}, required=LEVEL or "
                        "preferred=LEVEL (join two with +)"
                    )
                if key in dict(pairs):
                    raise ValueError(f"{item!r}: {key} is given twice")
                pairs.append((key, level))
            config = Configuration("+".join(f"{k}={v}" for k, v in pairs), tuple(pairs))
        if config.label in (c.label for c in found):
            raise ValueError(f"{item!r} is given twice")
        found.append(config)
    return tuple(found)


def variants(
    scenarios: Sequence[Scenario], configurations: Sequence[Configuration], levels: Sequence[str]
) -> list[Scenario]:
    """Each topology-aware scenario once per configuration, named
    ``NAME [LABEL]``; the others once, as they are. ValueError when a
    configuration names a level the cloud does not have."""
    specs = [config.spec(levels) for config in configurations]
    found: list[Scenario] = []
    for scenario in scenarios:
        if not scenario.policy.topology:
            found.append(scenario)
            continue
        found += [
            dataclasses.replace(
                scenario, name=f"{scenario.name} [{config.label}]", topology=spec, flat=config.flat
            )
            for config, spec in zip(configurations, specs, strict=True)
        ]
    return found
