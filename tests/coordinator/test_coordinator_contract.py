"""The sans-IO contract: inputs, outputs, configuration, and responses at every version."""

from __future__ import annotations


import pytest

from fakebroker.coordinator import (CoordinatorConfig, GroupCoordinator, GroupCreated,
                                    RequestContext)
from fakebroker.coordinator.classic.replies import JoinResult, join_response
from fakebroker.coordinator.classic.rules import offset_metadata_within_limit
from fakebroker.coordinator.config import counting_suffixes

from .harness import REG, E, Harness


def test_api_keys() -> None:
    # OffsetCommit, OffsetFetch, JoinGroup, Heartbeat, LeaveGroup, SyncGroup, DescribeGroups,
    # ListGroups; ConsumerGroupHeartbeat, ConsumerGroupDescribe (consumer protocol); the
    # draft's ConnectGroupHeartbeat, -PrepareAssignment, -InstallAssignment (connect).
    classic = [8, 9, 11, 12, 13, 14, 15, 16]
    assert GroupCoordinator(REG).api_keys() == classic + [68, 69, 1000, 1001, 1002]
    only_classic = CoordinatorConfig(rebalance_protocols=("classic",))
    assert GroupCoordinator(REG, only_classic).api_keys() == classic
    no_connect = CoordinatorConfig.from_properties(
        {"group.coordinator.rebalance.protocols": "classic,consumer"})
    coord = GroupCoordinator(REG, no_connect)
    assert coord.api_keys() == classic + [68, 69]
    hb = REG["ConnectGroupHeartbeatRequest"].new(group_id="g", member_id="m")
    with pytest.raises(ValueError, match="enabled protocol"):
        coord.handle(RequestContext(1, 1000, 0, "c", "h"), hb, 0)
    with pytest.raises(ValueError):
        CoordinatorConfig(rebalance_protocols=("consumer",))  # classic cannot be disabled
    with pytest.raises(ValueError):
        CoordinatorConfig(rebalance_protocols=("classic", "share"))


def test_a_new_config_is_routed_under_at_once() -> None:
    # A route checked under the old settings (connect enabled) is not reused under new
    # ones without it, and the groups read the same settings as the coordinator.
    coord = GroupCoordinator(REG)
    hb = REG["ConnectGroupHeartbeatRequest"].new(group_id="g", member_id="m")
    coord.handle(RequestContext(1, 1000, 0, "c", "h"), hb, 0)
    coord.config = CoordinatorConfig(rebalance_protocols=("classic",))
    assert coord.env.config is coord.config
    with pytest.raises(ValueError, match="enabled protocol"):
        coord.handle(RequestContext(1, 1000, 1, "c", "h"), hb, 0)


def test_defaults_are_kafkas() -> None:
    c = CoordinatorConfig()
    assert (c.initial_rebalance_delay_ms, c.min_session_timeout_ms, c.max_session_timeout_ms,
            c.max_group_size, c.offset_metadata_max_bytes, c.new_member_join_timeout_ms) == \
        (3000, 6000, 1_800_000, 2**31 - 1, 4096, 300_000)


def test_config_from_kafka_property_names() -> None:
    c = CoordinatorConfig.from_properties({"group.max.size": "3", "group.initial.rebalance.delay.ms": 0,
                                           "group.min.session.timeout.ms": 1,
                                           "group.max.session.timeout.ms": 2,
                                           "offset.metadata.max.bytes": 5})
    assert (c.max_group_size, c.initial_rebalance_delay_ms, c.min_session_timeout_ms,
            c.max_session_timeout_ms, c.offset_metadata_max_bytes) == (3, 0, 1, 2, 5)
    with pytest.raises(ValueError, match="group.max.sizes"):
        CoordinatorConfig.from_properties({"group.max.sizes": 3})


def test_member_id_rule() -> None:
    c = CoordinatorConfig(member_id_suffix=counting_suffixes(7))
    assert c.member_id("client", None) == "client-7"
    assert c.member_id("client", "instance") == "instance-8"
    with pytest.raises(ValueError):
        CoordinatorConfig(max_group_size=0)
    with pytest.raises(ValueError):
        CoordinatorConfig(initial_rebalance_delay_ms=-1)


def test_client_host_in_kafkas_form() -> None:
    assert RequestContext(1, 11, 9, "c", "10.0.0.1").kafka_client_host == "/10.0.0.1"
    assert RequestContext(1, 11, 9, "c", "host/10.0.0.1").kafka_client_host == "host/10.0.0.1"


def test_inputs_are_checked() -> None:
    coord = GroupCoordinator(REG)
    hb = REG["HeartbeatRequest"].new(group_id="g")
    with pytest.raises(ValueError):
        coord.handle(RequestContext(1, 3, 0, "c", "h"), hb, 0)  # Metadata is not ours
    with pytest.raises(TypeError):
        coord.handle(RequestContext(1, 11, 0, "c", "h"), hb, 0)  # a Heartbeat as JoinGroup
    with pytest.raises(ValueError):
        coord.handle(RequestContext(1, 12, 99, "c", "h"), hb, 0)


def test_replies_name_their_requests() -> None:
    coord = GroupCoordinator(REG)
    body = REG["HeartbeatRequest"].new(group_id="g", member_id="m")
    result = coord.handle(RequestContext(42, 12, 4, "c", "h"), body, 0)
    assert result.reply == REG["HeartbeatResponse"].new(error_code=E.UNKNOWN_MEMBER_ID)
    assert result.replies == ()  # the request's own answer is ``reply``, no outbox entry
    with pytest.raises(AttributeError):
        result.reply = None  # type: ignore[misc]


def test_events_come_once_with_their_input(h: Harness) -> None:
    h.join()
    assert h.coord.tick(h.now).events == ()  # the join's result carried them
    assert h.take_events(GroupCreated) == [GroupCreated("g", 0, "classic")]


def test_a_parked_request_is_answered_in_a_later_inputs_replies(h: Harness) -> None:
    _, rid = h.new_member("c1")  # parked for the initial rebalance delay
    assert not h.answered(rid)
    deadline = h.coord.next_deadline()
    assert deadline is not None
    result = h.coord.tick(deadline)
    assert result.reply is None and [r.request_id for r in result.replies] == [rid]
    h._collect(result)


def test_parked_joins_are_answered_in_join_order(h: Harness) -> None:
    rids = [h.new_member(f"c{i}")[1] for i in range(1, 5)]
    result = h.coord.tick(6000)
    assert [r.request_id for r in result.replies] == rids
    h._collect(result)


def test_groups_share_one_namespace(h: Harness) -> None:
    h.join(group="a")
    h.send("OffsetCommit", 9, group_id="b", generation_id_or_member_epoch=-1, member_id="",
           topics=[REG["OffsetCommitRequest"].cls.OffsetCommitRequestTopic(  # type: ignore[attr-defined]
               name="t", partitions=[REG["OffsetCommitRequest"].cls.OffsetCommitRequestPartition(  # type: ignore[attr-defined]
                   partition_index=0, committed_offset=1)])])
    assert {gid: g.type for gid, g in h.coord.groups.items()} == {"a": "classic", "b": "classic"}


def test_metadata_limit_counts_utf16_units() -> None:
    assert offset_metadata_within_limit("\U0001F600" * 2, 4)   # 2 surrogate pairs = 4 units
    assert not offset_metadata_within_limit("\U0001F600" * 3, 4)
    assert offset_metadata_within_limit(None, 0)


# ---------------------------------------------------------------------- every version, errors

@pytest.mark.parametrize("version", range(0, 10))
@pytest.mark.parametrize("case", ["invalid-group", "bad-session", "unknown-member"])
def test_join_errors_at_every_version(h: Harness, version: int, case: str) -> None:
    if case == "invalid-group":
        rid, error = h.join("m", group="", version=version), E.INVALID_GROUP_ID
    elif case == "bad-session":
        rid, error = h.join("m", session=1, version=version), E.INVALID_SESSION_TIMEOUT
    else:
        rid, error = h.join("m", version=version), E.UNKNOWN_MEMBER_ID
    r = h.reply(rid)
    assert (E(r.error_code), r.generation_id, r.member_id, r.leader, r.members) == \
        (error, -1, "m", "", [])
    assert r.protocol_name == ("" if version < 7 else None)


@pytest.mark.parametrize("version", range(0, 6))
def test_sync_errors_at_every_version(h: Harness, version: int) -> None:
    ids, gen = h.stable_group(1)
    r = h.reply(h.sync(ids[0], gen + 5, version=version))
    assert (E(r.error_code), r.assignment, r.protocol_type, r.protocol_name) == \
        (E.ILLEGAL_GENERATION, b"", None, None)


@pytest.mark.parametrize("version", range(0, 5))
def test_heartbeat_at_every_version(h: Harness, version: int) -> None:
    ids, gen = h.stable_group(1)
    assert h.error(h.heartbeat(ids[0], gen, version=version)) is E.NONE


@pytest.mark.parametrize("version", range(0, 6))
def test_leave_at_every_version(h: Harness, version: int) -> None:
    ids, gen = h.stable_group(2)
    assert h.error(h.leave(ids[1], version=version)) is E.NONE


@pytest.mark.parametrize("version", range(0, 7))
def test_describe_at_every_version(h: Harness, version: int) -> None:
    j = h.join(client_id="c", instance="i")
    h.advance(3000)
    h.sync(h.reply(j).member_id, 1, instance="i", assignments={h.reply(j).member_id: b"x"})
    (d,) = h.describe("g", version=version, ops=True).groups
    assert (d.group_state, d.protocol_data, d.members[0].member_assignment) == ("Stable", "sessioned", b"x")


@pytest.mark.parametrize("version,given,sent", [(6, None, ""), (6, "", ""), (7, "", None),
                                                (7, None, None), (7, "p", "p")])
def test_join_response_protocol_name_per_version(version: int, given: str | None,
                                                 sent: str | None) -> None:
    """Kafka's JoinGroupResponse: "" before v7 (not nullable), null for "" from v7."""
    body = join_response(REG, version, JoinResult(E.NONE, protocol_name=given))
    assert body.protocol_name == sent  # type: ignore[attr-defined]
    REG["JoinGroupResponse"].encode(body, version)
