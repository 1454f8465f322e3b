"""Transcripts: what the broker records, the format's checks, and bad input refused with
its line and reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.script.recorder import Recorder
from fakebroker.exchange.transcript import (Event, Transcript, TranscriptError, load,
                                          parse_lines, schema_errors)
from fakebroker.server.broker import FakeBroker

from .helpers import REG, api_versions, heartbeat, join, new_broker, run_with, until


def record_session(path: Path) -> None:
    """ApiVersions, the two-step join, a heartbeat, then the client closes."""
    async def go(b: FakeBroker) -> None:
        rec = b.record(Recorder(path))
        async with await KafkaConnection.open(b.bootstrap, client_id="w1") as c:
            await c.send(api_versions(), 3)
            first = await c.send(join(), 9)
            member = first.response.member_id
            await c.send(join(member), 9)
            await c.send(heartbeat(member), 4)
        await until(lambda: len(rec.events) == 9, "the close is recorded")
    run_with(new_broker(), go)


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    record_session(path)
    return path


def test_recording_has_one_event_per_frame_with_raw_bytes_and_times(recorded: Path) -> None:
    t = load(recorded, REG)
    assert t.header is not None and t.header["clock"] == "virtual"
    assert t.header["broker"]["node_id"] == 1 and t.header["coordinator"]["initial_rebalance_delay_ms"] == 0
    kinds = [(e.kind, e.api, e.correlation_id) for e in t.events]
    assert kinds == [("request", "ApiVersions", 1), ("response", "ApiVersions", 1),
                     ("request", "JoinGroup", 2), ("response", "JoinGroup", 2),
                     ("request", "JoinGroup", 3), ("response", "JoinGroup", 3),
                     ("request", "Heartbeat", 4), ("response", "Heartbeat", 4),
                     ("close", None, None)]
    assert [e.seq for e in t.events] == list(range(1, 10))
    assert t.events[-1].by == "client"
    first_join = t.events[3]
    assert first_join.body is not None and first_join.body["ErrorCode"] == 79
    assert first_join.body["MemberId"] == "w1-1"
    assert t.events[4].client_id == "w1" and t.events[4].body["MemberId"] == "w1-1"
    assert all(e.vtime_ms == 0 and e.time is not None and e.time > 1e9 for e in t.events)
    # raw is the frame itself: the size prefix and the body re-decode to the line's fields.
    assert all(e.raw is not None and int.from_bytes(e.raw[:4], "big") == len(e.raw) - 4
               for e in t.frames())


def test_lines_are_valid_under_the_schema_and_round_trip(recorded: Path) -> None:
    lines = recorded.read_text().splitlines()
    assert all(schema_errors(json.loads(line)) == [] for line in lines)
    t = load(recorded, REG)
    assert list(t.lines()) == lines


def test_event_frame_reencodes_an_edited_body(recorded: Path) -> None:
    t = load(recorded, REG)
    hb = t.events[6]
    assert hb.frame(REG) == hb.raw
    edited = dict(hb.body or {}, GenerationId=7)
    frame = hb.frame(REG, body=edited, correlation_id=99)
    assert frame != hb.raw and frame[8:12] == (99).to_bytes(4, "big")


def _refused(lines: list[str], *, check_raw: bool = True) -> TranscriptError:
    with pytest.raises(TranscriptError) as info:
        parse_lines([line if line.endswith("\n") else line + "\n" for line in lines], REG,
                    "t.jsonl", check_raw=check_raw)
    return info.value


def _edit(line: str, **changes: object) -> str:
    obj = json.loads(line)
    for k, v in changes.items():
        if v is None:
            obj.pop(k, None)
        else:
            obj[k] = v
    return json.dumps(obj)


def test_invalid_transcripts_are_refused_with_line_and_reason(recorded: Path) -> None:
    lines = recorded.read_text().splitlines()
    # A file cut in the middle of a line (the recorder died).
    e = _refused(lines[:3] + [lines[3][:50]])
    assert (e.line, e.reason.startswith("truncated line")) == (4, True)
    e = _refused(lines[:2] + ["{not json}"])
    assert e.line == 3 and e.reason.startswith("invalid JSON")
    e = _refused(lines[:2] + [_edit(lines[2], correlation_id=None)])
    assert e.line == 3 and "'correlation_id' is a required property" in e.reason and "rule: required" in e.reason
    e = _refused(lines[:2] + [_edit(lines[2], kind="reply")])
    assert e.line == 3 and "kind" in e.reason
    e = _refused(lines[:2] + [_edit(lines[2], extra=1)])
    assert e.line == 3 and "additionalProperties" in e.reason
    e = _refused(lines[:3] + [lines[4]])  # a JoinGroup response with no request for it
    assert e.line == 4 and "answers no open request" in e.reason
    body = json.loads(lines[3])["body"] | {"GroupId": "other"}
    e = _refused(lines[:3] + [_edit(lines[3], body=body)])
    assert e.line == 4 and "raw and body disagree at body.GroupId" in e.reason
    # Without raw the edited body is the truth.
    assert parse_lines([ln + "\n" for ln in lines[:3] + [_edit(lines[3], body=body, raw=None)]],
                       REG).events[2].body["GroupId"] == "other"  # type: ignore[index]
    bad_field = json.loads(lines[3])["body"] | {"Nope": 1}
    e = _refused(lines[:3] + [_edit(lines[3], body=bad_field, raw=None)])
    assert e.line == 4 and "body.Nope: no field of that name in JoinGroupRequest" in e.reason
    e = _refused(lines[:3] + [_edit(lines[3], version=99, raw=None)])
    assert "has no version 99" in e.reason
    e = _refused(lines[:3] + [_edit(lines[3], api="SyncGroup")])
    assert "does not match api_key 11" in e.reason
    e = _refused(lines[:3] + [lines[0]])
    assert e.line == 4 and "header may only be the first line" in e.reason
    e = _refused([lines[0], lines[1], lines[3], lines[2]])
    assert e.line == 4 and "seq 2 does not follow 3" in e.reason
    e = _refused([lines[0], ""])
    assert e.line == 2 and "empty line" in e.reason


def test_a_recorder_limited_to_some_apis_keeps_only_their_frames() -> None:
    """The same session with a recorder of the group APIs only: no ApiVersions frames and no
    close, the rest exactly as a full recorder sees them (counted all the same)."""
    async def go(b: FakeBroker) -> None:
        full, group = b.record(Recorder()), b.record(Recorder(api_keys=(11, 12)))
        async with await KafkaConnection.open(b.bootstrap, client_id="w1") as c:
            await c.send(api_versions(), 3)
            first = await c.send(join(), 9)
            await c.send(join(first.response.member_id), 9)
            await c.send(heartbeat(first.response.member_id), 4)
        await until(lambda: len(full.events) == 9, "the close is recorded")
        assert [(e.kind, e.api, e.raw) for e in group.events] == \
            [(e.kind, e.api, e.raw) for e in full.events if e.api in ("JoinGroup", "Heartbeat")]
        assert len(group.events) == 6
        assert (group.requests_seen, group.responses_seen) == (4, 4)
    run_with(new_broker(), go)


def test_undecodable_request_and_its_v0_answer_are_kept(tmp_path: Path) -> None:
    # ApiVersions v99 does not decode; Kafka answers v0 with UNSUPPORTED_VERSION.
    import asyncio
    import struct

    async def go(b: FakeBroker) -> None:
        rec = b.record(Recorder())
        host, port = b.bootstrap.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        body = struct.pack(">hhi", 18, 99, 42) + b"\x00\x01x" + b"\x00"
        writer.write(struct.pack(">i", len(body)) + body)
        await reader.readexactly(4)
        writer.close()
        await until(lambda: len(rec.events) == 3, "request, response and close recorded")
        t = Transcript(rec.header, rec.events)
        path = tmp_path / "v99.jsonl"
        t.save(path)
        again = load(path, REG)
        req, resp, close = again.events
        assert (req.body, req.api_key, req.version, req.correlation_id) == (None, 18, 99, 42)
        assert req.error is not None and "unsupported-version" in req.error
        assert (resp.version, resp.body["ErrorCode"]) == (0, 35)  # type: ignore[index]
        assert close.kind == "close"
    run_with(new_broker(), go)


def test_a_missing_file_and_an_empty_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="cannot read"):
        load(tmp_path / "nope.jsonl", REG)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(TranscriptError, match="empty transcript"):
        load(tmp_path / "empty.jsonl", REG)
    (tmp_path / "latin.jsonl").write_bytes(b'{"kind": "close"}\n\xff\n')
    with pytest.raises(TranscriptError) as info:
        load(tmp_path / "latin.jsonl", REG)
    assert info.value.line == 2 and "not UTF-8" in info.value.reason


def test_hand_written_events_need_a_body_or_raw() -> None:
    e = Event("request", "c1", correlation_id=1, api_key=12, version=4, body=None)
    with pytest.raises(ValueError, match="neither a body nor raw"):
        e.frame(REG)
