"""Errors that core defines and the layers above raise.

A planner that cannot place a batch raises a subclass of
:class:`CannotPlace` (bin packing's "no room", the exact solver's "too
large"), so that callers handle every planner alike without naming the
system that raised it.
"""

from __future__ import annotations


class CannotPlace(ValueError):
    """A batch cannot be placed on the hosts it may use."""
