"""Interference models by name, through a stevedore namespace.

Operators and other packages add models by registering a class derived
from :class:`~hpc_nova_scheduler.interference.base.InterferenceModel` in
the ``hpc_nova_scheduler.interference_models`` entry-point namespace.
"""

from __future__ import annotations

from typing import Any

from hpc_nova_scheduler.interference.base import InterferenceModel
from hpc_nova_scheduler.plugins import Registry

NAMESPACE = "hpc_nova_scheduler.interference_models"


class UnknownModel(Exception):
    pass


MODELS: Registry[InterferenceModel] = Registry(
    NAMESPACE, InterferenceModel, "interference model", UnknownModel
)


def names() -> list[str]:
    """The registered models, sorted."""
    return MODELS.names()


def load(name: str, **params: Any) -> InterferenceModel:
    """The model called ``name``, built with ``params``."""
    return MODELS.load(name, **params)


def model_class(name: str) -> type[InterferenceModel]:
    """The class registered as ``name``."""
    return MODELS.plugin(name)


def is_stored_kind(name: str) -> bool:
    """Whether models of this kind are fitted and stored (they can ``loads`` bytes)."""
    return name in names() and hasattr(model_class(name), "loads")


def from_stored(kind: str, data: bytes) -> InterferenceModel:
    """A stored model of ``kind`` read back from its bytes."""
    cls = model_class(kind)
    if not hasattr(cls, "loads"):
        raise UnknownModel(f"models of kind {kind!r} are not stored")
    return cls.loads(data)


def from_file(kind: str, path: str) -> InterferenceModel:
    """A model of ``kind`` from the file ``model fit --save`` wrote.

    Raises OSError if the file cannot be read and StoredModelError if it
    holds no such model.
    """
    with open(path, "rb") as stream:
        return from_stored(kind, stream.read())
