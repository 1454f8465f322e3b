from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.server.broker import FakeBroker
from fakebroker.server.config import BrokerConfig
from fakebroker.server.thread import BrokerThread



def start_proxy(upstream: str, **config: Any) -> BrokerThread:
    broker = FakeBroker(BrokerConfig(**config), CoordinatorConfig(initial_rebalance_delay_ms=0),
                        upstream=upstream)
    return BrokerThread(broker).start()


@pytest.fixture
def proxy_factory() -> Iterator[Callable[..., BrokerThread]]:
    started: list[BrokerThread] = []

    def make(upstream: str, **config: Any) -> BrokerThread:
        p = start_proxy(upstream, **config)
        started.append(p)
        return p

    yield make
    for p in started:
        p.stop()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def run(coro: Any, timeout: float = 60.0) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))
