"""Proxy mode against a real Apache Kafka 4.2.0: clients see only the fake broker, the fake
broker coordinates their groups, everything else is the real Kafka's."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

from fakebroker.client import ClientError, KafkaConnection
from fakebroker.protocol import default_registry
from fakebroker.realkafka import KafkaSettings, start_real_kafka
from fakebroker.server.proxy import NOT_FORWARDED

from .conftest import run, unique

pytestmark = pytest.mark.realkafka
REG = default_registry()
API_VERSIONS, METADATA, DESCRIBE_CLUSTER, CREATE_TOPICS, FETCH, LIST_GROUPS = 18, 3, 60, 19, 1, 16
DELETE_TOPICS = 20  # no spec in the codec


async def _api_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    async with await KafkaConnection.open(bootstrap) as c:
        ex = await c.send(REG.request(API_VERSIONS).new(client_software_name="t",
                                                        client_software_version="1"), 3)
    return {k.api_key: (k.min_version, k.max_version) for k in ex.response.api_keys}


@pytest.fixture
def proxy(real_kafka, proxy_factory):
    return proxy_factory(real_kafka.bootstrap)


def test_api_versions_are_ours_for_group_apis_and_the_intersection_otherwise(real_kafka, proxy):
    ours = run(_api_versions(proxy.bootstrap))
    theirs = run(_api_versions(real_kafka.bootstrap))
    coordinator_keys = set(proxy.broker.coordinator.api_keys())
    for key in coordinator_keys | {10, API_VERSIONS}:  # answered by the fake broker
        mt = REG.request(key)
        assert ours[key] == (mt.lowest, mt.highest), REG.api_name(key)
    assert {1000, 1001, 1002} <= set(ours)  # the draft's connect APIs: ours only
    for key, (lo, hi) in ours.items():
        if key in coordinator_keys or key in (10, API_VERSIONS):
            continue
        assert key in theirs and key not in NOT_FORWARDED
        ulo, uhi = theirs[key]
        if key in REG.requests:  # forwarded through the codec: both must know the version
            mt = REG.request(key)
            assert (lo, hi) == (max(mt.lowest, ulo), min(mt.highest, uhi)), key
        else:  # forwarded raw
            assert (lo, hi) == (ulo, uhi), key
    assert CREATE_TOPICS in ours  # through the codec (its spec came with the group log)
    assert DELETE_TOPICS in ours  # raw: the codec has no spec, the upstream has
    assert not (set(ours) & NOT_FORWARDED)


def test_metadata_and_describe_cluster_show_only_the_proxy(real_kafka, proxy):
    host, port = proxy.bootstrap.rsplit(":", 1)

    async def go():
        async with await KafkaConnection.open(real_kafka.bootstrap) as c:
            direct = (await c.send(REG.request(METADATA).new(topics=None), 12)).response
        out = {}
        async with await KafkaConnection.open(proxy.bootstrap) as c:
            for v in (0, 1, 9, 12, 13):
                out[v] = (await c.send(REG.request(METADATA).new(topics=[] if v == 0 else None),
                                       v)).response
            dc = (await c.send(REG.request(DESCRIBE_CLUSTER).new(), 1)).response
        return direct, out, dc

    direct, by_version, dc = run(go())
    upstream_ids = sorted(b.node_id for b in direct.brokers)
    for v, md in by_version.items():
        assert sorted(b.node_id for b in md.brokers) == upstream_ids, v
        assert {(b.host, b.port) for b in md.brokers} == {(host, int(port))}, v
    assert by_version[12].cluster_id == direct.cluster_id
    assert dc.error_code == 0 and dc.cluster_id == direct.cluster_id
    assert sorted(b.broker_id for b in dc.brokers) == upstream_ids
    assert {(b.host, b.port) for b in dc.brokers} == {(host, int(port))}


def test_kafka_python_produces_and_consumes_through_the_proxy_in_a_fake_coordinated_group(
        real_kafka, proxy):
    topic, group = unique("proxied"), unique("proxied-group")
    # CreateTopics goes through the codec, decoded and re-encoded both ways.
    admin = KafkaAdminClient(bootstrap_servers=proxy.bootstrap, request_timeout_ms=20_000)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=proxy.bootstrap, acks="all", linger_ms=0)
    try:
        producer.send(topic, key=b"k", value=b"through the proxy", partition=1).get(timeout=30)
    finally:
        producer.close(timeout=10)
    consumer = KafkaConsumer(topic, bootstrap_servers=proxy.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=10_000, heartbeat_interval_ms=1000,
                             consumer_timeout_ms=1000)
    got = []
    try:
        deadline = time.monotonic() + 60
        while not got and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000).values():
                got.extend(batch)
        assert [(r.key, r.value, r.partition) for r in got] == [(b"k", b"through the proxy", 1)]
        consumer.commit()
        # The fake broker coordinates the group ...
        g = proxy.run(lambda: proxy.broker.coordinator.classic_group(group))
        assert g is not None and g.protocol_type == "consumer" and len(g.members) == 1
        assert g.state.name.lower() == "stable"
        committed = proxy.run(lambda: proxy.broker.coordinator.offsets.get(group, topic, 1))
        assert committed is not None and committed.offset == 1
    finally:
        consumer.close()

    # ... and the real Kafka never heard of it, though it served the records.
    async def upstream_groups():
        async with await KafkaConnection.open(real_kafka.bootstrap) as c:
            return (await c.send(REG.request(LIST_GROUPS).new(), 4)).response
    listed = run(upstream_groups())
    assert group not in {gr.group_id for gr in listed.groups}
    assert proxy.broker.proxy.forwarded > 0


def test_killing_the_upstream_closes_client_connections(proxy_factory):
    kafka = start_real_kafka(KafkaSettings(), backend="process", announce=False)
    try:
        proxy = proxy_factory(kafka.bootstrap)

        async def go():
            idle = await KafkaConnection.open(proxy.bootstrap, timeout_s=30)
            busy = await KafkaConnection.open(proxy.bootstrap, timeout_s=30)
            group_only = await KafkaConnection.open(proxy.bootstrap, timeout_s=30)
            await idle.send(REG.request(METADATA).new(topics=None), 12)  # opens its upstream
            # An empty topic (auto-created through the proxy) to park a Fetch on.
            md = REG.request(METADATA)
            want = md.new(topics=[md.cls.MetadataRequestTopic(name="parked")],
                          allow_auto_topic_creation=True)
            for _ in range(100):
                t = (await busy.send(want, 12)).response.topics[0]
                if t.error_code == 0 and t.partitions and t.partitions[0].leader_id >= 0:
                    break
                await asyncio.sleep(0.1)
            await group_only.send(REG.request(LIST_GROUPS).new(), 4)
            # A Fetch the upstream holds for its max wait, in flight when the upstream dies.
            f = REG.request(FETCH)
            fetch = f.new(max_wait_ms=25_000, min_bytes=1_000_000, topics=[f.cls.FetchTopic(
                topic="parked", partitions=[f.cls.FetchPartition(partition=0, fetch_offset=0,
                                                                 partition_max_bytes=1_048_576)])])
            in_flight = busy.submit(fetch, 12)
            await asyncio.sleep(1.0)
            assert not in_flight.done()
            t0 = time.monotonic()
            os.killpg(kafka.proc.pid, signal.SIGKILL)  # no clean shutdown: the process is gone
            with pytest.raises(ClientError, match="closed"):
                await busy.wait(in_flight, timeout_s=15)
            with pytest.raises(ClientError, match="closed"):
                await idle.send(REG.request(METADATA).new(topics=None), 12, timeout_s=15)
            elapsed = time.monotonic() - t0
            # The connection that never needed the upstream keeps its coordinator.
            ok = await group_only.send(REG.request(LIST_GROUPS).new(), 4)
            for c in (idle, busy, group_only):
                await c.close()
            return elapsed, ok.response.error_code

        elapsed, code = run(go())
        assert code == 0
        assert elapsed < 25  # closed when the upstream went, not when the Fetch would end
    finally:
        kafka.stop()
