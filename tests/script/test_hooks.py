"""Hooks on a broker on a virtual clock: order, one-shot and kept hooks, edits, replaced and
error responses, delays on the broker's clock, holds, drops and closes, response side."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from fakebroker.client import ClientError, KafkaConnection
from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.intercept.error_response import error_response, resolve_error
from fakebroker.intercept.hooks import (Call, Close, Continue, Delay, Drop, ErrorResponse, Gate,
                                     Hold, Hooks, Respond)
from fakebroker.script.recorder import Recorder
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.server.thread import BrokerThread

from .helpers import REG, api_versions, heartbeat, join, new_broker, run_with, until


async def joined(c: KafkaConnection) -> str:
    """The two-step join of one member (a group of one, generation 1)."""
    member = (await c.send(join(), 9)).response.member_id
    assert (await c.send(join(member), 9)).response.error_code == 0
    return member


async def settled(b: FakeBroker, requests: int) -> None:
    rec = b.recorders[0]
    await until(lambda: rec.requests_seen >= requests and b.quiet(), f"{requests} requests handled")


def advance(b: FakeBroker, ms: int) -> None:
    assert isinstance(b.clock, VirtualClock)
    b.clock.advance(ms)


def test_hooks_run_in_order_first_action_wins_one_shot_unless_kept() -> None:
    async def go(b: FakeBroker) -> None:
        seen: list[tuple[str, int]] = []
        b.hooks.add(lambda call: seen.append(("observer", call.correlation_id)), name="observer")
        b.hooks.add(lambda call: ErrorResponse(E.REBALANCE_IN_PROGRESS), api="Heartbeat", name="once")
        b.hooks.add(lambda call: ErrorResponse("ILLEGAL_GENERATION"), api=12, keep=True, name="kept")
        async with await KafkaConnection.open(b.bootstrap) as c:
            member = await joined(c)
            got = [(await c.send(heartbeat(member), 4)).response.error_code for _ in range(3)]
        assert got == [E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION, E.ILLEGAL_GENERATION]
        assert [n for n, _ in seen] == ["observer"] * 5  # observers never stop the chain
        assert [h.name for h in b.hooks] == ["observer", "kept"]  # "once" is gone
        kept = list(b.hooks)[1]
        assert (kept.fired, kept.seen) == (2, 2)
    run_with(new_broker(), go)


def test_call_keep_keeps_a_hook_and_none_passes() -> None:
    async def go(b: FakeBroker) -> None:
        count = 0

        def second_heartbeat(call: Call) -> Any:
            nonlocal count
            count += 1
            if count == 2:
                call.keep()  # acts, and stays (kfake's KeepControl)
                return ErrorResponse(E.REBALANCE_IN_PROGRESS)
            return None

        b.hooks.add(second_heartbeat, api="Heartbeat")
        async with await KafkaConnection.open(b.bootstrap) as c:
            member = await joined(c)
            got = [(await c.send(heartbeat(member), 4)).response.error_code for _ in range(3)]
        assert got == [0, E.REBALANCE_IN_PROGRESS, 0]
        assert len(b.hooks) == 1
    run_with(new_broker(), go)


def test_edited_request_goes_to_the_coordinator() -> None:
    async def go(b: FakeBroker) -> None:
        rec = b.record(Recorder())

        def shrink(call: Call) -> Continue:
            call.request.session_timeout_ms = 1  # type: ignore[attr-defined]
            return Continue()

        b.hooks.add(shrink, api="JoinGroup")
        async with await KafkaConnection.open(b.bootstrap) as c:
            r = await c.send(join(), 9)
        assert r.response.error_code == E.INVALID_SESSION_TIMEOUT
        # The transcript keeps what was on the wire, and says which hook acted.
        req = rec.events[0]
        assert req.body is not None and req.body["SessionTimeoutMs"] == 10_000
        assert req.hooks == ["request:shrink:continue"]
    run_with(new_broker(), go)


def test_respond_replaces_the_answer_with_an_object_or_json() -> None:
    async def go(b: FakeBroker) -> None:
        hb = REG["HeartbeatResponse"]
        b.hooks.add(lambda call: Respond(hb.new(error_code=E.FENCED_INSTANCE_ID)), api="Heartbeat")
        b.hooks.add(lambda call: Respond({"ErrorCode": 82, "ThrottleTimeMs": 5}), api="Heartbeat")
        async with await KafkaConnection.open(b.bootstrap) as c:
            first = (await c.send(heartbeat("nobody"), 4)).response
            second = (await c.send(heartbeat("nobody"), 4)).response
            third = (await c.send(heartbeat("nobody"), 4)).response
        assert (first.error_code, second.error_code, second.throttle_time_ms) == (82, 82, 5)
        assert third.error_code == E.UNKNOWN_MEMBER_ID  # hooks used up: the coordinator answers
    run_with(new_broker(), go)


def test_error_response_sets_every_error_code_per_entry() -> None:
    async def go(b: FakeBroker) -> None:
        b.hooks.add(lambda call: ErrorResponse("COORDINATOR_NOT_AVAILABLE"), keep=True)
        oc = REG["OffsetCommitRequest"]
        commit = oc.new(group_id="g", generation_id_or_member_epoch=-1, topics=[
            oc.cls.OffsetCommitRequestTopic(name="events", partitions=[
                oc.cls.OffsetCommitRequestPartition(partition_index=i, committed_offset=5)
                for i in (0, 2)]),
            oc.cls.OffsetCommitRequestTopic(name="other", partitions=[
                oc.cls.OffsetCommitRequestPartition(partition_index=1)])])
        lg = REG["LeaveGroupRequest"]
        leave = lg.new(group_id="g", members=[lg.cls.MemberIdentity(member_id="a"),
                                              lg.cls.MemberIdentity(member_id="b", group_instance_id="i")])
        async with await KafkaConnection.open(b.bootstrap) as c:
            oc_r = (await c.send(commit, 9)).response
            dg_r = (await c.send(REG["DescribeGroupsRequest"].new(groups=["x", "y"]), 5)).response
            lg_r = (await c.send(leave, 5)).response
            jg_r = (await c.send(join("m"), 9)).response
        assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in oc_r.topics] \
            == [("events", [(0, 15), (2, 15)]), ("other", [(1, 15)])]
        assert [(g.group_id, g.error_code) for g in dg_r.groups] == [("x", 15), ("y", 15)]
        assert lg_r.error_code == 15
        assert [(m.member_id, m.group_instance_id, m.error_code) for m in lg_r.members] == \
            [("a", None, 15), ("b", "i", 15)]
        # Everything else is the spec's default: Kafka's error JoinGroup answer.
        assert (jg_r.error_code, jg_r.generation_id, jg_r.member_id, jg_r.members) == (15, -1, "", [])
    run_with(new_broker(), go)


def _every_request() -> list[tuple[int, int]]:
    return [(key, v) for key, mt in sorted(REG.requests.items())
            for v in range(mt.lowest, mt.highest + 1)]


@pytest.mark.parametrize(("api_key", "version"), _every_request())
def test_error_response_exists_for_every_api_and_version(api_key: int, version: int) -> None:
    req = REG.request(api_key).new()
    body = error_response(REG, api_key, version, req, "UNKNOWN_SERVER_ERROR", "broken")
    data = REG.response(api_key).encode(body, version)  # strict: valid in this version
    back = REG.response(api_key).decode(data, version).to_json()
    codes = [v for k, v in _leaves(back) if k == "ErrorCode"]
    if REG.response(api_key).spec.struct.fields and any(
            f.name == "ErrorCode" and version in f.versions for f in REG.response(api_key).spec.struct.fields):
        assert codes and set(codes) == {-1}


def _leaves(node: Any, key: str = "") -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [x for k, v in node.items() for x in _leaves(v, k)]
    if isinstance(node, list):
        return [x for v in node for x in _leaves(v, key)]
    return [(key, node)]


def test_error_names_and_numbers() -> None:
    assert resolve_error("rebalance_in_progress") == 27 == resolve_error(27) == resolve_error("27")
    with pytest.raises(ValueError, match="unknown error name 'NOPE'"):
        resolve_error("NOPE")
    with pytest.raises(ValueError, match="not an int16"):
        resolve_error(40000)


def test_delay_waits_on_the_broker_clock_and_blocks_only_its_connection() -> None:
    async def go(b: FakeBroker) -> None:
        rec = b.record(Recorder())
        b.hooks.add(lambda call: Delay(2000), api="Heartbeat")
        async with await KafkaConnection.open(b.bootstrap) as c, \
                await KafkaConnection.open(b.bootstrap) as other:
            member = await joined(c)
            late = c.submit(heartbeat(member), 4)
            behind = c.submit(api_versions(), 3)  # pipelined: not even read yet
            await settled(b, 3)
            assert (await other.send(api_versions(), 3)).response.error_code == 0
            assert not late.done() and not behind.done()
            advance(b, 1999)
            await settled(b, 4)
            assert not late.done() and b.recorders[0].requests_seen == 4
            advance(b, 1)
            assert (await c.wait(late)).response.error_code == 0
            assert (await c.wait(behind)).correlation_id == 4
        resp = next(e for e in rec.events if e.kind == "response" and e.api == "Heartbeat")
        assert resp.vtime_ms == 2000 and resp.hooks == ["request:<lambda>:delay:2000ms>continue"]
    run_with(new_broker(), go)


def test_delay_on_real_time_does_not_need_the_virtual_clock() -> None:
    async def go(b: FakeBroker) -> None:
        b.hooks.add(lambda call: Delay(20, real=True), api="ApiVersions")
        async with await KafkaConnection.open(b.bootstrap, timeout_s=5) as c:
            assert (await c.send(api_versions(), 3)).response.error_code == 0
    run_with(new_broker(), go)


def test_hold_until_a_gate_opens_or_times_out() -> None:
    async def go(b: FakeBroker) -> None:
        b.record(Recorder())
        gate = Gate("leader-synced")
        b.hooks.add(lambda call: Hold(gate, then=ErrorResponse(E.REBALANCE_IN_PROGRESS)), api="Heartbeat")
        b.hooks.add(lambda call: Hold(Gate("never"), timeout_ms=500), api="ApiVersions")
        async with await KafkaConnection.open(b.bootstrap) as c, \
                await KafkaConnection.open(b.bootstrap) as c2:
            member = await joined(c)
            held = c.submit(heartbeat(member), 4)
            timed = c2.submit(api_versions(), 3)
            await settled(b, 4)
            advance(b, 10_000 - 1)  # a session is 10 s: the member must not expire here
            assert (await c2.wait(timed)).response.error_code == 0  # its 500 ms timed out
            await settled(b, 4)
            assert not held.done()
            gate.open()
            assert (await c.wait(held)).response.error_code == E.REBALANCE_IN_PROGRESS
    run_with(new_broker(), go)


def test_gate_opens_from_another_thread() -> None:
    broker = new_broker()
    gate = Gate()
    with BrokerThread(broker) as bt:
        bt.run(broker.hooks.add, lambda call: Hold(gate), "ApiVersions")

        async def ask() -> int:
            async with await KafkaConnection.open(bt.bootstrap, timeout_s=10) as c:
                fut = c.submit(api_versions(), 3)
                await asyncio.sleep(0)
                threading.Thread(target=gate.open).start()
                return (await c.wait(fut)).response.error_code
        assert asyncio.run(ask()) == 0


def test_drop_sends_nothing_and_the_connection_serves_on() -> None:
    async def go(b: FakeBroker) -> None:
        rec = b.record(Recorder())
        b.hooks.add(lambda call: Drop(), api="Heartbeat")
        async with await KafkaConnection.open(b.bootstrap) as c:
            member = await joined(c)
            lost = c.submit(heartbeat(member), 4)
            after = await c.send(heartbeat(member), 4)
            assert after.response.error_code == 0 and not lost.done()
            lost.cancel()
        hb = [e for e in rec.events if e.api == "Heartbeat"]
        assert [(e.kind, e.correlation_id) for e in hb] == [("request", 3), ("request", 4), ("response", 4)]
        assert hb[0].hooks == ["request:<lambda>:drop"]
    run_with(new_broker(), go)


def test_close_ends_the_connection_and_the_broker_serves_others() -> None:
    async def go(b: FakeBroker) -> None:
        rec = b.record(Recorder())
        b.hooks.add(lambda call: Close(), api="JoinGroup", name="kill-join")
        async with await KafkaConnection.open(b.bootstrap) as c:
            with pytest.raises(ClientError, match="closed"):
                await c.send(join(), 9)
        async with await KafkaConnection.open(b.bootstrap) as c:
            assert (await c.send(join(), 9)).response.error_code == E.MEMBER_ID_REQUIRED
        close = next(e for e in rec.events if e.kind == "close")
        assert (close.conn, close.by, close.reason) == (1, "broker", "closed by a hook")
        assert close.hooks == ["request:kill-join:close"]
    run_with(new_broker(), go)


def test_response_hooks_rewrite_or_lose_what_the_coordinator_answered() -> None:
    async def go(b: FakeBroker) -> None:
        def bump(call: Call) -> Continue:
            assert call.side == "response" and call.response is not None
            call.response.generation_id += 100  # type: ignore[attr-defined]
            return Continue()

        async with await KafkaConnection.open(b.bootstrap) as c:
            member = (await c.send(join(), 9)).response.member_id
            b.hooks.add(bump, api="JoinGroup", side="response")
            r = await c.send(join(member), 9)
            assert (r.response.error_code, r.response.generation_id) == (0, 101)
            # The coordinator handles the LeaveGroup; only its answer is lost.
            b.hooks.add(lambda call: Drop(), api="LeaveGroup", side="response")
            lost = c.submit(REG["LeaveGroupRequest"].new(group_id="g", member_id=member), 2)
            d = (await c.send(REG["DescribeGroupsRequest"].new(groups=["g"]), 5)).response
            assert (d.groups[0].group_state, d.groups[0].members) == ("Empty", [])
            assert not lost.done()
            lost.cancel()
    b = new_broker()
    b.record(Recorder())
    run_with(b, go)


def test_a_hook_answering_with_the_wrong_type_costs_only_its_connection() -> None:
    async def go(b: FakeBroker) -> None:
        b.hooks.add(lambda call: Respond(REG["HeartbeatResponse"].new()), api="ApiVersions")
        async with await KafkaConnection.open(b.bootstrap) as c:
            with pytest.raises(ClientError, match="closed"):
                await c.send(api_versions(), 3)
        async with await KafkaConnection.open(b.bootstrap) as c:
            assert (await c.send(api_versions(), 3)).response.error_code == 0
    run_with(new_broker(), go)


def test_hook_registration_checks_its_arguments() -> None:
    hooks = Hooks(REG)
    with pytest.raises(ValueError, match="no API named 'Nope'"):
        hooks.add(lambda call: None, api="Nope")
    with pytest.raises(ValueError, match="side must be one of"):
        hooks.add(lambda call: None, side="both")
    h = hooks.add(lambda call: None, api=["JoinGroup", 14])
    assert h.api_keys == frozenset({11, 14})
    with pytest.raises(ValueError, match="negative"):
        Delay(-1)
    bad = hooks.add(lambda call: "oops", api="Heartbeat")  # type: ignore[arg-type,return-value]
    call = Call(REG, 1, 12, 4, 1, "c", heartbeat("m"), 0)
    with pytest.raises(TypeError, match="not an Action"):
        hooks.decide(call)
    hooks.remove(bad)
    assert hooks.decide(call) == (None, None)


def test_quiet_sees_parked_requests_and_due_timers() -> None:
    async def go(b: FakeBroker) -> None:
        b.record(Recorder())
        async with await KafkaConnection.open(b.bootstrap) as c:
            member = (await c.send(join(), 9)).response.member_id
            parked = c.submit(join(member), 9)  # waits for the initial delay (3 s)
            await settled(b, 2)
            assert b.quiet() and not parked.done()
            advance(b, 3000)
            assert not b.quiet()  # the delay's deadline is due: work to do
            assert (await c.wait(parked)).response.error_code == 0
    run_with(new_broker(initial_rebalance_delay_ms=3000), go)

