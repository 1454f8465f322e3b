"""OffsetCommit / OffsetFetch against classic groups, in memory."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakebroker.coordinator import FixedTopics, OpenTopics, RuleViolation
from fakebroker.coordinator.topics import derived_topic_id

from .harness import REG, E, Harness
from .test_classic_join import OtherTypeGroup
from .test_classic_sync import completing

CommitTopic = REG["OffsetCommitRequest"].cls.OffsetCommitRequestTopic  # type: ignore[attr-defined]
CommitPartition = REG["OffsetCommitRequest"].cls.OffsetCommitRequestPartition  # type: ignore[attr-defined]
FetchTopic = REG["OffsetFetchRequest"].cls.OffsetFetchRequestTopic  # type: ignore[attr-defined]
FetchGroup = REG["OffsetFetchRequest"].cls.OffsetFetchRequestGroup  # type: ignore[attr-defined]
FetchTopics = REG["OffsetFetchRequest"].cls.OffsetFetchRequestTopics  # type: ignore[attr-defined]


def commit(h: Harness, member_id: str = "", generation: int = -1, *, group: str = "g",
           version: int = 9, offsets: dict[str, dict[int, int]] | None = None,
           metadata: str | None = "meta", instance: str | None = None,
           by_id: dict[str, uuid.UUID] | None = None) -> int:
    topics = []
    for name, parts in (offsets or {"t": {0: 42}}).items():
        kw: dict[str, Any] = {"topic_id": (by_id or {}).get(name, derived_topic_id(name))} \
            if version >= 10 else {"name": name}
        topics.append(CommitTopic(**kw, partitions=[
            CommitPartition(partition_index=p, committed_offset=o, committed_metadata=metadata,
                            committed_leader_epoch=7 if version >= 6 else -1)
            for p, o in parts.items()]))
    fields: dict[str, Any] = dict(group_id=group, generation_id_or_member_epoch=generation,
                                  member_id=member_id, topics=topics)
    if version >= 7:
        fields["group_instance_id"] = instance
    return h.send("OffsetCommit", version, **fields)


def errors(h: Harness, rid: int) -> dict[tuple[str, int], E]:
    r = h.reply(rid)
    return {(t.name or str(t.topic_id), p.partition_index): E(p.error_code)
            for t in r.topics for p in t.partitions}


def fetch(h: Harness, group: str = "g", topics: dict[str, list[int]] | None = None, *,
          version: int = 9) -> dict[tuple[str, int], tuple[int, int, str | None, E]]:
    """{(topic, partition): (offset, leader epoch, metadata, error)}; topics None = all."""
    if version >= 8:
        ts = None if topics is None else [
            FetchTopics(**({"topic_id": derived_topic_id(n)} if version >= 10 else {"name": n}),
                        partition_indexes=ps) for n, ps in topics.items()]
        r = h.reply(h.send("OffsetFetch", version, groups=[FetchGroup(group_id=group, topics=ts)]))
        (g,) = r.groups
        assert g.error_code == 0
        out_topics = g.topics
    else:
        ts = None if topics is None else [FetchTopic(name=n, partition_indexes=ps)
                                          for n, ps in topics.items()]
        r = h.reply(h.send("OffsetFetch", version, group_id=group, topics=ts))
        out_topics = r.topics
    return {(t.name or str(t.topic_id), p.partition_index):
            (p.committed_offset, p.committed_leader_epoch, p.metadata, E(p.error_code))
            for t in out_topics for p in t.partitions}


# ---------------------------------------------------------------------- commit rules

def test_member_commits_in_stable(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    rid = commit(h, ids[1], gen, offsets={"t": {0: 5, 1: 6}, "u": {3: 9}})
    assert errors(h, rid) == {("t", 0): E.NONE, ("t", 1): E.NONE, ("u", 3): E.NONE}
    assert fetch(h, "g", {"t": [0, 1, 2], "u": [3]}) == {
        ("t", 0): (5, 7, "meta", E.NONE), ("t", 1): (6, 7, "meta", E.NONE),
        ("t", 2): (-1, -1, "", E.NONE), ("u", 3): (9, 7, "meta", E.NONE)}


def test_wrong_generation(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    for bad in (gen + 1, gen - 1):
        assert set(errors(h, commit(h, ids[0], bad, offsets={"t": {0: 1, 1: 1}})).values()) == \
            {E.ILLEGAL_GENERATION}
    assert fetch(h, "g", {"t": [0]})[("t", 0)][0] == -1


def test_unknown_member(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    assert set(errors(h, commit(h, "ghost", gen)).values()) == {E.UNKNOWN_MEMBER_ID}


def test_fenced_static_member(h: Harness) -> None:
    j = h.join(client_id="c", instance="i")
    h.advance(3000)
    old = h.reply(j).member_id
    h.sync(old, 1, instance="i")
    h.join(client_id="c", instance="i")  # restart: old id fenced
    assert set(errors(h, commit(h, old, 1, instance="i")).values()) == {E.FENCED_INSTANCE_ID}


def test_completing_rebalance_rejects_commits(h: Harness) -> None:
    ids, gen = completing(h, 1)
    assert set(errors(h, commit(h, ids[0], gen)).values()) == {E.REBALANCE_IN_PROGRESS}


def test_preparing_rebalance_accepts_the_current_generation(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    h.join(ids[0], client_id="c1")
    assert set(errors(h, commit(h, ids[1], gen)).values()) == {E.NONE}


def test_commit_counts_as_a_heartbeat(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    for _ in range(5):
        h.advance(9000)
        commit(h, ids[0], gen)
    assert h.state() == "Stable"
    h.advance(10_000)
    assert h.state() == "Empty"


def test_simple_commit_creates_a_simple_group(h: Harness) -> None:
    assert set(errors(h, commit(h)).values()) == {E.NONE}
    assert h.state() == "Empty"
    assert [(g.group_id, g.protocol_type, g.group_state) for g in h.list_groups().groups] == \
        [("g", "", "Empty")]
    assert fetch(h, "g", {"t": [0]}) == {("t", 0): (42, 7, "meta", E.NONE)}


def test_simple_commit_to_an_empty_group_with_history(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.leave(ids[0])
    assert set(errors(h, commit(h, "anyone", -1)).values()) == {E.NONE}


def test_simple_commit_to_a_live_group_is_unknown_member(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    assert set(errors(h, commit(h)).values()) == {E.UNKNOWN_MEMBER_ID}
    # A member id with generation -1 is checked as a member: wrong generation.
    assert set(errors(h, commit(h, ids[0], -1)).values()) == {E.ILLEGAL_GENERATION}


@pytest.mark.parametrize("version,error", [(8, E.ILLEGAL_GENERATION), (9, E.GROUP_ID_NOT_FOUND),
                                           (10, E.GROUP_ID_NOT_FOUND)])
def test_generation_for_an_unknown_group(version: int, error: E) -> None:
    h = Harness(topics=FixedTopics({"t": 1}))
    assert set(errors(h, commit(h, "m", 3, version=version)).values()) == {error}
    assert h.coord.groups == {}


def test_dead_group(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.mark_dead()
    assert set(errors(h, commit(h, ids[0], gen)).values()) == {E.COORDINATOR_NOT_AVAILABLE}
    assert set(errors(h, commit(h)).values()) == {E.COORDINATOR_NOT_AVAILABLE}


def test_metadata_size_limit(h: Harness) -> None:
    h.coord.config.offset_metadata_max_bytes = 4
    rid = commit(h, offsets={"t": {0: 1}}, metadata="12345")
    assert errors(h, rid) == {("t", 0): E.OFFSET_METADATA_TOO_LARGE}
    assert set(errors(h, commit(h, metadata="1234")).values()) == {E.NONE}


def test_null_metadata_is_stored_empty(h: Harness) -> None:
    commit(h, metadata=None)
    assert fetch(h, "g", {"t": [0]})[("t", 0)][2] == ""


def test_empty_commit_touches_nothing(h: Harness) -> None:
    rid = h.send("OffsetCommit", 9, group_id="g", generation_id_or_member_epoch=-1,
                 member_id="", topics=[])
    assert h.reply(rid).topics == [] and h.coord.groups == {}


def test_group_of_another_type_decides_for_itself(h: Harness) -> None:
    class Refusing(OtherTypeGroup):
        def validate_offset_commit(self, *args: object) -> None:
            raise RuleViolation(E.STALE_MEMBER_EPOCH, "test")

    h.coord.groups["g"] = Refusing("g")
    assert set(errors(h, commit(h, "m", 1)).values()) == {E.STALE_MEMBER_EPOCH}


# ---------------------------------------------------------------------- topic checks

def test_unknown_topics_and_partitions() -> None:
    h = Harness(topics=FixedTopics({"t": 2}))
    rid = commit(h, offsets={"nope": {0: 1}, "t": {0: 1, 2: 1, -1: 1}})
    assert errors(h, rid) == {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
                              ("t", 2): E.UNKNOWN_TOPIC_OR_PARTITION,
                              ("t", -1): E.UNKNOWN_TOPIC_OR_PARTITION, ("t", 0): E.NONE}
    # Request-handler errors come first, the coordinator's are merged into the same topic.
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in h.reply(rid).topics] == [
        ("nope", [0]), ("t", [2, -1, 0])]


def test_nothing_valid_means_the_group_is_not_consulted() -> None:
    h = Harness(topics=FixedTopics({}))
    assert set(errors(h, commit(h, "m", 5)).values()) == {E.UNKNOWN_TOPIC_OR_PARTITION}
    assert h.coord.groups == {}


def test_v10_commits_by_topic_id() -> None:
    tid = uuid.UUID(int=7)
    h = Harness(topics=FixedTopics({"t": 1}, ids={"t": tid}))
    rid = commit(h, version=10, by_id={"t": tid, "x": uuid.UUID(int=8)},
                 offsets={"t": {0: 3}, "x": {0: 1}})
    r = h.reply(rid)
    assert [(t.name, t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in r.topics] == [("", uuid.UUID(int=8), [(0, E.UNKNOWN_TOPIC_ID)]),
                                   ("", tid, [(0, E.NONE)])]
    assert fetch(h, "g", {"t": [0]}, version=8) == {("t", 0): (3, 7, "meta", E.NONE)}


def test_open_catalogue_resolves_ids_of_names_it_has_seen(h: Harness) -> None:
    commit(h, offsets={"t": {0: 1}}, version=9)
    assert set(errors(h, commit(h, offsets={"t": {0: 2}}, version=10)).values()) == {E.NONE}
    assert set(errors(h, commit(h, offsets={"never": {0: 2}}, version=10)).values()) == \
        {E.UNKNOWN_TOPIC_ID}


@pytest.mark.parametrize("version", range(2, 11))
def test_every_commit_version(version: int) -> None:
    h = Harness(topics=OpenTopics(seen=["t"]))  # so that v10 can name "t" by id
    commit(h, "", -1, version=version, offsets={"t": {0: 10 + version}})
    assert fetch(h, "g", {"t": [0]})[("t", 0)][0] == 10 + version


# ---------------------------------------------------------------------- fetch

def test_fetch_of_an_unknown_group(h: Harness) -> None:
    assert fetch(h, "nope", {"t": [0, 1]}) == {("t", 0): (-1, -1, "", E.NONE),
                                              ("t", 1): (-1, -1, "", E.NONE)}
    assert fetch(h, "nope", None) == {}


def test_fetch_of_a_dead_group_returns_nothing(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    commit(h, ids[0], gen)
    h.mark_dead()
    assert fetch(h, "g", {"t": [0]}) == {("t", 0): (-1, -1, "", E.NONE)}
    assert fetch(h, "g", None) == {}


def test_fetch_all_topics_sorted(h: Harness) -> None:
    commit(h, offsets={"b": {1: 11, 0: 10}, "a": {5: 5}})
    r = h.reply(h.send("OffsetFetch", 8, groups=[FetchGroup(group_id="g", topics=None)]))
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in r.groups[0].topics] == [
        ("a", [5]), ("b", [0, 1])]


@pytest.mark.parametrize("version", range(1, 11))
def test_every_fetch_version(h: Harness, version: int) -> None:
    commit(h, offsets={"t": {0: 3}})
    got = fetch(h, "g", {"t": [0]}, version=version)
    epoch = 7 if version >= 5 else -1
    key = ("t", 0) if version < 10 else (str(derived_topic_id("t")), 0)
    assert got == {key: (3, epoch, "meta", E.NONE)}
    if version >= 2:
        assert fetch(h, "g", None, version=version) == {key: (3, epoch, "meta", E.NONE)}


def test_fetch_many_groups_v8(h: Harness) -> None:
    commit(h, group="a", offsets={"t": {0: 1}})
    commit(h, group="b", offsets={"t": {0: 2}})
    r = h.reply(h.send("OffsetFetch", 8, groups=[
        FetchGroup(group_id="b", topics=[FetchTopics(name="t", partition_indexes=[0])]),
        FetchGroup(group_id="missing", topics=None),
        FetchGroup(group_id="a", topics=None)]))
    assert [(g.group_id, [(t.name, [p.committed_offset for p in t.partitions]) for t in g.topics])
            for g in r.groups] == [("b", [("t", [2])]), ("missing", []), ("a", [("t", [1])])]


def test_fetch_unknown_topic_id_v10(h: Harness) -> None:
    unknown = uuid.UUID(int=99)
    r = h.reply(h.send("OffsetFetch", 10, groups=[FetchGroup(group_id="g", topics=[
        FetchTopics(topic_id=unknown, partition_indexes=[0])])]))
    (t,) = r.groups[0].topics
    assert (t.topic_id, t.partitions[0].error_code) == (unknown, E.UNKNOWN_TOPIC_ID)


def test_group_error_from_another_group_type(h: Harness) -> None:
    class Stale(OtherTypeGroup):
        def offsets_fetchable(self, member_id: str | None, member_epoch: int) -> bool:
            raise RuleViolation(E.STALE_MEMBER_EPOCH, "test")

    h.coord.groups["g"] = Stale("g")
    r = h.reply(h.send("OffsetFetch", 9, groups=[FetchGroup(group_id="g", topics=None)]))
    assert (r.groups[0].error_code, r.groups[0].topics) == (E.STALE_MEMBER_EPOCH, [])
    r = h.reply(h.send("OffsetFetch", 7, group_id="g",
                       topics=[FetchTopic(name="t", partition_indexes=[0])]))
    assert (r.error_code, r.topics) == (E.STALE_MEMBER_EPOCH, [])


def test_fetch_all_v10_leaves_out_topics_without_an_id() -> None:
    topics = FixedTopics({"kept": 1, "gone": 1})
    h = Harness(topics=topics)
    commit(h, offsets={"kept": {0: 1}, "gone": {0: 2}})
    topics._ids.pop("gone")  # the topic was deleted since the commit
    r = h.reply(h.send("OffsetFetch", 10, groups=[FetchGroup(group_id="g", topics=None)]))
    assert [t.topic_id for t in r.groups[0].topics] == [derived_topic_id("kept")]
    assert fetch(h, "g", None, version=9) == {("gone", 0): (2, 7, "meta", E.NONE),
                                             ("kept", 0): (1, 7, "meta", E.NONE)}
