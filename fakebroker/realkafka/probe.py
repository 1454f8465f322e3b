"""Is a broker ready for the group checks? Asked over the wire with the project's client:
ApiVersions answers, Metadata lists a broker, FindCoordinator finds a coordinator for a
probe group (which makes Kafka create ``__consumer_offsets``) and DescribeGroups is
answered by a loaded coordinator (no COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ..client import ClientError, KafkaConnection
from ..protocol import default_registry

T = TypeVar("T")
PROBE_GROUP = "realkafka-readiness-probe"
# Errors that mean "not yet": COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
# NOT_COORDINATOR, and UNKNOWN_TOPIC_OR_PARTITION / LEADER_NOT_AVAILABLE while
# __consumer_offsets is being created.
NOT_YET = {14, 15, 16, 3, 5}


def run_sync(coro_fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code, also when this thread already
    runs an event loop (then on a short-lived thread of its own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro_fn())
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    t = threading.Thread(target=target, name="realkafka-probe", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


class NotReady(Exception):
    """The broker does not (yet) answer as a ready one; the message says what it lacked."""


class BrokerDied(NotReady):
    """The broker's process (or container) ended while it was awaited."""


async def probe_once(bootstrap: str, *, timeout_s: float = 5.0, coordinator: bool = True) -> str:
    """One readiness round; returns a one-line description of the broker, raises NotReady."""
    reg = default_registry()
    try:
        conn = await KafkaConnection.open(bootstrap, client_id="realkafka-probe", timeout_s=timeout_s)
    except ClientError as e:
        raise NotReady(str(e)) from None
    try:
        av = (await conn.send(reg["ApiVersionsRequest"].new(
            client_software_name="connect-conformance", client_software_version="1"), 3)).response
        if av.error_code != 0:
            raise NotReady(f"ApiVersions error {av.error_code}")
        md = (await conn.send(reg["MetadataRequest"].new(
            topics=[], allow_auto_topic_creation=False), 12)).response
        if not md.brokers:
            raise NotReady("Metadata lists no broker yet")
        desc = f"cluster {md.cluster_id}, {len(md.brokers)} broker(s), {len(av.api_keys)} APIs"
        if not coordinator:
            return desc
        fc = (await conn.send(reg["FindCoordinatorRequest"].new(
            key_type=0, coordinator_keys=[PROBE_GROUP]), 4)).response
        c = fc.coordinators[0]
        if c.error_code != 0:
            raise NotReady(f"FindCoordinator error {c.error_code} (the offsets topic is being created)")
        dg = (await conn.send(reg["DescribeGroupsRequest"].new(
            groups=[PROBE_GROUP], include_authorized_operations=False), 5)).response
        err = dg.groups[0].error_code
        if err in NOT_YET:
            raise NotReady(f"DescribeGroups error {err} (the group coordinator is loading)")
        return desc + f", coordinator node {c.node_id}"
    except ClientError as e:
        raise NotReady(str(e)) from None
    finally:
        await conn.close()


def wait_ready(bootstrap: str, timeout_s: float, *, alive: Callable[[], str | None] | None = None,
               coordinator: bool = True, interval_s: float = 0.25) -> str:
    """Probe until ready or ``timeout_s``. ``alive()`` returns a reason when the broker has
    died (then waiting stops at once). Raises NotReady naming the last thing missing."""
    deadline = time.monotonic() + timeout_s
    last = "never probed"
    while True:
        if alive is not None:
            dead = alive()
            if dead:
                raise BrokerDied(dead)
        left = deadline - time.monotonic()
        if left <= 0:
            raise NotReady(f"not ready within {timeout_s:.0f}s; last probe: {last}")
        try:
            return run_sync(lambda: probe_once(bootstrap, timeout_s=min(5.0, max(left, 0.5)),
                                               coordinator=coordinator))
        except NotReady as e:
            last = str(e)
        time.sleep(min(interval_s, max(deadline - time.monotonic(), 0)))
