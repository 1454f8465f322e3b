"""What Apache Kafka's group coordinator persists for a classic ``connect`` group: after a
rebalance the group's GroupMetadata record in ``__consumer_offsets`` (key type 2, read with
the project's codec and schemas/kafka-records/) holds the protocol type, generation,
leader and every member's subscription and assignment bytes exactly as the members sent
and received them; after a broker restart the group is reloaded at the same generation.
On both backends: the broker as a local process and in a container (testcontainers)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.protocol import default_registry
from fakebroker.realkafka import KafkaSettings, RealKafka, start_real_kafka
from fakebroker.realkafka.records import (OFFSETS_TOPIC, decode_batches, fetch_all,
                                          group_metadata_records)
from tests.support.docker import require_docker

pytestmark = pytest.mark.realkafka
REG = default_registry()
META, ASSIGN = REG["ConnectProtocolMetadata"], REG["ConnectProtocolAssignment"]
SESSION_MS, REBALANCE_MS = 60_000, 30_000  # long enough to survive the broker's restart


@pytest.fixture(scope="module", params=["process", "docker"])
def kafka(request: pytest.FixtureRequest) -> Iterator[RealKafka]:
    """A broker of this module's own: it is restarted."""
    if request.param == "docker":
        require_docker()
    k = start_real_kafka(KafkaSettings(), backend=request.param)
    assert k.backend == request.param
    yield k
    k.stop()


def metadata(url: str, offset: int) -> bytes:
    return META.encode_versioned(META.new(url=url, config_offset=offset, allocation=None), 1)


def assignment(leader: str, connectors: dict[str, list[int]]) -> bytes:
    ca = ASSIGN.cls.ConnectorAssignment  # type: ignore[attr-defined]
    return ASSIGN.encode_versioned(ASSIGN.new(
        error=0, leader=leader, leader_url="http://w1:8083/", config_offset=7,
        assignment=[ca(connector=c, tasks=t) for c, t in connectors.items()], revoked=[],
        scheduled_delay=0), 1)


async def join(conn: KafkaConnection, group: str, member: str, meta: bytes) -> Any:
    jg = REG["JoinGroupRequest"]
    return (await conn.send(jg.new(
        group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
        member_id=member, group_instance_id=None, protocol_type="connect", reason=None,
        protocols=[jg.cls.JoinGroupRequestProtocol(name="sessioned", metadata=meta),  # type: ignore[attr-defined]
                   jg.cls.JoinGroupRequestProtocol(name="compatible", metadata=meta)]),  # type: ignore[attr-defined]
        9, timeout_s=30)).response


def sync_req(group: str, member: str, gen: int, plan: dict[str, bytes]) -> Any:
    sg = REG["SyncGroupRequest"]
    return sg.new(group_id=group, generation_id=gen, member_id=member, group_instance_id=None,
                  protocol_type="connect", protocol_name="sessioned",
                  assignments=[sg.cls.SyncGroupRequestAssignment(member_id=m, assignment=a)  # type: ignore[attr-defined]
                               for m, a in plan.items()])


async def rebalance_two_workers(bootstrap: str, group: str) -> dict[str, Any]:
    """Two Connect workers form a group: w1 alone (generation 1), then w2 joins and both
    rejoin (generation 2); w1 leads and assigns. Returns what each member sent and got."""
    c1 = await KafkaConnection.open(bootstrap, client_id="w1", timeout_s=30)
    c2 = await KafkaConnection.open(bootstrap, client_id="w2", timeout_s=30)
    meta1, meta2 = metadata("http://w1:8083/", 7), metadata("http://w2:8083/", 7)
    try:
        m1 = (await join(c1, group, "", meta1)).member_id
        j = await join(c1, group, m1, meta1)
        await c1.send(sync_req(group, m1, j.generation_id, {m1: assignment(m1, {"c0": [-1, 0]})}), 5)
        m2 = (await join(c2, group, "", meta2)).member_id
        parked = c2.submit(REG["JoinGroupRequest"].new(
            group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
            member_id=m2, group_instance_id=None, protocol_type="connect", reason=None,
            protocols=[REG["JoinGroupRequest"].cls.JoinGroupRequestProtocol(name="sessioned", metadata=meta2)]), 9)  # type: ignore[attr-defined]
        await asyncio.sleep(0.3)
        j1 = await join(c1, group, m1, meta1)
        j2 = (await c2.wait(parked, timeout_s=30)).response
        assert j1.error_code == j2.error_code == 0 and j1.leader == m1
        gen = j1.generation_id
        plan = {m1: assignment(m1, {"c0": [-1, 0]}), m2: assignment(m1, {"c1": [-1], "c0": [1]})}
        follower = c2.submit(sync_req(group, m2, gen, {}), 5)
        await asyncio.sleep(0.3)
        r1 = (await c1.send(sync_req(group, m1, gen, plan), 5)).response
        r2 = (await c2.wait(follower, timeout_s=30)).response
        assert r1.error_code == r2.error_code == 0
        assert (r1.assignment, r2.assignment) == (plan[m1], plan[m2])
        return {"generation": gen, "leader": m1, "protocol": j1.protocol_name,
                "members": {m1: ("w1", meta1, r1.assignment), m2: ("w2", meta2, r2.assignment)}}
    finally:
        await c1.close()
        await c2.close()


async def group_records(bootstrap: str, group: str) -> list[Any]:
    async with await KafkaConnection.open(bootstrap, client_id="reader") as c:
        return group_metadata_records(await fetch_all(c, OFFSETS_TOPIC, 0), group)


async def heartbeat(bootstrap: str, group: str, member: str, gen: int) -> int:
    async with await KafkaConnection.open(bootstrap, client_id="w1") as c:
        hb = REG["HeartbeatRequest"].new(group_id=group, generation_id=gen, member_id=member,
                                         group_instance_id=None)
        return int((await c.send(hb, 4)).response.error_code)


def check_record(value: Any, sent: dict[str, Any]) -> None:
    assert value.protocol_type == "connect"
    assert value.generation == sent["generation"]
    assert value.protocol == sent["protocol"] == "sessioned"
    assert value.leader == sent["leader"]
    members = {m.member_id: m for m in value.members}
    assert set(members) == set(sent["members"])
    for mid, (client_id, meta, got) in sent["members"].items():
        m = members[mid]
        assert m.client_id == client_id and m.client_host == "/127.0.0.1"
        assert (m.session_timeout, m.rebalance_timeout, m.group_instance_id) == (SESSION_MS, REBALANCE_MS, None)
        assert m.subscription == meta, f"{mid}: the subscription bytes differ from what it sent"
        assert m.assignment == got, f"{mid}: the assignment bytes differ from what it received"
        # And they decode as Connect's embedded protocol.
        assert META.decode_versioned(m.subscription)[1].url == f"http://{client_id}:8083/"
        assert ASSIGN.decode_versioned(m.assignment)[1].leader == sent["leader"]


def test_group_record_after_a_rebalance_and_a_restart(kafka: RealKafka) -> None:
    group = "persistence-connect"
    sent = asyncio.run(rebalance_two_workers(kafka.bootstrap, group))
    records = asyncio.run(group_records(kafka.bootstrap, group))
    assert records, "no GroupMetadata record for the group in __consumer_offsets"
    last = records[-1]
    assert last.value is not None and last.version in (3, 4)  # Kafka 4.2 writes v3
    check_record(last.value, sent)
    # The group's history: created empty by the first JoinGroup (generation 0, no protocol
    # type, no leader, no members), then one record per leader's SyncGroup: generation 1
    # with w1 alone, generation 2 with both. Nothing is written when a join completes.
    assert [r.value.generation for r in records] == [0, 1, 2]
    created = records[0].value
    assert (created.protocol_type, created.protocol, created.leader, created.members) == ("", None, None, [])
    assert [m.member_id for m in records[1].value.members] == [sent["leader"]]

    kafka.restart()

    # Reloaded from the log: the same members at the same generation (a heartbeat with it is
    # accepted, not ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID) and no new group record.
    assert asyncio.run(heartbeat(kafka.bootstrap, group, sent["leader"], sent["generation"])) == 0
    after = asyncio.run(group_records(kafka.bootstrap, group))
    assert after[-1].value is not None and after[-1].value.generation == sent["generation"]
    check_record(after[-1].value, sent)


def test_record_batches_are_read_strictly() -> None:
    from fakebroker.realkafka.records import RecordFormatError
    assert decode_batches(b"") == []
    assert decode_batches(b"\x00" * 11) == []  # shorter than a batch header: nothing yet
    head = (5).to_bytes(8, "big") + (49).to_bytes(4, "big") + b"\x00" * 4 + b"\x01" + b"\x00" * 44
    with pytest.raises(RecordFormatError, match="magic 1"):
        decode_batches(head)
