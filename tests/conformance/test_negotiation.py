"""Version negotiation (fakebroker.negotiation) against a real fake broker that advertises
lower maximum versions: the suite sends what the broker advertised, a requirement whose
versions it does not support is NOT-APPLICABLE with the reason, a golden is re-encoded."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance import suites
from conformance.harness.cases import load_cases
from conformance.harness.outcomes import Outcome
from conformance.harness.runner import run_case
from conformance.harness.sessions import CoordinatorSession
from conformance.harness.target import load_target
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.negotiation import ApiRanges, VersionUnavailable, gap, probe, refusal
from fakebroker.protocol import default_registry
from fakebroker.server.broker import FakeBroker
from fakebroker.server.config import BrokerConfig
from fakebroker.server.thread import BrokerThread
from fakebroker.testing.session import ScriptedSession

load_cases(suites)  # run_case finds each live case in the registry the suites fill

REG = default_registry()
CAPS = {"JoinGroup": 5, "SyncGroup": 3, "LeaveGroup": 2}


@pytest.fixture(scope="module")
def capped() -> Iterator[BrokerThread]:
    caps = {REG.by_api_name(api): v for api, v in CAPS.items()}
    b = BrokerThread(FakeBroker(BrokerConfig(api_max_versions=caps),
                                CoordinatorConfig(initial_rebalance_delay_ms=0))).start()
    yield b
    b.stop()


def test_pick_is_the_highest_common_version_within_the_need() -> None:
    r = ApiRanges({"JoinGroup": (0, 6)}, {"JoinGroup": (0, 6)})
    assert r.pick("JoinGroup", 0, 9) == 6
    assert r.pick("JoinGroup", 0, 3) == 3
    with pytest.raises(VersionUnavailable, match=r"^broker supports JoinGroup 0-6; CLS-X needs JoinGroup v7\+$"):
        r.pick("JoinGroup", 7, None, who="CLS-X")
    with pytest.raises(VersionUnavailable, match="broker does not advertise DescribeGroups"):
        r.pick("DescribeGroups")
    assert gap(r, {"JoinGroup": (4, None)}, "CLS-X") is None
    assert refusal(r, "JoinGroup", 9, "closed the connection after") == (
        True, "broker supports JoinGroup 0-6; the broker closed the connection after JoinGroup v9")
    inside, why = refusal(r, "JoinGroup", 6, "closed the connection after")
    assert not inside and why.startswith("the broker closed the connection after JoinGroup v6, "
                                         "which it advertises (JoinGroup 0-6;")
    c = r.capped({"JoinGroup": 5})
    assert c.pick("JoinGroup", 0, 9) == 5 and c.advertised == r.advertised
    with pytest.raises(VersionUnavailable, match=r"^broker supports JoinGroup 0-6, certified up to v5 "):
        c.pick("JoinGroup", 6)


def test_probe_learns_the_advertised_caps(capped: BrokerThread) -> None:
    r = asyncio.run(probe(capped.bootstrap, REG))
    for api, top in CAPS.items():
        assert r.usable[api][1] == top
    assert r.via == 3


def test_scripted_requests_go_out_at_the_advertised_maximum(capped: BrokerThread) -> None:
    async def go() -> tuple[int, int, int]:
        s = ScriptedSession(capped.bootstrap, REG, "neg")
        try:
            c = await s.client("w1")
            member, pending = await c.new_member(s.group())
            joined = await pending.response(5)
            assert joined.error_code == 0
            join_v = c.last.version
            synced = await c.sync(s.group(), member, joined.generation_id, assignments={member: b"a"})
            assert synced.error_code == 0 and synced.assignment == b"a"
            sync_v = c.last.version
            left = await c.leave(s.group(), member)
            assert left.error_code == 0
            return join_v, sync_v, c.last.version
        finally:
            await s.close()
    assert asyncio.run(go()) == (5, 3, 2)


def _target(tmp_path: Path, bootstrap: str) -> Path:
    p = tmp_path / "capped.toml"
    p.write_text(f'''name = "capped-fakebroker"
description = "a fake broker the test started"
kind = "coordinator"
protocols = ["classic"]

[implementation]
name = "fakebroker"
version = "test"

[start]
bootstrap = "{bootstrap}"

[timing]
clock = "real"
initial_rebalance_delay_ms = 0
session_timeout_ms = 10000
rebalance_timeout_ms = 10000
''', encoding="utf-8")
    return p


def test_requirement_outside_the_broker_range_is_not_applicable(capped: BrokerThread, tmp_path: Path) -> None:
    session = CoordinatorSession.start(load_target(_target(tmp_path, capped.bootstrap)))
    try:
        r = run_case(default_catalogue()["CLS-JOIN-13"], session)
        assert r.outcome is Outcome.NOT_APPLICABLE
        assert r.message == "broker supports JoinGroup 0-5; CLS-JOIN-13 needs JoinGroup v7+"
        r = run_case(default_catalogue()["CLS-LEAVE-04"], session)
        assert r.outcome is Outcome.NOT_APPLICABLE
        assert r.message == "broker supports LeaveGroup 0-2; CLS-LEAVE-04 needs LeaveGroup v3+"
    finally:
        session.stop()


def test_case_runs_at_the_negotiated_versions(capped: BrokerThread, tmp_path: Path) -> None:
    """CLS-JOIN-01 (JoinGroup v4+): its live case at v5; its goldens need topics, which a
    broker without CreateTopics cannot be given: NOT-APPLICABLE with the reason."""
    session = CoordinatorSession.start(load_target(_target(tmp_path, capped.bootstrap)))
    try:
        r = run_case(default_catalogue()["CLS-JOIN-01"], session)
    finally:
        session.stop()
    assert r.outcome is Outcome.PASS, r.message
    assert [c["outcome"] for c in r.cases] == ["PASS", "NOT-APPLICABLE", "NOT-APPLICABLE"], r.cases
    assert r.cases[1]["detail"] == ("broker does not advertise CreateTopics; "
                                    "CLS-JOIN-01's golden (its topics) needs CreateTopics v7")
    assert r.transcript is not None
    sent = [(e.api, e.version) for e in r.transcript.events if e.kind == "request"]
    assert sent[0][0] == "ApiVersions"  # every connection starts with it
    assert ("JoinGroup", 5) in sent and not any(a == "JoinGroup" and v > 5 for a, v in sent)


def test_golden_is_re_encoded_at_the_broker_versions(capped: BrokerThread) -> None:
    """A golden recorded at JoinGroup v9 replays at v5 on a broker advertising 0-5; one that
    needs v7+ (its requirement's versions) is refused with the reason."""
    from conformance.harness.golden import golden_dir
    from fakebroker.script.recorder import Recorder
    from fakebroker.script.replay import RealPacer, at_versions, replay, run_token
    from fakebroker.exchange.transcript import load
    d = golden_dir()
    assert d is not None
    t = load(d / "CLS-JOIN-01.jsonl", REG)
    assert {e.version for e in t.events if e.api == "JoinGroup"} == {9}
    ranges = asyncio.run(probe(capped.bootstrap, REG))
    fitted = at_versions(t, ranges, REG, {"JoinGroup": (4, None)}, "CLS-JOIN-01")
    assert not isinstance(fitted, str), fitted
    assert {e.version for e in fitted.events if e.api == "JoinGroup"} == {5}
    seen = capped.broker.record(Recorder())
    report = asyncio.run(replay(fitted, capped.bootstrap, REG, pacer=RealPacer(), unique=run_token(),
                                negotiate=True))
    assert report.status == "PASS", report.render(REG)
    capped.broker.stop_recording(seen)
    firsts = {}
    for e in seen.events:  # each connection's first request
        if e.kind == "request":
            firsts.setdefault(e.conn, e.api)
    assert firsts and set(firsts.values()) == {"ApiVersions"}, firsts
    assert at_versions(t, ranges, REG, {"JoinGroup": (7, None)}, "CLS-JOIN-13") == (
        "broker supports JoinGroup 0-5; CLS-JOIN-13 needs JoinGroup v7-9 (the golden sends JoinGroup v9)")



CLOSE_ON_JOIN = """
version: 1
faults:
  - api: JoinGroup
    times: all
    action: {close: true}
"""
UNSUPPORTED_HEARTBEAT = """
version: 1
faults:
  - api: Heartbeat
    times: all
    action: {error: UNSUPPORTED_VERSION}
"""


@pytest.mark.parametrize(("req_id", "plan", "reason"), [
    ("CLS-JOIN-10", CLOSE_ON_JOIN,
     "the broker closed the connection after JoinGroup v9, which it advertises (JoinGroup 0-9;"),
    ("CLS-HB-04", UNSUPPORTED_HEARTBEAT,
     "the broker answered UNSUPPORTED_VERSION to Heartbeat v4, which it advertises (Heartbeat 0-4;"),
])
def test_a_refused_advertised_version_is_broken_not_a_failure(tmp_path: Path, req_id: str, plan: str,
                                                              reason: str) -> None:
    """One outcome per cause: a broker that closes the connection on, or answers
    UNSUPPORTED_VERSION to, a version it advertised makes the case BROKEN with the reason."""
    from fakebroker.script.faults import install, parse_plan
    broker = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0))
    install(broker.hooks, parse_plan(plan, REG))
    b = BrokerThread(broker).start()
    try:
        session = CoordinatorSession.start(load_target(_target(tmp_path, b.bootstrap)))
        try:
            r = run_case(default_catalogue()[req_id], session)
        finally:
            session.stop()
    finally:
        b.stop()
    assert r.outcome is Outcome.BROKEN, (r.outcome, r.message)
    assert r.message.startswith(reason), r.message


def test_a_golden_step_that_needs_a_field_the_lower_version_lacks_is_not_applicable() -> None:
    """A static member's JoinGroup (GroupInstanceId, v5+) cannot be re-encoded at v4; a
    reason (logged only, KIP-800) may be lost."""
    from conformance.harness.golden import golden_dir
    from fakebroker.script.replay import at_versions
    from fakebroker.exchange.transcript import load
    d = golden_dir()
    assert d is not None
    t = load(d / "CLS-JOIN-22.jsonl", REG)
    r = ApiRanges({"JoinGroup": (0, 9)}, {"JoinGroup": (0, 9)}).capped({"JoinGroup": 4})
    why = at_versions(t, r, REG, {}, "CLS-JOIN-22")
    assert isinstance(why, str) and "carries GroupInstanceId, which v4 cannot" in why, why
    assert why.startswith("broker supports JoinGroup 0-9, certified up to v4 (the target's max_versions); "
                          "the golden's JoinGroup v9 on line ")
