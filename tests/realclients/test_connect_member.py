"""Connect-style members built on kafka-python's group client form a ``connect`` group on
the fake broker: the protocol vote, and the embedded Connect metadata and assignments
carried byte-exact between real clients."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import pytest

from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.pytest_plugin import start_broker
from fakebroker.server.thread import BrokerThread

from .connect_member import (
    ASSIGNMENT,
    METADATA,
    PROTOCOL_VERSIONS,
    ConnectMember,
    JoinRecord,
    LeaderRecord,
    Unit,
    from_connector_list,
    make_member,
    units_of,
    wait_for,
)

CONNECTORS = {"conn-a": 2, "conn-b": 1}
UNITS = set(units_of(CONNECTORS))
# The leader's split, worked out by hand: units sorted, dealt round-robin over member ids
# sorted (Kafka's dynamic member id is "<client.id>-<uuid>", so w1's sorts first).
SHARES = {"w1": {("conn-a", -1), ("conn-a", 1), ("conn-b", 0)},
          "w2": {("conn-a", 0), ("conn-b", -1)}}
CONFIG_OFFSET = 5
WAIT_S = 30.0
_groups = itertools.count()


@pytest.fixture
def broker() -> Iterator[BrokerThread]:
    b = start_broker(topics={}, coordinator=CoordinatorConfig(initial_rebalance_delay_ms=0,
                                                              min_session_timeout_ms=1000))
    yield b
    b.stop()


@pytest.fixture
def members() -> Iterator[list[ConnectMember]]:
    started: list[ConnectMember] = []
    yield started
    for m in started:
        m.stop()


def join(broker: BrokerThread, started: list[ConnectMember], name: str, group: str,
         protocols: Sequence[str] = tuple(PROTOCOL_VERSIONS),
         owned: Sequence[Unit] = ()) -> ConnectMember:
    m = make_member(broker.bootstrap, name=name, group=group, url=f"http://{name}:8083/",
                    config_offset=CONFIG_OFFSET, connectors=CONNECTORS, protocols=protocols,
                    owned=owned)
    started.append(m)
    return m.start()


Settled = tuple[JoinRecord, JoinRecord, LeaderRecord]


def settled(a: ConnectMember, b: ConnectMember) -> Settled | None:
    """Both members in the same generation of two, led by one of them, with nothing left
    to revoke (so no one will rejoin) and every unit owned by someone."""
    ra, rb = a.snapshot(), b.snapshot()
    if not ra or not rb:
        return None
    la, lb = ra[-1], rb[-1]
    if la.generation != lb.generation:
        return None
    leader = la.leader or lb.leader
    if leader is None or set(leader.member_metadata) != {la.member_id, lb.member_id}:
        return None
    if any(from_connector_list(getattr(r.decoded, "revoked", None)) for r in (la, lb)):
        return None
    if la.owned_after | lb.owned_after != UNITS:
        return None
    return la, lb, leader


def check_generation(leader: LeaderRecord, records: Sequence[JoinRecord]) -> None:
    """What the leader received and produced, against what each member sent and got."""
    version = PROTOCOL_VERSIONS[leader.protocol]
    assert set(leader.member_metadata) == {r.member_id for r in records}
    for r in records:
        where = f"generation {r.generation}, member {r.member_id}"
        assert r.protocol == leader.protocol, where
        # The broker must hand the leader each member's metadata for the chosen protocol
        # exactly as that member's JoinGroup carried it.
        assert leader.member_metadata[r.member_id] == r.sent_metadata[leader.protocol], where
        # ... and each member exactly the bytes the leader put into SyncGroup for it.
        assert r.assignment == leader.produced[r.member_id], where
        decoded_version, decoded = ASSIGNMENT.decode_versioned(r.assignment)
        assert (decoded_version, decoded) == (version, leader.intended[r.member_id]), where


def common_generations(a: ConnectMember,
                       b: ConnectMember) -> list[tuple[LeaderRecord, list[JoinRecord]]]:
    """Every generation both members completed, with its leader's record."""
    by_gen_a = {r.generation: r for r in a.snapshot()}
    by_gen_b = {r.generation: r for r in b.snapshot()}
    out = []
    for g in sorted(by_gen_a.keys() & by_gen_b.keys()):
        ra, rb = by_gen_a[g], by_gen_b[g]
        leader = ra.leader or rb.leader
        assert leader is not None, f"generation {g}: neither member led it"
        assert not (ra.leader and rb.leader), f"generation {g}: both members led it"
        out.append((leader, [ra, rb]))
    return out


def check_broker_view(broker: BrokerThread, group: str, protocol: str,
                      records: Sequence[JoinRecord], asker: ConnectMember) -> None:
    """The coordinator's state, and DescribeGroups over the wire from a real client: the
    chosen protocol, and each member's stored metadata and assignment byte-exact."""
    def state() -> tuple[str | None, str | None, str, int]:
        g = broker.broker.coordinator.classic_group(group)
        assert g is not None, f"no classic group {group!r} in the coordinator"
        return g.protocol_type, g.protocol_name, g.state_name, len(g.members)

    assert broker.run(state) == ("connect", protocol, "Stable", 2)
    described = asker.describe_group()
    assert (described.error_code, described.group_state, described.protocol_type,
            described.protocol_data) == (0, "Stable", "connect", protocol)
    stored = {m.member_id: (bytes(m.member_metadata), bytes(m.member_assignment))
              for m in described.members}
    assert stored == {r.member_id: (r.sent_metadata[protocol], r.assignment) for r in records}


def test_sessioned_group_carries_connect_metadata_and_assignments(
        broker: BrokerThread, members: list[ConnectMember]) -> None:
    group = f"connect-sessioned-{next(_groups)}"
    # w1 reports an allocation from a previous life, so its v1/v2 metadata carries a
    # nested assignment from its first JoinGroup on.
    w1 = join(broker, members, "w1", group, owned=[("conn-a", -1)])
    w2 = join(broker, members, "w2", group)
    r1, r2, leader = wait_for(lambda: settled(w1, w2), "w1 and w2 to settle in one generation",
                              members, WAIT_S)

    assert leader.protocol == "sessioned"
    assert (r1.protocol, r2.protocol) == ("sessioned", "sessioned")
    check_broker_view(broker, group, "sessioned", [r1, r2], w2)

    # Each member offered all three protocols, each with metadata of its own version.
    for m, r in ((w1, r1), (w2, r2)):
        assert list(r.sent_metadata) == ["sessioned", "compatible", "default"]
        for protocol, data in r.sent_metadata.items():
            version, md = METADATA.decode_versioned(data)
            assert (version, md.url, md.config_offset) == (
                PROTOCOL_VERSIONS[protocol], m.url, CONFIG_OFFSET)
    first_w1 = w1.snapshot()[0]
    _, md = METADATA.decode_versioned(first_w1.sent_metadata["sessioned"])
    assert md.allocation is not None
    allocation_version, allocation = ASSIGNMENT.decode_versioned(md.allocation)
    assert (allocation_version, from_connector_list(allocation.assignment)) == (2, {("conn-a", -1)})

    generations = common_generations(w1, w2)
    assert generations and generations[-1][0] is leader
    for gen_leader, records in generations:
        check_generation(gen_leader, records)

    # The settled split is the intended one; the settling generation is v2 with nothing
    # revoked (earlier generations may have revoked w1's surplus, depending on timing).
    assert (r1.owned_after, r2.owned_after) == (SHARES["w1"], SHARES["w2"])
    for r in (r1, r2):
        assert r.version == 2
        assert r.decoded.revoked == []
        assert r.decoded.leader == leader_id(leader, [r1, r2])


def test_member_supporting_only_default_forces_eager(
        broker: BrokerThread, members: list[ConnectMember]) -> None:
    group = f"connect-eager-{next(_groups)}"
    w1 = join(broker, members, "w1", group)
    w2 = join(broker, members, "w2", group, protocols=["default"])
    r1, r2, leader = wait_for(lambda: settled(w1, w2), "w1 and w2 to settle in one generation",
                              members, WAIT_S)

    # The only protocol both support is `default`: the vote must pick it.
    assert leader.protocol == "default"
    assert (r1.protocol, r2.protocol) == ("default", "default")
    check_broker_view(broker, group, "default", [r1, r2], w1)
    assert list(r2.sent_metadata) == ["default"]
    generations = common_generations(w1, w2)
    assert generations and generations[-1][0] is leader
    for gen_leader, records in generations:
        check_generation(gen_leader, records)
        for m, r in zip((w1, w2), records):
            # v0 metadata: version 0, url, config offset, and nothing more (the strict
            # decoder rejects trailing bytes).
            version, md = METADATA.decode_versioned(r.sent_metadata["default"])
            assert (version, md.url, md.config_offset) == (0, m.url, CONFIG_OFFSET)

    # Eager: v0 assignments, each carrying the member's whole share; v0 has no Revoked
    # field, so the decoder leaves its default.
    for name, r in (("w1", r1), ("w2", r2)):
        assert (r.version, r.assignment[:2]) == (0, b"\x00\x00")
        assert r.decoded.revoked is None
        assert from_connector_list(r.decoded.assignment) == SHARES[name] == r.owned_after
        assert r.decoded.leader == leader_id(leader, [r1, r2])


def leader_id(leader: LeaderRecord, records: Sequence[JoinRecord]) -> str:
    """The member id of the member that produced ``leader``."""
    (r,) = [r for r in records if r.leader is leader]
    return r.member_id
