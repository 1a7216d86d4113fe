"""``[hpc_scheduler] interference_model`` on the trial cloud.

Under a predictive model (anything but ``cache-score``) nova-scheduler
judges a shared host by the model's predicted slowdowns instead of the
cache thresholds, and refuses a host where a co-runner's profile lacks the
model's features. Before a load, :func:`prepare` therefore imports the
trial's profiles with every model's features (:mod:`devcloud.workload`)
and, for a fitted kind (``pair-forest``, ``runtime-trees``) not stored yet,
fits it with the operator's command, ``hpc-nova-scheduler model fit
--store``, on the trial's own measurements. After the load,
:func:`judge` gives the checker the very rule the filter applies
(:class:`~hpc_nova_scheduler.interference.rule.ModelRule`), with the model
read as nova-scheduler reads it and the profiles from the plugin database.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from devcloud import config, services, workload
from devcloud.layout import Run
from hpc_nova_scheduler import datafiles
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.interference import model_registry, resolver
from hpc_nova_scheduler.interference.rule import ModelRule

Say = Callable[[str], None]
#: The default: seed 003's cache thresholds, no model.
DEFAULT = resolver.NO_MODEL


class ModelError(services.ServiceError):
    """An interference model the trial cannot use; the message names it."""


def is_predictive(name: str) -> bool:
    """Whether ``name`` judges hosts by a model rather than the cache thresholds."""
    return name != DEFAULT


def _hpc(run: Run, *args: str) -> str:
    command = [services.tool("hpc-nova-scheduler"), "--config-file"]
    return services.run_command(run, [*command, str(run.path / "etc/nova.conf"), *args])


def _write_datasets(folder: Path, kind: str) -> tuple[Path, Path]:
    """The profiles and measurements that ``model fit --model kind`` reads."""
    profiles_file = folder / f"{kind}-profiles.yaml"
    dataset = folder / f"{kind}-measured.yaml"
    profiles = workload.profile_records()
    if kind == "pair-forest":
        with dataset.open("w") as stream:
            datafiles.write_interferences(stream, workload.measured_pairs(), "yaml")
    elif kind == "runtime-trees":
        profiles, runs = workload.measured_runs()
        with dataset.open("w") as stream:
            datafiles.write_runs(stream, runs, "yaml")
    else:
        raise ModelError(f"--interference-model {kind}: the trial has no measurements to fit it")
    with profiles_file.open("w") as stream:
        datafiles.write_profiles(stream, profiles, "yaml")
    return profiles_file, dataset


def prepare(run: Run, name: str, say: Say) -> None:
    """Make ``name`` usable by the schedulers before they are told to use it.

    Profiles with the model's features are imported (an upsert), and a
    fitted kind with nothing stored under its name is fitted and stored.
    A model already stored under the name is kept: it may be the operator's.
    Raises ModelError for a name that is neither registered nor stored.
    """
    if not is_predictive(name):
        return
    profiles, _ = workload.write_profile_files(run.path / "etc")
    _hpc(run, "profile", "import", str(profiles))
    database = db_api.Database(run.database_url("hpc"))
    try:
        stamp = database.stored_model_stamp(name)
    finally:
        database.dispose()
    if stamp is not None:
        say(f"interference model {name}: a {stamp[0]} model is stored (generation {stamp[1]})")
        return
    if resolver.is_plain(name):
        say(f"interference model {name}: profiles with its features imported")
        return
    if not model_registry.is_stored_kind(name):
        known = ", ".join(model_registry.names())
        raise ModelError(
            f"--interference-model {name}: not a registered model ({known}) "
            "nor stored in the plugin database"
        )
    profiles_file, dataset = _write_datasets(run.path / "etc", name)
    say(f"hpc-nova-scheduler model fit --model {name} --store {name}")
    output = _hpc(
        run,
        "model",
        "fit",
        "--model",
        name,
        "--store",
        name,
        "--profiles",
        str(profiles_file),
        str(dataset),
    )
    # Its lines, not its table of errors per family.
    lines = [line for line in output.splitlines() if line and line[0] not in "+|"]
    for line in lines[:3]:
        say(f"  {line}")


def judge(run: Run) -> ModelRule:
    """The rule the filter judges shared hosts by: the configured model, read
    as nova-scheduler reads it, with every profile in the plugin database."""
    database = db_api.Database(run.database_url("hpc"))
    try:
        model = resolver.model(run.interference_model, lookup=database.stored_model)
        profiles = {p.name: p for p in database.list_profiles()}
    finally:
        database.dispose()
    return ModelRule(model, config.INTERFERENCE_TOLERANCE, profiles)
