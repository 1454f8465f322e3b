"""SyncGroup: parking until the leader's assignment, errors, and opaque bytes."""

from __future__ import annotations

from typing import Any

import pytest

from fakebroker.coordinator import MemberRemoved, RemovalReason

from .harness import E, Harness
from .test_classic_join import OtherTypeGroup


def completing(h: Harness, n: int, **kw: object) -> tuple[list[str], int]:
    """n members through the join phase (CompletingRebalance, nobody synced)."""
    ids, rids = [], []
    for i in range(1, n + 1):
        mid, rid = h.new_member(f"c{i}", **kw)  # type: ignore[arg-type]
        ids.append(mid)
        rids.append(rid)
    h.run_until(lambda: all(h.answered(r) for r in rids))
    assert h.state() == "CompletingRebalance"
    return ids, h.reply(rids[0]).generation_id


@pytest.mark.parametrize("missing", ["protocol_type", "protocol_name"])
def test_v5_requires_protocol_type_and_name(h: Harness, missing: str) -> None:
    ids, gen = completing(h, 1)
    absent: dict[str, Any] = {missing: None}
    rid = h.sync(ids[0], gen, **absent)
    assert h.error(rid) is E.INCONSISTENT_GROUP_PROTOCOL
    # Checked first, before even the group id.
    assert h.error(h.sync(ids[0], gen, group="", **absent)) is E.INCONSISTENT_GROUP_PROTOCOL


@pytest.mark.parametrize("version", range(0, 6))
def test_empty_group_id(h: Harness, version: int) -> None:
    assert h.error(h.sync("m", 0, group="", version=version)) is E.INVALID_GROUP_ID


def test_unknown_empty_or_foreign_group_means_unknown_member(h: Harness) -> None:
    assert h.error(h.sync("m", 0)) is E.UNKNOWN_MEMBER_ID
    h.join()  # pending only: the group exists, Empty
    assert h.error(h.sync("client-1", 0)) is E.UNKNOWN_MEMBER_ID
    h.coord.groups["other"] = OtherTypeGroup("other")
    assert h.error(h.sync("m", 0, group="other")) is E.UNKNOWN_MEMBER_ID


def test_unknown_member_and_wrong_generation(h: Harness) -> None:
    ids, gen = completing(h, 1)
    assert h.error(h.sync("ghost", gen)) is E.UNKNOWN_MEMBER_ID
    assert h.error(h.sync(ids[0], gen + 1)) is E.ILLEGAL_GENERATION
    assert h.error(h.sync(ids[0], gen - 1)) is E.ILLEGAL_GENERATION


@pytest.mark.parametrize("field,value", [("protocol_type", "consumer"), ("protocol_name", "range")])
def test_v5_protocol_must_match_the_group(h: Harness, field: str, value: str) -> None:
    ids, gen = completing(h, 1)
    rid = h.sync(ids[0], gen, **{field: value})  # type: ignore[arg-type]
    assert h.error(rid) is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.reply(rid).assignment == b"" and h.reply(rid).protocol_name is None


def test_before_v5_protocol_is_not_checked(h: Harness) -> None:
    ids, gen = completing(h, 1)
    assert h.error(h.sync(ids[0], gen, version=4)) is E.NONE


def test_preparing_rebalance_means_rejoin(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    h.join(ids[0], client_id="c1")
    assert h.error(h.sync(ids[1], gen)) is E.REBALANCE_IN_PROGRESS


def test_followers_wait_for_the_leader(h: Harness) -> None:
    ids, gen = completing(h, 3)
    f3 = h.sync(ids[2], gen)
    assert not h.answered(f3) and h.state() == "CompletingRebalance"
    lead = h.sync(ids[0], gen, assignments={ids[0]: b"L", ids[2]: b"F3", "stranger": b"?"})
    assert h.state() == "Stable"
    assert h.reply(lead).assignment == b"L" and h.reply(f3).assignment == b"F3"
    r = h.reply(lead)
    assert (r.protocol_type, r.protocol_name) == ("connect", "sessioned")
    # A member the leader left out gets an empty assignment; strangers are ignored.
    late = h.sync(ids[1], gen)
    assert h.error(late) is E.NONE and h.reply(late).assignment == b""
    assert set(h.group().members) == set(ids)


def test_stable_sync_returns_the_stored_assignment(h: Harness) -> None:
    ids, gen = h.stable_group(2, assignments={0: b"x", 1: b"y"})
    for _ in range(2):
        assert h.reply(h.sync(ids[1], gen)).assignment == b"y"


def test_repeated_member_in_assignments_last_wins(h: Harness) -> None:
    ids, gen = completing(h, 1)
    cls = h.coord.registry["SyncGroupRequest"].cls.SyncGroupRequestAssignment  # type: ignore[attr-defined]
    rid = h.send("SyncGroup", 5, group_id="g", generation_id=gen, member_id=ids[0],
                 protocol_type="connect", protocol_name="sessioned",
                 assignments=[cls(member_id=ids[0], assignment=b"1"),
                              cls(member_id=ids[0], assignment=b"2")])
    assert h.reply(rid).assignment == b"2"


@pytest.mark.parametrize("protocol_type", ["connect", "consumer", "anything-goes"])
def test_metadata_and_assignment_bytes_pass_through(h: Harness, protocol_type: str) -> None:
    meta = [bytes(range(256)), b"\x00" * 70_000, b""]
    rids = []
    ids = []
    for i, m in enumerate(meta, 1):
        mid, rid = h.new_member(f"c{i}", protocol_type=protocol_type, protocols=(("p", m),))
        ids.append(mid)
        rids.append(rid)
    h.run_until(lambda: all(h.answered(r) for r in rids))
    assert [x.metadata for x in h.reply(rids[0]).members] == meta
    blobs = {ids[0]: b"\xff\x00\x01", ids[1]: bytes(reversed(range(256))) * 10, ids[2]: b""}
    syncs = [h.sync(ids[0], 1, assignments=blobs)] + [h.sync(m, 1) for m in ids[1:]]
    assert [h.reply(s).assignment for s in syncs] == [blobs[m] for m in ids]
    d = h.describe("g").groups[0]
    assert [x.member_metadata for x in d.members] == meta
    assert [x.member_assignment for x in d.members] == [blobs[m] for m in ids]


def test_follower_that_never_syncs_is_removed_at_the_rebalance_timeout(h: Harness) -> None:
    ids, gen = completing(h, 2, rebalance=30_000)
    t = h.now
    h.sync(ids[0], gen, assignments={})
    for _ in range(9):
        h.advance(3000)
        h.heartbeat(ids[0], gen)
        h.heartbeat(ids[1], gen)  # alive, but no SyncGroup
    h.at(t + 30_000)
    assert [(e.member_id, e.reason) for e in h.take_events(MemberRemoved)] == [
        (ids[1], RemovalReason.SYNC_TIMEOUT)]
    assert h.state() == "PreparingRebalance"


def test_leader_that_never_syncs_sends_followers_back_to_join(h: Harness) -> None:
    ids, gen = completing(h, 2, rebalance=30_000)
    t = h.now
    parked = h.sync(ids[1], gen)
    for _ in range(9):
        h.advance(3000)
        h.heartbeat(ids[0], gen)  # alive, but no SyncGroup
    h.at(t + 29_999)
    assert not h.answered(parked)
    h.at(t + 30_000)
    assert h.error(parked) is E.REBALANCE_IN_PROGRESS
    assert [e.member_id for e in h.take_events(MemberRemoved)] == [ids[0]]
    assert h.group().leader_id == ids[1]


@pytest.mark.parametrize("version", range(0, 6))
def test_every_version(h: Harness, version: int) -> None:
    ids, gen = completing(h, 1)
    rid = h.sync(ids[0], gen, version=version, assignments={ids[0]: b"mine"})
    r = h.reply(rid)
    assert h.error(rid) is E.NONE and r.assignment == b"mine"
    expected = ("connect", "sessioned") if version >= 5 else (None, None)
    assert (r.protocol_type, r.protocol_name) == expected
