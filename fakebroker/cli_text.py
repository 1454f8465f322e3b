"""What every command's ``--help`` and ``--version`` share: docstrings shown as plain text.

The module docstrings that double as help texts are written in reST (``code``); a terminal
shows those backquotes raw, so help texts pass through ``plain`` first."""

from __future__ import annotations

import argparse
import re

from . import __version__

# ``x`` (reST inline literal) and :role:`x` (a reST role): shown as x.
_LITERAL = re.compile(r"``([^`]+)``")
_ROLE = re.compile(r":[a-z]+:`([^`]+)`")


def plain(text: str) -> str:
    """``text`` without reST inline markup."""
    return _ROLE.sub(r"\1", _LITERAL.sub(r"\1", text))


def add_version(parser: argparse.ArgumentParser, prog: str) -> None:
    """``--version``: the program and the package's version, as every command prints it."""
    parser.add_argument("--version", action="version", version=f"{prog} (connect-conformance) {__version__}")
