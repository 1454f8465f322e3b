"""Shared helpers: a broker on a virtual clock, and requests built with the codec."""

from __future__ import annotations

import asyncio
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import Any

from fakebroker.coordinator.config import CoordinatorConfig, counting_suffixes
from fakebroker.protocol import Struct, default_registry
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import BrokerConfig, Topic

REG = default_registry()
GOLDEN_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "golden"  # the golden transcripts


def new_broker(**coord: Any) -> FakeBroker:
    coord.setdefault("initial_rebalance_delay_ms", 0)
    coord.setdefault("member_id_suffix", counting_suffixes())
    return FakeBroker(BrokerConfig(topics=[Topic("events", 3)]), CoordinatorConfig(**coord),
                      VirtualClock())


def run_with(broker: FakeBroker, test: Callable[[FakeBroker], Awaitable[None]]) -> None:
    async def go() -> None:
        await broker.start()
        try:
            await test(broker)
        finally:
            await broker.stop()
    asyncio.run(go())


async def until(pred: Callable[[], bool], what: str, turns: int = 20_000) -> None:
    """Yield to the loop until ``pred()`` (bounded by loop turns, not by time)."""
    for _ in range(turns):
        if pred():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


def join(member_id: str = "", group: str = "g", session: int = 10_000) -> Struct:
    jg = REG["JoinGroupRequest"]
    return jg.new(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=10_000,
                  member_id=member_id, protocol_type="connect",
                  protocols=[jg.cls.JoinGroupRequestProtocol(name="default", metadata=b"\x00")])


def heartbeat(member_id: str, generation: int = 1, group: str = "g") -> Struct:
    return REG["HeartbeatRequest"].new(group_id=group, member_id=member_id,
                                       generation_id=generation)


def api_versions() -> Struct:
    return REG["ApiVersionsRequest"].new()
