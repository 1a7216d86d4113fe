"""Which interference model a name means, for every command and nova-scheduler.

One rule, wherever a model is named (``[hpc_scheduler] interference_model``,
``simulate --admission-model`` and ``--interference``, ``model --model``):

- ``cache-score`` as the admission model means no model: seed 003's alpha
  and beta thresholds judge the hosts (:func:`admission_model`);
- a registered model that is not fitted is built from its class;
- a fitted kind is read from the file ``model fit --save`` wrote, when one
  is given, or else from the plugin database, stored under the name;
- a registered fitted kind with neither is the kind unfitted, which refuses
  every shared host and says why (or, where a fitted model is required,
  :class:`NoFittedModel`).

The database is reached through a lookup function, so that this module
stays free of Nova and of the database layer: nova-scheduler adds its own
caching by the stored model's stamp on top.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from hpc_nova_scheduler.interference import model_registry
from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.interference.cache_score import CacheScoreModel

#: The admission model that means "no model": seed 003's cache thresholds.
NO_MODEL = CacheScoreModel.name


class StoredRecord(Protocol):
    """A fitted model as the plugin database stores it."""

    kind: str
    data: bytes


#: Finds the model stored under a name in the plugin database; None: none.
Lookup = Callable[[str], StoredRecord | None]


class NoFittedModel(model_registry.UnknownModel):
    """A fitted kind was named, without its fitted model."""


def is_plain(name: str) -> bool:
    """Whether ``name`` is a registered model that is built, not fitted."""
    return name in model_registry.names() and not model_registry.is_stored_kind(name)


def from_record(record: StoredRecord, kind: str | None = None) -> InterferenceModel:
    """The fitted model ``record`` holds; ``kind``, if given, is the kind it must be.

    Raises UnknownModel for another kind and StoredModelError for bytes
    that are no such model.
    """
    if kind is not None and record.kind != kind:
        raise model_registry.UnknownModel(f"a {record.kind} model, not {kind}")
    return model_registry.from_stored(record.kind, record.data)


def model(
    name: str,
    *,
    params: Mapping[str, Any] | None = None,
    path: str | None = None,
    lookup: Lookup | None = None,
    fitted: bool = False,
) -> InterferenceModel:
    """The model ``name`` means (see the module's rule).

    ``params`` build a model that is not fitted; ``path`` is the file a
    fitted kind is read from; ``lookup`` finds it in the plugin database;
    ``fitted`` refuses a fitted kind found in neither (:class:`NoFittedModel`).
    Raises UnknownModel for a name that means nothing, OSError for a file
    that cannot be read, and StoredModelError for one that holds no such
    model.
    """
    if is_plain(name):
        return model_registry.load(name, **(params or {}))
    if path is not None:
        model_registry.model_class(name)  # an unknown name is told before the file is read
        return model_registry.from_file(name, path)
    record = lookup(name) if lookup is not None else None
    if record is not None:
        return from_record(record)
    if name in model_registry.names():
        if fitted:
            raise NoFittedModel(f"{name} is a fitted model")
        return model_registry.load(name, **(params or {}))
    known = ", ".join(model_registry.names())
    if lookup is None:
        raise model_registry.UnknownModel(f"unknown interference model {name!r}; known: {known}")
    raise model_registry.UnknownModel(
        f"no interference model {name!r}: not registered ({known}) "
        "nor stored in the plugin database"
    )


def admission_model(name: str, **where: Any) -> InterferenceModel | None:
    """:func:`model`, or None for :data:`NO_MODEL` (the cache thresholds)."""
    if name == NO_MODEL:
        return None
    return model(name, **where)
