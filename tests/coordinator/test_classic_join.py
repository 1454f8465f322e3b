"""JoinGroup: every error path, the MEMBER_ID_REQUIRED flow, and rejoins in each state."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from fakebroker.coordinator import (CoordinatorConfig, MemberIdIssued, MemberRemoved,
                                    RebalanceStarted, RemovalReason)

from .harness import E, Harness, make_config

ALL_VERSIONS = range(0, 10)


# ---------------------------------------------------------------------- request checks

@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_empty_group_id_is_invalid(h: Harness, version: int) -> None:
    rid = h.join("someone", group="", version=version)
    assert h.error(rid) is E.INVALID_GROUP_ID
    assert h.reply(rid).member_id == "someone"
    assert h.coord.groups == {}


@pytest.mark.parametrize("session,ok", [(5999, False), (6000, True), (1_800_000, True),
                                        (1_800_001, False)])
def test_session_timeout_bounds(h: Harness, session: int, ok: bool) -> None:
    rid = h.join(session=session)
    assert h.error(rid) is (E.MEMBER_ID_REQUIRED if ok else E.INVALID_SESSION_TIMEOUT)
    assert ("g" in h.coord.groups) is ok  # checked before the group is looked up


def test_session_timeout_bounds_come_from_config() -> None:
    h = Harness(make_config(min_session_timeout_ms=100, max_session_timeout_ms=200))
    assert h.error(h.join(session=99)) is E.INVALID_SESSION_TIMEOUT
    assert h.error(h.join(session=201)) is E.INVALID_SESSION_TIMEOUT
    assert h.error(h.join(session=150)) is E.MEMBER_ID_REQUIRED


def test_config_rejects_inverted_bounds() -> None:
    with pytest.raises(ValueError):
        CoordinatorConfig(min_session_timeout_ms=10, max_session_timeout_ms=5)


def test_member_id_for_an_unknown_group_is_unknown(h: Harness) -> None:
    rid = h.join("ghost-1")
    assert h.error(rid) is E.UNKNOWN_MEMBER_ID
    assert h.reply(rid).member_id == "ghost-1"
    assert h.coord.groups == {}


def test_unknown_member_id_in_an_existing_group(h: Harness) -> None:
    ids, _ = h.stable_group(1)
    rid = h.join("ghost-1")
    assert h.error(rid) is E.UNKNOWN_MEMBER_ID
    assert h.reply(rid).member_id == "ghost-1"
    assert h.state() == "Stable"


@pytest.mark.parametrize("protocol_type,protocols", [
    ("", (("p", b""),)),   # no protocol type
    ("connect", ()),       # no protocols
])
def test_empty_group_needs_a_type_and_a_protocol(h: Harness, protocol_type: str,
                                                 protocols: tuple[tuple[str, bytes], ...]) -> None:
    rid = h.join(protocol_type=protocol_type, protocols=protocols)
    assert h.error(rid) is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.reply(rid).member_id == ""
    # Kafka still creates (and persists) the empty group.
    assert h.state() == "Empty" and h.group().protocol_type is None


def test_protocol_type_must_match_the_group(h: Harness) -> None:
    ids, _ = h.stable_group(1)
    new = h.join(protocol_type="consumer")
    assert h.error(new) is E.INCONSISTENT_GROUP_PROTOCOL and h.reply(new).member_id == ""
    existing = h.join(ids[0], client_id="c1", protocol_type="consumer")
    assert h.error(existing) is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.reply(existing).member_id == ids[0]
    assert h.state() == "Stable"


def test_a_new_member_needs_a_protocol_all_members_support(h: Harness) -> None:
    h.stable_group(2, protocols=(("sessioned", b""), ("compatible", b"")))
    assert h.error(h.join(protocols=(("default", b""),))) is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.error(h.join(protocols=(("default", b""), ("compatible", b"")))) is E.MEMBER_ID_REQUIRED


def test_group_of_another_type_owns_the_id(h: Harness) -> None:
    h.coord.groups["g"] = OtherTypeGroup("g")
    rid = h.join()
    assert h.error(rid) is E.INCONSISTENT_GROUP_PROTOCOL and h.reply(rid).member_id == ""
    assert h.error(h.join("m-1")) is E.INCONSISTENT_GROUP_PROTOCOL


@dataclass
class OtherTypeGroup:
    """Stands in for a heartbeat-driven group type sharing the group id namespace."""

    group_id: str
    type: str = "consumer"
    state_name: str = "Stable"
    listed_protocol_type: str = "consumer"

    def is_empty(self) -> bool:
        return False

    def validate_offset_commit(self, *args: object) -> None:
        pass

    def offsets_fetchable(self, member_id: str | None, member_epoch: int) -> bool:
        return True


# ---------------------------------------------------------------------- new members

@pytest.mark.parametrize("version", range(4, 10))
def test_member_id_required_from_v4(h: Harness, version: int) -> None:
    rid = h.join(client_id="worker", version=version)
    r = h.reply(rid)
    assert h.error(rid) is E.MEMBER_ID_REQUIRED
    assert r.member_id == "worker-1"  # client.id + "-" + suffix
    assert r.generation_id == -1 and r.leader == "" and r.members == []
    assert r.protocol_name == ("" if version < 7 else None)
    # The group does not change: the id is only pending.
    assert h.state() == "Empty" and h.group().members == {}
    assert h.group().pending_join == {"worker-1": None}
    assert h.take_events(MemberIdIssued) == [MemberIdIssued("g", 0, "worker-1")]
    rejoin = h.join("worker-1", client_id="worker", version=version)
    assert not h.answered(rejoin)
    assert h.state() == "PreparingRebalance" and list(h.group().members) == ["worker-1"]
    h.advance(3000)
    assert h.reply(rejoin).member_id == "worker-1" and h.reply(rejoin).leader == "worker-1"


@pytest.mark.parametrize("version", range(0, 4))
def test_before_v4_a_new_member_joins_at_once(h: Harness, version: int) -> None:
    rid = h.join(client_id="old", version=version)
    assert not h.answered(rid)
    assert list(h.group().members) == ["old-1"]
    h.advance(3000)
    r = h.reply(rid)
    assert h.error(rid) is E.NONE and r.member_id == "old-1" and r.generation_id == 1
    assert r.protocol_name == "sessioned"


def test_real_member_ids_are_client_id_dash_uuid() -> None:
    h = Harness(CoordinatorConfig())
    rid = h.join(client_id="connect-1")
    assert re.fullmatch(r"connect-1-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                        h.reply(rid).member_id)


def test_pending_member_id_expires_after_its_session_timeout(h: Harness) -> None:
    rid = h.join(session=7000)
    member_id = h.reply(rid).member_id
    assert h.coord.next_deadline() == 7000
    h.advance(6999)
    assert h.group().is_pending(member_id)
    h.advance(1)
    assert not h.group().is_pending(member_id)
    assert h.take_events(MemberRemoved) == [
        MemberRemoved("g", 7000, member_id, None, RemovalReason.SESSION_TIMEOUT, pending=True)]
    assert h.error(h.join(member_id)) is E.UNKNOWN_MEMBER_ID


def test_join_phase_waits_for_pending_members(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    pending = h.reply(h.join(client_id="c3")).member_id  # MEMBER_ID_REQUIRED; group stays Stable
    assert h.state() == "Stable"
    j1 = h.join(ids[0], client_id="c1")  # the leader rejoins: rebalance
    j2 = h.join(ids[1], client_id="c2")
    assert not h.answered(j1)  # the pending id may still join
    j3 = h.join(pending, client_id="c3")
    assert [h.reply(j).generation_id for j in (j1, j2, j3)] == [gen + 1] * 3


def test_join_phase_completes_when_a_pending_member_expires(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    t = h.now
    h.join(client_id="c3", session=6000)
    j1 = h.join(ids[0], client_id="c1")
    j2 = h.join(ids[1], client_id="c2")
    h.at(t + 5999)
    assert not h.answered(j1)
    h.at(t + 6000)
    assert h.reply(j1).generation_id == gen + 1 and h.error(j2) is E.NONE


def test_v0_uses_the_session_timeout_as_rebalance_timeout(h: Harness) -> None:
    j = h.join(version=0, session=6000, rebalance=999_999)
    assert h.group().member("client-1").rebalance_timeout_ms == 6000
    h.advance(3000)
    assert h.error(j) is E.NONE


def test_new_member_join_timeout(h: Harness) -> None:
    """A new member parked in a long join phase is dropped after 5 minutes."""
    ids, gen = h.stable_group(1, rebalance=600_000)
    t = h.now
    late, parked = h.new_member("c2", rebalance=600_000)  # starts a rebalance; c1 never rejoins
    for _ in range(99):
        h.advance(3000)
        h.heartbeat(ids[0], gen)
    h.at(t + 300_000)
    assert h.error(parked) is E.UNKNOWN_MEMBER_ID and h.reply(parked).member_id == ""
    assert [(e.member_id, e.reason) for e in h.take_events(MemberRemoved)] == [
        (late, RemovalReason.NEW_MEMBER_JOIN_TIMEOUT)]


# ---------------------------------------------------------------------- group.max.size

def test_group_max_size_refuses_new_members() -> None:
    h = Harness(make_config(max_group_size=2))
    h.stable_group(2)
    rid = h.join(client_id="c3")
    assert h.error(rid) is E.GROUP_MAX_SIZE_REACHED and h.reply(rid).member_id == ""
    assert h.state() == "Stable"


def test_group_max_size_counts_awaiting_members_while_preparing() -> None:
    h = Harness(make_config(max_group_size=2))
    _, j1 = h.new_member("c1")
    _, j2 = h.new_member("c2")
    assert h.error(h.join(client_id="c3")) is E.GROUP_MAX_SIZE_REACHED


def test_shrunk_max_size_drops_the_last_member_to_rejoin(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    h.coord.config.max_group_size = 2  # Kafka lets the limit drop below a group's size
    j1 = h.join(ids[0], client_id="c1")
    j2 = h.join(ids[1], client_id="c2")
    j3 = h.join(ids[2], client_id="c3")
    assert h.error(j3) is E.GROUP_MAX_SIZE_REACHED
    assert list(h.group().members) == ids[:2]
    # Kafka does not re-check the join phase after this removal: it ends on its timer.
    t = h.now
    h.at(t + 60_000 - 1)
    assert not h.answered(j1)
    h.at(t + 60_000)
    assert h.reply(j1).generation_id == gen + 1 and h.error(j2) is E.NONE
    removed = h.take_events(MemberRemoved)
    assert [(e.member_id, e.reason) for e in removed] == [(ids[2], RemovalReason.GROUP_MAX_SIZE)]


# ---------------------------------------------------------------------- existing members

def test_rejoin_during_completing_rebalance_with_same_metadata_resends_generation(h: Harness) -> None:
    ids, rids = [], []
    for i in (1, 2):
        mid, rid = h.new_member(f"c{i}")
        ids.append(mid)
        rids.append(rid)
    h.run_until(lambda: h.answered(rids[0]))
    assert h.state() == "CompletingRebalance"
    again = h.join(ids[0], client_id="c1")  # the leader lost its response
    assert h.reply(again).generation_id == 1
    assert [m.member_id for m in h.reply(again).members] == ids
    follower = h.join(ids[1], client_id="c2")
    assert h.reply(follower).members == [] and h.reply(follower).leader == ids[0]
    assert h.state() == "CompletingRebalance"


def test_rejoin_during_completing_rebalance_with_new_metadata_rebalances(h: Harness) -> None:
    ids, rids = [], []
    for i in (1, 2):
        mid, rid = h.new_member(f"c{i}")
        ids.append(mid)
        rids.append(rid)
    h.run_until(lambda: h.answered(rids[0]))
    parked_sync = h.sync(ids[1], 1)
    assert not h.answered(parked_sync)
    rejoin = h.join(ids[0], client_id="c1", protocols=(("sessioned", b"changed"),))
    assert h.state() == "PreparingRebalance"
    assert h.error(parked_sync) is E.REBALANCE_IN_PROGRESS
    assert h.reply(parked_sync).assignment == b""
    assert not h.answered(rejoin)


def test_stable_follower_with_same_metadata_gets_the_current_generation(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    rid = h.join(ids[1], client_id="c2")
    r = h.reply(rid)
    assert (r.generation_id, r.leader, r.members, r.member_id) == (gen, ids[0], [], ids[1])
    assert h.state() == "Stable"


def test_stable_follower_with_new_metadata_rebalances(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    rid = h.join(ids[1], client_id="c2", protocols=(("sessioned", b"new"),))
    assert not h.answered(rid) and h.state() == "PreparingRebalance"
    h.join(ids[0], client_id="c1")
    assert h.reply(rid).generation_id == gen + 1


def test_stable_leader_rejoin_always_rebalances(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    rid = h.join(ids[0], client_id="c1", reason="topic metadata changed")
    assert not h.answered(rid) and h.state() == "PreparingRebalance"
    started = h.take_events(RebalanceStarted)
    assert started[-1].reason == f"Leader {ids[0]} re-joining group during Stable; " \
                                 "client reason: topic metadata changed"


def test_rejoin_during_preparing_rebalance_updates_the_member(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    h.join(ids[0], client_id="c1")
    j2 = h.join(ids[1], client_id="c2", protocols=(("sessioned", b"v2"),), session=20_000)
    member = h.group().member(ids[1])
    assert member.session_timeout_ms == 20_000 and member.protocols[0].metadata == b"v2"
    assert h.error(j2) is E.NONE


def test_duplicate_parked_join_is_dropped_like_kafka(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    first = h.join(ids[0], client_id="c1")
    second = h.join(ids[0], client_id="c1")
    h.join(ids[1], client_id="c2")
    assert h.error(second) is E.NONE
    assert not h.answered(first)  # Kafka replaces the member's join future; the old one hangs


def test_pending_member_cannot_claim_a_group_instance_id(h: Harness) -> None:
    pending = h.reply(h.join()).member_id
    rid = h.join(pending, instance="i1")
    assert h.error(rid) is E.UNKNOWN_SERVER_ERROR and h.reply(rid).member_id == ""


def test_join_of_an_empty_group_with_a_stale_member_id(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.leave(ids[0])
    assert h.state() == "Empty"
    rid = h.join(ids[0], client_id="c1")
    assert h.error(rid) is E.UNKNOWN_MEMBER_ID and h.reply(rid).member_id == ids[0]


def test_member_list_carries_instance_ids_from_v5(h: Harness) -> None:
    a = h.join(client_id="a", instance="ia", version=5)
    h.advance(3000)
    assert [(m.member_id, m.group_instance_id) for m in h.reply(a).members] == [("ia-1", "ia")]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_every_version_completes_a_rebalance(h: Harness, version: int) -> None:
    if version >= 4:
        mid, rid = h.new_member("w", version=version)
    else:
        rid = h.join(client_id="w", version=version)
    h.advance(3000)
    r = h.reply(rid)
    assert h.error(rid) is E.NONE
    assert (r.generation_id, r.protocol_name, r.leader) == (1, "sessioned", r.member_id)
    assert r.protocol_type == ("connect" if version >= 7 else None)
    assert r.skip_assignment is False
