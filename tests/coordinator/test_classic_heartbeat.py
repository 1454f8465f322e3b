"""Heartbeat: errors in every state, and the session clock it restarts."""

from __future__ import annotations

import pytest

from .harness import E, Harness
from .test_classic_join import OtherTypeGroup
from .test_classic_sync import completing


@pytest.mark.parametrize("version", range(0, 5))
def test_empty_group_id(h: Harness, version: int) -> None:
    assert h.error(h.heartbeat("m", 0, group="", version=version)) is E.INVALID_GROUP_ID


def test_unknown_or_foreign_group(h: Harness) -> None:
    assert h.error(h.heartbeat("m", 0)) is E.UNKNOWN_MEMBER_ID
    h.coord.groups["other"] = OtherTypeGroup("other")
    assert h.error(h.heartbeat("m", 0, group="other")) is E.UNKNOWN_MEMBER_ID


def test_empty_group_has_no_members(h: Harness) -> None:
    h.join()
    assert h.error(h.heartbeat("client-1", 0)) is E.UNKNOWN_MEMBER_ID  # a pending id is no member


def test_unknown_member(h: Harness) -> None:
    h.stable_group(1)
    assert h.error(h.heartbeat("ghost", 1)) is E.UNKNOWN_MEMBER_ID


def test_stable(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    assert h.error(h.heartbeat(ids[1], gen)) is E.NONE
    assert h.error(h.heartbeat(ids[1], gen + 1)) is E.ILLEGAL_GENERATION
    assert h.error(h.heartbeat(ids[1], gen - 1)) is E.ILLEGAL_GENERATION


def test_completing_rebalance(h: Harness) -> None:
    ids, gen = completing(h, 2)
    assert h.error(h.heartbeat(ids[1], gen)) is E.NONE
    assert h.error(h.heartbeat(ids[1], gen - 1)) is E.ILLEGAL_GENERATION


def test_preparing_rebalance(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    h.join(ids[0], client_id="c1")
    # Generation is checked first: the current (old) generation is told to rejoin.
    assert h.error(h.heartbeat(ids[1], gen)) is E.REBALANCE_IN_PROGRESS
    assert h.error(h.heartbeat(ids[1], gen + 1)) is E.ILLEGAL_GENERATION


def test_heartbeats_push_the_session_deadline(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    key = ("heartbeat", "g", ids[0])
    assert h.coord.env.timers.deadline(key) == h.now + 10_000
    h.advance(9_999)
    h.heartbeat(ids[0], gen)
    assert h.coord.env.timers.deadline(key) == h.now + 10_000
    h.advance(9_999)
    assert h.state() == "Stable"
    h.advance(1)
    assert h.state() == "Empty"  # the last member expired: a rebalance to an empty generation


def test_heartbeats_while_preparing_keep_a_member_alive(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    h.join(ids[0], client_id="c1")
    for _ in range(15):  # 45 s of a 60 s rebalance, far past the 10 s session
        h.advance(3000)
        assert h.error(h.heartbeat(ids[1], gen)) is E.REBALANCE_IN_PROGRESS
    assert ids[1] in h.group().members
