"""What the trial cloud runs: applications, their profiles and flavors.

Flavors carry the application class and cache score; the application name
travels as the ``hpc_app_name`` scheduler hint, so that the same flavor
serves applications the interference table tells apart.
"""

from __future__ import annotations

import csv
from pathlib import Path

from devcloud.operator import FlavorSpec, create_flavor
from hpc_nova_scheduler.core.profile import AppClass

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
SIZES = {"s": (1, 512), "m": (2, 1024)}
PLAIN_FLAVORS = {"plain.s": (1, 512), "plain.m": (2, 1024)}


def flavor_name(app_class: AppClass, score: int, size: str) -> str:
    return f"hpc.{app_class.value}.{score}.{size}"


def flavor_specs() -> list[FlavorSpec]:
    specs = [
        FlavorSpec(
            flavor_name(app_class, score, size),
            vcpus,
            ram,
            {"hpc:app_class": app_class.value, "hpc:cache_score": str(score)},
        )
        for app_class in AppClass
        for score in CACHE_SCORES
        for size, (vcpus, ram) in SIZES.items()
    ]
    specs.extend(FlavorSpec(name, vcpus, ram, {}) for name, (vcpus, ram) in PLAIN_FLAVORS.items())
    return specs


def create_flavors(conn) -> dict[str, str]:
    return {spec.name: create_flavor(conn, spec) for spec in flavor_specs()}


def write_profile_files(folder: Path) -> tuple[Path, Path]:
    profiles = folder / "profiles.csv"
    with profiles.open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["name", "app_class", "cache_score"])
        for index, name in enumerate(APPLICATIONS):
            writer.writerow([name, AppClass.ASYNC_HPC.value, CACHE_SCORES[index % 3]])
    interferences = folder / "interferences.csv"
    with interferences.open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["app_a", "app_b", "slowdown_a", "slowdown_b", "source"])
        for a, b, slow_a, slow_b in INTERFERENCES:
            writer.writerow([a, b, slow_a, slow_b, "measured"])
    return profiles, interferences
