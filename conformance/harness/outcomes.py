"""The five outcomes of a case, and the exceptions a case raises to reach them.

| outcome        | meaning                                   | pytest                                   |
| -------------- | ----------------------------------------- | ---------------------------------------- |
| PASS           | the requirement holds                     | passed                                   |
| NON-STRICT     | a SHOULD is not met                       | xfailed; failed with --conformance-strict |
| NOT-APPLICABLE | outside the target's claims, or untestable| skipped, with the reason                 |
| FAIL           | a MUST is not met                         | failed (AssertionError: expected/actual) |
| BROKEN         | the harness or the target could not run   | error (raised while setting up the case) |

A case never decides its own outcome word: it raises ``Violation`` (the level of the
requirement turns it into FAIL or NON-STRICT), ``Broken`` or ``NotApplicable``, or returns
(PASS).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fakebroker.exchange.transcript import Transcript


class Outcome(str, Enum):
    PASS = "PASS"
    NON_STRICT = "NON-STRICT"
    NOT_APPLICABLE = "NOT-APPLICABLE"
    FAIL = "FAIL"
    BROKEN = "BROKEN"

    def __str__(self) -> str:
        return self.value


class Violation(Exception):
    """The target did not do what the requirement says."""

    def __init__(self, what: str, expected: Any, actual: Any) -> None:
        super().__init__(f"{what}: expected {expected!r}, got {actual!r}")
        self.what, self.expected, self.actual = what, expected, actual


class Broken(Exception):
    """The case could not be run (harness fault, target did not start or answer at all)."""


class NotApplicable(Exception):
    """The requirement does not apply to this target (or an optional behaviour is absent)."""


@dataclass
class CaseResult:
    requirement_id: str
    level: str
    outcome: Outcome
    message: str = ""
    expected: Any = None
    actual: Any = None
    duration_s: float = 0.0
    transcript: Transcript | None = None  # every exchange of the case, in the one format
    notes: list[str] = field(default_factory=list)
    attachments: dict[str, str] = field(default_factory=dict)  # name -> text (e.g. a worker's log)
    protocol: str | None = None  # the sub-protocol of a per-protocol run (conformance.harness.scope)
    # The requirement's cases as they ran: its live case ("live") and its golden transcripts
    # (by file name), each {"case", "outcome", "detail"}; the requirement's outcome is the
    # first that is not a pass (a transcript that cannot be replayed beside a passed live
    # case is NOT-APPLICABLE here and leaves the requirement's PASS alone).
    cases: list[dict[str, str]] = field(default_factory=list)
    # What each group invariant found in the case's exchanges (a worker case's; see
    # conformance.invariants.report): reported under the invariants' own ids, not this case's.
    invariants: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A case reported under a name of its own in its requirement's row (a chaos scenario's,
    # conformance.chaos.regression), not under the requirement's id.
    name: str | None = None

    def __repr__(self) -> str:
        return f"<CaseResult {self.case_id} {self.outcome.value}>"

    @property
    def case_id(self) -> str:
        """The row's id: the requirement id, with ``[protocol]`` for a per-protocol run (or the
        case's own name)."""
        if self.name:
            return self.name
        return f"{self.requirement_id}[{self.protocol}]" if self.protocol else self.requirement_id

    def record(self) -> dict[str, Any]:
        """The JSON form stored with the pytest report and in results.json."""
        return {"id": self.case_id, "requirement": self.requirement_id, "protocol": self.protocol,
                "level": self.level, "outcome": self.outcome.value,
                "message": self.message, "expected": _jsonable(self.expected),
                "actual": _jsonable(self.actual), "duration_s": round(self.duration_s, 3),
                "notes": self.notes, "cases": self.cases,
                **({"invariants": self.invariants} if self.invariants else {})}


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [_jsonable(x) for x in v]
        return sorted(items, key=repr) if isinstance(v, (set, frozenset)) else items
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)
