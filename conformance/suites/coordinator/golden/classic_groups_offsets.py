"""Golden scenarios of the group admin and offset APIs: DescribeGroups, ListGroups,
OffsetCommit and OffsetFetch."""

from __future__ import annotations

import uuid
from typing import Any

from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.testing.client import ScriptedClient

from .classic_common import (CONNECT, DELAY, EVENTS, EVENTS_ID, MIN_SESSION, connect_metadata,
                             first_member, joined_not_synced, probe, rebalancing,
                             second_member_joined, static_member, two_members)
from .registry import golden
from .session import Session


# ============================================================================ DescribeGroups

@golden("CLS-DESC-01", "DescribeGroups", "GROUP_ID_NOT_FOUND",
        "DescribeGroups v6 answers a group that does not exist with GROUP_ID_NOT_FOUND and the message 'Group <id> not found.'",
        pins={"DescribeGroups": ("Groups[*].ErrorMessage",)})
async def describe_unknown_v6(s: Session) -> None:
    g = s.group()
    d = await (await s.client("admin")).describe(g)
    x = d.groups[0]
    s.check((x.error_code, x.error_message) == (E.GROUP_ID_NOT_FOUND, f"Group {g} not found."), f"{d}")


probe("CLS-DESC-02", "DescribeGroups", "NONE",
      "DescribeGroups v0-5 answers a group that does not exist with no error and the state Dead.",
      send=lambda c, g, m: c.describe(g, version=5),
      by="admin", answer=lambda r: (r.groups[0].error_code, r.groups[0].group_state),
      want=(0, "Dead"))


@golden("CLS-STATE-03", "DescribeGroups", "NONE",
        "A Stable group is described with its state, protocol type, chosen protocol and every member's id, client id, host, metadata and assignment.")
async def describe_stable(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2)
    x = (await (await s.client("admin")).describe(g)).groups[0]
    s.check((x.group_state, x.protocol_type, x.protocol_data) == ("Stable", "connect", "sessioned"), f"{x}")
    got = {m.member_id: (m.client_id, m.member_assignment) for m in x.members}
    s.check(got == {m1: ("w1", b"A1"), m2: ("w2", b"A2")}, f"{x}")


@golden("CLS-DESC-03", "DescribeGroups", "NONE",
        "DescribeGroups v3+ with IncludeAuthorizedOperations reports the operations allowed on the group.",
        pins={"DescribeGroups": ("Groups[*].AuthorizedOperations",)})
async def describe_operations(s: Session) -> None:
    g = s.group()
    await first_member(s, g, await s.client("w1"))
    x = (await (await s.client("admin")).describe(g, ops=True)).groups[0]
    s.check(x.authorized_operations > 0, f"{x}")


@golden("CLS-DESC-04", "DescribeGroups", "NONE",
        "A group awaiting its SyncGroups (CompletingRebalance) is described without member metadata or protocol data.")
async def describe_completing(s: Session) -> None:
    g = s.group()
    await joined_not_synced(s, g, await s.client("w1"))
    x = (await (await s.client("admin")).describe(g)).groups[0]
    s.check((x.group_state, x.protocol_data, x.members[0].member_metadata) == ("CompletingRebalance", "", b""), f"{x}")


@golden("CLS-DESC-05", "DescribeGroups", "NONE",
        "One DescribeGroups request describes several groups, each on its own (known and unknown alike).")
async def describe_batch(s: Session) -> None:
    g, absent = s.group("g1"), s.group("g2")
    await first_member(s, g, await s.client("w1"))
    d = await (await s.client("admin")).describe(g, absent)
    s.check([(x.group_id, x.error_code) for x in d.groups] == [(g, 0), (absent, E.GROUP_ID_NOT_FOUND)], f"{d}")


# ============================================================================ ListGroups

@golden("CLS-LIST-01", "ListGroups", "NONE",
        "ListGroups lists a classic group with its protocol type, state (v4+) and type 'classic' (v5+).")
async def list_groups(s: Session) -> None:
    g = s.group()
    await first_member(s, g, await s.client("w1"))
    r = await (await s.client("admin")).list_groups()
    mine = [x for x in r.groups if x.group_id == g]
    s.check([(x.protocol_type, x.group_state, x.group_type) for x in mine] == [("connect", "Stable", "classic")], f"{r}")


@golden("CLS-LIST-02", "ListGroups", "NONE",
        "ListGroups v4+ with a states filter lists only groups in those states (compared case-insensitively).")
async def list_groups_by_state(s: Session) -> None:
    stable, empty = s.group("g1"), s.group("g2")
    await first_member(s, stable, await s.client("w1"))
    admin = await s.client("admin")
    await admin.commit(empty, {EVENTS: {0: 1}})  # a simple commit makes an Empty group
    r1 = await admin.list_groups(states=["stable"])
    r2 = await admin.list_groups(states=["Empty"])
    s.check(stable in [x.group_id for x in r1.groups] and empty not in [x.group_id for x in r1.groups], f"{r1}")
    s.check(empty in [x.group_id for x in r2.groups] and stable not in [x.group_id for x in r2.groups], f"{r2}")


@golden("CLS-LIST-03", "ListGroups", "NONE",
        "ListGroups v5 with a types filter lists only groups of those types.")
async def list_groups_by_type(s: Session) -> None:
    g = s.group()
    await first_member(s, g, await s.client("w1"))
    admin = await s.client("admin")
    r1 = await admin.list_groups(types=["classic"])  # the type as KIP-848 names it: the requirement pins no case folding
    r2 = await admin.list_groups(types=["consumer"])
    s.check(g in [x.group_id for x in r1.groups] and g not in [x.group_id for x in r2.groups], f"{r1} {r2}")


@golden("CLS-LIST-04", "ListGroups", "NONE", "ListGroups v0-3 lists groups with their protocol type (no state, no type).")
async def list_groups_v3(s: Session) -> None:
    g = s.group()
    await first_member(s, g, await s.client("w1"))
    r = await (await s.client("admin")).list_groups(version=3)
    s.check(any(x.group_id == g and x.protocol_type == "connect" for x in r.groups), f"{r}")


# ============================================================================ OffsetCommit

def _partition_errors(r: object) -> list[int]:
    return [p.error_code for t in r.topics for p in t.partitions]  # type: ignore[attr-defined]


probe("CLS-COMMIT-01", "OffsetCommit", "UNKNOWN_TOPIC_OR_PARTITION",
      "An OffsetCommit for a topic that does not exist answers its partitions UNKNOWN_TOPIC_OR_PARTITION.",
      send=lambda c, g, m: c.commit(g, {"no-such-topic": {0: 5, 1: 6}}),
      by="admin", answer=_partition_errors, want=[3, 3])


@golden("CLS-COMMIT-02", "OffsetCommit", "UNKNOWN_TOPIC_OR_PARTITION",
        "An OffsetCommit for a partition beyond the topic's partitions answers it UNKNOWN_TOPIC_OR_PARTITION; the others are committed.")
async def commit_unknown_partition(s: Session) -> None:
    r = await (await s.client("admin")).commit(s.group(), {EVENTS: {2: 5, 3: 5}})
    got = {p.partition_index: p.error_code for t in r.topics for p in t.partitions}
    s.check(got == {2: 0, 3: E.UNKNOWN_TOPIC_OR_PARTITION}, f"{r}")


probe("CLS-COMMIT-03", "OffsetCommit", "UNKNOWN_TOPIC_ID",
      "An OffsetCommit v10 naming a topic id that does not exist answers its partitions UNKNOWN_TOPIC_ID.",
      send=lambda c, g, m: c.commit(g, {"x": {0: 5}}, version=10, topic_ids={"x": uuid.UUID(int=42)}),
      by="admin", answer=_partition_errors, want=[E.UNKNOWN_TOPIC_ID])


probe("CLS-COMMIT-04", "OffsetCommit", "GROUP_ID_NOT_FOUND",
      "An OffsetCommit v9+ with a generation to a group that does not exist is refused with GROUP_ID_NOT_FOUND.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id="w1-x", generation=1),
      answer=_partition_errors, want=[E.GROUP_ID_NOT_FOUND])


probe("CLS-COMMIT-05", "OffsetCommit", "ILLEGAL_GENERATION",
      "An OffsetCommit v0-8 with a generation to a group that does not exist is refused with ILLEGAL_GENERATION.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id="w1-x", generation=1, version=8),
      answer=_partition_errors, want=[E.ILLEGAL_GENERATION])


probe("CLS-COMMIT-06", "OffsetCommit", "UNKNOWN_MEMBER_ID",
      "An OffsetCommit from a member the group does not know is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id="w2-not-a-member", generation=1),
      setup="member", by="w2", answer=_partition_errors, want=[E.UNKNOWN_MEMBER_ID])


probe("CLS-COMMIT-07", "OffsetCommit", "ILLEGAL_GENERATION",
      "An OffsetCommit with a generation other than the group's is refused with ILLEGAL_GENERATION.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id=m, generation=7),
      setup="member", answer=_partition_errors, want=[E.ILLEGAL_GENERATION])


probe("CLS-COMMIT-08", "OffsetCommit", "REBALANCE_IN_PROGRESS",
      "An OffsetCommit while the group awaits its SyncGroups (CompletingRebalance) is refused with REBALANCE_IN_PROGRESS.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id=m, generation=1),
      setup="joined", answer=_partition_errors, want=[E.REBALANCE_IN_PROGRESS])


probe("CLS-COMMIT-09", "OffsetCommit", "UNKNOWN_MEMBER_ID",
      "A commit without member or generation (an admin's) to a group that has members is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}),
      setup="member", by="admin", answer=_partition_errors, want=[E.UNKNOWN_MEMBER_ID])


probe("CLS-COMMIT-10", "OffsetCommit", "OFFSET_METADATA_TOO_LARGE",
      "A committed offset whose metadata exceeds offset.metadata.max.bytes is refused with OFFSET_METADATA_TOO_LARGE.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, metadata="m" * 4097),
      by="admin", answer=_partition_errors, want=[E.OFFSET_METADATA_TOO_LARGE])


probe("CLS-COMMIT-11", "OffsetCommit", "FENCED_INSTANCE_ID",
      "An OffsetCommit naming a static member's group.instance.id with another member id is refused with FENCED_INSTANCE_ID.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id="inst-1-impostor",
                                         generation=1, instance="inst-1"),
      setup="static", by="w2", answer=_partition_errors, want=[E.FENCED_INSTANCE_ID])


@golden("CLS-COMMIT-12", "OffsetCommit", "NONE",
        "A commit without member or generation to a group that does not exist creates it (Empty) and stores the offsets.")
async def commit_simple(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    r = await admin.commit(g, {EVENTS: {0: 5}})
    s.check(_partition_errors(r) == [0], f"{r}")
    f = await admin.fetch_offsets(g, {EVENTS: [0]})
    s.check(f.topics[0].partitions[0].committed_offset == 5, f"{f}")
    s.check((await admin.describe(g)).groups[0].group_state == "Empty", "an Empty group")


@golden("CLS-COMMIT-13", "OffsetCommit", "NONE",
        "A member of a Stable group commits with its generation; the offset, leader epoch and metadata are stored.")
async def commit_member(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1 = await first_member(s, g, w1)
    r = await w1.commit(g, {EVENTS: {1: 42}}, member_id=m1, generation=1, metadata="note", leader_epoch=3)
    s.check(_partition_errors(r) == [0], f"{r}")
    p = (await w1.fetch_offsets(g, {EVENTS: [1]})).topics[0].partitions[0]
    s.check((p.committed_offset, p.committed_leader_epoch, p.metadata) == (42, 3, "note"), f"{p}")


@golden("CLS-COMMIT-14", "OffsetCommit", "NONE",
        "OffsetCommit v10 and OffsetFetch v10 name topics by id.")
async def commit_by_topic_id(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    r = await admin.commit(g, {EVENTS: {0: 9}}, version=10, topic_ids={EVENTS: EVENTS_ID})
    s.check(_partition_errors(r) == [0] and r.topics[0].topic_id == EVENTS_ID, f"{r}")
    f = await admin.fetch_offsets(g, {EVENTS: [0]}, version=10, topic_ids={EVENTS: EVENTS_ID})
    s.check(f.groups[0].topics[0].partitions[0].committed_offset == 9, f"{f}")


# ============================================================================ OffsetFetch

@golden("CLS-FETCH-02", "OffsetFetch", "NONE", "OffsetFetch returns the committed offsets of the partitions asked for.")
async def fetch_committed(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    await admin.commit(g, {EVENTS: {0: 5, 2: 7}})
    f = await admin.fetch_offsets(g, {EVENTS: [0, 2]})
    s.check([p.committed_offset for p in f.topics[0].partitions] == [5, 7] and f.error_code == 0, f"{f}")


@golden("CLS-FETCH-03", "OffsetFetch", "NONE",
        "A partition without a committed offset is answered offset -1, leader epoch -1 and empty metadata.")
async def fetch_uncommitted(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    await admin.commit(g, {EVENTS: {0: 5}})
    p = (await admin.fetch_offsets(g, {EVENTS: [1]})).topics[0].partitions[0]
    s.check((p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code) == (-1, -1, "", 0), f"{p}")


@golden("CLS-FETCH-04", "OffsetFetch", "NONE",
        "OffsetFetch for a group that does not exist answers without error, every partition at offset -1.")
async def fetch_unknown_group(s: Session) -> None:
    f = await (await s.client("admin")).fetch_offsets(s.group(), {EVENTS: [0]})
    s.check(f.error_code == 0 and f.topics[0].partitions[0].committed_offset == -1, f"{f}")


@golden("CLS-FETCH-05", "OffsetFetch", "NONE", "OffsetFetch with null topics returns every committed offset of the group.")
async def fetch_all_topics(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    await admin.commit(g, {EVENTS: {0: 5, 1: 6}})
    f = await admin.fetch_offsets(g, None)
    got = sorted((t.name, p.partition_index, p.committed_offset) for t in f.topics for p in t.partitions)
    s.check(got == [(EVENTS, 0, 5), (EVENTS, 1, 6)], f"{f}")


@golden("CLS-FETCH-06", "OffsetFetch", "NONE",
        "OffsetFetch v8+ fetches the offsets of several groups in one request, each answered on its own.")
async def fetch_batched(s: Session) -> None:
    g1, g2 = s.group("g1"), s.group("g2")
    admin = await s.client("admin")
    await admin.commit(g1, {EVENTS: {0: 5}})
    await admin.commit(g2, {EVENTS: {0: 8}})
    f = await admin.fetch_offsets(g1, {EVENTS: [0]}, version=8, more={g2: {EVENTS: [0]}})
    got = [(g.group_id, g.topics[0].partitions[0].committed_offset) for g in f.groups]
    s.check(got == [(g1, 5), (g2, 8)], f"{f}")


probe("CLS-FETCH-01", "OffsetFetch", "UNKNOWN_TOPIC_ID",
      "OffsetFetch v10 naming a topic id that does not exist answers its partitions UNKNOWN_TOPIC_ID.",
      send=lambda c, g, m: c.fetch_offsets(g, {"x": [0, 1]}, version=10, topic_ids={"x": uuid.UUID(int=42)}),
      setup="member", by="admin",  # an existing group: the requirement is about the topic id alone
      answer=lambda r: [p.error_code for p in r.groups[0].topics[0].partitions], want=[100, 100])
