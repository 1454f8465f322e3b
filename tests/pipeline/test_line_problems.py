"""The reject reasons of one Arrow batch of lines (``transcripts._problems``): each distinct
(kind, API, body) is judged once, and every row gets what judging it alone gives."""

from __future__ import annotations

import json

import pyarrow as pa

from conformance.pipeline.decode import body_problem, registry
from conformance.pipeline.ingest.transcripts import _problems, line_problem

CHECK = pa.struct([("bad", pa.string()), ("kind", pa.string()), ("api_key", pa.int64()), ("body", pa.string())])
HEARTBEAT = 12


def _alone(row: dict | None) -> str | None:
    """One row judged by itself, the rule ``_problems`` applies to a batch."""
    if row is None:
        return None
    if row["bad"] is not None:
        return line_problem(row["bad"])
    try:
        return body_problem(registry(), row["kind"], row["api_key"], json.loads(row["body"]))
    except ValueError as e:
        return f"{row['kind']} body: invalid JSON: {e}"


def _frame(kind: str, api_key: int, body: dict | str) -> dict:
    return {"bad": None, "kind": kind, "api_key": api_key,
            "body": body if isinstance(body, str) else json.dumps(body)}


def test_a_batch_gets_each_rows_own_verdict():
    good_req = {"GroupId": "g", "GenerationId": 3, "MemberId": "m1", "GroupInstanceId": None}
    good_resp = {"ThrottleTimeMs": 0, "ErrorCode": 0}
    rows = [
        _frame("request", HEARTBEAT, good_req),
        None,  # a good header or close line: nothing to judge
        _frame("response", HEARTBEAT, good_resp),
        _frame("request", HEARTBEAT, {**good_req, "GenerationId": "three"}),  # wrong type
        {"bad": '{"kind": "request", "conn": ', "kind": None, "api_key": None, "body": None},
        _frame("request", HEARTBEAT, good_req),  # repeats of the first two
        _frame("response", HEARTBEAT, good_resp),
        _frame("request", HEARTBEAT, good_resp),  # the response's text as a request: refused
        _frame("response", HEARTBEAT, good_req),  # and the request's text as a response
        _frame("request", 13, good_req),  # the heartbeat's text as a LeaveGroup request (no GenerationId)
        {"bad": "", "kind": None, "api_key": None, "body": None},
        _frame("response", HEARTBEAT, good_resp),
    ]
    got = _problems(pa.array(rows, type=CHECK)).to_pylist()
    assert got == [_alone(r) for r in rows]
    assert got[0] is None and got[2] is None and got[5] is None and got[11] is None
    assert got[3] and "GenerationId" in got[3]
    assert got[4].startswith("truncated line") and got[10].startswith("empty line")
    assert got[7] and got[8] and got[9]  # same text, another kind or API: judged on its own


def test_a_batch_with_no_frames_or_no_rows():
    assert _problems(pa.array([None, None], type=CHECK)).to_pylist() == [None, None]
    assert _problems(pa.array([], type=CHECK)).to_pylist() == []
    bad = {"bad": "[1]", "kind": None, "api_key": None, "body": None}
    assert _problems(pa.array([bad], type=CHECK)).to_pylist() == [line_problem("[1]")]
