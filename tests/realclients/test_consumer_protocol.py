"""librdkafka (confluent-kafka) consumers with ``group.protocol=consumer`` (KIP-848) against
the fake broker: ConsumerGroupHeartbeat end to end, with the server-side assignors, a
clean leave (epoch -1) and a member fenced at the broker-side session timeout."""

from __future__ import annotations

import itertools
import time

import pytest

from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.pytest_plugin import start_broker

from .harness import Member, partitions_split, wait_until

TOPIC = "events"
PARTITIONS = 6
# group.consumer.session.timeout.ms (Kafka's default: 45 s): 10 heartbeats' worth, so a
# live member on a loaded CI machine is not fenced by accident.
SESSION_MS = 4_000
INTERVAL_MS = 400       # group.consumer.heartbeat.interval.ms (Kafka's default: 5 s)
_groups = itertools.count()


@pytest.fixture
def broker():
    b = start_broker(topics={TOPIC: PARTITIONS},
                     coordinator=CoordinatorConfig(initial_rebalance_delay_ms=0,
                                                   consumer_session_timeout_ms=SESSION_MS,
                                                   consumer_heartbeat_interval_ms=INTERVAL_MS))
    assert b.broker.coordinator.cluster.partition_count(TOPIC) == PARTITIONS
    yield b
    b.stop()


@pytest.fixture
def members():
    started: list[Member] = []
    yield started
    for m in started:
        m.kill()


def consumer(broker, group: str, name: str, assignor: str | None = None,
             instance_id: str | None = None) -> Member:
    return Member("confluent-kafka", broker.bootstrap, group, TOPIC, name,
                  group_protocol="consumer", remote_assignor=assignor, instance_id=instance_id)


def group_state(broker, group: str) -> dict:
    """The consumer group as the coordinator holds it (read on the broker's thread)."""
    def read() -> dict:
        g = broker.broker.coordinator.consumer_group(group)
        assert g is not None, f"no consumer group {group}"
        e = g.engine
        return {"state": g.state_name, "epoch": e.group_epoch, "members": e.member_ids(),
                "assignor": g.assignor_name(),
                "epochs": {m: e.member(m).current.member_epoch for m in e.member_ids()}}
    return broker.run(read)


@pytest.mark.parametrize("assignor", [None, "range", "uniform"])
def test_consumer_protocol_lifecycle(assignor: str | None, broker, members) -> None:
    group = f"kip848-{assignor or 'default'}-{next(_groups)}"
    split = partitions_split(TOPIC, PARTITIONS)
    # 1, 2, then 3 members: after each join the partitions are split completely and once.
    for i in range(3):
        members.append(consumer(broker, group, f"m{i}", assignor))
        wait_until(members, split, f"{i + 1} member(s) to share all partitions")
    state = group_state(broker, group)
    assert len(state["members"]) == 3
    assert state["assignor"] == (assignor or "uniform")

    # A member that closes sends a leave heartbeat (epoch -1); the others take its share.
    leaving = members.pop(0)
    left_with = set(leaving.assignment or [])
    leaving.close()
    wait_until(members, split, "the remaining 2 members to hold all partitions")
    assert left_with <= {tp for m in members for tp in (m.assignment or [])}
    assert len(group_state(broker, group)["members"]) == 2

    # A member that stops heartbeating is fenced by the broker after the session timeout.
    frozen = members.pop(0)
    frozen.freeze()
    frozen_at = time.monotonic()
    try:
        wait_until(members, split, "the last member to hold all partitions",
                   timeout=SESSION_MS / 1000 + 20)
        # Its last heartbeat was at most one interval before it froze.
        assert time.monotonic() - frozen_at >= (SESSION_MS - INTERVAL_MS) / 1000
        # Read the group before the kill: kill() resumes the process first (SIGCONT), and a
        # resumed client may rejoin under a new member id before SIGKILL lands.
        state = group_state(broker, group)
    finally:
        frozen.kill()
    assert len(state["members"]) == 1 and state["state"] in ("Stable", "Reconciling")


def test_members_converge_together(broker, members) -> None:
    """Three members started at once end with a complete, duplicate-free assignment, all
    at the group epoch."""
    group = f"kip848-together-{next(_groups)}"
    for i in range(3):
        members.append(consumer(broker, group, f"t{i}"))
    wait_until(members, partitions_split(TOPIC, PARTITIONS), "3 members to share all partitions")
    deadline = time.monotonic() + 10
    while True:
        state = group_state(broker, group)
        if state["state"] == "Stable" and set(state["epochs"].values()) == {state["epoch"]}:
            break
        assert time.monotonic() < deadline, f"group not stable: {state}"
        time.sleep(0.05)  # polling the broker; the assertion is the state, not the time


def test_admin_client_describes_and_lists_the_group(broker, members) -> None:
    """librdkafka's AdminClient reads the group with ConsumerGroupDescribe (69) and
    ListGroups v5 (type "consumer")."""
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    group = f"kip848-admin-{next(_groups)}"
    for i in range(2):
        members.append(consumer(broker, group, f"a{i}", "range"))
    wait_until(members, partitions_split(TOPIC, PARTITIONS), "2 members to share all partitions")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    deadline = time.monotonic() + 10
    while True:
        d = admin.describe_consumer_groups([group])[group].result(10)
        if d.state == ConsumerGroupState.STABLE:
            break
        assert time.monotonic() < deadline, f"group not stable: {d.state}"
        time.sleep(0.05)  # polling the broker; the assertion is the state, not the time
    assert (d.type, d.partition_assignor) == (ConsumerGroupType.CONSUMER, "range")
    assigned = sorted((tp.topic, tp.partition) for m in d.members
                      for tp in m.assignment.topic_partitions)
    assert assigned == [(TOPIC, p) for p in range(PARTITIONS)]
    assert sorted(m.client_id for m in d.members) == ["a0", "a1"]
    listed = admin.list_consumer_groups().result(10).valid
    assert [(g.group_id, g.type) for g in listed if g.group_id == group] == \
        [(group, ConsumerGroupType.CONSUMER)]


def test_static_member_restarts_into_its_own_partitions(broker, members) -> None:
    """A static member (group.instance.id) that closes leaves with epoch -2: it stays in the
    group holding its partitions; restarted (a new member id), it takes its own place back
    with the same partitions and no new group epoch."""
    group = f"kip848-static-{next(_groups)}"
    for i in range(2):
        members.append(consumer(broker, group, f"s{i}", instance_id=f"instance-{i}"))
    wait_until(members, partitions_split(TOPIC, PARTITIONS), "2 static members to share all partitions")
    before = group_state(broker, group)
    leaving = members.pop(0)
    held = sorted(leaving.assignment or [])
    leaving.close()
    state = group_state(broker, group)
    assert len(state["members"]) == 2 and -2 in state["epochs"].values()
    assert state["epoch"] == before["epoch"]
    members.append(consumer(broker, group, "s0-restarted", instance_id="instance-0"))
    wait_until(members, partitions_split(TOPIC, PARTITIONS), "the restarted member to be back")
    assert sorted(members[-1].assignment or []) == held
    after = group_state(broker, group)
    assert after["epoch"] == before["epoch"] and len(after["members"]) == 2


def test_regex_subscription(broker, members) -> None:
    """librdkafka sends a subscription starting with ^ as SubscribedTopicRegex (v1)."""
    group = f"kip848-regex-{next(_groups)}"
    members.append(Member("confluent-kafka", broker.bootstrap, group, "^ev.*", "r0",
                          group_protocol="consumer"))
    members.append(consumer(broker, group, "r1"))
    wait_until(members, partitions_split(TOPIC, PARTITIONS), "a regex and a named subscriber to share")
