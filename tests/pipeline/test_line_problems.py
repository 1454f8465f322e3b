"""The strict codec's verdicts, judged apart from the scan: ``transcripts._refusals`` over
distinct (kind, API, body) rows keeps exactly the bodies the codec refuses, each with the
reason judging it alone gives; ``transcripts._line_problems`` says why each line Spark could
not read is bad."""

from __future__ import annotations

import json

import pyarrow as pa

from conformance.pipeline.decode import body_problem, registry
from conformance.pipeline.ingest.transcripts import _line_problems, _refusals, line_problem

HEARTBEAT = 12
BODIES = pa.schema([("kind", pa.string()), ("api_key", pa.int64()), ("body", pa.string())])


def _alone(kind: str, api_key: int, text: str) -> str | None:
    try:
        return body_problem(registry(), kind, api_key, json.loads(text))
    except ValueError as e:
        return f"{kind} body: invalid JSON: {e}"


def _batch(rows: list[tuple[str, int, str]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([dict(zip(BODIES.names, r)) for r in rows], schema=BODIES)


def test_only_refused_bodies_come_back_each_with_its_own_reason():
    good_req = json.dumps({"GroupId": "g", "GenerationId": 3, "MemberId": "m1", "GroupInstanceId": None})
    good_resp = json.dumps({"ThrottleTimeMs": 0, "ErrorCode": 0})
    rows = [
        ("request", HEARTBEAT, good_req),
        ("response", HEARTBEAT, good_resp),
        ("request", HEARTBEAT, good_req.replace("3", '"three"')),  # wrong type
        ("request", HEARTBEAT, good_resp),  # the response's text as a request: refused
        ("response", HEARTBEAT, good_req),  # and the request's text as a response
        ("request", 13, good_req),  # the heartbeat's text as a LeaveGroup request (no GenerationId)
        ("request", HEARTBEAT, '{"GroupId": '),  # not JSON
    ]
    out = [r for b in _refusals(iter([_batch(rows[:3]), _batch([]), _batch(rows[3:])]))
           for r in b.to_pylist()]
    expected = [{"kind": k, "api_key": a, "body": t, "problem": _alone(k, a, t)}
                for k, a, t in rows if _alone(k, a, t) is not None]
    assert out == expected
    assert [r["body"] for r in out] == [rows[i][2] for i in (2, 3, 4, 5, 6)]
    assert "GenerationId" in out[0]["problem"] and "invalid JSON" in out[-1]["problem"]


def test_a_batch_of_good_bodies_yields_nothing():
    good_resp = json.dumps({"ThrottleTimeMs": 0, "ErrorCode": 0})
    assert list(_refusals(iter([_batch([("response", HEARTBEAT, good_resp)])]))) == []


def test_bad_lines_get_line_problem_and_the_others_null():
    lines = ['{"kind": "request", "conn": ', None, "", "[1]", None]
    assert _line_problems(pa.array(lines, type=pa.string())).to_pylist() == [
        line_problem(lines[0]), None, line_problem(""), line_problem("[1]"), None]
    assert _line_problems(pa.array([], type=pa.string())).to_pylist() == []
