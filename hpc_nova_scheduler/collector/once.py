"""Each problem said once: a collector reads every few seconds, and the same news
(no resctrl, a counter the kernel cannot read, a bad status file) helps no
one at every read."""

from __future__ import annotations

from collections.abc import Callable, Hashable


class SayOnce:
    """``say`` a line unless a line of the same ``kind`` (by default, the line itself) was said."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._said: set[Hashable] = set()

    def __call__(self, line: str, kind: Hashable = None) -> None:
        key = line if kind is None else kind
        if key in self._said:
            return
        self._said.add(key)
        self._say(line)
