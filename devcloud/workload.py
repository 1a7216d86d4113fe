"""What the trial cloud runs: applications, their profiles and flavors.

Flavors carry the application class and cache score; the application name
travels as the ``hpc_app_name`` scheduler hint, so that the same flavor
serves applications the interference table tells apart.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
from collections.abc import Iterable, Sequence
from pathlib import Path

from devcloud.operator import FlavorSpec, create_flavor
from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.core.profile import AppClass
from hpc_nova_scheduler.core.records import InterferenceRecord, ProfileRecord
from hpc_nova_scheduler.datafiles import RunRecord
from hpc_nova_scheduler.runtime import shaped

#: Application names of the trial; pairs below are measured harmful or not.
APPLICATIONS = ("LU", "CG", "EP", "IS", "MG", "FT")
#: (app_a, app_b, slowdown_a, slowdown_b) in percent: above the tolerance
#: (``config.INTERFERENCE_TOLERANCE``) a pair is harmful.
INTERFERENCES = (
    ("CG", "MG", 35.0, 30.0),
    ("FT", "IS", 25.0, 40.0),
    ("EP", "LU", 2.0, 3.0),
    ("CG", "EP", 4.0, 1.0),
)
CACHE_SCORES = (10, 25, 40)
#: The extra spec of the topology flavors: every VM of a request in one
#: domain of the level, or none placed.
REQUIRED = "hpc:topology_required"
SIZES = {"s": (1, 512), "m": (2, 1024)}
PLAIN_FLAVORS = {"plain.s": (1, 512), "plain.m": (2, 1024)}


def flavor_name(app_class: AppClass, score: int, size: str, required: str | None = None) -> str:
    """``hpc.SyncHPC.25.m``, and ``hpc.SyncHPC.25.m.rack`` with
    ``hpc:topology_required=rack``."""
    name = f"hpc.{app_class.value}.{score}.{size}"
    return f"{name}.{required}" if required else name


def flavor_specs(levels: Sequence[str] = ("rack",)) -> list[FlavorSpec]:
    """Every class, score and size, and each of them once more per topology
    level with ``hpc:topology_required`` at that level; plain flavors."""
    specs = [
        FlavorSpec(
            flavor_name(app_class, score, size, required),
            vcpus,
            ram,
            {"hpc:app_class": app_class.value, "hpc:cache_score": str(score)}
            | ({REQUIRED: required} if required else {}),
        )
        for required in (None, *levels)
        for app_class in AppClass
        for score in CACHE_SCORES
        for size, (vcpus, ram) in SIZES.items()
    ]
    specs.extend(FlavorSpec(name, vcpus, ram, {}) for name, (vcpus, ram) in PLAIN_FLAVORS.items())
    return specs


def required_levels(flavors: Iterable[str]) -> tuple[str, ...]:
    """The levels some flavor of ``flavors`` requires (a cloud set up before
    the topology flavors existed has none)."""
    found = []
    for name in flavors:
        parts = name.split(".")
        if len(parts) == 5 and parts[0] == "hpc" and parts[4] not in found:
            found.append(parts[4])
    return tuple(found)


def create_flavors(conn, levels: Sequence[str] = ("rack",)) -> dict[str, str]:
    return {spec.name: create_flavor(conn, spec) for spec in flavor_specs(levels)}


def write_profile_files(folder: Path) -> tuple[Path, Path]:
    """The profiles (every model's features included) and the interference table."""
    profiles = folder / "profiles.yaml"
    with profiles.open("w") as stream:
        datafiles.write_profiles(stream, profile_records(), "yaml")
    interferences = folder / "interferences.csv"
    with interferences.open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["app_a", "app_b", "slowdown_a", "slowdown_b", "source"])
        for a, b, slow_a, slow_b in INTERFERENCES:
            writer.writerow([a, b, slow_a, slow_b, "measured"])
    return profiles, interferences


def profile_records() -> list[ProfileRecord]:
    """Each application's profile: its cache score (seed 003), and the
    features of the predictive models (:func:`model_features`)."""
    return [
        ProfileRecord(
            name,
            AppClass.ASYNC_HPC,
            float(CACHE_SCORES[index % 3]),
            **model_features(name),
        )
        for index, name in enumerate(APPLICATIONS)
    ]


# -- what the predictive interference models read ----------------------------
#
# Under ``[hpc_scheduler] interference_model`` other than cache-score, a
# co-runner whose profile lacks the model's features blocks a host, so every
# application of the trial carries every model's features. The values are
# made up, chosen so that some pairs are predicted within the tolerance and
# others not (a stress that shares no host, or every host, checks little).

#: seed 004's access scores (SLLC, DRAM, NET) in [0, 1], for ivmp and ivmp-base.
ACCESS_SCORES = {
    "LU": (0.03, 0.02, 0.02),
    "CG": (0.10, 0.08, 0.01),
    "EP": (0.005, 0.0, 0.0),
    "IS": (0.06, 0.10, 0.05),
    "MG": (0.12, 0.12, 0.01),
    "FT": (0.05, 0.06, 0.08),
}
#: seed 001's counters, for pair-forest: how much an application suffers
#: from a co-runner's pressure (cache_misses) and how much pressure it puts
#: on the others (cache_references), both in [0, 1].
COUNTERS = {
    "LU": (0.3, 0.2),
    "CG": (0.7, 0.5),
    "EP": (0.05, 0.05),
    "IS": (0.5, 0.6),
    "MG": (0.6, 0.7),
    "FT": (0.4, 0.4),
}
#: The slowdown, in percent, of an application of sensitivity 1 next to one of pressure 1.
PAIR_SCALE = 60.0
#: seed 000's runtime-trees: each application behaves as one of the
#: applications of the seeded dataset shaped like seed 000's campaign, and
#: each processor group of the trial as one of its host types.
RUNTIME_AS = {
    "LU": "Zeusmp2",
    "CG": "CG",
    "EP": "WordCountSpark",
    "IS": "GrepSpark",
    "MG": "NAMD",
    "FT": "LAMMPS",
}
HOST_TYPE_AS = {"T1": "xeon", "T2": "epyc"}
RUNTIME_SEED = 3


def model_features(name: str) -> dict:
    """The profile fields of ``name`` that the predictive models read."""
    sllc, dram, net = ACCESS_SCORES[name]
    misses, references = COUNTERS[name]
    shaped_profile = _shaped_profiles()[RUNTIME_AS[name]]
    return {
        "sllc_score": sllc,
        "dram_score": dram,
        "net_score": net,
        "counters": {"cache_misses": misses, "cache_references": references},
        "family": shaped_profile.family,
        "solo_runs": shaped_profile.solo_runs,
    }


def measured_pairs() -> list[InterferenceRecord]:
    """Every pair of applications (each with itself too), as if measured:
    what ``pair-forest`` is fitted on."""
    records = []
    for index, a in enumerate(APPLICATIONS):
        for b in APPLICATIONS[index:]:
            records.append(InterferenceRecord(a, b, _hurt(a, b), _hurt(b, a), "measured"))
    return records


def _hurt(victim: str, other: str) -> float:
    return round(PAIR_SCALE * COUNTERS[victim][0] * COUNTERS[other][1], 3)


def measured_runs() -> tuple[list[ProfileRecord], list[RunRecord]]:
    """The shaped dataset's profiles and training runs, its applications and
    host types renamed to the trial's: what ``runtime-trees`` is fitted on.
    Its synthetic co-runners keep their names (and profiles)."""
    data = shaped.dataset(seed=RUNTIME_SEED)
    names = {shaped_name: ours for ours, shaped_name in RUNTIME_AS.items()}
    synthetic = [_renamed_profile(p) for p in data.profiles if p.name not in shaped.APPLICATIONS]
    profiles = profile_records() + synthetic
    runs = [
        dataclasses.replace(
            run,
            application=names.get(run.application, run.application),
            host_type=HOST_TYPE_AS[run.host_type],
            co_runners=tuple((names.get(n, n), vms) for n, vms in run.co_runners),
        )
        for run in data.training
        if run.application in names
        and all(n in names or n not in shaped.APPLICATIONS for n, _ in run.co_runners)
    ]
    return profiles, runs


@functools.cache
def _shaped_profiles() -> dict[str, ProfileRecord]:
    return {p.name: _renamed_profile(p) for p in shaped.dataset(seed=RUNTIME_SEED).profiles}


def _renamed_profile(profile: ProfileRecord) -> ProfileRecord:
    """``profile`` with its solo runs under the trial's host types."""
    runs = {HOST_TYPE_AS[t]: run for t, run in profile.solo_runs.items()}
    return dataclasses.replace(profile, solo_runs=runs)
