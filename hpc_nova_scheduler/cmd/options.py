"""Types for command-line options that refuse nonsense before any work starts.

Each is an ``argparse`` ``type=``: a bad value ends the command at once
with argparse's one-line error naming the option (``argument --cores-per-host:
...``), before a file is read or a database touched.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

#: Durations of ``--times``: a number of hours, or with a unit.
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_int(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def count_or_all(text: str) -> int | None:
    """A positive number of items, or ``all`` (None): no limit."""
    if text.strip().lower() == "all":
        return None
    return positive_int(text)


def non_negative_int(text: str) -> int:
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


def positive_float(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


def percent_change(text: str) -> float:
    """A change of a quantity in percent: above -100 (nothing takes no time)."""
    value = _number(text)
    if value <= -100:
        raise argparse.ArgumentTypeError(f"must be above -100 (percent), got {text!r}")
    return value


class Duration(float):
    """Seconds, remembering the unit they were given in, for labels."""

    label: str

    def __new__(cls, seconds: float, label: str) -> Duration:
        made = super().__new__(cls, seconds)
        made.label = label
        return made


def duration(text: str) -> Duration:
    """'24', '24h', '100000s', '90m' or '2d' in seconds; hours without a unit."""
    stripped = text.strip()
    unit = stripped[-1:].lower()
    number = stripped[:-1] if unit in UNITS else stripped
    try:
        amount = float(number)
        value = amount * UNITS.get(unit, 3600.0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration such as 24, 24h or 100000s"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive duration, got {text!r}")
    return Duration(value, f"{amount:g} {unit if unit in UNITS else 'h'}")


def describe_duration(seconds: float) -> str:
    """A duration in the unit it was given in, else as people say it:
    99 s, 90 m, 24 h, 1000 d."""
    if isinstance(seconds, Duration):
        return seconds.label
    whole = (("d", 86400.0, 2 * 86400.0), ("h", 3600.0, 3600.0), ("m", 60.0, 60.0))
    for unit, size, least in whole:
        if seconds >= least and seconds / size == round(seconds / size):
            return f"{seconds / size:.6g} {unit}"
    if seconds < 3600 and seconds == round(seconds):
        return f"{seconds:.6g} s"
    for unit, size, least in whole:
        if seconds >= least:
            return f"{seconds / size:.4g} {unit}"
    return f"{seconds:.4g} s"


def comma_list(item: Callable[[str], object]) -> Callable[[str], list]:
    """A non-empty comma-separated list, each element of type ``item``."""

    def parse(text: str) -> list:
        parts = [part.strip() for part in text.split(",") if part.strip()]
        if not parts:
            raise argparse.ArgumentTypeError("expected at least one value")
        return [item(part) for part in parts]

    parse.__name__ = f"list of {getattr(item, '__name__', 'values')}"
    return parse


def cache_range(text: str) -> tuple[float, float]:
    """'LOW:HIGH', two cache scores with 0 <= LOW <= HIGH."""
    low, sep, high = text.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected LOW:HIGH such as 0:30, got {text!r}")
    bounds = (non_negative_float(low), non_negative_float(high))
    if bounds[0] > bounds[1]:
        raise argparse.ArgumentTypeError(f"LOW must not exceed HIGH, got {text!r}")
    return bounds
