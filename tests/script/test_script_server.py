"""Broker-side replay (`serve --script`): the pure rules, a script played against the
client-side replay of the same transcript, and kafka-python driven through a join, once as
recorded and once against a deliberately wrong expectation."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.script.recorder import Recorder
from fakebroker.script.replay import RealPacer, replay
from fakebroker.script.scripted import ScriptError, ScriptPlayer, ScriptState, prepare
from fakebroker.exchange.transcript import Event, Transcript, load, parse_lines
from fakebroker.server.broker import FakeBroker
from fakebroker.server.config import BrokerConfig, Topic
from fakebroker.server.thread import BrokerThread

from .helpers import GOLDEN_DIR, REG, heartbeat, join

CMD = [sys.executable, "-m", "fakebroker.cli"]
KP_JOIN = Path(__file__).with_name("kp_join.py")


def ev(kind: str, conn: Any, cid: int, api: int, body: dict[str, Any], **kw: Any) -> Event:
    return Event(kind, conn, correlation_id=cid, api_key=api, version=4, body=body, **kw)


HB = {"GroupId": "g", "GenerationId": 1, "MemberId": "m", "GroupInstanceId": None}
HB_OK = {"ThrottleTimeMs": 0, "ErrorCode": 0}


def two_connection_script() -> Transcript:
    """c1 heartbeats; c2 heartbeats; c1's answer was recorded only after c2's request."""
    return Transcript(None, [
        ev("request", "c1", 1, 12, HB), ev("request", "c2", 1, 12, {**HB, "MemberId": "n"}),
        ev("response", "c1", 1, 12, HB_OK), ev("response", "c2", 1, 12, HB_OK),
        Event("close", "c1", by="client")])


def test_state_binds_connections_orders_requests_and_releases_in_order() -> None:
    s = ScriptState(two_connection_script(), REG)
    st, fail = s.request("x", 12, 4, HB, 7)
    assert fail is None and st is not None and s.bound["x"].key == "c1"
    assert s.broker_action("x") is not None and not s.releasable(s.broker_action("x"))  # waits for c2
    st2, fail = s.request("y", 12, 4, {**HB, "MemberId": "n"}, 1)
    assert fail is None and s.bound["y"].key == "c2"
    r = s.broker_action("x")
    assert r is not None and s.releasable(r)
    s.sent(r)
    r2 = s.broker_action("y")
    assert r2 is not None and s.releasable(r2)
    s.sent(r2)
    assert s.complete  # the client's own close at the end is not waited for


@pytest.mark.parametrize(("api", "version", "body", "path", "message"), [
    (11, 4, HB, "<api>", "another request than the script's"),
    (12, 3, HB, "<version>", "another version"),
    (12, 4, {**HB, "GenerationId": 2}, "GenerationId", "the request on client connection 'x' differs"),
])
def test_state_reports_the_first_divergence(api: int, version: int, body: dict[str, Any], path: str,
                                            message: str) -> None:
    s = ScriptState(Transcript(None, [ev("request", "c1", 1, 12, HB), ev("response", "c1", 1, 12, HB_OK)]), REG)
    s.bind("x", 12)
    _, fail = s.request("x", api, version, body, 1)
    assert fail is not None and fail.divergence is not None
    assert fail.step == 1 and fail.divergence.path == path and message in fail.message
    assert s.failure is fail  # the first one sticks


def test_state_extra_requests_unknown_connections_and_early_closes() -> None:
    s = ScriptState(Transcript(None, [ev("request", "c1", 1, 12, HB), ev("response", "c1", 1, 12, HB_OK)]), REG)
    _, fail = s.request("x", 11, 4, {}, 1)  # no script connection starts with JoinGroup
    assert fail is not None and "no unbound connection of the script starts with it" in fail.message
    s = ScriptState(Transcript(None, [ev("request", "c1", 1, 12, HB), ev("response", "c1", 1, 12, HB_OK)]), REG)
    s.request("x", 12, 4, HB, 1)
    s.sent(s.broker_action("x"))  # type: ignore[arg-type]
    _, fail = s.request("x", 12, 4, HB, 2)
    assert fail is not None and "an extra Heartbeat request" in fail.message
    s = ScriptState(Transcript(None, [ev("request", "c1", 1, 12, HB), ev("response", "c1", 1, 12, HB_OK),
                                      ev("request", "c1", 2, 12, HB)]), REG)
    s.request("x", 12, 4, HB, 1)
    s.sent(s.broker_action("x"))  # type: ignore[arg-type]
    s.client_closed("x")
    assert s.failure is not None and s.failure.step == 3 and "closed; the script expects" in s.failure.message


def test_prepare_binds_the_recorded_broker_address_and_refuses_undecodable_requests() -> None:
    resp = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "NodeId": 1,
            "Host": "10.0.0.9", "Port": 19092}
    t = Transcript({"kind": "header", "broker": {"host": "10.0.0.9", "port": 19092}},
                   [Event("request", 1, correlation_id=1, api_key=10, version=3,
                          body={"Key": "g", "KeyType": 0}),
                    Event("response", 1, correlation_id=1, api_key=10, version=3, body=resp)])
    prepare(t)
    assert t.events[1].match == {"Host": {"ref": "broker.host"}, "Port": {"ref": "broker.port"}}
    bad = Transcript(None, [Event("request", 1, raw=b"\x00\x00\x00\x01x", error="undecodable")], "s.jsonl")
    with pytest.raises(ScriptError, match="undecodable request cannot be expected"):
        prepare(bad)


def test_a_golden_transcript_plays_both_halves_against_itself() -> None:
    """The client-side replay of a golden transcript against the broker-side script of the
    same transcript: a parked follower SyncGroup is released only after the leader's."""
    t = load(GOLDEN_DIR / "CLS-SYNC-05.jsonl", REG)

    async def go() -> Any:
        broker = FakeBroker(BrokerConfig())
        await broker.start()
        player = ScriptPlayer(broker, load(GOLDEN_DIR / "CLS-SYNC-05.jsonl", REG), REG,
                              timeout_s=5)
        player.install()
        try:
            client = await replay(t, broker.bootstrap, REG, pacer=RealPacer(gap_s=0.02), timeout_s=5)
            assert player.done is not None
            server = await asyncio.wait_for(player.done, 5)
            return client, server
        finally:
            player.stop()
            await broker.stop()
    client, server = asyncio.run(go())
    assert client.ok, client.render(REG)
    assert server.ok and server.steps == sum(1 for e in t.events if e.kind != "close")


def test_a_client_that_stops_short_stalls_the_script(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    Transcript(None, [ev("request", 1, 1, 12, HB), ev("response", 1, 1, 12, HB_OK),
                      ev("request", 1, 2, 12, HB), ev("response", 1, 2, 12, HB_OK)]).save(script)
    proc = subprocess.Popen([*CMD, "serve", "--port", "0", "--script", str(script),
                             "--script-timeout", "0.5"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    addr = proc.stdout.readline().strip()

    async def one_heartbeat() -> int:
        async with await KafkaConnection.open(addr) as c:
            r = await c.send(heartbeat("m"), 4)
            await asyncio.sleep(1.5)  # real client time passing; the script must give up
            return int(r.response.error_code)
    assert asyncio.run(one_heartbeat()) == 0
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 1
    assert "DIVERGED" in out and "step 3 (line 3): Heartbeat v4 request" in out
    assert "stalled: nothing the script waits for happened within 0.5 s" in out


def test_invalid_scripts_are_refused_before_serving(tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"kind":"request","conn":1,"correlation_id":1,"api_key":12,"version":4,"bo')
    r = subprocess.run([*CMD, "serve", "--port", "0", "--script", str(cut)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"fakebroker serve: invalid script: {cut}:1: truncated line")
    empty = tmp_path / "only-close.jsonl"
    empty.write_text('{"kind":"close","conn":1,"by":"client"}\n')
    r = subprocess.run([*CMD, "serve", "--port", "0", "--script", str(empty)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "the script has no request to expect" in r.stderr


# ---------------------------------------------------------------------------- kafka-python

@pytest.fixture(scope="module")
def kafka_python_join(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kafka-python joining a real fake broker, recorded, cut after its first SyncGroup answer:
    bootstrap, coordinator lookup, the two-step join, the leader's sync."""
    d = tmp_path_factory.mktemp("kp")
    recorded = d / "recorded.jsonl"
    broker = FakeBroker(BrokerConfig(topics=[Topic("events", 3)]),
                        CoordinatorConfig(initial_rebalance_delay_ms=0))
    with BrokerThread(broker) as bt:
        bt.run(broker.record, Recorder(recorded))
        r = subprocess.run([sys.executable, str(KP_JOIN), bt.bootstrap, "g1", "events"],
                           capture_output=True, text=True, timeout=90)
        assert r.returncode == 0, r.stderr[-2000:]
    lines = recorded.read_text().splitlines()
    end = next(i for i, line in enumerate(lines)
               if '"kind":"response"' in line and '"api":"SyncGroup"' in line)
    script = d / "join.jsonl"
    script.write_text("\n".join(lines[: end + 1]) + "\n")
    t = parse_lines(script.read_text().splitlines(keepends=True), REG)
    assert [e.api for e in t.events if e.kind == "request"][-3:] == ["JoinGroup", "JoinGroup", "SyncGroup"]
    return script


def play_kafka_python(script: Path) -> tuple[int, str]:
    proc = subprocess.Popen([*CMD, "serve", "--port", "0", "--script", str(script),
                             "--script-timeout", "15"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    addr = proc.stdout.readline().strip()
    client = subprocess.Popen([sys.executable, str(KP_JOIN), addr, "g1", "events"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        client.kill()
        client.wait(30)
    return proc.returncode, out


def test_script_drives_kafka_python_through_a_join(kafka_python_join: Path) -> None:
    status, out = play_kafka_python(kafka_python_join)
    steps = len(kafka_python_join.read_text().splitlines()) - 1  # every event (not the header)
    assert status == 0, out
    assert f"COMPLETE: the client followed the script ({kafka_python_join}), {steps} step(s)" in out


def test_a_wrong_expectation_is_reported_as_a_divergence(kafka_python_join: Path, tmp_path: Path) -> None:
    lines = [json.loads(line) for line in kafka_python_join.read_text().splitlines()]
    n = next(i for i, d in enumerate(lines) if d["kind"] == "request" and d.get("api") == "JoinGroup")
    lines[n]["body"]["SessionTimeoutMs"] = 12345  # kafka-python sends 10000
    del lines[n]["raw"]
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text("".join(json.dumps(d) + "\n" for d in lines))
    status, out = play_kafka_python(wrong)
    assert status == 1, out
    report = out.splitlines()
    assert report[0] == f"DIVERGED: the client left the script ({wrong})"
    assert report[1].startswith(f"  step {n} (line {n + 1}): JoinGroup v")
    assert "differs" in report[2]
    assert report[3:7] == ["  field:    SessionTimeoutMs", "  expected: 12345", "  actual:   10000",
                           "  reason:   values differ"]
