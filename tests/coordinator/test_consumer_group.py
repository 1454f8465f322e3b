"""KIP-848 consumer groups through ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69),
every request and reply through the codec at its version, on a virtual clock."""

from __future__ import annotations

from typing import Any

import pytest

from fakebroker.coordinator import (CoordinatorConfig, GroupCoordinator, GroupCreated, MemberJoined,
                                    MemberRemoved)
from fakebroker.coordinator.events import (GroupDeleted, GroupEpochChanged, MemberEpochChanged,
                                           RemovalReason, StateChanged, TargetAssignmentChanged)
from fakebroker.coordinator.apis.describe_groups import GROUP_AUTHORIZED_OPERATIONS

from .harness import REG
from .modern import E, assigned, consumer_harness, live_records, tid, tps
from .test_offsets import commit, errors

FetchGroup = REG["OffsetFetchRequest"].cls.OffsetFetchRequestGroup  # type: ignore[attr-defined]


@pytest.fixture
def h():
    return consumer_harness()


def joined(h, *members: str, topics: tuple[str, ...] = ("foo",), **kw: Any) -> None:
    for m in members:
        r = h.cghb(m, 0, subscribed_topic_names=list(topics), **kw)
        assert r.error_code == 0, r


def settle(h, *members: str) -> None:
    """Heartbeat every member, acknowledging what it was given, until the group is Stable."""
    owned = {m: {} for m in members}
    for _ in range(10):
        for m in members:
            g = h.consumer()
            epoch = g.engine.member(m).current.member_epoch
            r = h.cghb(m, epoch, topic_partitions=tps(**owned[m]))
            assert r.error_code == 0, r
            got = assigned(r)
            if got is not None:
                owned[m] = got
        if h.consumer().state_name == "Stable":
            return
    raise AssertionError(f"not stable: {h.consumer().state_name}")


# ----------------------------------------------------------------------------- validation

def full_join(**overrides: Any) -> dict[str, Any]:
    f = dict(rebalance_timeout_ms=60_000, subscribed_topic_names=["foo"], topic_partitions=[])
    f.update(overrides)
    return f


@pytest.mark.parametrize("version, member_id, epoch, fields, error, rule", [
    (1, "", 0, full_join(), E.INVALID_REQUEST, "MemberId can't be empty."),
    (0, "", 1, {}, E.INVALID_REQUEST, "MemberId can't be empty."),
    (0, " ", -1, {}, E.INVALID_REQUEST, "MemberId can't be empty."),
    (1, "m", 0, full_join(group_id=" "), E.INVALID_REQUEST, "group-id can't be empty"),
    (1, "m", 0, full_join(instance_id=""), E.INVALID_REQUEST, "instance-id can't be empty"),
    (1, "m", 0, full_join(rack_id=" "), E.INVALID_REQUEST, "rack-id can't be empty"),
    (1, "m", 0, full_join(rebalance_timeout_ms=-1), E.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    (1, "m", 0, full_join(topic_partitions=None), E.INVALID_REQUEST,
     "TopicPartitions must be empty when (re-)joining."),
    (1, "m", 0, full_join(topic_partitions=tps(foo=[0])), E.INVALID_REQUEST,
     "TopicPartitions must be empty when (re-)joining."),
    (1, "m", 0, full_join(subscribed_topic_names=None), E.INVALID_REQUEST,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    (0, "m", 0, full_join(subscribed_topic_names=None), E.INVALID_REQUEST,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    (1, "m", -2, {}, E.INVALID_REQUEST, "InstanceId can't be null."),
    (1, "m", -3, {}, E.INVALID_REQUEST, "MemberEpoch is invalid."),
    (1, "m", 0, full_join(server_assignor="sticky"), E.UNSUPPORTED_ASSIGNOR,
     "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
    (1, "m", 0, full_join(subscribed_topic_regex="fo(o"), 128,
     "SubscribedTopicRegex `fo(o` is not a valid regular expression: "),  # + re's reason
])
def test_request_validation(h, version, member_id, epoch, fields, error, rule) -> None:
    joined(h, "other")
    before = h.consumer().engine.durable_state()
    f = {"group_id": "g", **fields}
    r = h.reply(h.send("ConsumerGroupHeartbeat", version, member_id=member_id,
                       member_epoch=epoch, **f))
    assert r.error_code == error
    assert r.error_message.startswith(rule) if rule.endswith(": ") else r.error_message == rule
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == (None, 0, 0, None)
    assert h.consumer().engine.durable_state() == before


def test_v0_join_without_member_id_gets_one(h) -> None:
    r = h.cghb("", 0, version=0)
    assert r.error_code == 0 and r.member_id == "1"  # the harness's counting suffix
    assert h.consumer().engine.member_ids() == ("1",)
    r = h.cghb("1", 1, version=0)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "1", 1)


def test_generated_member_id_is_kafkas_uuid_form() -> None:
    mid = CoordinatorConfig().generated_member_id()
    assert len(mid) == 22 and "=" not in mid


# ----------------------------------------------------------------------------- group lookup

def test_heartbeat_to_missing_group(h) -> None:
    r = h.cghb("m", 1)
    assert (E(r.error_code), r.error_message) == (E.GROUP_ID_NOT_FOUND, "Consumer group g not found.")
    r = h.cghb("m", -1)
    assert (E(r.error_code), r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g not found.")
    assert "g" not in h.coord.groups


def test_failed_first_join_creates_nothing() -> None:
    h = consumer_harness(consumer_max_size=1)
    joined(h, "a", group="full")
    r = h.cghb("b", 0, group="full")
    assert E(r.error_code) is E.GROUP_MAX_SIZE_REACHED
    r = h.cghb("m", 0, server_assignor="nope")
    assert E(r.error_code) is E.UNSUPPORTED_ASSIGNOR and "g" not in h.coord.groups


def test_classic_group_id(h) -> None:
    """A non-empty classic group is not a consumer group (GROUP_ID_NOT_FOUND); an empty one
    is deleted by a consumer join and its id reused."""
    (mid,), gen = h.stable_group(1)
    r = h.cghb("m", 0)
    assert (E(r.error_code), r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    r = h.cghb("m", 3)
    assert (E(r.error_code), r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    r = h.cghb("m", -1)
    assert (E(r.error_code), r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    assert h.group().type == "classic"
    assert h.error(h.leave(mid)) is E.NONE
    assert h.state() == "Empty"
    h.take_events()
    assert h.cghb("m", 0).error_code == 0
    assert h.group().type == "consumer"
    events = h.take_events()
    assert events[0] == GroupDeleted("g", h.now, "classic", "consumer")
    assert events[1] == GroupCreated("g", h.now, "consumer")


def test_classic_apis_on_a_consumer_group(h) -> None:
    joined(h, "m")
    # JoinGroup: another group type owns the id (Kafka would admit a "consumer"-protocol
    # member by migration, not modelled; a connect member gets this in Kafka too).
    assert h.error(h.join()) is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.error(h.join("m")) is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.error(h.sync("m", 1)) is E.UNKNOWN_MEMBER_ID
    assert h.error(h.heartbeat("m", 1)) is E.UNKNOWN_MEMBER_ID
    assert E(h.reply(h.leave("m")).members[0].error_code) is E.UNKNOWN_MEMBER_ID
    d = h.describe("g")
    assert (E(d.groups[0].error_code), d.groups[0].error_message) == \
        (E.GROUP_ID_NOT_FOUND, "Group g is not a classic group.")
    assert h.describe("g", version=5).groups[0].group_state == "Dead"
    assert h.group().type == "consumer" and h.consumer().engine.member_ids() == ("m",)


def test_join_group_replaces_an_empty_consumer_group(h) -> None:
    joined(h, "m")
    assert h.cghb("m", -1).error_code == 0
    assert h.consumer().state_name == "Empty"
    h.take_events()
    mid, rid = h.new_member()
    assert h.group().type == "classic"
    assert GroupDeleted("g", 0, "consumer", "classic") in h.take_events()
    # A JoinGroup with a member id to a group just deleted: UNKNOWN_MEMBER_ID, as Kafka.
    joined(h, "x", group="g2")
    h.cghb("x", -1, group="g2")
    assert h.error(h.join("someone", group="g2")) is E.UNKNOWN_MEMBER_ID
    assert "g2" not in h.coord.groups


def test_list_groups(h) -> None:
    joined(h, "m")
    h.stable_group(1, group="classic")
    listed = {g.group_id: (g.group_type, g.protocol_type, g.group_state)
              for g in h.list_groups().groups}
    assert listed == {"g": ("consumer", "consumer", "Stable"),
                      "classic": ("classic", "connect", "Stable")}
    assert [g.group_id for g in h.list_groups(types=["Consumer"]).groups] == ["g"]
    assert [g.group_id for g in h.list_groups(states=["stable"], types=["consumer"]).groups] == ["g"]


# ----------------------------------------------------------------------------- membership

def test_join_leave_and_reassignment(h) -> None:
    r = h.cghb("a", 0)
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms) == ("a", 1, 5000)
    assert assigned(r) == {"foo": [0, 1, 2, 3, 4, 5]}
    r = h.cghb("b", 0)
    assert (r.member_epoch, assigned(r)) == (2, {})  # withheld until a releases them
    r = h.cghb("a", 1, topic_partitions=tps(foo=[0, 1, 2, 3, 4, 5]))
    assert (r.member_epoch, assigned(r)) == (1, {"foo": [0, 1, 2]})  # revoke first
    r = h.cghb("a", 1, topic_partitions=tps(foo=[0, 1, 2]))
    assert (r.member_epoch, r.assignment) == (2, None)
    r = h.cghb("b", 2)
    assert (r.member_epoch, assigned(r)) == (2, {"foo": [3, 4, 5]})
    assert h.consumer().state_name == "Stable"
    r = h.cghb("b", -1)
    assert (r.error_code, r.member_id, r.member_epoch, r.assignment) == (0, "b", -1, None)
    r = h.cghb("a", 2)
    assert (r.member_epoch, assigned(r)) == (3, {"foo": [0, 1, 2, 3, 4, 5]})
    r = h.cghb("b", -1)
    assert E(r.error_code) is E.UNKNOWN_MEMBER_ID


def test_member_epoch_fencing(h) -> None:
    joined(h, "a")
    assert E(h.cghb("a", 2).error_code) is E.FENCED_MEMBER_EPOCH
    assert E(h.cghb("nobody", 1).error_code) is E.UNKNOWN_MEMBER_ID
    joined(h, "b")
    settle(h, "a", "b")
    # The lost-response case: "a" retries at its previous epoch owning a subset: accepted.
    previous = h.consumer().engine.member("a").current.previous_member_epoch
    r = h.cghb("a", previous, topic_partitions=tps(foo=[0]))
    assert r.error_code == 0 and r.member_epoch == 2
    # Kafka's consumer group keeps a fenced member (it rejoins at 0 under its id).
    assert E(h.cghb("a", 9).error_code) is E.FENCED_MEMBER_EPOCH
    assert "a" in h.consumer().engine.member_ids()


def test_rejoin_at_epoch_zero_keeps_the_member(h) -> None:
    joined(h, "a", "b")
    settle(h, "a", "b")
    r = h.cghb("a", 0)
    assert r.error_code == 0 and h.consumer().engine.member_ids() == ("a", "b")


def test_group_max_size() -> None:
    h = consumer_harness(consumer_max_size=2)
    joined(h, "a", "b")
    before = h.consumer().engine.durable_state()
    r = h.cghb("c", 0)
    assert (E(r.error_code), r.error_message) == \
        (E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of 2 members.")
    # Kafka checks the size before the member: an unknown member gets this error too.
    assert E(h.cghb("c", 4).error_code) is E.GROUP_MAX_SIZE_REACHED
    assert h.cghb("a", 0).error_code == 0  # a member of the group may rejoin
    assert h.consumer().engine.durable_state().members == before.members


def test_leave_by_instance_id(h) -> None:
    joined(h, "a", instance_id="i-a")
    before = h.consumer().engine.durable_state()
    r = h.cghb("a", -1, instance_id="i-x")
    assert (E(r.error_code), r.error_message) == (E.UNKNOWN_MEMBER_ID, "Instance id i-x is unknown.")
    r = h.cghb("b", -1, instance_id="i-a")
    assert (E(r.error_code), r.error_message) == \
        (E.FENCED_INSTANCE_ID, "Static member b with instance id i-a was fenced by member a.")
    assert h.consumer().engine.durable_state() == before
    r = h.cghb("a", -1, instance_id="i-a")
    assert (r.error_code, r.member_epoch) == (0, -1)
    assert h.consumer().is_empty()


def test_static_member_heartbeats_name_their_instance(h) -> None:
    joined(h, "a", instance_id="i-a")
    assert E(h.cghb("a", 1, instance_id="i-x").error_code) is E.UNKNOWN_MEMBER_ID
    assert E(h.cghb("z", 1, instance_id="i-a").error_code) is E.FENCED_INSTANCE_ID
    assert h.cghb("a", 1, instance_id="i-a").error_code == 0
    assert h.cghb("a", 1).error_code == 0  # null: unchanged


def test_static_member_bounces_and_keeps_its_assignment(h) -> None:
    """Epoch -2 keeps the member and its partitions (no new group epoch); a new member id
    joining with that instance id takes its place and gets the same partitions back."""
    joined(h, "a", instance_id="i-a")
    joined(h, "b")
    settle(h, "a", "b")
    engine = h.consumer().engine
    epoch = engine.group_epoch
    mine = engine.member("a").current.assigned
    r = h.cghb("a", -2, instance_id="i-a")
    assert (r.error_code, r.member_id, r.member_epoch, r.assignment) == (0, "a", -2, None)
    assert engine.member_ids() == ("a", "b") and engine.group_epoch == epoch
    assert engine.member("a").current.assigned == mine
    assert h.consumer().state_name == "Reconciling"
    h.take_events()
    # The restarted process (a new member id) rejoins in a's place.
    r = h.cghb("a-restarted", 0, instance_id="i-a")
    assert r.error_code == 0 and r.member_epoch == engine.assignment_epoch
    assert engine.member_ids() == ("a-restarted", "b")
    assert engine.group_epoch == engine.assignment_epoch  # no rebalance for a bounce
    assert {(t, p) for t, p in engine.member("a-restarted").current.assigned} == set(mine)
    assert sorted(p for ps in assigned(r).values() for p in ps) == sorted(p for _, p in mine)
    events = h.take_events()
    assert MemberRemoved("g", h.now, "a", None, RemovalReason.FENCED) in events
    assert MemberJoined("g", h.now, "a-restarted", "i-a", replaces="a") in events


def test_instance_id_in_use_is_unreleased(h) -> None:
    joined(h, "a", instance_id="i-a")
    before = h.consumer().engine.durable_state()
    r = h.cghb("a2", 0, instance_id="i-a")
    assert (E(r.error_code), r.error_message) == (E.UNRELEASED_INSTANCE_ID,
        "Static member a2 with instance id i-a cannot join the group because the instance id "
        "is owned by a member.")
    r = h.cghb("a", 0, instance_id="i-a")  # even by its holder, unless it left with -2
    assert E(r.error_code) is E.UNRELEASED_INSTANCE_ID
    assert h.consumer().engine.durable_state() == before


def test_static_member_that_does_not_come_back_times_out() -> None:
    h = consumer_harness(consumer_session_timeout_ms=5000)
    joined(h, "a", "b", instance_id=None)
    joined(h, "s", instance_id="i-s")
    h.cghb("s", -2, instance_id="i-s")
    h.advance(4000)
    h.cghb("a", h.consumer().engine.member("a").current.member_epoch)
    h.cghb("b", h.consumer().engine.member("b").current.member_epoch)
    h.advance(1000)
    assert h.consumer().engine.member_ids() == ("a", "b")


# ----------------------------------------------------------------------------- assignors

def test_server_assignor_choice() -> None:
    h = consumer_harness()
    joined(h, "a", "b", topics=("foo", "bar"))
    settle(h, "a", "b")
    assert h.cgdescribe("g").groups[0].assignor_name == "uniform"
    g = h.consumer()
    assert {u for m in "ab" for u in g.engine.target(m).units} == \
        {(str(tid(t)), p) for t, n in (("foo", 6), ("bar", 3)) for p in range(n)}
    # Members asking for range: the most requested assignor wins.
    h.cghb("a", g.engine.member("a").current.member_epoch, server_assignor="range")
    assert h.cgdescribe("g").groups[0].assignor_name == "range"
    h2 = consumer_harness(consumer_assignors=("range", "uniform"))
    joined(h2, "x")
    assert h2.cgdescribe("g").groups[0].assignor_name == "range"


def test_range_assignor_gives_contiguous_ranges() -> None:
    h = consumer_harness()
    joined(h, "a", "b", server_assignor="range")
    settle(h, "a", "b")
    g = h.consumer()
    parts = {m: sorted(p for _, p in g.engine.target(m).units) for m in "ab"}
    assert parts == {"a": [0, 1, 2], "b": [3, 4, 5]}


def test_join_subscribed_to_nothing(h) -> None:
    """Kafka 4.x: an empty list (or an empty regex) joins a member subscribed to nothing."""
    r = h.cghb("a", 0, subscribed_topic_names=[])
    assert (r.error_code, r.member_epoch, assigned(r)) == (0, 1, {})
    r = h.cghb("b", 0, subscribed_topic_names=None, subscribed_topic_regex="")
    assert (r.error_code, assigned(r)) == (0, {})


def test_regex_subscription(h) -> None:
    r = h.cghb("a", 0, subscribed_topic_names=[], subscribed_topic_regex="b.*")
    assert assigned(r) == {"bar": [0, 1, 2]}
    r = h.cghb("b", 0, subscribed_topic_names=["foo"], subscribed_topic_regex="^ba.$")
    assert h.consumer().engine.member("b").metadata.subscription == {"foo", "bar"}
    d = h.cgdescribe("g").groups[0]
    assert [(m.member_id, m.subscribed_topic_names, m.subscribed_topic_regex) for m in d.members] == \
        [("a", [], "b.*"), ("b", ["foo"], "^ba.$")]
    # Only the regex changes (names null: unchanged); "" clears it.
    epoch = h.consumer().engine.member("b").current.member_epoch
    h.cghb("b", epoch, subscribed_topic_regex="")
    assert h.consumer().engine.member("b").metadata.subscription == {"foo"}
    assert h.cgdescribe("g").groups[0].members[1].subscribed_topic_regex is None
    r = h.cghb("a", 0, version=0, subscribed_topic_names=["foo"])  # v0 has no regex field
    assert r.error_code == 0


def test_unknown_topics_assign_nothing(h) -> None:
    r = h.cghb("a", 0, subscribed_topic_names=["nope"])
    assert r.error_code == 0 and assigned(r) == {}


# ----------------------------------------------------------------------------- timers

def test_session_timeout_fences_the_member() -> None:
    h = consumer_harness(consumer_session_timeout_ms=3000)
    joined(h, "a", "b")
    settle(h, "a", "b")
    assert h.coord.next_deadline() == 3000
    h.advance(2999)
    h.cghb("a", 2)
    h.take_events()
    h.at(3000)  # b's deadline (it last heartbeat at 0)
    assert h.consumer().engine.member_ids() == ("a",)
    events = h.take_events()
    assert MemberRemoved("g", 3000, "b", None, RemovalReason.SESSION_TIMEOUT) in events
    assert GroupEpochChanged("g", 3000, 3, "member b removed (session-timeout)") in events
    assert h.coord.next_deadline() == 2999 + 3000
    h.run_until(lambda: h.consumer().is_empty())
    assert h.now == 5999 and h.consumer().state_name == "Empty"


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    h = consumer_harness()
    joined(h, "a", rebalance_timeout_ms=1000)
    joined(h, "b")
    r = h.cghb("a", 1, topic_partitions=tps(foo=[0, 1, 2, 3, 4, 5]))
    assert assigned(r) == {"foo": [0, 1, 2]}  # asked to revoke 3, 4, 5
    h.take_events()
    h.advance(1000)
    assert h.consumer().engine.member_ids() == ("b",)
    assert any(isinstance(e, MemberRemoved) and e.reason is RemovalReason.REBALANCE_TIMEOUT
               for e in h.take_events())


def test_events_tell_the_story(h) -> None:
    h.cghb("a", 0)
    kinds = [type(e) for e in h.take_events()]
    assert kinds == [GroupCreated, GroupEpochChanged, MemberJoined, TargetAssignmentChanged,
                     MemberEpochChanged, StateChanged]


# ----------------------------------------------------------------------------- describe

def test_describe(h) -> None:
    joined(h, "a", "b", rack_id="r1")
    r = h.cghb("a", 1, topic_partitions=tps(foo=[0, 1, 2, 3, 4, 5]))
    d = h.cgdescribe("g", "", "missing", ops=True).groups
    assert [(x.group_id, E(x.error_code)) for x in d] == \
        [("", E.INVALID_GROUP_ID), ("g", E.NONE), ("missing", E.GROUP_ID_NOT_FOUND)]
    assert d[2].error_message == "Group missing not found."
    assert d[1].authorized_operations == GROUP_AUTHORIZED_OPERATIONS
    assert d[0].authorized_operations == d[2].authorized_operations == -2**31
    g = d[1]
    assert (g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == \
        ("Reconciling", 2, 2, "uniform")
    a, b = g.members
    assert (a.member_id, a.member_epoch, a.rack_id, a.client_id, a.client_host,
            a.subscribed_topic_names, a.member_type) == ("a", 1, "r1", "client", "/127.0.0.1", ["foo"], 1)
    assert [(t.topic_name, list(t.partitions)) for t in a.assignment.topic_partitions] == [("foo", [0, 1, 2])]
    assert [(t.topic_name, list(t.partitions)) for t in a.target_assignment.topic_partitions] == [("foo", [0, 1, 2])]
    assert b.assignment.topic_partitions == []
    assert [(t.topic_name, list(t.partitions)) for t in b.target_assignment.topic_partitions] == [("foo", [3, 4, 5])]
    assert h.cgdescribe("g", version=0).groups[0].members[0].member_type == -1
    h.stable_group(1, group="classic")
    c = h.cgdescribe("classic").groups[0]
    assert (E(c.error_code), c.error_message) == (E.GROUP_ID_NOT_FOUND, "Group classic is not a consumer group.")
    assert h.cgdescribe().groups == []


# ----------------------------------------------------------------------------- offsets

def test_offset_commit_rules(h) -> None:
    joined(h, "a")
    assert errors(h, commit(h, "a", 1, offsets={"foo": {0: 5}})) == {("foo", 0): E.NONE}
    assert errors(h, commit(h, "a", 7, offsets={"foo": {0: 5}})) == {("foo", 0): E.STALE_MEMBER_EPOCH}
    assert errors(h, commit(h, "x", 1, offsets={"foo": {0: 5}})) == {("foo", 0): E.UNKNOWN_MEMBER_ID}
    assert errors(h, commit(h, "a", 1, version=8, offsets={"foo": {0: 5}})) == \
        {("foo", 0): E.UNSUPPORTED_VERSION}
    assert errors(h, commit(h, "", -1, offsets={"foo": {0: 5}})) == {("foo", 0): E.UNKNOWN_MEMBER_ID}
    h.cghb("a", -1)
    assert errors(h, commit(h, "", -1, offsets={"foo": {0: 9}})) == {("foo", 0): E.NONE}


def test_offset_fetch_rules(h) -> None:
    joined(h, "a")

    def fetch_error(member_id: str | None, epoch: int) -> E:
        r = h.reply(h.send("OffsetFetch", 9, groups=[FetchGroup(
            group_id="g", member_id=member_id, member_epoch=epoch, topics=None)]))
        return E(r.groups[0].error_code)

    assert fetch_error(None, -1) is E.NONE
    assert fetch_error("a", 1) is E.NONE
    assert fetch_error("a", 2) is E.STALE_MEMBER_EPOCH
    assert fetch_error("zz", 1) is E.UNKNOWN_MEMBER_ID


def test_coordinator_without_topics_assigns_nothing() -> None:
    coord = GroupCoordinator(REG)
    assert coord.cluster.partition_count("foo") is None


def test_refused_static_rejoin_changes_nothing(h) -> None:
    """A static rejoin that the assignor then fails (UNKNOWN_SERVER_ERROR) leaves the member
    it would have replaced exactly as it was."""
    from fakebroker.coordinator.reconcile import AssignorError

    class Failing:
        name = "uniform"

        def assign(self, spec):  # noqa: ANN001, ANN201
            raise AssignorError("no")

    joined(h, "a", instance_id="i-a")
    h.cghb("a", -2, instance_id="i-a")
    engine = h.consumer().engine
    before = (engine.durable_state(), engine.timer_state())
    h.consumer().policy.assignors["uniform"] = Failing()
    r = h.cghb("a2", 0, instance_id="i-a", subscribed_topic_names=["foo", "bar"])
    assert (E(r.error_code), r.error_message) == (E.UNKNOWN_SERVER_ERROR, "no")
    assert (engine.durable_state(), engine.timer_state()) == before


def test_a_long_lived_group_keeps_its_live_records_not_every_record_written(h) -> None:
    """As for connect groups: a consumer group whose members come and go holds as many
    engine records after 60 join/leave cycles as after 10."""
    joined(h, "m1", "m2")
    settle(h, "m1", "m2")

    def cycles(n: int) -> None:
        for _ in range(n):
            joined(h, "m3")
            assert h.cghb("m3", -1).member_epoch == -1

    cycles(10)
    after_10 = live_records()
    cycles(50)
    assert live_records() <= after_10

