"""Real clients (kafka-python, aiokafka, librdkafka via confluent-kafka) run whole
classic consumer-group lifecycles against the fake broker."""

from __future__ import annotations

import itertools

import pytest

from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.pytest_plugin import start_broker

from .harness import Member, partitions_split, wait_until

TOPIC = "events"
PARTITIONS = 6
_groups = itertools.count()


@pytest.fixture
def broker():
    b = start_broker(topics={TOPIC: PARTITIONS},
                     coordinator=CoordinatorConfig(initial_rebalance_delay_ms=0,
                                                   min_session_timeout_ms=1000))
    yield b
    b.stop()


@pytest.fixture
def members():
    started: list[Member] = []
    yield started
    for m in started:
        m.kill()


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka", "confluent-kafka"])
def test_group_lifecycle(client: str, broker, members) -> None:
    group = f"lifecycle-{client}-{next(_groups)}"
    split = partitions_split(TOPIC, PARTITIONS)
    # 1, 2, then 3 members: after each join the partitions are split completely and once.
    for i in range(3):
        members.append(Member(client, broker.bootstrap, group, TOPIC, f"m{i}"))
        wait_until(members, split, f"{i + 1} member(s) to share all partitions")
    # A member that closes leaves; the other two take over everything.
    leaving = members.pop(0)
    leaving.close()
    wait_until(members, split, "the remaining 2 members to hold all partitions")
    # A member that stops heartbeating is removed after its session timeout (6 s: generous, so a
    # loaded CI machine does not starve a live member past it).
    frozen = members.pop(0)
    frozen.freeze()
    try:
        wait_until(members, split, "the last member to hold all partitions", timeout=45)
    finally:
        frozen.kill()
    # The frozen member is gone from the coordinator too (it may lag the partitions moving by
    # the rest of the rebalance: poll, bounded).
    wait_until(members, lambda _: broker.run(
        lambda: len(broker.broker.coordinator.classic_group(group).members)) == 1,
        "the coordinator to hold exactly one member")


def test_mixed_group_votes_for_common_strategy(broker, members) -> None:
    """librdkafka prefers range, two kafka-python members prefer roundrobin: roundrobin wins
    the vote (each member votes for its first choice among the protocols all support)."""
    group = f"mixed-{next(_groups)}"
    members.append(Member("confluent-kafka", broker.bootstrap, group, TOPIC, "rd",
                          strategies="range,roundrobin"))
    members.append(Member("kafka-python", broker.bootstrap, group, TOPIC, "kp1",
                          strategies="roundrobin,range"))
    members.append(Member("kafka-python", broker.bootstrap, group, TOPIC, "kp2",
                          strategies="roundrobin,range"))
    wait_until(members, partitions_split(TOPIC, PARTITIONS), "the mixed group to split the topic")
    group_state = broker.run(lambda: broker.broker.coordinator.classic_group(group))
    assert group_state.protocol_name == "roundrobin"
