"""The all-in-one demo: the plugin's database and profile steps end to end.

It creates a throw-away SQLite plugin database (or uses ``--connection``),
migrates it, loads the example profiles and interference records shipped in
``etc/profiles``, shows what the scheduler will read from them, and shows
how flavor extra specs are turned into, or rejected as, application profiles.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import TextIO

from hpc_nova_scheduler import conf as hpc_conf
from hpc_nova_scheduler import datafiles, resources
from hpc_nova_scheduler.cmd import cli
from hpc_nova_scheduler.core import profile as core_profile
from hpc_nova_scheduler.db import api as db_api

EXAMPLE_FILE = "seed-applications.yaml"

FLAVOR_EXAMPLES = [
    {"hpc:app_class": "extremehpc", "hpc:cache_score": "47", "hpc:app_name": "IS.B.4"},
    {"hpc:app_class": "SyncHPC", "hpc:cache_score": "16", "hpc:app_name": "LU.C.16"},
    {"hw:cpu_policy": "dedicated"},
    {"hpc:app_class": "SuperHPC"},
    {"hpc:cache_score": "-3"},
    {"hpc:cache_score": "nan"},
    {"hpc:app_name": "  "},
    {"hpc:rack": "r1"},
]


def _section(out: TextIO, title: str) -> None:
    out.write(f"\n== {title} ==\n")


def run(args: argparse.Namespace, out: TextIO) -> int:
    workdir = args.keep or tempfile.mkdtemp(prefix="hpc-nova-demo-")
    os.makedirs(workdir, exist_ok=True)
    if not args.conf[hpc_conf.GROUP_NAME].connection:
        url = f"sqlite:///{os.path.join(workdir, 'hpc_scheduler.sqlite')}"
        args.conf.set_override("connection", url, group=hpc_conf.GROUP_NAME)
    database = db_api.Database.from_conf(args.conf)
    example = str(resources.example_profiles_dir() / EXAMPLE_FILE)

    _section(out, "1. Plugin database")
    out.write(f"schema at revision {database.sync()} in {workdir}\n")

    _section(out, f"2. Import {EXAMPLE_FILE}")
    profiles = datafiles.read_profiles(example)
    interferences = datafiles.read_interferences(example)
    out.write(f"profiles: {database.import_profiles(profiles)}\n")
    out.write(f"interference records: {database.import_interferences(interferences)}\n")
    out.write("again (an import is idempotent):\n")
    out.write(f"profiles: {database.import_profiles(profiles)}\n")
    out.write(f"interference records: {database.import_interferences(interferences)}\n")

    _section(out, "3. Application profiles")
    cli.cmd_profile_list(argparse.Namespace(conf=args.conf, app_class=None), out)

    _section(out, "4. Interference records")
    cli.cmd_interference_list(argparse.Namespace(conf=args.conf, app=None), out)

    _section(out, "5. Flavor extra specs as nova-api and nova-scheduler read them")
    for specs in FLAVOR_EXAMPLES:
        try:
            for name, value in specs.items():
                if name.startswith(core_profile.SPEC_NAMESPACE + ":"):
                    core_profile.validate_extra_spec(name, value)
            found = core_profile.profile_from_request(specs)
            verdict = (
                f"accepted -> {found.app_class}, cache score {found.cache_score:g}, "
                f"app {found.app_name or '-'}"
            )
        except core_profile.ProfileError as error:
            verdict = f"HTTP 400: extra spec '{error.key}': {error.reason}"
        out.write(f"{specs}\n    {verdict}\n")

    export = os.path.join(workdir, "profiles-export.csv")
    with open(export, "w", encoding="utf-8", newline="") as stream:
        datafiles.write_profiles(stream, database.list_profiles(), "csv")
    out.write(
        f"\nprofiles exported to {export}; re-importing it: "
        f"{database.import_profiles(datafiles.read_profiles(export))}\n"
    )
    database.dispose()
    return 0
