"""The invariants' results: one per invariant requirement and sub-protocol, aggregated over
the findings the run's worker cases recorded (``conformance.invariants.report.findings``):
FAIL naming the case and the exchange that broke the rule, PASS when cases gave it rounds
to judge and none broke it, NOT-APPLICABLE when no case recorded a round it could judge
(never a pass from silence)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..catalogue.requirements import default_catalogue
from ..invariants import BY_REQUIREMENT
from .outcomes import CaseResult, Outcome
from .scope import protocols_to_run
from .target import Target


def results(records: Iterable[dict[str, Any]], target: Target) -> list[CaseResult]:
    """One result per invariant requirement and sub-protocol the target is in scope for,
    from the cases' records (``record()["invariants"]``)."""
    records = list(records)
    out = []
    for rid in BY_REQUIREMENT:
        req = default_catalogue()[rid]
        for protocol in protocols_to_run(req, target):
            result = CaseResult(rid, req.level, Outcome.PASS, protocol=protocol)
            out.append(result)
            if target.kind not in req.binds or not target.claims(req.protocols):
                result.outcome = Outcome.NOT_APPLICABLE
                result.message = f"the target claims none of {', '.join(req.protocols)}"
                continue
            _judge(result, [r for r in records if (r.get("protocol") or target.connect_protocol)
                            == (protocol or target.connect_protocol) and rid in (r.get("invariants") or {})])
    return out


def _judge(result: CaseResult, records: list[dict[str, Any]]) -> None:
    rid = result.requirement_id
    rounds = 0
    for rec in sorted(records, key=lambda r: r["id"]):
        f = rec["invariants"][rid]
        rounds += f["rounds"]
        if f["violations"]:
            v = f["violations"][0]
            detail = f"{v['detail']} (at {v.get('exchange') or v['ref']})"
            result.cases.append({"case": rec["id"], "outcome": Outcome.FAIL.value, "detail": detail})
        elif f["rounds"]:
            result.cases.append({"case": rec["id"], "outcome": Outcome.PASS.value,
                                 "detail": f"{f['rounds']} rounds judged"})
    failed = [c for c in result.cases if c["outcome"] == Outcome.FAIL.value]
    if failed:
        result.outcome = Outcome.FAIL if result.level == "MUST" else Outcome.NON_STRICT
        result.message = f"{failed[0]['case']}: {failed[0]['detail']}" + (
            f" (and {len(failed) - 1} more cases)" if len(failed) > 1 else "")
        result.expected = BY_REQUIREMENT[rid].__doc__.strip().splitlines()[0] if BY_REQUIREMENT[rid].__doc__ else None
        result.actual = failed[0]["detail"]
    elif rounds:
        result.message = f"held in every round judged: {rounds} rounds of {len(result.cases)} cases"
    else:
        result.outcome = Outcome.NOT_APPLICABLE
        result.message = "no case recorded a round the worker under test led"
