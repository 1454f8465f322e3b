"""Limits every input parser here obeys, so a hostile file is a one-line refusal naming
the rule broken, never a traceback, a minute of CPU or a gigabyte of memory.

JSON, TOML and YAML parsers recurse per nesting level (deep nesting is a RecursionError)
and Python refuses integers over 4300 digits with a bare ValueError; ``guarded`` turns
both into ``InputLimit``, and ``check_depth`` refuses nesting no input of ours needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

MAX_DEPTH = 64  # transcripts, plans, targets and specs nest at most ~12 levels
MAX_INT_DIGITS = 4300  # Python's own limit on int() of a string (sys.get_int_max_str_digits)

T = TypeVar("T")


class InputLimit(ValueError):
    """An input goes past a parsing limit: ``message (rule: RULE)``."""

    def __init__(self, rule: str, message: str) -> None:
        self.rule, self.message = rule, message
        super().__init__(f"{message} (rule: {rule})")


def guarded(parse: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``parse(*args)``, its result's nesting checked; deep nesting and over-long integers
    raise InputLimit. The parser's own syntax errors pass through unchanged."""
    try:
        out = parse(*args, **kwargs)
    except RecursionError:
        raise InputLimit("nesting-too-deep", f"nested more than the parser can follow "
                         f"(at most {MAX_DEPTH} levels are accepted)") from None
    except ValueError as e:
        if "integer string conversion" in str(e):
            raise InputLimit("integer-too-long",
                             f"an integer has more than {MAX_INT_DIGITS} digits") from None
        raise
    check_depth(out)
    return out


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse lists/dicts nested deeper than ``limit`` (iterative: any depth is safe)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > limit:
                raise InputLimit("nesting-too-deep", f"nested deeper than {limit} levels")
            children = v.values() if isinstance(v, dict) else v
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


def _no_constant(name: str) -> Any:
    raise InputLimit("json-non-finite", f"{name} is not JSON (numbers must be finite)")


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` under the limits, strict JSON (no NaN / Infinity): JSONDecodeError
    for bad syntax, InputLimit for the rest."""
    return guarded(json.loads, text, parse_constant=_no_constant)
