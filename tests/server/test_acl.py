"""ACLs as Kafka decides them, and the broker answering with Kafka's authorization errors:
whole requests refused per group, entries refused per group or topic, lists filtered."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import default_registry
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.server.acl import ANONYMOUS, Acls, AclRule, Operation, ResourceType, parse_acl_file
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import BrokerConfig, Topic

REG = default_registry()
G, T = ResourceType.GROUP, ResourceType.TOPIC
GROUP_AUTH, TOPIC_AUTH = ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED


def acls(text: str, tmp_path: Path) -> Acls:
    f = tmp_path / "acls"
    f.write_text(text)
    return parse_acl_file(f)


def test_deny_wins_no_match_denies_and_read_implies_describe(tmp_path: Path) -> None:
    a = acls("""
        allow User:alice Read Group:connect-*   # prefixed
        allow User:*     Describe Topic:*
        deny  User:bob   All Group:connect-secret
        allow User:bob   Read Group:*
    """, tmp_path)
    assert a.allows("User:alice", Operation.READ, G, "connect-cluster")
    assert a.allows("User:alice", Operation.DESCRIBE, G, "connect-cluster")  # implied
    assert not a.allows("User:alice", Operation.WRITE, G, "connect-cluster")
    assert not a.allows("User:alice", Operation.READ, G, "other")  # nothing matches
    assert a.allows("User:carol", Operation.DESCRIBE, T, "events")  # User:* wildcard
    assert not a.allows("User:carol", Operation.READ, T, "events")  # Describe does not imply Read
    assert a.allows("User:bob", Operation.READ, G, "connect-x")
    assert not a.allows("User:bob", Operation.READ, G, "connect-secret")  # deny wins
    assert not a.allows("User:bob", Operation.DESCRIBE, G, "connect-secret")  # deny All covers it


def test_a_deny_of_read_does_not_deny_describe() -> None:
    a = Acls((AclRule(True, "User:a", Operation.DESCRIBE, G, "g"), AclRule(False, "User:a", Operation.READ, G, "g")))
    assert a.allows("User:a", Operation.DESCRIBE, G, "g") and not a.allows("User:a", Operation.READ, G, "g")


@pytest.mark.parametrize("text, rule", [
    ("allow User:a Read\n", ":1: expected 'ALLOW|DENY PRINCIPAL OPERATION TYPE:PATTERN', got 3"),
    ("grant User:a Read Group:g\n", ":1: 'grant' is neither allow nor deny"),
    ("allow alice Read Group:g\n", "must be User:NAME or User:\\*"),
    ("allow User:a Read Group\n", "must be TYPE:PATTERN"),
    ("allow User:a Read Queue:g\n", "resourcetype 'Queue' is not one of Group, Topic, Cluster"),
    ("allow User:a Eat Group:g\n", "operation 'Eat' is not one of Read, Write, Describe, All"),
    ("allow User:a Read Group:a*b\n", "'\\*' only as the whole name or at its end"),
    ("# nothing\n", "no rules"),
])
def test_acl_file_errors_name_line_and_rule(text: str, rule: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=rule):
        acls(text, tmp_path)


# ------------------------------------------------------------------ over the wire

RULES = """
allow User:ANONYMOUS Read Group:ok-*
allow User:ANONYMOUS Describe Group:seen
allow User:ANONYMOUS Read Topic:events
allow User:ANONYMOUS Describe Topic:listed
deny  User:ANONYMOUS Describe Group:ok-2
"""


def served(tmp_path: Path, test: Any) -> None:
    async def go() -> None:
        cfg = BrokerConfig(topics=[Topic("events", 2), Topic("listed", 1), Topic("hidden", 1)],
                           acls=acls(RULES, tmp_path))
        async with FakeBroker(cfg, CoordinatorConfig(initial_rebalance_delay_ms=0), VirtualClock()) as b:
            async with await KafkaConnection.open(b.bootstrap) as c:
                await test(c)
    asyncio.run(go())


def join(group: str) -> Any:
    jg = REG["JoinGroupRequest"]
    return jg.new(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                  protocol_type="consumer", protocols=[jg.cls.JoinGroupRequestProtocol(name="range", metadata=b"")])


def test_group_apis_need_read_on_the_group(tmp_path: Path) -> None:
    async def t(c: KafkaConnection) -> None:
        assert (await c.send(join("ok-1"), 5)).response.error_code == ErrorCode.MEMBER_ID_REQUIRED
        assert (await c.send(join("nope"), 5)).response.error_code == GROUP_AUTH
        hb = REG["HeartbeatRequest"].new(group_id="nope", generation_id=1, member_id="m")
        assert (await c.send(hb, 4)).response.error_code == GROUP_AUTH
        leave = REG["LeaveGroupRequest"].new(group_id="nope", members=[
            REG["LeaveGroupRequest"].cls.MemberIdentity(member_id="m")])
        assert (await c.send(leave, 5)).response.error_code == GROUP_AUTH
    served(tmp_path, t)


def test_find_coordinator_needs_describe_per_key(tmp_path: Path) -> None:
    async def t(c: KafkaConnection) -> None:
        fc = REG["FindCoordinatorRequest"]
        assert (await c.send(fc.new(key="nope", key_type=0), 3)).response.error_code == GROUP_AUTH
        assert (await c.send(fc.new(key="seen", key_type=0), 3)).response.error_code == 0
        r = (await c.send(fc.new(key_type=0, coordinator_keys=["seen", "nope", "ok-3"]), 4)).response
        assert [(x.key, x.error_code, x.node_id) for x in r.coordinators] == [
            ("seen", 0, 1), ("nope", GROUP_AUTH, -1), ("ok-3", 0, 1)]
    served(tmp_path, t)


def test_describe_and_list_groups_show_only_describable_groups(tmp_path: Path) -> None:
    async def t(c: KafkaConnection) -> None:
        for g in ("ok-1", "ok-2"):
            await c.send(join(g), 5)  # MEMBER_ID_REQUIRED: a pending member creates the group
        member = (await c.send(join("ok-1"), 5)).response.member_id
        j = join("ok-1")
        j.member_id = member
        await c.send(j, 5)
        d = (await c.send(REG["DescribeGroupsRequest"].new(groups=["ok-1", "nope"]), 5)).response
        assert [(g.group_id, g.error_code) for g in d.groups] == [("ok-1", 0), ("nope", GROUP_AUTH)]
        assert d.groups[1].members == [] and d.groups[1].group_state == ""
        listed = (await c.send(REG["ListGroupsRequest"].new(), 4)).response
        # ok-2 exists (readable: its pending member joined) but its Describe is denied.
        assert {g.group_id for g in listed.groups} == {"ok-1"}
    served(tmp_path, t)


def test_metadata_hides_or_refuses_topics_without_describe(tmp_path: Path) -> None:
    async def t(c: KafkaConnection) -> None:
        md = REG["MetadataRequest"]
        everything = (await c.send(md.new(topics=None), 12)).response
        assert sorted(x.name for x in everything.topics) == ["events", "listed"]  # "hidden" omitted
        named = (await c.send(md.new(topics=[md.cls.MetadataRequestTopic(name=n) for n in ("hidden", "events")]), 9)).response
        assert [(x.name, x.error_code, len(x.partitions)) for x in named.topics] == [
            ("hidden", TOPIC_AUTH, 0), ("events", 0, 2)]
    served(tmp_path, t)


def test_offset_commit_refuses_unreadable_topics_and_commits_the_rest(tmp_path: Path) -> None:
    async def t(c: KafkaConnection) -> None:
        oc, of = REG["OffsetCommitRequest"], REG["OffsetFetchRequest"]
        topics = [oc.cls.OffsetCommitRequestTopic(name=n, partitions=[
            oc.cls.OffsetCommitRequestPartition(partition_index=0, committed_offset=7)]) for n in ("listed", "events")]
        r = (await c.send(oc.new(group_id="ok-c", topics=topics), 8)).response
        assert sorted((x.name, x.partitions[0].error_code) for x in r.topics) == [("events", 0), ("listed", TOPIC_AUTH)]
        refused = (await c.send(oc.new(group_id="nope", topics=topics), 8)).response
        assert {p.error_code for x in refused.topics for p in x.partitions} == {GROUP_AUTH}
        fetched = (await c.send(of.new(group_id="nope", topics=None), 7)).response
        assert fetched.error_code == GROUP_AUTH
    served(tmp_path, t)


def test_without_acls_everything_is_allowed(tmp_path: Path) -> None:
    async def go() -> None:
        async with FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0), VirtualClock()) as b:
            assert b.authorizer is None
            async with await KafkaConnection.open(b.bootstrap) as c:
                assert (await c.send(join("nope"), 5)).response.error_code == ErrorCode.MEMBER_ID_REQUIRED
    asyncio.run(go())
    assert ANONYMOUS == "User:ANONYMOUS"
