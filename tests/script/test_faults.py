"""Fault plans: refused with file, line, path and rule; evaluated purely (occurrences,
windows, captures); installed on a broker (the issue's four examples); `serve --faults`."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from fakebroker.client import ClientError, KafkaConnection
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.script.documents import DocumentError
from fakebroker.script.faults import PlanRuntime, install, load_plan, parse_plan
from fakebroker.script.recorder import Recorder
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock

from .helpers import REG, api_versions, heartbeat, join, new_broker, run_with, until

CMD = [sys.executable, "-m", "fakebroker.cli"]

EXAMPLES = """\
version: 1
description: the issue's four examples
faults:
  - name: second-heartbeat-of-w1
    api: Heartbeat
    match: {MemberId: {pattern: "^w1-"}}
    nth: 2
    action: {error: REBALANCE_IN_PROGRESS}
  - name: slow-sync
    api: SyncGroup
    times: all
    action: {delay_ms: 2000}
  - name: kill-next-join
    api: JoinGroup
    client_id: w3
    action: {close: true}
  - name: coordinator-down
    api: "@coordinator"
    times: all
    window: {from_ms: 100000, for_ms: 5000}
    action: {error: COORDINATOR_NOT_AVAILABLE}
"""


def refused(text: str) -> DocumentError:
    with pytest.raises(DocumentError) as info:
        parse_plan(text, REG, "plan.yaml")
    return info.value


@pytest.mark.parametrize(("text", "line", "path", "rule"), [
    ("version: 2\nfaults: []\n", 1, "version", "const"),
    ("version: 1\n", 1, "", "required"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n", 3, "faults[0]", "required"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    action: {error: 27, close: true}\n", 4,
     "faults[0].action", "action-conflict"),
    ("version: 1\nfaults:\n  - api: Hartbeat\n    action: {close: true}\n", 3, "faults[0].api", "api-unknown"),
    ("version: 1\nfaults:\n  - api: [JoinGroup, Nope]\n    action: {close: true}\n", 3,
     "faults[0].api[1]", "api-unknown"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    action:\n      error: REBALANCE\n", 5,
     "faults[0].action.error", "error-unknown"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    match:\n      Member: x\n    action: {drop: true}\n", 5,
     "faults[0].match.Member", "field-unknown"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    match:\n      MemberId: {pattern: '('}\n"
     "    action: {drop: true}\n", 5, "faults[0].match.MemberId", "matcher-invalid"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    nth: 2\n    times: 3\n    action: {drop: true}\n", 4,
     "faults[0].nth", "occurrence-conflict"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    window: {from_ms: 5, until_ms: 5}\n"
     "    action: {drop: true}\n", 4, "faults[0].window", "window-empty"),
    ("version: 1\nfaults:\n  - api: [Heartbeat, SyncGroup]\n    action: {respond: {}}\n", 4,
     "faults[0].action.respond", "respond-api"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    action: {respond: {Error: 1}}\n", 4,
     "faults[0].action.respond", "respond-body"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    match: {MemberId: {ref: m}}\n    action: {drop: true}\n",
     4, "faults[0].match.MemberId", "ref-unbound"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    action: {real: true}\n", 4,
     "faults[0].action.real", "action-incomplete"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    action: {delay_ms: -1}\n", 4,
     "faults[0].action.delay_ms", "minimum"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    actions: {}\n", 4, "faults[0].actions",
     "additionalProperties"),
    ("version: 1\nfaults:\n  - api: Heartbeat\n    action: {error: 27\n", 5, "", "yaml-syntax"),
    ('{"version": 1,\n "faults": [}\n', 2, "", "json-syntax"),
    ("", 1, "", "empty"),
])
def test_invalid_plans_are_refused_with_line_path_and_rule(text: str, line: int | None, path: str,
                                                            rule: str) -> None:
    e = refused(text)
    assert (e.line, e.path, e.rule) == (line, path, rule), str(e)
    assert str(e).startswith(f"plan.yaml{':' + str(line) if line else ''}: ")


def test_the_examples_load() -> None:
    plan = parse_plan(EXAMPLES, REG)
    assert [f.name for f in plan.faults] == ["second-heartbeat-of-w1", "slow-sync",
                                             "kill-next-join", "coordinator-down"]
    down = plan.faults[3]
    assert down.api_keys == frozenset({8, 9, 10, 11, 12, 13, 14, 15, 16})
    assert (down.window_from, down.window_until, down.times) == (100_000, 105_000, None)
    assert plan.faults[1].action.describe() == "delay 2000 ms"


def test_evaluation_counts_every_matching_call_for_every_fault() -> None:
    plan = parse_plan("""\
version: 1
faults:
  - {name: first, api: Heartbeat, action: {drop: true}}
  - {name: second, api: Heartbeat, nth: 2, action: {close: true}}
  - {name: some, api: Heartbeat, skip: 2, times: 2, action: {error: 27}}
""", REG)
    rt = PlanRuntime(plan)
    got = [getattr(rt.decide("request", 12, {"MemberId": "m"}, "c", 0), "name", None) for _ in range(6)]
    assert got == ["first", "second", "some", "some", None, None]
    assert rt.counts == [6, 6, 6]
    assert rt.decide("response", 12, {}, "c", 0) is None and rt.decide("request", 11, {}, "c", 0) is None


def test_captures_bind_for_the_plan_and_windows_follow_the_clock() -> None:
    plan = parse_plan("""\
version: 1
faults:
  - name: remember-first-joiner
    api: JoinGroup
    match: {MemberId: {capture: first, pattern: ".+"}}
    times: all
    action: {delay_ms: 0}
  - name: its-second-heartbeat
    api: Heartbeat
    match: {MemberId: {ref: first}}
    nth: 2
    window: {from_ms: 1000}
    action: {error: REBALANCE_IN_PROGRESS}
""", REG)
    rt = PlanRuntime(plan)
    assert rt.decide("request", 11, {"MemberId": ""}, "c", 0) is None  # the pattern needs an id
    assert rt.decide("request", 11, {"MemberId": "w1-1"}, "c", 0) is not None
    assert rt.bindings == {"first": "w1-1"}
    assert rt.decide("request", 11, {"MemberId": "w2-1"}, "c", 0) is None  # not the captured one
    hb = [rt.decide("request", 12, {"MemberId": m}, "c", t) for m, t in
          [("w1-1", 999), ("w2-1", 1000), ("w1-1", 1000), ("w1-1", 1001), ("w1-1", 1002)]]
    assert [f.name if f else None for f in hb] == [None, None, None, "its-second-heartbeat", None]


def test_the_issue_examples_on_a_broker() -> None:
    async def go(b: FakeBroker) -> None:
        runtime, _ = install(b.hooks, parse_plan(EXAMPLES, REG))
        rec = b.record(Recorder())
        clock = b.clock
        assert isinstance(clock, VirtualClock)
        async with await KafkaConnection.open(b.bootstrap, client_id="w1") as c:
            member = (await c.send(join(), 9)).response.member_id
            assert (await c.send(join(member), 9)).response.error_code == 0
            sg = REG["SyncGroupRequest"]
            sync = c.submit(sg.new(group_id="g", generation_id=1, member_id=member), 2)
            await until(lambda: rec.requests_seen == 3 and b.quiet(), "the sync is delayed")
            clock.advance(1999)
            await until(lambda: b.quiet(), "nothing due")
            assert not sync.done()
            clock.advance(1)
            assert (await c.wait(sync)).response.error_code == 0
            got = [(await c.send(heartbeat(member), 4)).response.error_code for _ in range(3)]
            assert got == [0, E.REBALANCE_IN_PROGRESS, 0]
        async with await KafkaConnection.open(b.bootstrap, client_id="w3") as c3:
            with pytest.raises(ClientError, match="closed"):
                await c3.send(join(), 9)
        async with await KafkaConnection.open(b.bootstrap, client_id="w3") as c3:
            assert (await c3.send(join(), 9)).response.error_code == E.MEMBER_ID_REQUIRED  # once only
            clock.advance(100_000 - 2000)
            fc = REG["FindCoordinatorRequest"].new(key="g")
            assert (await c3.send(fc, 3)).response.error_code == E.COORDINATOR_NOT_AVAILABLE
            assert (await c3.send(join(), 9)).response.error_code == E.COORDINATOR_NOT_AVAILABLE
            assert (await c3.send(api_versions(), 3)).response.error_code == 0  # not a coordinator API
            clock.advance(5000)
            assert (await c3.send(fc, 3)).response.error_code == 0
        names = [n for n, _ in runtime.acted]
        assert names == ["slow-sync", "second-heartbeat-of-w1", "kill-next-join",
                         "coordinator-down", "coordinator-down"]
        hb = [e for e in rec.events if e.kind == "response" and e.api == "Heartbeat"]
        assert hb[1].hooks == ["request:fault:second-heartbeat-of-w1:error:27"]
    run_with(new_broker(), go)


def test_set_edits_the_request_or_the_response() -> None:
    plan = parse_plan("""\
version: 1
faults:
  - api: JoinGroup
    action: {set: {SessionTimeoutMs: 1}}
  - api: Heartbeat
    side: response
    times: all
    action: {set: {ErrorCode: 22}}
""", REG)

    async def go(b: FakeBroker) -> None:
        install(b.hooks, plan)
        async with await KafkaConnection.open(b.bootstrap) as c:
            assert (await c.send(join(), 9)).response.error_code == E.INVALID_SESSION_TIMEOUT
            assert (await c.send(heartbeat("x"), 4)).response.error_code == E.ILLEGAL_GENERATION
    run_with(new_broker(), go)


def test_serve_faults_refuses_a_bad_plan_before_listening(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("version: 1\nfaults:\n  - api: Heartbeat\n    action: {error: NOPE}\n")
    r = subprocess.run([*CMD, "serve", "--port", "0", "--faults", str(plan)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and r.stdout == ""  # no address: it never listened
    assert r.stderr.startswith(f"fakebroker serve: invalid fault plan: {plan}:4: "
                               "faults[0].action.error: unknown error name 'NOPE'")
    assert "(rule: error-unknown)" in r.stderr
    r = subprocess.run([*CMD, "serve", "--port", "0", "--faults", str(tmp_path / "missing.yaml")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_serve_faults_injects(tmp_path: Path) -> None:
    import signal
    plan = tmp_path / "plan.json"
    plan.write_text('{"version": 1, "faults": [{"api": "FindCoordinator", "times": 2,'
                    ' "action": {"error": "COORDINATOR_LOAD_IN_PROGRESS"}}]}')
    proc = subprocess.Popen([*CMD, "serve", "--port", "0", "--faults", str(plan)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        addr = proc.stdout.readline().strip()

        async def ask() -> list[int]:
            async with await KafkaConnection.open(addr) as c:
                fc = REG["FindCoordinatorRequest"].new(key="g")
                return [(await c.send(fc, 3)).response.error_code for _ in range(3)]
        assert asyncio.run(ask()) == [14, 14, 0]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert f"fault plan {plan}: 1 fault(s)" in err


def test_load_plan_from_a_file(tmp_path: Path) -> None:
    p = tmp_path / "p.yaml"
    p.write_text(EXAMPLES)
    assert len(load_plan(p, REG).faults) == 4
