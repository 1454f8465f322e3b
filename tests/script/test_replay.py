"""Client-side replay: divergences reported readably, the CLI on real time against
`fakebroker serve`, and coordinators that are unreachable, silent, rude or garbled
reported clearly within bounded time."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any
from pathlib import Path

import pytest

from fakebroker.cli import main
from fakebroker.script.faults import install, parse_plan
from fakebroker.script.golden_broker import golden_broker
from fakebroker.script.replay import VirtualPacer, replay
from fakebroker.exchange.transcript import Transcript, load

from .helpers import GOLDEN_DIR, REG

GOLDEN = GOLDEN_DIR
CMD = [sys.executable, "-m", "fakebroker.cli"]
# Transcripts recorded with the base golden settings and no waits: quick on real time.
BASE = {"initial_rebalance_delay_ms": 0, "max_group_size": 2**31 - 1}


def quick_goldens() -> list[Path]:
    out = []
    for f in sorted(GOLDEN.glob("*.jsonl")):
        t = load(f, REG)
        head = t.header or {}
        settings = head.get("coordinator") or {}
        if all(settings.get(k) == v for k, v in BASE.items()) and \
                all((e.vtime_ms or 0) == 0 for e in t.events):
            out.append(f)
    return out


def replay_with_fault(t: Transcript, fault: str) -> Any:
    """``t`` replayed on virtual time against its golden broker with one fault installed."""
    plan = parse_plan(f"version: 1\nfaults:\n  - {fault}\n", REG)
    return _replay_on_golden_broker(t, lambda hooks: install(hooks, plan))


def _replay_on_golden_broker(t: Transcript, setup: Any) -> Any:
    """``t`` replayed on virtual time against its golden broker, ``setup(hooks)`` first."""
    async def go() -> object:
        assert t.header is not None
        b = golden_broker(t.header["coordinator"], REG)
        setup(b.hooks)
        await b.start()
        try:
            return await replay(t, b.bootstrap, REG, pacer=VirtualPacer(b), timeout_s=5)
        finally:
            await b.stop()
    return asyncio.run(go())


def test_a_wrong_answer_is_reported_with_step_field_expected_and_actual() -> None:
    t = load(GOLDEN / "CLS-HB-01.jsonl", REG)
    report = replay_with_fault(t, "{api: Heartbeat, side: response, action: {set: {ErrorCode: 0}}}")
    assert report.status == "FAIL"  # type: ignore[attr-defined]
    f = report.failure  # type: ignore[attr-defined]
    step = next(i + 1 for i, e in enumerate(t.events) if e.kind == "response" and e.api == "Heartbeat")
    assert f.step == step and f.divergence.path == "ErrorCode"
    assert (f.divergence.expected, f.divergence.actual) == (22, 0)
    text = report.render(REG)  # type: ignore[attr-defined]
    assert text.splitlines() == [
        f"FAIL CLS-HB-01 ({GOLDEN / 'CLS-HB-01.jsonl'})",
        f"  step {step} (line {step + 1}): Heartbeat v4 response on connection 1 (correlation id 4)",
        "  the response differs",
        "  field:    ErrorCode", "  expected: ILLEGAL_GENERATION (22)", "  actual:   NONE (0)",
        "  reason:   values differ"]


@contextlib.contextmanager
def serve(*args: str) -> Iterator[str]:
    # Its log goes to a file: an undrained pipe would fill up and stall the broker.
    with open(Path(__import__("tempfile").mkdtemp()) / "serve.log", "w") as log:
        proc = subprocess.Popen([*CMD, "serve", "--port", "0", "--topic", "events:3",
                                 "--strict-topics", *args], stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            assert proc.stdout is not None
            yield proc.stdout.readline().strip()
        finally:
            proc.terminate()
            proc.communicate(timeout=20)


def test_replay_cli_passes_goldens_on_real_time_against_serve(capsys: pytest.CaptureFixture[str]) -> None:
    files = quick_goldens()
    assert len(files) > 60
    timed = GOLDEN / "CLS-SESS-03.jsonl"  # waits 6.5 s for a pending member id to expire
    slow = GOLDEN / "CLS-REB-04.jsonl"  # virtual-only: skipped
    with serve("--initial-rebalance-delay-ms", "0") as addr:
        t0 = time.monotonic()
        status = main(["replay", *map(str, files), str(timed), str(slow), "--against", addr])
        took = time.monotonic() - t0
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.strip().endswith(f"{len(files) + 1} passed, 0 failed, 1 skipped")
    assert "skipped: virtual-only: waits Kafka's fixed 5-minute new-member join timeout" in out
    assert 6.5 <= took < 60  # it waited the recorded 6.5 s, not more than a bounded while


def test_replay_cli_divergence_exits_1_and_names_the_settings(capsys: pytest.CaptureFixture[str]) -> None:
    # A coordinator that allows 1 s sessions accepts what the transcript expects refused.
    with serve("--initial-rebalance-delay-ms", "0", "--min-session-timeout-ms", "1000") as addr:
        status = main(["replay", str(GOLDEN / "CLS-JOIN-03.jsonl"), "--against", addr])
    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL CLS-JOIN-03" in out and "  field:    ErrorCode" in out
    assert "  expected: INVALID_SESSION_TIMEOUT (26)" in out and "  actual:   MEMBER_ID_REQUIRED (79)" in out
    assert "recorded on a coordinator with initial_rebalance_delay_ms=0" in out
    assert out.strip().endswith("0 passed, 1 failed, 0 skipped")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_coordinator_is_broken_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(GOLDEN / "CLS-HB-06.jsonl"), str(GOLDEN / "CLS-HB-08.jsonl")]
    status = main(["replay", *files, "--against", f"127.0.0.1:{_free_port()}", "--timeout", "2"])
    out = capsys.readouterr().out
    assert status == 3
    assert "BROKEN CLS-HB-06" in out and "cannot connect to 127.0.0.1:" in out
    assert "stopped: the coordinator is unreachable (1 not tried)" in out


class _Misbehaving(socketserver.BaseRequestHandler):
    mode = "silent"

    def handle(self) -> None:
        sock = self.request
        if self.mode == "close":
            return  # closes at once
        head = sock.recv(4)
        if len(head) < 4:
            return
        frame = b""
        while len(frame) < struct.unpack(">i", head)[0]:
            chunk = sock.recv(65536)
            if not chunk:
                return
            frame += chunk
        if self.mode == "garbage":
            body = frame[4:8] + b"\xff\xff\xff"  # the right correlation id, then nonsense
            sock.sendall(struct.pack(">i", len(body)) + body)
        time.sleep(5)  # silent: never answers (the replay must not wait for this)


@contextlib.contextmanager
def misbehaving(mode: str) -> Iterator[str]:
    handler = type("H", (_Misbehaving,), {"mode": mode})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("mode", "message"), [
    ("silent", "no response within 0.5 s"),
    ("close", "no response: the connection was closed by the peer"),
    ("garbage", "the response does not decode: "),
])
def test_misbehaving_coordinators_are_reported_not_waited_for(
        mode: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with misbehaving(mode) as addr:
        t0 = time.monotonic()
        status = main(["replay", str(GOLDEN / "CLS-HB-06.jsonl"), "--against", addr,
                       "--timeout", "0.5"])
        took = time.monotonic() - t0
    out = capsys.readouterr().out
    assert status == 1, out
    assert "FAIL CLS-HB-06" in out and "step 2 (line 3): Heartbeat v4 response" in out
    assert message in out
    assert took < 4


def test_invalid_input_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = (GOLDEN / "CLS-HB-06.jsonl").read_text().splitlines()
    bad.write_text(lines[0] + "\n" + lines[1][:30] + "\n")
    assert main(["replay", str(bad), "--against", "127.0.0.1:9"]) == 2
    assert f"fakebroker replay: {bad}:2: truncated line" in capsys.readouterr().err
    assert main(["replay", str(GOLDEN / "CLS-HB-06.jsonl"), "--against", "nowhere"]) == 2
    assert "expected HOST:PORT" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["replay", str(tmp_path / "empty"), "--against", "127.0.0.1:9"]) == 2
    assert "no transcripts given" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["replay", str(bad)])  # --against is required
    assert e.value.code == 2


def test_real_pacing_is_elastic_after_a_late_answer() -> None:
    """An answer later than recorded (an initial rebalance delay the recording did not
    have) moves the schedule: the recorded gap after it is waited in full."""
    from fakebroker.script.replay import RealPacer

    async def go() -> float:
        loop = asyncio.get_running_loop()
        pacer = RealPacer()
        await pacer.to(0)
        await asyncio.sleep(0.3)   # the answer recorded at 0 ms comes 300 ms late
        pacer.answered(0)
        late = loop.time()
        await pacer.to(200)        # recorded 200 ms after that answer
        return loop.time() - late
    assert asyncio.run(go()) >= 0.2


def test_a_replay_reports_every_difference_not_only_the_first() -> None:
    """Every JoinGroup answer is made to differ (a negative throttle time, which changes
    nothing else): each one is reported, in step order, and the replay runs to the end."""
    t = load(GOLDEN / "CLS-JOIN-31.jsonl", REG)
    joins = [i + 1 for i, e in enumerate(t.events) if e.kind == "response" and e.api == "JoinGroup"]
    assert len(joins) >= 3
    report = replay_with_fault(
        t, "{api: JoinGroup, side: response, action: {set: {ThrottleTimeMs: -1}}, times: all}")
    assert report.status == "FAIL" and report.steps == len(t.events)
    assert [f.step for f in report.failures] == joins
    assert all((f.divergence.path, f.divergence.actual) == ("ThrottleTimeMs", -1) for f in report.failures)
    text = report.render(REG)
    assert text.splitlines()[0].endswith(f": {len(joins)} differences")
    assert text.count("field:    ThrottleTimeMs") == len(joins)


def _replay_on(t: Transcript, edit_request: Any = None, edit_response: Any = None) -> Any:
    """``t`` on virtual time against its golden broker, requests and answers edited by hooks."""
    from fakebroker.intercept.hooks import Continue

    def setup(hooks: Any) -> None:
        for side, edit in (("request", edit_request), ("response", edit_response)):
            if edit is not None:
                def hook(call: Any, edit: Any = edit) -> Any:
                    edit(call)
                    return Continue()
                hooks.add(hook, side=side, keep=True)
    return _replay_on_golden_broker(t, setup)


def _shift_generations(by: int) -> tuple[Any, Any]:
    """Hooks that make the golden broker number generations from 1 - ``by`` (``by`` = 1:
    from 0): answers carry the generation minus ``by``, requests are read plus ``by``."""
    def on(msg: Any, sign: int) -> None:
        for f in ("generation_id", "generation_id_or_member_epoch"):
            v = getattr(msg, f, None)
            if isinstance(v, int) and v >= 0 and not (sign > 0 and v + by < 0):
                setattr(msg, f, v + sign * by)
    return (lambda call: on(call.request, +1)), (lambda call: on(call.response, -1))


@pytest.mark.parametrize("name", ["CLS-HB-01", "CLS-SYNC-01", "CLS-JOIN-32", "CLS-COMMIT-07", "CLS-JOIN-31.2"])
def test_a_coordinator_numbering_generations_from_0_passes_the_goldens(name: str) -> None:
    t = load(GOLDEN / f"{name}.jsonl", REG)
    req, resp = _shift_generations(1)
    report = _replay_on(t, req, resp)
    assert report.status == "PASS", report.render(REG)
    sent = [e.body.get("GenerationId") for e in report.exchanged if e.kind == "request" and e.body]
    assert -1 not in sent  # a previous generation is never made up as -1
    answered = [e.body["GenerationId"] for e in report.exchanged
                if e.kind == "response" and e.api == "JoinGroup" and not e.body["ErrorCode"]]
    assert answered and min(answered) == 0


def test_a_generation_that_does_not_follow_the_first_one_answered_fails() -> None:
    """A coordinator that answers a generation of 0 and then 2 (skipping one) is caught."""
    t = load(GOLDEN / "CLS-JOIN-32.jsonl", REG)
    seen: list[int] = []

    def resp(call: Any) -> None:
        if call.api_key == 11 and call.response.error_code == 0:
            if not seen or call.response.generation_id != seen[-1]:
                seen.append(call.response.generation_id)
            if len(seen) == 1:
                call.response.generation_id = 0
    report = _replay_on(t, None, resp)
    assert report.status == "FAIL"
    assert any(d.path == "GenerationId" for f in report.failures for d in f.divergences)


def test_unpinned_fields_that_differ_are_notes_and_pinned_ones_fail() -> None:
    t = load(GOLDEN / "CLS-STATE-03.jsonl", REG)

    def host(call: Any) -> None:
        if call.api_key == 15:
            for g in call.response.groups:
                for m in g.members:
                    m.client_host = "127.0.0.1:53238"
    report = _replay_on(t, None, host)
    assert report.status == "PASS", report.render(REG)
    text = report.render(REG)
    assert [line for line in text.splitlines() if "note:" in line] == [
        f'  note: step 20: differs from the recording: Groups[0].Members[{i}].ClientHost expected '
        '"/127.0.0.1" got "127.0.0.1:53238"' for i in (0, 1)]

    def state(call: Any) -> None:
        if call.api_key == 15:
            for g in call.response.groups:
                g.group_state = "Empty"
                g.error_message = "changed"
    report = _replay_on(t, None, state)
    assert report.status == "FAIL"
    paths = [d.path for f in report.failures for d in f.divergences]
    assert paths == ["Groups[0].GroupState"]  # the message is unpinned here: a note
    assert any(d.path == "Groups[0].ErrorMessage" for n in report.notes for d in n.divergences)


def test_the_replay_keeps_what_was_sent_and_answered() -> None:
    t = load(GOLDEN / "CLS-HB-01.jsonl", REG)
    report = _replay_on(t)
    assert report.status == "PASS"
    kinds = [(e.kind, e.api) for e in report.exchanged]
    assert kinds == [(e.kind, e.api) for e in t.events if e.kind != "close"]
    member = report.bindings["member.1"]
    assert any(e.kind == "response" and e.body.get("MemberId") == member for e in report.exchanged)
