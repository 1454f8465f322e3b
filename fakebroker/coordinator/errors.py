"""The one exception coordinator rules raise, for every group type and the reconciliation
engine alike: an error code, and the rule that chose it (and, through the rule, the
catalogue requirement it enforces: ``requirements``).

Kafka's own codes come from ``fakebroker.protocol.error_codes.ErrorCode``. The draft's two
codes that Kafka lacks (COMPUTE_ASSIGNMENT, INVALID_ASSIGNMENT) are defined here with the
numbers ``schemas/ERRATA.md`` ("Numbers chosen") gives them, because ``ErrorCode`` holds
Kafka's numbers only.
"""

from __future__ import annotations

from enum import IntEnum

from ..protocol.error_codes import ErrorCode
from .requirements import requirements_of


class DraftErrorCode(IntEnum):
    """Project-private codes of the connect draft (ERRATA, "Numbers chosen")."""

    COMPUTE_ASSIGNMENT = 1000
    INVALID_ASSIGNMENT = 1001


Code = ErrorCode | DraftErrorCode


class RuleViolation(Exception):
    """A request broke ``rule``; the answer carries ``error``. The engine raises it before
    any state changes, so a refused request leaves the group exactly as it was."""

    def __init__(self, error: Code, rule: str, message: str = "") -> None:
        super().__init__(f"{rule}: {error.name}" + (f" ({message})" if message else ""))
        self.error = error
        self.rule = rule
        self.message = message

    def requirements(self, api: str) -> tuple[str, ...]:
        """The catalogue ids the broken rule enforces for ``api`` (``requirements.ENFORCES``)."""
        return requirements_of(self.rule, api)


class InvariantBroken(AssertionError):
    """The engine caught itself about to break one of its invariants (a bug, never a
    client's fault): e.g. a unit recorded as held by two members."""


__all__ = ["DraftErrorCode", "Code", "RuleViolation", "InvariantBroken", "ErrorCode"]
