"""Plugins by name: one stevedore entry-point namespace and the class they share.

Every kind of plugin the package offers (interference models, planners,
simulated slowdowns, Nova filters and weighers) is a namespace of classes
derived from one base. :class:`Registry` is the one place that lists,
looks up, checks and builds them, so that each kind differs only in its
namespace, its base and the error its callers expect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from stevedore import driver, extension

T = TypeVar("T")


class Registry(Generic[T]):
    """The classes registered under ``namespace`` that derive from ``base``.

    ``kind`` names one plugin in messages ("planner"); ``unknown`` is the
    exception raised for a name not registered or a class of the wrong base.
    """

    def __init__(
        self,
        namespace: str,
        base: type[T],
        kind: str,
        unknown: type[Exception] = LookupError,
    ) -> None:
        self.namespace = namespace
        self.base = base
        self.kind = kind
        self.unknown = unknown

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(extension.ExtensionManager(self.namespace).names())

    def plugin(self, name: str) -> type[T]:
        """The class registered as ``name``."""
        known = self.names()
        if name not in known:
            raise self.unknown(f"unknown {self.kind} {name!r}; known: {', '.join(known)}")
        found = driver.DriverManager(self.namespace, name, invoke_on_load=False).driver
        if not (isinstance(found, type) and issubclass(found, self.base)):
            raise self.unknown(f"{name!r} in {self.namespace} is not a {self.base.__name__}")
        return found

    def load(self, name: str, **params: Any) -> T:
        """The plugin called ``name``, built with ``params``."""
        return self.plugin(name)(**params)

    def classes(self, report: Callable[[str], None]) -> list[type[T]]:
        """Every registered class of the right base, sorted by name.

        One that fails to import, or is not a ``base``, is passed to
        ``report`` as a sentence and left out: a broken plugin must not take
        its host process (nova-scheduler) down with it.
        """

        def failed(manager: extension.ExtensionManager, entry_point: Any, error: Exception) -> None:
            report(f"cannot load {entry_point} from {self.namespace}: {error}")

        manager = extension.ExtensionManager(
            self.namespace, invoke_on_load=False, on_load_failure_callback=failed
        )
        found = []
        for ext in sorted(manager, key=lambda e: e.name):
            if isinstance(ext.plugin, type) and issubclass(ext.plugin, self.base):
                found.append(ext.plugin)
            else:
                report(
                    f"{ext.name} in {self.namespace} is not a {self.base.__name__} subclass; "
                    "ignored"
                )
        return found
