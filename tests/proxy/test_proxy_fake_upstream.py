"""Proxy mode without Java: a plain fake broker plays the upstream (it answers Metadata,
DescribeCluster, ListOffsets and Fetch), so routing, rewriting and closing are checked fast."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys

import pytest

from fakebroker.client import ClientError, KafkaConnection
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import default_registry
from fakebroker.server.broker import FakeBroker
from fakebroker.server.config import BrokerConfig, Topic
from fakebroker.server.proxy import UpstreamError, parse_upstream
from fakebroker.server.thread import BrokerThread

from .conftest import run

REG = default_registry()
CMD = [sys.executable, "-m", "fakebroker.cli"]


@pytest.fixture
def upstream():
    b = BrokerThread(FakeBroker(BrokerConfig(node_id=7, topics=[Topic("up", 3)]),
                                CoordinatorConfig(initial_rebalance_delay_ms=0))).start()
    yield b
    b.stop()


def test_metadata_names_the_upstreams_topics_and_nodes_at_our_address(upstream, proxy_factory):
    proxy = proxy_factory(upstream.bootstrap)
    host, port = proxy.bootstrap.rsplit(":", 1)

    async def go():
        async with await KafkaConnection.open(proxy.bootstrap) as c:
            md = (await c.send(REG.request(3).new(topics=None), 12)).response
            dc = (await c.send(REG.request(60).new(), 1)).response
            fc = (await c.send(REG.request(10).new(key="g", key_type=0), 3)).response
            fc4 = (await c.send(REG.request(10).new(key_type=0, coordinator_keys=["a", "b"]), 4)).response
        return md, dc, fc, fc4

    md, dc, fc, fc4 = run(go())
    assert [(b.node_id, b.host, b.port) for b in md.brokers] == [(7, host, int(port))]
    assert [t.name for t in md.topics] == ["up"] and md.controller_id == 7
    assert [(b.broker_id, b.host, b.port) for b in dc.brokers] == [(7, host, int(port))]
    assert (fc.error_code, fc.host, fc.port) == (0, host, int(port))
    assert [(k.key, k.host, k.port) for k in fc4.coordinators] == [("a", host, int(port)),
                                                                   ("b", host, int(port))]
    assert proxy.broker.proxy.forwarded == 2  # Metadata, DescribeCluster; FindCoordinator is ours


def test_group_apis_stay_local(upstream, proxy_factory):
    proxy = proxy_factory(upstream.bootstrap)
    jg = REG.request(11)

    async def go():
        async with await KafkaConnection.open(proxy.bootstrap) as c:
            body = jg.new(group_id="local", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                          member_id="", protocol_type="connect",
                          protocols=[jg.cls.JoinGroupRequestProtocol(name="default", metadata=b"x")])
            return (await c.send(body, 9)).response

    r = run(go())
    assert r.error_code == 79  # MEMBER_ID_REQUIRED, from our coordinator
    assert proxy.broker.proxy.forwarded == 0
    assert upstream.run(lambda: upstream.broker.coordinator.classic_group("local")) is None


def test_node_endpoints_of_produce_and_fetch_are_rewritten(upstream, proxy_factory):
    proxy = proxy_factory(upstream.bootstrap)
    host, port = proxy.bootstrap.rsplit(":", 1)
    for key in (0, 1):
        mt = REG.response(key)
        ep = mt.cls.NodeEndpoint(node_id=3, host="kafka-3.internal", port=9093, rack=None)
        body = mt.new(node_endpoints=[ep])
        proxy.broker.proxy.rewrite(key, body)
        assert [(e.node_id, e.host, e.port) for e in body.node_endpoints] == [(3, host, int(port))]


def test_stopping_the_upstream_closes_connections_that_use_it(upstream, proxy_factory):
    proxy = proxy_factory(upstream.bootstrap)

    async def go():
        c = await KafkaConnection.open(proxy.bootstrap, timeout_s=5)
        await c.send(REG.request(3).new(topics=None), 12)
        await asyncio.to_thread(upstream.stop)
        with pytest.raises(ClientError, match="closed"):
            await c.send(REG.request(3).new(topics=None), 12)
        await c.close()

    run(go(), timeout=30)


def test_an_unreachable_upstream_fails_the_start() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        b = BrokerThread(FakeBroker(BrokerConfig(), upstream=f"127.0.0.1:{port}"))
        with pytest.raises(UpstreamError, match="cannot connect"):
            b.start()
        b._loop.call_soon_threadsafe(b._loop.stop)


def test_parse_upstream() -> None:
    assert parse_upstream("h:9092") == ("h", 9092)
    assert parse_upstream("[::1]:9092") == ("::1", 9092)
    for bad in ("h", ":1", "h:x", "h:0", "h:70000"):
        with pytest.raises(ValueError):
            parse_upstream(bad)


def test_serve_cli_with_upstream(upstream) -> None:
    r = subprocess.run([*CMD, "serve", "--port", "0", "--upstream", "nohost"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr
    proc = subprocess.Popen([*CMD, "serve", "--port", "0", "--upstream", upstream.bootstrap],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()

        async def ask():
            async with await KafkaConnection.open(line) as c:
                return (await c.send(REG.request(3).new(topics=None), 12)).response
        md = run(ask())
        assert [t.name for t in md.topics] == ["up"]
        assert {(b.host, b.port) for b in md.brokers} == {tuple([line.rsplit(":", 1)[0],
                                                                 int(line.rsplit(":", 1)[1])])}
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
