"""Interference models by name, through a stevedore namespace.

Operators and other packages add models by registering a class derived
from :class:`~hpc_nova_scheduler.interference.base.InterferenceModel` in
the ``hpc_nova_scheduler.interference_models`` entry-point namespace.
"""

from __future__ import annotations

from typing import Any

from stevedore import driver, extension

from hpc_nova_scheduler.interference.base import InterferenceModel

NAMESPACE = "hpc_nova_scheduler.interference_models"


class UnknownModel(Exception):
    pass


def names() -> list[str]:
    """The registered models, sorted."""
    return sorted(extension.ExtensionManager(NAMESPACE).names())


def load(name: str, **params: Any) -> InterferenceModel:
    """The model called ``name``, built with ``params``."""
    known = names()
    if name not in known:
        raise UnknownModel(f"unknown interference model {name!r}; known: {', '.join(known)}")
    manager = driver.DriverManager(NAMESPACE, name, invoke_on_load=False)
    model = manager.driver(**params)
    if not isinstance(model, InterferenceModel):
        raise UnknownModel(f"{name!r} in {NAMESPACE} is not an InterferenceModel")
    return model


def model_class(name: str) -> type[InterferenceModel]:
    """The class registered as ``name``."""
    if name not in names():
        raise UnknownModel(f"unknown interference model {name!r}; known: {', '.join(names())}")
    return driver.DriverManager(NAMESPACE, name, invoke_on_load=False).driver


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
