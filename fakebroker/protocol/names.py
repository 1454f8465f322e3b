"""The Python attribute a message-spec field name maps to: shared by the spec loader (the
generated classes) and the checker (attributes must not collide), neither importing the other."""

from __future__ import annotations

import keyword
import re

_CAMEL_1 = re.compile(r"(?<=[a-z0-9])([A-Z])")
_CAMEL_2 = re.compile(r"(?<=[A-Z])([A-Z][a-z])")


def snake(name: str) -> str:
    """``SessionTimeoutMs`` -> ``session_timeout_ms``; keywords get a trailing underscore."""
    s = _CAMEL_2.sub(r"_\1", _CAMEL_1.sub(r"_\1", name)).lower()
    return s + "_" if keyword.iskeyword(s) else s
