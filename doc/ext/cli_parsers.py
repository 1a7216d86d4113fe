"""The command's argparse parsers, with their help made safe for reStructuredText.

sphinx-argparse reads every help string as reStructuredText, but the
commands write theirs for a terminal: ``*.conf`` or ``NAME_`` would be
markup. Each help string, description and epilog is escaped here, so the
reference prints exactly what ``--help`` prints.
"""

from __future__ import annotations

import argparse
import re

_MARKUP = re.compile(r"([\\*`|_\[\]<>:])")


def _escaped(text: str | None) -> str | None:
    if not text or text == argparse.SUPPRESS:
        return text
    return _MARKUP.sub(r"\\\1", text)


def _escape(parser: argparse.ArgumentParser, seen: set[int]) -> None:
    if id(parser) in seen:
        return
    seen.add(id(parser))
    parser.description = _escaped(parser.description)
    parser.epilog = _escaped(parser.epilog)
    for action in parser._actions:
        action.help = _escaped(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                choice.help = _escaped(choice.help)
            for sub in action.choices.values():
                _escape(sub, seen)


def hpc_nova_scheduler() -> argparse.ArgumentParser:
    from hpc_nova_scheduler.cmd import cli

    parser = cli.build_parser()
    _escape(parser, set())
    return parser
