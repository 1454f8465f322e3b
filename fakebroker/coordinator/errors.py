"""The one exception coordinator rules raise: a Kafka error code, and the rule that chose it."""

from __future__ import annotations

from ..protocol.error_codes import ErrorCode


class RuleViolation(Exception):
    """A request broke ``rule``; Kafka answers it with ``error``."""

    def __init__(self, error: ErrorCode, rule: str, message: str = "") -> None:
        super().__init__(f"{rule}: {error.name}" + (f" ({message})" if message else ""))
        self.error = error
        self.rule = rule
        self.message = message
