"""Validated records of application profiles and pairwise interference.

These are the plugin's data in memory: the profile files, the command line
and the database layer all exchange them, and each is checked once, here.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Mapping
from typing import Any

from hpc_nova_scheduler.core.profile import (
    AppClass,
    ProfileError,
    parse_app_name,
    parse_cache_score,
)

SOURCES = ("measured", "predicted", "operator")
#: Preference when several sources describe one pair: a measurement beats
#: an operator's estimate, which beats a model's prediction.
SOURCE_PRIORITY = {"measured": 0, "operator": 1, "predicted": 2}


#: The largest slowdown taken as a measurement, in percent: a thousand times
#: slower than alone.
MAX_SLOWDOWN = 100_000.0


def parse_float(
    value: Any,
    key: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
) -> float:
    """Parse a finite number within optional bounds; raise ProfileError."""
    if isinstance(value, bool) or value is None:
        raise ProfileError(key, f"expected a number, got {value!r}")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise ProfileError(key, f"{value!r} is not a number") from None
    if not math.isfinite(number):
        raise ProfileError(key, f"{value!r} is not a finite number")
    if minimum is not None:
        if exclusive_minimum and number <= minimum:
            raise ProfileError(key, f"{value!r} must be greater than {minimum:g}")
        if not exclusive_minimum and number < minimum:
            raise ProfileError(key, f"{value!r} must be at least {minimum:g}")
    if maximum is not None and number > maximum:
        raise ProfileError(key, f"{value!r} must be at most {maximum:g}")
    return number


def _optional(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _optional_float(value: Any, key: str, **bounds: Any) -> float | None:
    return None if _optional(value) else parse_float(value, key, **bounds)


def parse_timestamp(value: Any, key: str) -> datetime.datetime | None:
    """Parse an ISO 8601 date or time into naive UTC, whole seconds.

    Whole seconds because MariaDB's DATETIME keeps no fraction: a value must
    read back exactly as written for re-imports to be no-ops.
    """
    if _optional(value):
        return None
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, datetime.date):
        moment = datetime.datetime.combine(value, datetime.time())
    elif isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            raise ProfileError(key, f"{value!r} is not an ISO 8601 date or time") from None
    else:
        raise ProfileError(key, f"{value!r} is not an ISO 8601 date or time")
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.UTC).replace(tzinfo=None)
    return moment.replace(microsecond=0)


#: The longest host type name: a processor group, as ``hpc:cpu_group`` names it.
HOST_TYPE_MAX_LENGTH = 255


@dataclasses.dataclass(frozen=True)
class SoloRun:
    """An application measured alone on one host type (seed 000): its run
    time in seconds and the mean of each metric over its VMs (for example
    ``cpu_user`` and ``cpu_idle`` in percent, ``net_send``, ``net_recv``,
    ``disk_read`` and ``disk_write`` in MB/s)."""

    runtime: float
    metrics: Mapping[str, float] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_mapping(cls, data: Any, key: str) -> SoloRun:
        if not isinstance(data, Mapping):
            raise ProfileError(key, "expected a mapping with runtime and metrics")
        unknown = sorted(set(data) - {"runtime", "metrics"})
        if unknown:
            raise ProfileError(f"{key}.{unknown[0]}", "unknown field; known: runtime, metrics")
        metrics_in = data.get("metrics") or {}
        if not isinstance(metrics_in, Mapping):
            raise ProfileError(f"{key}.metrics", "expected a mapping of metric name to mean value")
        metrics = {}
        for metric, value in metrics_in.items():
            name = parse_app_name(str(metric), key=f"{key}.metrics")
            metrics[name] = parse_float(value, f"{key}.metrics.{name}")
        runtime = parse_float(
            data.get("runtime"), f"{key}.runtime", minimum=0.0, exclusive_minimum=True
        )
        return cls(runtime, dict(sorted(metrics.items())))

    def to_mapping(self) -> dict[str, Any]:
        return {"runtime": self.runtime, "metrics": dict(self.metrics)}


def parse_host_type(value: Any, key: str = "host_type") -> str:
    """A host type (processor group) name: non-empty once stripped, bounded."""
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(key, f"expected a host type name, got {value!r}")
    name = value.strip()
    if len(name) > HOST_TYPE_MAX_LENGTH:
        raise ProfileError(key, f"longer than {HOST_TYPE_MAX_LENGTH} characters")
    return name


def parse_solo_runs(value: Any, key: str = "solo_runs") -> dict[str, SoloRun]:
    """Solo runs by host type, from ``{TYPE: {runtime: S, metrics: {...}}}``."""
    if _optional(value):
        return {}
    if not isinstance(value, Mapping):
        raise ProfileError(key, "expected a mapping of host type to its solo run")
    runs = {}
    for host_type, run in value.items():
        name = parse_host_type(str(host_type), key=key)
        runs[name] = SoloRun.from_mapping(run, f"{key}.{name}")
    return dict(sorted(runs.items()))


@dataclasses.dataclass(frozen=True)
class ProfileRecord:
    """One application's profile, as stored in ``app_profiles``."""

    name: str
    app_class: AppClass = AppClass.NON_HPC
    cache_score: float = 0.0
    sllc_score: float | None = None
    dram_score: float | None = None
    net_score: float | None = None
    solo_runtime: float | None = None
    counters: Mapping[str, float] = dataclasses.field(default_factory=dict)
    description: str | None = None
    #: Seed 000 fits one runtime model per family; absent, the application is its own.
    family: str | None = None
    #: Seed 000's solo runs, by host type (processor group).
    solo_runs: Mapping[str, SoloRun] = dataclasses.field(default_factory=dict)

    FIELDS = (
        "name",
        "app_class",
        "cache_score",
        "sllc_score",
        "dram_score",
        "net_score",
        "solo_runtime",
        "description",
        "family",
    )
    #: Fields that hold mappings; files write them nested (YAML) or as
    #: prefixed columns (CSV).
    NESTED = ("counters", "solo_runs")

    @property
    def runtime_family(self) -> str:
        return self.family or self.name

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ProfileRecord:
        """Validate loosely typed input (a CSV row, a YAML mapping)."""
        unknown = sorted(set(data) - set(cls.FIELDS) - set(cls.NESTED))
        if unknown:
            raise ProfileError(
                unknown[0],
                "unknown field; known: " + ", ".join((*cls.FIELDS, *cls.NESTED)),
            )
        if _optional(data.get("name")):
            raise ProfileError("name", "the application name is missing")
        counters_in = data.get("counters") or {}
        if not isinstance(counters_in, Mapping):
            raise ProfileError("counters", "expected a mapping of counter name to mean value")
        counters = {}
        for counter, value in counters_in.items():
            counter_name = parse_app_name(str(counter), key="counters")
            counters[counter_name] = parse_float(value, f"counters.{counter_name}")
        description = data.get("description")
        return cls(
            name=parse_app_name(data["name"], key="name"),
            app_class=(
                AppClass.NON_HPC
                if _optional(data.get("app_class"))
                else AppClass.parse(data["app_class"], key="app_class")
            ),
            cache_score=(
                0.0
                if _optional(data.get("cache_score"))
                else parse_cache_score(data["cache_score"], key="cache_score")
            ),
            sllc_score=_optional_float(
                data.get("sllc_score"), "sllc_score", minimum=0.0, maximum=1.0
            ),
            dram_score=_optional_float(
                data.get("dram_score"), "dram_score", minimum=0.0, maximum=1.0
            ),
            net_score=_optional_float(data.get("net_score"), "net_score", minimum=0.0, maximum=1.0),
            solo_runtime=_optional_float(
                data.get("solo_runtime"),
                "solo_runtime",
                minimum=0.0,
                exclusive_minimum=True,
            ),
            counters=dict(sorted(counters.items())),
            description=None if _optional(description) else str(description).strip(),
            family=(
                None
                if _optional(data.get("family"))
                else parse_app_name(str(data["family"]), key="family")
            ),
            solo_runs=parse_solo_runs(data.get("solo_runs")),
        )

    def to_mapping(self) -> dict[str, Any]:
        """Plain values, the inverse of :meth:`from_mapping`."""
        data: dict[str, Any] = {
            "name": self.name,
            "app_class": self.app_class.value,
            "cache_score": self.cache_score,
            "sllc_score": self.sllc_score,
            "dram_score": self.dram_score,
            "net_score": self.net_score,
            "solo_runtime": self.solo_runtime,
            "counters": dict(self.counters),
            "description": self.description,
            "family": self.family,
            "solo_runs": {t: run.to_mapping() for t, run in self.solo_runs.items()},
        }
        return data


@dataclasses.dataclass(frozen=True)
class InterferenceRecord:
    """Two applications' slowdowns when sharing a host, one source.

    Always held in canonical order (``app_a <= app_b``) so that a pair has
    one identity whichever way round it was written.
    """

    app_a: str
    app_b: str
    slowdown_a: float
    slowdown_b: float
    source: str = "measured"
    measured_at: datetime.datetime | None = None

    FIELDS = ("app_a", "app_b", "slowdown_a", "slowdown_b", "source", "measured_at")

    def __post_init__(self) -> None:
        if self.app_a > self.app_b:
            a, b, sa, sb = self.app_b, self.app_a, self.slowdown_b, self.slowdown_a
            object.__setattr__(self, "app_a", a)
            object.__setattr__(self, "app_b", b)
            object.__setattr__(self, "slowdown_a", sa)
            object.__setattr__(self, "slowdown_b", sb)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.app_a, self.app_b, self.source)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> InterferenceRecord:
        unknown = sorted(set(data) - set(cls.FIELDS))
        if unknown:
            raise ProfileError(unknown[0], "unknown field; known: " + ", ".join(cls.FIELDS))
        for key in ("app_a", "app_b", "slowdown_a", "slowdown_b"):
            if _optional(data.get(key)):
                raise ProfileError(key, "missing")
        source = (
            "measured" if _optional(data.get("source")) else str(data["source"]).strip().lower()
        )
        if source not in SOURCES:
            raise ProfileError("source", f"{data['source']!r} is not one of {', '.join(SOURCES)}")
        # A slowdown of -100% or less would mean a run time of zero or less.
        return cls(
            app_a=parse_app_name(data["app_a"], key="app_a"),
            app_b=parse_app_name(data["app_b"], key="app_b"),
            slowdown_a=parse_float(
                data["slowdown_a"],
                "slowdown_a",
                minimum=-100.0,
                maximum=MAX_SLOWDOWN,
                exclusive_minimum=True,
            ),
            slowdown_b=parse_float(
                data["slowdown_b"],
                "slowdown_b",
                minimum=-100.0,
                maximum=MAX_SLOWDOWN,
                exclusive_minimum=True,
            ),
            source=source,
            measured_at=parse_timestamp(data.get("measured_at"), "measured_at"),
        )

    def to_mapping(self) -> dict[str, Any]:
        return {
            "app_a": self.app_a,
            "app_b": self.app_b,
            "slowdown_a": self.slowdown_a,
            "slowdown_b": self.slowdown_b,
            "source": self.source,
            "measured_at": self.measured_at.isoformat() if self.measured_at else None,
        }

    def is_harmful(self, tolerance: float) -> bool:
        """Whether either application slows down by more than ``tolerance`` %."""
        return max(self.slowdown_a, self.slowdown_b) > tolerance
